//! Warm starts: a Python interpreter that has imported a program's own
//! modules (never model code) forks a child per run, and the child confines
//! itself exactly as `child.rs` does before the run's main module starts.
//!
//! The zygote is started like any program (fresh exec, empty environment,
//! the parent-death signal), so its memory holds no secret of the harness.
//! Per run it receives one byte and a bundle of descriptors over its control
//! socket: the run's own socket, a memory file with the plan, the standard
//! streams, and the namespace, Landlock, cgroup and channel descriptors. It
//! forks without reading any of them; the child reads the plan. So no run's
//! data is in the zygote, and none can reach a sibling (docs/sandbox.md,
//! "Warm starts").
//!
//! The harness cannot wait for a grandchild: the zygote reaps the run's
//! first process and reports its wait status and usage on the run's socket.

use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::capture::{exited, pidfd_open};
use super::child::ChildPlan;
use super::seat::{Lease, Seat};
use super::zygote_io::{plan_file, receive, send_fds, seqpacket};
use super::{PATH, Program, SandboxError};

/// The zygote's script.
const SCRIPT: &str = include_str!("warm.py");

/// How long a zygote may take to import its modules before the cold path is used.
const START_LIMIT: Duration = Duration::from_secs(20);

/// A program that can start warm: which of its files are the modules to
/// import ahead (trusted code, the harness's own), and which is its main.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Warm {
    /// The module whose `main()` runs the program (its file is `<main>.py`).
    pub main: String,
    /// Names of the program's files to import ahead: never the model's code.
    pub modules: Vec<String>,
}

/// The zygotes of one sandbox, one per interpreter, flags, environment and modules.
#[derive(Default)]
pub(super) struct Zygotes {
    /// Each kind's slot has a lock of its own, so that kinds start side by side.
    started: Mutex<HashMap<Vec<u8>, Arc<Mutex<Slot>>>>,
}

/// One kind of zygote: not tried yet, could not start, or running.
enum Slot {
    Untried,
    Failed,
    Running(Arc<Zygote>),
}

/// A running zygote; it exits when its control socket closes.
pub(super) struct Zygote {
    control: OwnedFd,
    pid: u32,
    /// Cleared when the zygote exits: the next run starts a new one.
    alive: Arc<AtomicBool>,
    /// Its forks living in a seat's cgroups, by seat: a run forked there
    /// starts inside, where moving it in would wait for an RCU grace period
    /// (5-20 ms) each time.
    seated: Mutex<HashMap<usize, Arc<Mutex<Option<Seated>>>>>,
    _dir: super::workdir::Workdir,
}

/// A fork of a zygote that moved into a seat's cgroups once and stays,
/// serving that seat's runs as its parent serves the others.
struct Seated {
    control: OwnedFd,
    pid: u32,
    /// Readable once it is gone.
    pidfd: OwnedFd,
    seat: Arc<Seat>,
}

impl Drop for Seated {
    fn drop(&mut self) {
        self.seat.unsettle(self.pid as i32);
    }
}

/// What the harness holds of a warm run: its socket, on which the zygote
/// reports the exit.
pub(super) struct WarmRun {
    socket: OwnedFd,
    /// The run's first process, once the zygote said it forked.
    pid: Option<libc::pid_t>,
    /// Whether the program was seen to start.
    started: bool,
}

impl Zygotes {
    /// Starts the zygotes of `programs` that are not running yet, side by side.
    pub(super) fn prepare(&self, programs: &[&Program], scratch: &Path) {
        std::thread::scope(|scope| {
            for program in programs {
                if let Some(warm) = &program.warm {
                    scope.spawn(|| self.get(program, warm, scratch));
                }
            }
        });
    }

    /// The zygote for `program`, started on first use; `None` when it cannot
    /// start (the caller runs the program cold).
    pub(super) fn get(
        &self,
        program: &Program,
        warm: &Warm,
        scratch: &Path,
    ) -> Option<Arc<Zygote>> {
        let slot = {
            let mut started = self.started.lock().unwrap_or_else(|e| e.into_inner());
            let slot = started.entry(key(program, warm));
            slot.or_insert_with(|| Arc::new(Mutex::new(Slot::Untried)))
                .clone()
        };
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        match &*slot {
            // One that could not start will not later: the cold path it is.
            Slot::Failed => return None,
            Slot::Running(zygote) if zygote.alive.load(Ordering::Relaxed) => {
                return Some(zygote.clone());
            }
            _ => {}
        }
        let zygote = Zygote::start(program, warm, scratch).ok().map(Arc::new);
        *slot = zygote.clone().map_or(Slot::Failed, Slot::Running);
        zygote
    }
}

/// What makes two programs share a zygote: all but the last argument (the
/// script), the environment, and the modules.
fn key(program: &Program, warm: &Warm) -> Vec<u8> {
    let mut key = serde_json::to_vec(&(
        &program.argv[..program.argv.len().saturating_sub(1)],
        &program.env,
        &warm.main,
    ))
    .unwrap_or_default();
    for (name, contents) in &program.files {
        if warm.modules.contains(name) {
            key.extend_from_slice(name.as_bytes());
            key.push(0);
            key.extend_from_slice(contents);
        }
    }
    key
}

impl Zygote {
    fn start(program: &Program, warm: &Warm, scratch: &Path) -> std::io::Result<Zygote> {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir =
            super::workdir::Workdir(scratch.join(format!("zygote-{}-{n}", std::process::id())));
        std::fs::create_dir(&dir.0)?;
        for (name, contents) in &program.files {
            if warm.modules.contains(name) && !name.contains('/') {
                std::fs::write(dir.0.join(name), contents)?;
            }
        }
        let script = dir.0.join("warm.py");
        std::fs::write(&script, SCRIPT)?;
        let (control, theirs) = seqpacket()?;
        let Some((interpreter, flags)) = program.argv.split_first() else {
            return Err(std::io::Error::other("no command"));
        };
        let flags = &flags[..flags.len().saturating_sub(1)];
        let mut command = Command::new(interpreter);
        command
            .args(flags)
            .arg(&script)
            .arg(&dir.0)
            .arg(&warm.main)
            .env_clear()
            .env("PATH", PATH)
            .env("LANG", "C.UTF-8")
            .envs(program.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        super::setup::child_of_harness(&mut command);
        let fd = theirs.as_raw_fd();
        // SAFETY: dup2 is async-signal-safe; it clears close-on-exec on the copy.
        unsafe {
            command.pre_exec(move || {
                if libc::dup2(fd, 3) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        // A thread of its own starts the zygote and waits for it: the
        // parent-death signal fires when the thread that forked a child ends,
        // and the thread asking first may be a short-lived one.
        let (started, pid) = std::sync::mpsc::sync_channel(1);
        let alive = Arc::new(AtomicBool::new(true));
        let watch = alive.clone();
        std::thread::Builder::new()
            .name("zygote".into())
            .spawn(move || match command.spawn() {
                Ok(mut child) => {
                    let _ = started.send(Ok(child.id()));
                    let _ = child.wait();
                    watch.store(false, Ordering::Relaxed);
                }
                Err(e) => {
                    let _ = started.send(Err(e));
                }
            })?;
        let pid = pid
            .recv()
            .map_err(|_| std::io::Error::other("the zygote's thread is gone"))??;
        drop(theirs);
        // The zygote says it is ready once its modules are imported.
        ready(&control)?;
        Ok(Zygote {
            control,
            pid,
            alive,
            seated: Mutex::default(),
            _dir: dir,
        })
    }

    /// Forks a confined child for `plan` in `seat` (when there is one);
    /// returns the pid of its first process, which then confines itself
    /// (see [`WarmRun::started`]).
    pub(super) fn run(
        &self,
        plan: &ChildPlan,
        seat: Option<&Lease>,
        stdio: [RawFd; 3],
        env: &[(String, String)],
        script: &str,
    ) -> Result<WarmRun, SandboxError> {
        let io = |what: &str, e: std::io::Error| SandboxError::Setup(format!("{what}: {e}"));
        let Some(lease) = seat else {
            return request(&self.control, self.pid, plan, &[], (stdio, env, script));
        };
        let slot = {
            let mut seated = self.seated.lock().unwrap_or_else(|e| e.into_inner());
            let key = Arc::as_ptr(lease.seat()) as usize;
            seated.entry(key).or_default().clone()
        };
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        if slot.as_ref().is_some_and(|s| exited(&s.pidfd)) {
            *slot = None;
        }
        if slot.is_none() {
            *slot = self.seat_in(lease);
        }
        if let Some(seated) = &*slot {
            return request(&seated.control, seated.pid, plan, &[], (stdio, env, script));
        }
        // No zygote could stay in the seat: the child moves itself in.
        let cgroups = lease
            .procs_files()
            .map_err(|e| io("open the run's cgroup", e))?;
        request(
            &self.control,
            self.pid,
            plan,
            &cgroups,
            (stdio, env, script),
        )
    }

    /// Forks a zygote into `lease`'s seat; `None` when it could not move in.
    fn seat_in(&self, lease: &Lease) -> Option<Seated> {
        let cgroups = lease.procs_files().ok()?;
        let (control, theirs) = seqpacket().ok()?;
        let mut fds = vec![theirs.as_raw_fd()];
        fds.extend(cgroups.iter().map(AsRawFd::as_raw_fd));
        send_fds(&self.control, b"s", &fds).ok()?;
        drop((theirs, cgroups));
        let pid = ready(&control).ok()?;
        // Its parent, the zygote, reaps it: it stays until its socket closes.
        let pidfd = pidfd_open(pid as libc::pid_t)?;
        let seat = lease.seat().clone();
        seat.settle(pid as i32).ok()?;
        Some(Seated {
            control,
            pid,
            pidfd,
            seat,
        })
    }
}

/// Waits for a zygote's "ready" (`R<pid>`) and returns its pid.
fn ready(control: &OwnedFd) -> std::io::Result<u32> {
    let message = receive(control, Some(START_LIMIT))?;
    std::str::from_utf8(&message)
        .ok()
        .and_then(|m| m.strip_prefix('R'))
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| std::io::Error::other("the zygote did not start"))
}

/// Asks the zygote on `control` (process `pid`) to fork a child for `plan`.
fn request(
    control: &OwnedFd,
    pid: u32,
    plan: &ChildPlan,
    cgroups: &[OwnedFd],
    (stdio, env, script): ([RawFd; 3], &[(String, String)], &str),
) -> Result<WarmRun, SandboxError> {
    let io = |what: &str, e: std::io::Error| SandboxError::Setup(format!("{what}: {e}"));
    let (socket, theirs) = seqpacket().map_err(|e| io("socketpair", e))?;
    let mut fds: Vec<RawFd> = vec![theirs.as_raw_fd()];
    let plan_file = plan_file(plan, (cgroups, stdio), (env, script, pid), &mut fds)
        .map_err(|e| io("write the plan", e))?;
    fds.insert(1, plan_file.as_raw_fd());
    send_fds(control, b"r", &fds).map_err(|e| io("reach the zygote", e))?;
    // The fork's pid is read with its start (`WarmRun::started`): meanwhile
    // the harness asks for a pair's other program.
    Ok(WarmRun {
        socket,
        pid: None,
        started: false,
    })
}

impl WarmRun {
    /// Waits until the child is confined and its program starts, or names
    /// the step that failed; returns the pid of the run's first process.
    pub(super) fn started(&mut self, program: &Program) -> Result<libc::pid_t, SandboxError> {
        let pid = match self.pid {
            Some(pid) => pid,
            None => {
                let message = receive(&self.socket, None).unwrap_or_default();
                let pid = std::str::from_utf8(&message)
                    .ok()
                    .and_then(|m| m.strip_prefix('P'))
                    .and_then(|p| p.parse().ok())
                    .ok_or_else(|| SandboxError::Setup("the zygote did not fork".into()))?;
                *self.pid.insert(pid)
            }
        };
        if self.started {
            return Ok(pid);
        }
        let message = receive(&self.socket, None).unwrap_or_default();
        let why = match message.split_first() {
            Some((b'G', _)) => {
                self.started = true;
                return Ok(pid);
            }
            Some((b'E', step)) => String::from_utf8_lossy(step).into_owned(),
            _ => "the run ended before its program started".into(),
        };
        Err(SandboxError::Setup(format!(
            "{why} (running {} warm)",
            program.argv[0]
        )))
    }

    /// Waits for the zygote's report of how the run's first process ended.
    pub(super) fn reap(self) -> (libc::c_int, libc::rusage) {
        // SAFETY: rusage is plain data.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let message = receive(&self.socket, None).unwrap_or_default();
        let text = String::from_utf8_lossy(&message);
        let numbers: Vec<i64> = text
            .strip_prefix('X')
            .unwrap_or("")
            .split(' ')
            .filter_map(|n| n.parse().ok())
            .collect();
        let [status, user, system, rss] = numbers[..] else {
            // A lost zygote: report the run killed.
            return (libc::SIGKILL, usage);
        };
        let timeval = |micros: i64| libc::timeval {
            tv_sec: micros / 1_000_000,
            tv_usec: micros % 1_000_000,
        };
        usage.ru_utime = timeval(user);
        usage.ru_stime = timeval(system);
        usage.ru_maxrss = rss;
        (status as libc::c_int, usage)
    }
}
