//! Seats: cgroups kept for the harness's lifetime, one per program running
//! at once, each holding one run's process tree at a time.
//!
//! Moving a process into a cgroup waits for an RCU grace period, about ten
//! milliseconds here: four times the sandbox's whole cost. So nothing moves
//! per run. On cgroup v1 each seat has a thread of ours that joined the
//! seat's cgroups once, and forks the seat's programs, which start inside.
//! On v2 a thread cannot join a memory cgroup without its process, so the
//! child moves itself in (see `child.rs`) and pays the wait.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

/// Which cgroup hierarchy bounds the tree (here, below `cgroup`, which
/// probes for it, so the two files do not import each other).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Version {
    /// cgroup v1: one hierarchy per controller.
    V1,
    /// cgroup v2: the unified hierarchy.
    V2,
}

type Job = Box<dyn FnOnce() + Send>;

/// A seat's cgroups and how its programs get into them.
pub(super) struct Seat {
    version: Version,
    memory: Option<PathBuf>,
    pids: Option<PathBuf>,
    /// v1: the thread inside the seat's cgroups that forks its programs.
    spawner: Option<Mutex<mpsc::Sender<Job>>>,
    /// v2: `cgroup.procs` of each, for the child to write itself into.
    procs: Vec<OwnedFd>,
    /// The (memory, processes) limits written last.
    written: Mutex<(u64, u64)>,
    /// Processes of ours that live in the seat across runs (zygotes forked
    /// into it, `zygote.rs`): spared when a run's leftovers are killed, and
    /// not counted against a run's processes.
    residents: Mutex<Vec<i32>>,
}

/// A seat held by one run: its limits set, its OOM count noted; when
/// dropped, whatever is left in it is killed and the seat is free again.
pub(super) struct Lease {
    seat: Arc<Seat>,
    free: Arc<Mutex<Vec<Arc<Seat>>>>,
    ooms: u64,
}

impl Seat {
    /// Makes the seat's cgroups and, on v1, its thread.
    pub(super) fn new(
        version: Version,
        memory: Option<PathBuf>,
        pids: Option<PathBuf>,
    ) -> std::io::Result<Seat> {
        let dirs: Vec<PathBuf> = memory.iter().chain(&pids).cloned().collect();
        for dir in &dirs {
            match std::fs::create_dir(dir) {
                Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
                _ => {}
            }
        }
        let (spawner, procs) = match version {
            Version::V1 => (Some(Mutex::new(spawner(dirs)?)), Vec::new()),
            Version::V2 => {
                let procs = dirs
                    .iter()
                    .map(|d| open_write(&d.join("cgroup.procs")))
                    .collect::<std::io::Result<_>>()?;
                (None, procs)
            }
        };
        Ok(Seat {
            version,
            memory,
            pids,
            spawner,
            procs,
            written: Mutex::new((0, 0)),
            residents: Mutex::default(),
        })
    }

    /// Writes the limits a run asks for, where they differ from the last.
    fn limit(&self, memory: u64, processes: u64) -> std::io::Result<()> {
        let mut written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(dir) = &self.memory
            && written.0 != memory
        {
            let (limit, swap) = match self.version {
                // Swap would let the tree hold more than its limit.
                Version::V2 => (("memory.max", memory), ("memory.swap.max", 0)),
                // v1 caps memory + swap, never below the memory limit: raise it first, lower it last.
                Version::V1 => (
                    ("memory.limit_in_bytes", memory),
                    ("memory.memsw.limit_in_bytes", memory),
                ),
            };
            let order = if memory > written.0 {
                [swap, limit]
            } else {
                [limit, swap]
            };
            for (file, value) in order {
                match std::fs::write(dir.join(file), value.to_string()) {
                    // Swap accounting may be off; the memory limit itself must hold.
                    Err(e) if file == limit.0 => return Err(e),
                    _ => {}
                }
            }
            written.0 = memory;
        }
        if written.1 != processes {
            self.write_pids(processes)?;
            written.1 = processes;
        }
        Ok(())
    }

    /// `pids.max` for a run of `processes` tasks: the seat's own tasks, which
    /// are not the run's, come on top.
    fn write_pids(&self, processes: u64) -> std::io::Result<()> {
        let Some(dir) = &self.pids else {
            return Ok(());
        };
        // On v1 the seat's own thread counts too.
        let own = u64::from(self.spawner.is_some()) + self.residents().len() as u64;
        std::fs::write(dir.join("pids.max"), (processes + own).to_string())
    }

    fn residents(&self) -> std::sync::MutexGuard<'_, Vec<i32>> {
        self.residents.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts `pid`, a process of ours that joined the seat to stay, as the
    /// seat's own.
    pub(super) fn settle(&self, pid: i32) -> std::io::Result<()> {
        self.residents().push(pid);
        let processes = self.written.lock().unwrap_or_else(|e| e.into_inner()).1;
        self.write_pids(processes)
    }

    /// Forgets resident `pid` (it is gone, or about to be).
    pub(super) fn unsettle(&self, pid: i32) {
        self.residents().retain(|&p| p != pid);
    }

    /// Kills on the seat's memory cgroup so far.
    fn ooms(&self) -> u64 {
        let Some(dir) = &self.memory else {
            return 0;
        };
        let file = match self.version {
            Version::V2 => "memory.events",
            Version::V1 => "memory.oom_control",
        };
        let text = std::fs::read_to_string(dir.join(file)).unwrap_or_default();
        text.lines()
            .find_map(|l| l.strip_prefix("oom_kill "))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Lease {
    /// Holds `seat` for one run whose tree may use `memory` bytes and
    /// `processes` tasks; `free` takes it back when dropped.
    pub(super) fn new(
        seat: Arc<Seat>,
        free: Arc<Mutex<Vec<Arc<Seat>>>>,
        memory: u64,
        processes: u64,
    ) -> std::io::Result<Lease> {
        let lease = Lease {
            ooms: seat.ooms(),
            seat,
            free,
        };
        lease.seat.limit(memory, processes)?;
        Ok(lease)
    }

    /// Starts `command` inside the seat: forked by the seat's thread (v1), or
    /// here, its child moving itself in through [`Lease::join_fds`] (v2).
    pub(super) fn spawn(&self, mut command: Command) -> std::io::Result<Child> {
        let Some(jobs) = &self.seat.spawner else {
            return command.spawn();
        };
        let (done, result) = mpsc::sync_channel(1);
        let job: Job = Box::new(move || {
            let _ = done.send(command.spawn());
        });
        let gone = || std::io::Error::other("a sandbox seat's thread is gone");
        jobs.lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(job)
            .map_err(|_| gone())?;
        result.recv().map_err(|_| gone())?
    }

    /// `cgroup.procs` descriptors the child writes itself into (v2 only).
    pub(super) fn join_fds(&self) -> Vec<RawFd> {
        self.seat.procs.iter().map(AsRawFd::as_raw_fd).collect()
    }

    /// `cgroup.procs` of each of the seat's cgroups, open for writing: a
    /// process forked elsewhere (a zygote's child) writes itself in, on v1
    /// as on v2.
    pub(super) fn procs_files(&self) -> std::io::Result<Vec<OwnedFd>> {
        if !self.seat.procs.is_empty() {
            return self.seat.procs.iter().map(OwnedFd::try_clone).collect();
        }
        let open = |dir: &PathBuf| -> std::io::Result<OwnedFd> {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"))?;
            Ok(file.into())
        };
        self.seat
            .memory
            .iter()
            .chain(&self.seat.pids)
            .map(open)
            .collect()
    }

    /// The seat held.
    pub(super) fn seat(&self) -> &Arc<Seat> {
        &self.seat
    }

    /// Whether the kernel killed a process of the tree for its memory.
    pub(super) fn oom_killed(&self) -> bool {
        self.seat.ooms() > self.ooms
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // An isolated tree dies with its namespace; a tree run --unsandboxed
        // may leave processes behind, which the next run must not meet.
        let residents = self.seat.residents().clone();
        for dir in self.seat.memory.iter().chain(&self.seat.pids) {
            kill_all_but(dir, &residents);
        }
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        free.push(self.seat.clone());
    }
}

/// SIGKILL to every process in cgroup `dir` but this one (a v1 seat holds
/// one of our threads).
pub(super) fn kill_all_in(dir: &Path) {
    kill_all_but(dir, &[]);
}

/// [`kill_all_in`], sparing `residents` too.
fn kill_all_but(dir: &Path, residents: &[i32]) {
    let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
    let us = std::process::id() as i32;
    for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
        if pid != us && !residents.contains(&pid) {
            // SAFETY: a process in a cgroup of ours.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// A thread that joins `dirs` (v1 `tasks`) and then runs the jobs it is sent.
fn spawner(dirs: Vec<PathBuf>) -> std::io::Result<mpsc::Sender<Job>> {
    let (jobs, queue) = mpsc::channel::<Job>();
    let (ready, joined) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("sandbox-seat".into())
        .spawn(move || {
            // SAFETY: gettid cannot fail.
            let tid = unsafe { libc::gettid() };
            let join = dirs
                .iter()
                .try_for_each(|d| std::fs::write(d.join("tasks"), tid.to_string()));
            let ok = join.is_ok();
            let _ = ready.send(join);
            if ok {
                for job in queue {
                    job();
                }
            }
        })?;
    joined
        .recv()
        .map_err(|_| std::io::Error::other("a sandbox seat's thread did not start"))??;
    Ok(jobs)
}

pub(super) fn open_write(path: &Path) -> std::io::Result<OwnedFd> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| std::io::Error::other("NUL in a cgroup path"))?;
    // SAFETY: open with a valid C string; a non-negative result is ours.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::super::cgroup::TreeLimits;
    use super::*;

    /// The cgroup paths of process `pid`, one line per hierarchy.
    fn cgroups_of(pid: u32) -> String {
        std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default()
    }

    /// Whether `child` ended by SIGKILL.
    fn killed(child: &mut Child) -> bool {
        let status = child.wait().unwrap();
        std::os::unix::process::ExitStatusExt::signal(&status) == Some(libc::SIGKILL)
    }

    fn sleep() -> Command {
        let mut command = Command::new("sleep");
        command.arg("30");
        command
    }

    /// A lease with a sleeper inside, or `None` without seats.
    fn leased() -> Option<(TreeLimits, Lease, Child)> {
        // Only root with delegated controllers has seats at all.
        let tree = TreeLimits::probe()?;
        let lease = tree.lease(64 << 20, 16).unwrap();
        let sleeper = lease.spawn(sleep()).unwrap();
        Some((tree, lease, sleeper))
    }

    #[test]
    fn a_seat_starts_programs_inside_is_emptied_and_reused() {
        let Some((tree, lease, mut sleeper)) = leased() else {
            return;
        };
        let dir = lease
            .seat
            .memory
            .iter()
            .chain(&lease.seat.pids)
            .next()
            .unwrap()
            .clone();
        let seat_name = dir.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            cgroups_of(sleeper.id()).contains(&seat_name),
            "{}",
            cgroups_of(sleeper.id())
        );
        assert!(!lease.oom_killed());
        drop(lease);
        // A program left behind is killed when its run lets the seat go.
        assert!(killed(&mut sleeper));
        // The next run takes the same seat, with its own limits.
        let again = tree.lease(32 << 20, 8).unwrap();
        let again_dir = again.seat.memory.iter().chain(&again.seat.pids).next();
        assert_eq!(again_dir, Some(&dir));
        if let Some(memory) = &again.seat.memory {
            let file = match again.seat.version {
                Version::V1 => "memory.limit_in_bytes",
                Version::V2 => "memory.max",
            };
            let limit = std::fs::read_to_string(memory.join(file)).unwrap();
            assert_eq!(limit.trim(), (32u64 << 20).to_string());
        }
    }

    #[test]
    fn a_resident_is_spared_and_not_counted_as_the_runs() {
        let Some((tree, lease, mut resident)) = leased() else {
            return;
        };
        let mut leftover = lease.spawn(sleep()).unwrap();
        let seat = lease.seat().clone();
        seat.settle(resident.id() as i32).unwrap();
        if let Some(pids) = &seat.pids {
            let own = u64::from(seat.spawner.is_some());
            let max = std::fs::read_to_string(pids.join("pids.max")).unwrap();
            assert_eq!(max.trim(), (16 + own + 1).to_string());
        }
        drop(lease);
        assert!(killed(&mut leftover));
        assert!(
            resident.try_wait().unwrap().is_none(),
            "the resident was killed"
        );
        seat.unsettle(resident.id() as i32);
        // Gone from the residents, it is a leftover like any other.
        drop(tree.lease(64 << 20, 16).unwrap());
        assert!(killed(&mut resident));
    }
}
