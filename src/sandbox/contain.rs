//! Programs the harness starts outside the sandbox (`exec` models, managed
//! servers): set up in one place so that none outlives its call or the harness.
//!
//! - `setup.rs` ([`super::child_of_harness`]): a process group, default
//!   signals and the parent-death signal, so a harness killed outright
//!   takes the program along.
//! - [`Tree`]: a cgroup of the program's own. A process cannot leave its
//!   cgroup by `setsid`, a double fork or exiting its parent, so killing
//!   every process in it when the call ends (success, failure, timeout,
//!   Ctrl-C) leaves nothing behind. Any writable hierarchy serves, since only
//!   membership counts: cgroup v2 (whose `cgroup.kill` takes the tree down
//!   at once), else a v1 hierarchy. Where none is writable (not root, a
//!   read-only `/sys/fs/cgroup`) a tree holds nothing and the caller has only
//!   the program's process group, which `setsid` escapes.
//!
//! The cgroups are `exec-<n>` beside the sandbox's seats in the harness's
//! `harness-<pid>`, reused from call to call (moving a process in costs an
//! RCU grace period, making a cgroup more), and swept, with whatever is left
//! in them, by the next harness when this one was killed.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use super::cgroup::{mount_dir_of, remove_stale};
use super::child::join_cgroups;
use super::seat::{kill_all_in, open_write};

/// A cgroup holding one program's process tree while it runs; dropping it
/// kills whatever is left in it.
pub(crate) struct Tree(Option<Cell>);

/// One `exec-<n>` cgroup and its `cgroup.procs`, open for a child to join.
struct Cell {
    dir: PathBuf,
    procs: OwnedFd,
}

/// Where trees are made: the harness's `harness-<pid>` in one hierarchy.
struct Cells {
    parent: PathBuf,
    /// Cells not in use.
    free: Mutex<Vec<Cell>>,
    /// Every cell made, for [`kill_all`].
    made: Mutex<Vec<PathBuf>>,
}

static CELLS: OnceLock<Option<Cells>> = OnceLock::new();

impl Tree {
    /// A tree for one program: an empty cgroup when this machine lets the
    /// harness make one, else a tree that holds nothing.
    pub(crate) fn new() -> Tree {
        Tree(cells().and_then(Cells::take))
    }

    /// Whether the tree is a cgroup (else only the process group holds the program).
    pub(crate) fn holds(&self) -> bool {
        self.0.is_some()
    }

    /// Makes `command`'s process join the tree before it runs the program.
    pub(crate) fn enter_on_spawn(&self, command: &mut Command) {
        let Some(cell) = &self.0 else { return };
        let fd = cell.procs.as_raw_fd();
        // SAFETY: `join_cgroups` makes one write system call per descriptor.
        unsafe {
            command.pre_exec(move || join_cgroups(&[fd]));
        }
    }

    /// Kills every process in the tree and waits until none is left.
    pub(crate) fn kill(&self) {
        if let Some(cell) = &self.0 {
            empty(&cell.dir);
        }
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        if let Some(cell) = self.0.take() {
            empty(&cell.dir);
            if let Some(cells) = cells() {
                cells
                    .free
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(cell);
            }
        }
    }
}

/// Kills every process in every tree: the last thing a harness does when a
/// second Ctrl-C ends it at once.
pub(crate) fn kill_all() {
    if let Some(cells) = cells() {
        for dir in cells.made.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            kill_all_in(dir);
        }
    }
}

fn cells() -> Option<&'static Cells> {
    CELLS.get_or_init(Cells::probe).as_ref()
}

impl Cells {
    /// The first hierarchy where `harness-<pid>` can be made: v2, then v1
    /// hierarchies whose controllers cost nothing to join.
    fn probe() -> Option<Cells> {
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let leaf = format!("harness-{}", std::process::id());
        ["", "pids", "freezer", "name=systemd", "memory"]
            .iter()
            .filter_map(|controller| mount_dir_of(&mounts, &own, controller))
            .find_map(|dir| {
                let parent = dir.join(&leaf);
                remove_stale(&dir);
                std::fs::create_dir_all(&parent).ok()?;
                let cells = Cells {
                    parent,
                    free: Mutex::default(),
                    made: Mutex::default(),
                };
                // A hierarchy where a cell cannot be made or joined is no use.
                let trial = cells.take()?;
                cells.free.lock().ok()?.push(trial);
                Some(cells)
            })
    }

    /// A free cell, or a new one.
    fn take(&self) -> Option<Cell> {
        if let Some(cell) = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            return Some(cell);
        }
        let mut made = self.made.lock().unwrap_or_else(|e| e.into_inner());
        let dir = self.parent.join(format!("exec-{}", made.len()));
        match std::fs::create_dir(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return None,
            _ => {}
        }
        let procs = open_write(&dir.join("cgroup.procs")).ok()?;
        made.push(dir.clone());
        Some(Cell { dir, procs })
    }
}

/// Kills every process in cgroup `dir` until none is left: at once through
/// `cgroup.kill` (v2, Linux 5.14+), else one by one, again for any that
/// forked meanwhile. Gives up after a second (a process stuck in the kernel).
fn empty(dir: &Path) {
    let _ = std::fs::write(dir.join("cgroup.kill"), "1");
    for _ in 0..500 {
        let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
        if procs.trim().is_empty() {
            return;
        }
        kill_all_in(dir);
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `pid` runs (a zombie counts as gone).
    fn alive(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| !s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z')))
    }

    #[test]
    fn a_tree_kills_what_left_its_session() {
        let tree = Tree::new();
        // Only root (or a delegated hierarchy) can make the cgroup.
        if !tree.holds() {
            return;
        }
        let mut command = Command::new("sh");
        command.args(["-c", "setsid sleep 30 </dev/null >/dev/null 2>&1 & echo $!"]);
        tree.enter_on_spawn(&mut command);
        let out = command.output().unwrap();
        let pid: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        assert!(
            alive(pid),
            "the detached child runs after its parent exited"
        );
        drop(tree);
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while alive(pid) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(
            !alive(pid),
            "pid {pid} left its session and outlived its tree"
        );
        // The tree is free again, and empty.
        let again = Tree::new();
        assert!(again.holds());
    }
}
