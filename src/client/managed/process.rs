//! A server child process that cannot outlive the harness.
//!
//! The child gets its own process group (so a terminal's Ctrl-C reaches only
//! the harness, which then stops it in order, and so stopping reaches any
//! workers it forks), `PR_SET_PDEATHSIG = SIGKILL` (so a harness killed with
//! SIGKILL takes it along), a cleaned environment and the log file as
//! stdout/stderr. Stopping is SIGTERM to the group, up to 10 s, then SIGKILL.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;

/// How long a stopping server may take after SIGTERM before SIGKILL.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(10);

/// What the keeper thread learns when the child exits.
struct ExitState {
    status: Mutex<Option<ExitStatus>>,
    changed: Condvar,
    notify: watch::Sender<Option<ExitStatus>>,
}

/// A running (or exited) server process; stopped when dropped.
pub(crate) struct ServerProcess {
    pid: i32,
    state: Arc<ExitState>,
    log_path: PathBuf,
    /// Where this process's output starts in the (shared, appended) log.
    log_offset: u64,
    stopped: bool,
}

impl ServerProcess {
    /// Starts `program args` with output appended to `log_path`, after a
    /// `[harness]` header line naming the command and, once started, the pid.
    pub(crate) fn spawn(
        program: &Path,
        args: &[String],
        keep_env: &[&str],
        log_path: &Path,
    ) -> std::io::Result<ServerProcess> {
        if let Some(dir) = log_path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut log = File::options().create(true).append(true).open(log_path)?;
        let log_offset = log.seek(SeekFrom::End(0))?;
        let command_line = std::iter::once(program.display().to_string())
            .chain(args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ");
        writeln!(log, "[harness] starting: {command_line}")?;
        let (stdout, stderr) = (log.try_clone()?, log.try_clone()?);
        let mut command = Command::new(program);
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr);
        // A server reads local files and answers on loopback: it needs no
        // key, except the names in `keep_env` (vLLM needs `HF_TOKEN` for
        // gated models).
        crate::secrets::scrub_env(&mut command);
        for name in keep_env {
            if let Some(value) = crate::secrets::var(name) {
                command.env(name, value);
            }
        }
        // Its own process group, default signals, the parent-death signal.
        crate::sandbox::child_of_harness(&mut command);
        let (notify, _) = watch::channel(None);
        let state = Arc::new(ExitState {
            status: Mutex::new(None),
            changed: Condvar::new(),
            notify,
        });
        // The parent-death signal fires when the *thread* that forked exits, not
        // the process: fork from a keeper thread that lives until the child is reaped.
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let keeper_state = state.clone();
        std::thread::Builder::new()
            .name("server-keeper".into())
            .spawn(move || {
                let mut child = match command.spawn() {
                    Ok(child) => child,
                    Err(e) => {
                        let _ = started_tx.send(Err(e));
                        return;
                    }
                };
                let _ = started_tx.send(Ok(child.id()));
                let status = child.wait().ok();
                let mut slot = keeper_state
                    .status
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                *slot = status.or_else(|| Some(std::os::unix::process::ExitStatusExt::from_raw(0)));
                keeper_state.changed.notify_all();
                keeper_state.notify.send_replace(*slot);
            })?;
        let pid = started_rx
            .recv()
            .map_err(|_| std::io::Error::other("the server keeper thread died"))??;
        writeln!(log, "[harness] started pid {pid}")?;
        Ok(ServerProcess {
            pid: pid as i32,
            state,
            log_path: log_path.to_path_buf(),
            log_offset,
            stopped: false,
        })
    }

    /// The server's process id (also its process group id).
    pub(crate) fn pid(&self) -> i32 {
        self.pid
    }

    /// The exit status, once the process has exited.
    pub(crate) fn exit_status(&self) -> Option<ExitStatus> {
        *self.state.status.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A receiver that changes to `Some(status)` when the process exits.
    pub(crate) fn exit_watch(&self) -> watch::Receiver<Option<ExitStatus>> {
        self.state.notify.subscribe()
    }

    /// The log file.
    pub(crate) fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The last `n` lines this process wrote to the log.
    pub(crate) fn last_log_lines(&self, n: usize) -> String {
        last_lines(&self.log_path, self.log_offset, n)
    }

    /// Where this process's part of the log starts.
    pub(crate) fn log_offset(&self) -> u64 {
        self.log_offset
    }

    fn wait_exit(&self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        let mut slot = self.state.status.lock().unwrap_or_else(|e| e.into_inner());
        while slot.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            slot = self
                .state
                .changed
                .wait_timeout(slot, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        *slot
    }

    /// SIGTERM to the process group, up to [`STOP_GRACE`] for it to exit, then
    /// SIGKILL; also for workers left in the group after the leader exited.
    /// Blocks until the leader is reaped. Idempotent.
    pub(crate) fn stop(&mut self) -> Option<ExitStatus> {
        if self.stopped {
            return self.exit_status();
        }
        self.stopped = true;
        let started = Instant::now();
        let group = -self.pid;
        // SAFETY: signalling our own child's process group.
        unsafe { libc::kill(group, libc::SIGTERM) };
        let mut status = self.wait_exit(STOP_GRACE);
        // The group outlives its leader while any member lives: give members the rest of the grace.
        while group_alive(group) && started.elapsed() < STOP_GRACE {
            std::thread::sleep(Duration::from_millis(50));
        }
        if status.is_none() || group_alive(group) {
            // SAFETY: as above; a group with no members answers ESRCH.
            unsafe { libc::kill(group, libc::SIGKILL) };
            status = self.wait_exit(Duration::from_secs(60));
        }
        if let Ok(mut log) = File::options().append(true).open(&self.log_path) {
            let how = status.map_or_else(|| "not reaped".to_owned(), |s| s.to_string());
            let _ = writeln!(log, "[harness] stopped pid {} ({how})", self.pid);
        }
        status
    }
}

fn group_alive(group: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(group, 0) == 0 }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The last `n` lines of `path` from byte `offset` on (at most the last 64 KiB).
pub(crate) fn last_lines(path: &Path, offset: u64, n: usize) -> String {
    let Ok(mut file) = File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let start = offset.max(len.saturating_sub(64 * 1024));
    let mut bytes = Vec::new();
    // `take`: a server still logging fast cannot keep the read going.
    let read = file.seek(SeekFrom::Start(start)).is_ok()
        && (&mut file).take(64 * 1024).read_to_end(&mut bytes).is_ok();
    if !read {
        return String::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("[harness]"))
        .collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_runs_in_its_own_group_and_stops_on_sigterm() {
        // The cleaned environment is checked end to end in tests/managed_vllm.rs
        // (setting a variable here would race the other tests' reads).
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("server.log");
        let script = "echo pgid=$(cut -d' ' -f5 /proc/$$/stat); \
                      trap 'echo got-term; exit 0' TERM; \
                      while true; do sleep 0.05; done";
        let mut p = ServerProcess::spawn(
            Path::new("/bin/sh"),
            &["-c".into(), script.into()],
            &[],
            &log,
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        assert!(p.exit_status().is_none());
        let status = p.stop().unwrap();
        assert!(status.success(), "{status}");
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.contains(&format!("pgid={}\n", p.pid())), "{text}");
        assert!(text.contains("got-term"), "{text}");
        assert!(p.last_log_lines(5).contains("got-term"));
        assert!(!p.last_log_lines(5).contains("[harness]"));
    }
}
