//! A warm run as the harness holds it (`zygote.rs` starts it): the request
//! that asks a zygote to clone the run's child, then the run's own socket,
//! on which the child says its program started and the zygote says how it
//! ended.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use super::child::ChildPlan;
use super::zygote_io::{plan_file, receive_fd, send_fds, seqpacket};
use super::{Program, SandboxError};

/// How long a run's child may take to confine itself and start its program
/// before the run is given up as the sandbox's failure (its own time has
/// not started: a slow setup is the machine's, not the program's).
const SETUP_LIMIT: Duration = Duration::from_secs(20);

/// What the harness holds of a warm run: its socket, on which the zygote
/// reports the exit.
pub(super) struct WarmRun {
    socket: OwnedFd,
    /// The run's child (its init, or a main that is its own), once the
    /// zygote said it cloned it, with the pidfd the zygote took before it
    /// could reap the child.
    pid: Option<(libc::pid_t, OwnedFd)>,
    /// Whether the program was seen to start.
    started: bool,
}

/// Asks the zygote on `control` to clone a child for `plan`. The message
/// says whether the main is its own init (`m`) or runs under one (`r`),
/// and names the run's uid and gid, which the zygote gives the child.
pub(super) fn request(
    control: &OwnedFd,
    (plan, main_is_init): (&ChildPlan, bool),
    cgroups: &[OwnedFd],
    (stdio, env, script): ([RawFd; 3], &[(String, String)], &str),
) -> Result<WarmRun, SandboxError> {
    let io = |what: &str, e: std::io::Error| SandboxError::Setup(format!("{what}: {e}"));
    let (socket, theirs) = seqpacket().map_err(|e| io("socketpair", e))?;
    let mut fds: Vec<RawFd> = vec![theirs.as_raw_fd()];
    let plan_file = plan_file(plan, (cgroups, stdio), (env, script), &mut fds)
        .map_err(|e| io("write the plan", e))?;
    fds.insert(1, plan_file.as_raw_fd());
    let kind = if main_is_init { 'm' } else { 'r' };
    let message = match plan.ids {
        Some((uid, gid)) => format!("{kind}{uid} {gid}"),
        None => kind.to_string(),
    };
    send_fds(control, message.as_bytes(), &fds).map_err(|e| io("reach the zygote", e))?;
    // The clone's pid is read with its start (`WarmRun::started`): meanwhile
    // the harness asks for a pair's other program.
    Ok(WarmRun {
        socket,
        pid: None,
        started: false,
    })
}

/// The zygote's `P<pid>` message's pid and the pidfd sent with it.
fn clone_of(pid: &[u8], pidfd: Option<OwnedFd>) -> Option<(libc::pid_t, OwnedFd)> {
    let pid = std::str::from_utf8(pid)
        .ok()?
        .parse()
        .ok()
        .filter(|&p: &libc::pid_t| p > 0)?;
    Some((pid, pidfd?))
}

impl WarmRun {
    /// The run's next message but the zygote's `P<pid>`, which is taken
    /// wherever it comes: the zygote sends it once the clone returns, and
    /// the child may say `G` or `E` before that. Empty at end of file.
    fn next(&mut self, limit: Option<Duration>) -> Result<Vec<u8>, std::io::Error> {
        let deadline = limit.map(|l| Instant::now() + l);
        loop {
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            let (message, fd) = match receive_fd(&self.socket, left) {
                Ok(received) => received,
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return Err(e),
                Err(_) => (Vec::new(), None),
            };
            match message.split_first() {
                Some((b'P', pid)) if self.pid.is_none() => {
                    self.pid = clone_of(pid, fd);
                    // A malformed pid stands for a lost zygote.
                    if self.pid.is_none() {
                        return Ok(Vec::new());
                    }
                }
                _ => return Ok(message),
            }
        }
    }

    /// Waits until the child is confined and its program starts, or names
    /// the step that failed; returns the pid of the run's child (PID 1 of
    /// its namespace, the zygote's child) and a pidfd that holds it.
    pub(super) fn started(
        &mut self,
        program: &Program,
    ) -> Result<(libc::pid_t, OwnedFd), SandboxError> {
        let failed =
            |why: &str| SandboxError::Setup(format!("{why} (running {} warm)", program.argv[0]));
        if !self.started {
            let first = self.next(Some(SETUP_LIMIT)).map_err(|_| {
                failed(&format!(
                    "its program did not start within {} s",
                    SETUP_LIMIT.as_secs()
                ))
            })?;
            match first.split_first() {
                Some((b'G', _)) => self.started = true,
                Some((b'E', step)) => return Err(failed(&String::from_utf8_lossy(step))),
                _ => return Err(failed("the run ended before its program started")),
            }
        }
        if self.pid.is_none() {
            // The program started, so the clone returned: only the zygote's
            // `P` can come before its `X`, which follows the run's end.
            let (message, fd) = receive_fd(&self.socket, None).unwrap_or_default();
            self.pid = message.strip_prefix(b"P").and_then(|pid| clone_of(pid, fd));
        }
        self.pid
            .take()
            .ok_or_else(|| failed("the zygote did not clone"))
    }

    /// Waits for the zygote's report of how the run's program ended, with
    /// the usage of its whole tree.
    pub(super) fn reap(mut self) -> (libc::c_int, libc::rusage) {
        // SAFETY: rusage is plain data.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let message = self.next(None).unwrap_or_default();
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
