//! Waiting for sandboxed processes: their output read with a size cap, their
//! exits watched through pidfds, and a wall-clock deadline, all in one `poll`
//! loop. Linked programs are watched together: when the leader (the one
//! whose output decides) ends, the others are stopped.

use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use super::Killed;

/// A started process to watch.
pub(super) struct Watch<'a> {
    /// Its pid, for its pidfd.
    pub pid: libc::pid_t,
    /// Its standard output.
    pub stdout: std::fs::File,
    /// Its standard error.
    pub stderr: std::fs::File,
    /// Kills it and everything it started.
    pub kill: &'a dyn Fn(),
    /// The CPU time its whole tree may use; past it, a busy tree gets no
    /// more wall-clock time.
    pub cpu_budget: Duration,
    /// A CPU limit finer than RLIMIT_CPU's whole seconds, which any one
    /// process of the tree may use before the tree is killed.
    pub cpu_limit: Option<Duration>,
}

/// What the loop saw of one process.
#[derive(Default)]
pub(super) struct Captured {
    /// Standard output, at most the cap.
    pub stdout: Vec<u8>,
    /// Standard error, at most the cap.
    pub stderr: Vec<u8>,
    /// Why the loop killed the process, if it did.
    pub killed: Killed,
    /// CPU time of its whole tree as last seen (at a deadline check): the
    /// processes killed with it are never reaped into its own usage.
    pub tree_cpu: Duration,
}

/// How long to keep reading after a process exited, for output still in flight.
const DRAIN_GRACE: Duration = Duration::from_millis(200);

/// How much longer than its wall-clock budget a process that is still
/// computing may run. On a loaded machine a CPU-bound program reaches its CPU
/// limit late; its verdict should name that limit, not the load. A program
/// that waits instead of computing gets no extension, nor does a tree that
/// has already used its CPU budget across its processes (a fork bomb: each
/// process stays under its own limit while the tree computes on every core).
const BUSY_STRETCH: u32 = 3;

/// The step by which a busy process's deadline moves.
const BUSY_STEP: Duration = Duration::from_millis(500);

/// How often a fractional CPU limit is checked: the CPU clock's tick on
/// Linux, so a program is stopped within about a tick of its limit.
const CPU_WATCH_STEP: Duration = Duration::from_millis(10);

struct Watched<'a> {
    pid: libc::pid_t,
    /// CPU clock ticks seen at the last deadline check.
    cpu_seen: u64,
    /// CPU clock ticks the tree may use before its deadline stops moving.
    cpu_budget: u64,
    /// CPU clock ticks any one process may use, when the limit is finer
    /// than whole seconds.
    cpu_limit: Option<u64>,
    streams: [Stream; 2],
    pidfd: Option<OwnedFd>,
    exited: bool,
    drain_until: Option<Instant>,
    /// When to stop it, the leader having ended.
    stop_at: Option<Instant>,
    kill: &'a dyn Fn(),
    out: Captured,
}

impl Watched<'_> {
    fn done(&self, now: Instant) -> bool {
        let closed = self.streams.iter().all(|s| s.file.is_none());
        // Without a pidfd (kernels before 5.3), closed pipes stand for the exit.
        if self.pidfd.is_none() {
            return closed;
        }
        self.exited && (closed || self.drain_until.is_some_and(|t| now >= t))
    }

    fn end(&mut self, flag: fn(&mut Killed)) {
        if !self.exited {
            flag(&mut self.out.killed);
            (self.kill)();
        }
    }
}

/// Reads every process's output until all have exited; kills all at
/// `deadline`, one whose output passes `cap` bytes, and the others if they
/// still run a moment after `leader` has exited.
pub(super) fn capture(
    watches: Vec<Watch>,
    deadline: Instant,
    cap: usize,
    leader: Option<usize>,
) -> Vec<Captured> {
    let mut procs: Vec<Watched> = watches
        .into_iter()
        .map(|w| Watched {
            pid: w.pid,
            cpu_seen: 0,
            cpu_budget: ticks_in(w.cpu_budget),
            cpu_limit: w.cpu_limit.map(exact_ticks),
            pidfd: pidfd_open(w.pid),
            streams: [Stream::new(w.stdout), Stream::new(w.stderr)],
            exited: false,
            drain_until: None,
            stop_at: None,
            kill: w.kill,
            out: Captured::default(),
        })
        .collect();
    let mut deadline = deadline;
    let hard_deadline =
        deadline + deadline.saturating_duration_since(Instant::now()) * BUSY_STRETCH;
    loop {
        let now = Instant::now();
        if procs.iter().all(|p| p.done(now)) {
            break;
        }
        if now >= deadline && now < hard_deadline && still_computing(&mut procs) {
            deadline = (now + BUSY_STEP).min(hard_deadline);
        }
        if now >= deadline {
            for p in &mut procs {
                p.cpu_seen = p.cpu_seen.max(cpu_ticks(p.pid));
                p.end(|c| c.timed_out = true);
            }
            break;
        }
        let mut wake_by = deadline;
        for p in procs.iter_mut().filter(|p| !p.exited) {
            let Some(limit) = p.cpu_limit else { continue };
            if tree_pids(p.pid)
                .into_iter()
                .any(|q| process_ticks(q) >= limit)
            {
                p.cpu_seen = p.cpu_seen.max(cpu_ticks(p.pid));
                p.end(|c| c.cpu_limited = true);
            }
            wake_by = wake_by.min(now + CPU_WATCH_STEP);
        }
        let (slots, mut fds, wake) = poll_set(&procs, wake_by);
        let timeout = wake
            .saturating_duration_since(now)
            .as_millis()
            .min(i32::MAX as u128) as i32
            + 1;
        // SAFETY: `fds` is a valid array of pollfd for its length.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
        if rc < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            break;
        }
        let mut leader_exited = false;
        for (&(i, stream), fd) in slots.iter().zip(&fds) {
            if fd.revents == 0 {
                continue;
            }
            let p = &mut procs[i];
            match stream {
                Some(s) => p.streams[s].read_some(),
                None => {
                    p.exited = true;
                    // Output may still be in flight from the process's last moments.
                    p.drain_until = Some(Instant::now() + DRAIN_GRACE);
                    leader_exited |= leader == Some(i);
                }
            }
            let over = p.streams.iter().map(|s| s.data.len()).sum::<usize>() > cap;
            if over && !p.exited && !p.out.killed.output_limited {
                p.end(|c| c.output_limited = true);
                // Read on until it dies: a closed pipe would let it see EPIPE and act on it.
                p.streams.iter_mut().for_each(|s| s.discard = true);
            }
        }
        if leader_exited {
            // The others usually end by themselves once the leader has (their
            // input closes); those still running after the grace are stopped.
            let stop_at = Instant::now() + DRAIN_GRACE;
            for p in procs.iter_mut().filter(|p| !p.exited) {
                p.stop_at = Some(stop_at);
            }
        }
        let now = Instant::now();
        for p in procs
            .iter_mut()
            .filter(|p| p.stop_at.is_some_and(|t| now >= t))
        {
            p.stop_at = None;
            p.end(|c| c.stopped = true);
        }
    }
    procs
        .into_iter()
        .map(|p| {
            let [o, e] = p.streams;
            let mut out = p.out;
            out.stdout = o.data;
            out.stderr = e.data;
            out.stdout.truncate(cap);
            out.stderr.truncate(cap);
            out.tree_cpu = ticks_to_duration(p.cpu_seen);
            out
        })
        .collect()
}

/// What a pollfd watches: (process, its stream, or `None` for its pidfd).
type Slot = (usize, Option<usize>);

/// What to poll: each open stream and each running process's pidfd, each
/// slot beside its pollfd; and when to wake at the latest.
/// Whether a running process used CPU since the last check (which it
/// records) and is still short of its CPU budget.
fn still_computing(procs: &mut [Watched]) -> bool {
    let mut busy = false;
    for p in procs.iter_mut().filter(|p| !p.exited) {
        let ticks = cpu_ticks(p.pid);
        busy |= ticks > p.cpu_seen && ticks < p.cpu_budget;
        p.cpu_seen = ticks;
    }
    busy
}

/// CPU clock ticks as time.
fn ticks_to_duration(ticks: u64) -> Duration {
    Duration::from_secs_f64(ticks as f64 / clock_ticks_per_sec() as f64)
}

/// The kernel's CPU clock ticks per second.
fn clock_ticks_per_sec() -> u64 {
    // SAFETY: sysconf reads a constant of the running system.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64
}

/// `d` in CPU clock ticks, rounded up.
fn exact_ticks(d: Duration) -> u64 {
    (d.as_secs_f64() * clock_ticks_per_sec() as f64).ceil() as u64
}

/// `d` in CPU clock ticks, plus one second: the kernel's own CPU limit
/// fires at the budget, and the tick count lags it a little.
fn ticks_in(d: Duration) -> u64 {
    let per_sec = clock_ticks_per_sec();
    (d.as_secs_f64() * per_sec as f64) as u64 + per_sec
}

/// User plus system CPU clock ticks of `pid` and every process below it:
/// the watched process is the sandbox's init, and the program runs under it.
/// 0 when nothing can be read (the tree is gone).
fn cpu_ticks(pid: libc::pid_t) -> u64 {
    tree_pids(pid).into_iter().map(own_ticks).sum()
}

/// `pid` and every process below it, as far as `/proc` shows them.
fn tree_pids(pid: libc::pid_t) -> Vec<libc::pid_t> {
    let mut tree = Vec::new();
    let mut pending = vec![pid];
    // Bounded: a tree is capped by its cgroup's process limit, and this by far.
    while let Some(p) = pending.pop() {
        if tree.len() >= 4096 {
            break;
        }
        tree.push(p);
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            pending.extend(
                children
                    .split_whitespace()
                    .filter_map(|c| c.parse::<libc::pid_t>().ok()),
            );
        }
    }
    tree
}

/// User and system CPU clock ticks of one process, with those of its children
/// already reaped, from `/proc/<pid>/stat`.
fn own_ticks(pid: libc::pid_t) -> u64 {
    stat_ticks(pid, 14)
}

/// User and system CPU clock ticks of one process alone: what RLIMIT_CPU counts.
fn process_ticks(pid: libc::pid_t) -> u64 {
    stat_ticks(pid, 12)
}

/// The sum of `/proc/<pid>/stat`'s time fields from utime up to `last`
/// (counted after the command name: 11 utime, 12 stime, 13 cutime, 14 cstime).
fn stat_ticks(pid: libc::pid_t, last: usize) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    // The command name may hold spaces and parentheses: fields start after the last `)`.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return 0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After `)`: state is field 3 of the man page, so utime, stime, cutime and
    // cstime (14-17) are 11-14 here.
    let field = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (11..=last).map(field).sum()
}

fn poll_set(procs: &[Watched], deadline: Instant) -> (Vec<Slot>, Vec<libc::pollfd>, Instant) {
    let mut slots = Vec::new();
    let mut fds = Vec::new();
    let mut wake = deadline;
    for (i, p) in procs.iter().enumerate() {
        for (s, stream) in p.streams.iter().enumerate() {
            if let Some(file) = &stream.file {
                slots.push((i, Some(s)));
                fds.push(pollfd(file.as_raw_fd()));
            }
        }
        match (&p.pidfd, p.exited) {
            (Some(fd), false) => {
                slots.push((i, None));
                fds.push(pollfd(fd.as_raw_fd()));
            }
            _ => wake = wake.min(p.drain_until.unwrap_or(deadline)),
        }
        wake = wake.min(p.stop_at.unwrap_or(deadline));
    }
    (slots, fds, wake)
}

fn pollfd(fd: libc::c_int) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

struct Stream {
    file: Option<std::fs::File>,
    data: Vec<u8>,
    /// Past the cap: read and drop.
    discard: bool,
}

impl Stream {
    fn new(file: std::fs::File) -> Stream {
        Stream {
            file: Some(file),
            data: Vec::new(),
            discard: false,
        }
    }

    fn read_some(&mut self) {
        let mut buf = [0u8; 16 * 1024];
        match self.file.as_mut().map(|f| f.read(&mut buf)) {
            Some(Ok(0)) | Some(Err(_)) => self.file = None,
            Some(Ok(_)) if self.discard => {}
            Some(Ok(n)) => self.data.extend_from_slice(&buf[..n]),
            None => {}
        }
    }
}

pub(super) fn pidfd_open(pid: libc::pid_t) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    // SAFETY: a non-negative return is a descriptor we now own.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Whether the process behind `pidfd` has exited (its pid may be reused).
pub(super) fn exited(pidfd: &OwnedFd) -> bool {
    let mut poll = libc::pollfd {
        fd: pidfd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd on the stack, no waiting.
    unsafe { libc::poll(&mut poll, 1, 0) != 0 }
}

/// SIGKILL to the PID namespace's init under an isolated run's first process
/// `first`; false when it has none (yet, or any more). The kernel kills the
/// rest of the namespace and reports init's exit only once all of it is gone,
/// so the first process, which waits for init, outlives the whole tree.
pub(super) fn kill_namespace_init(first: libc::pid_t) -> bool {
    let path = format!("/proc/{first}/task/{first}/children");
    let children = std::fs::read_to_string(path).unwrap_or_default();
    let Some(init) = children.split_whitespace().find_map(|c| c.parse().ok()) else {
        return false;
    };
    let Some(pidfd) = pidfd_open(init) else {
        return false;
    };
    // The descriptor holds the process itself: once it is known to be the
    // first process's child, a reused pid cannot redirect the signal.
    if parent_of(init) != Some(first) {
        return false;
    }
    signal(&pidfd, libc::SIGKILL)
}

/// Sends `sig` to the process behind `pidfd`; whether it was sent.
pub(super) fn signal(pidfd: &OwnedFd, sig: libc::c_int) -> bool {
    // SAFETY: a pidfd we own, a signal number, no siginfo, no flags.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            sig,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    rc == 0
}

/// The parent of `pid`, from `/proc/<pid>/stat`.
fn parent_of(pid: libc::pid_t) -> Option<libc::pid_t> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name's last `)`: the state, then the parent.
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Reaps `pid`, returning its wait status and resource use.
pub(super) fn reap(pid: libc::pid_t) -> (libc::c_int, libc::rusage) {
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid pointers to locals.
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if rc >= 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return (status, usage);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_ticks_count_this_process_and_nothing_for_a_gone_one() {
        let start = Instant::now();
        let mut x = 0u64;
        while start.elapsed() < Duration::from_millis(60) {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        assert!(cpu_ticks(std::process::id() as libc::pid_t) > 0);
        assert_eq!(cpu_ticks(libc::pid_t::MAX), 0);
    }

    #[test]
    fn cpu_ticks_count_a_busy_grandchild() {
        let mut shell = std::process::Command::new("sh")
            .args(["-c", "sh -c 'while :; do :; done' & wait"])
            .spawn()
            .expect("sh runs");
        let pid = shell.id() as libc::pid_t;
        let start = Instant::now();
        let mut ticks = 0;
        while ticks == 0 && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(50));
            ticks = cpu_ticks(pid);
        }
        // End the tree by its process group's members, all started here.
        let _ = std::process::Command::new("pkill")
            .args(["-P", &pid.to_string()])
            .status();
        let _ = shell.kill();
        let _ = shell.wait();
        assert!(ticks > 0, "the busy grandchild's CPU is counted");
    }
}
