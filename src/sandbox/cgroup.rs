//! Memory and process limits for a run's whole process tree, through cgroups.
//!
//! RLIMIT_AS and RLIMIT_NPROC bound each process (and each uid): a program
//! forking children could still hold its memory limit many times over. A
//! cgroup per run bounds the tree. cgroup v2 (`memory.max`, `pids.max`) when
//! the unified hierarchy gives us those controllers; else the v1 `memory`
//! and `pids` hierarchies of a hybrid system; else none. [`TreeLimits::describe`]
//! says which, for the run's manifest.
//!
//! Each harness process makes `harness-<pid>` under its own cgroup in each
//! hierarchy and, inside it, one `seat-<n>` per program that runs at once;
//! a run takes a free seat (`seat.rs`), whose limits are set for it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::seat::{self, Lease, Seat, Version};

/// Where this process may make cgroups, probed once, and its seats.
pub(super) struct TreeLimits {
    version: Version,
    /// `.../harness-<pid>` with the memory controller.
    memory: Option<PathBuf>,
    /// `.../harness-<pid>` with the pids controller (the same directory on v2).
    pids: Option<PathBuf>,
    /// Seats not in use.
    free: Arc<Mutex<Vec<Arc<Seat>>>>,
}

/// Seats made so far in this process, for their names: process-wide, so that
/// two probes (a test's and the sandbox's) never share a seat's cgroup.
static SEATS: AtomicU32 = AtomicU32::new(0);

impl TreeLimits {
    /// What this machine allows, or `None` when no cgroup can bound a tree
    /// (not root, no controllers delegated to us).
    pub(super) fn probe() -> Option<TreeLimits> {
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return None;
        }
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let leaf = format!("harness-{}", std::process::id());
        if let Some(dir) = v2_dir(&mounts, &own) {
            let made = dir.join(&leaf);
            if enable_v2(&dir, &made) {
                return Some(TreeLimits::new(Version::V2, Some(made.clone()), Some(made)));
            }
        }
        let make = |controller: &str| {
            let dir = v1_dir(&mounts, &own, controller)?.join(&leaf);
            remove_stale(dir.parent()?);
            std::fs::create_dir_all(&dir).ok().map(|()| dir)
        };
        let (memory, pids) = (make("memory"), make("pids"));
        (memory.is_some() || pids.is_some()).then(|| TreeLimits::new(Version::V1, memory, pids))
    }

    fn new(version: Version, memory: Option<PathBuf>, pids: Option<PathBuf>) -> TreeLimits {
        TreeLimits {
            version,
            memory,
            pids,
            free: Arc::default(),
        }
    }

    /// `cgroup v2: memory, pids` and the like, for manifests.
    pub(super) fn describe(&self) -> String {
        let mut bounded = Vec::new();
        if self.memory.is_some() {
            bounded.push("memory");
        }
        if self.pids.is_some() {
            bounded.push("pids");
        }
        let version = match self.version {
            Version::V1 => "v1",
            Version::V2 => "v2",
        };
        format!("cgroup {version}: {}", bounded.join(", "))
    }

    /// A seat for one program whose tree may hold `memory` bytes and
    /// `processes` tasks: a free one, or a new one.
    pub(super) fn lease(&self, memory: u64, processes: u64) -> std::io::Result<Lease> {
        let free = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let seat = match free {
            Some(seat) => seat,
            None => {
                let n = SEATS.fetch_add(1, Ordering::Relaxed);
                let name = format!("seat-{n}");
                let dir = |base: &Option<PathBuf>| base.as_ref().map(|b| b.join(&name));
                Arc::new(Seat::new(self.version, dir(&self.memory), dir(&self.pids))?)
            }
        };
        Lease::new(seat, self.free.clone(), memory, processes)
    }
}

/// Removes a cgroup directory of ours, killing what is left in it first.
fn remove(dir: &Path) {
    for attempt in 0..100 {
        if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
            return;
        }
        if attempt % 20 == 0 {
            seat::kill_all_in(dir);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Removes `harness-<pid>` directories of harness processes that no longer run.
pub(super) fn remove_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("harness-")
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        if let Ok(seats) = std::fs::read_dir(entry.path()) {
            for seat in seats.flatten().filter(|r| r.path().is_dir()) {
                remove(&seat.path());
            }
        }
        let _ = std::fs::remove_dir(entry.path());
    }
}

/// This process's directory in the hierarchy of `controller`: v1's, or
/// the unified (v2) hierarchy's for `""`.
pub(super) fn mount_dir_of(mounts: &str, own: &str, controller: &str) -> Option<PathBuf> {
    if controller.is_empty() {
        v2_dir(mounts, own)
    } else {
        v1_dir(mounts, own, controller)
    }
}

/// The unified hierarchy's directory of this process, when mounted.
fn v2_dir(mounts: &str, own: &str) -> Option<PathBuf> {
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    mount_dir(mounts, |fstype, _| fstype == "cgroup2", path)
}

/// The v1 hierarchy of `controller`'s directory of this process, when mounted.
fn v1_dir(mounts: &str, own: &str, controller: &str) -> Option<PathBuf> {
    let path = own.lines().find_map(|l| {
        let mut fields = l.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        controllers
            .split(',')
            .any(|c| c == controller)
            .then_some(path)
    })?;
    mount_dir(
        mounts,
        |fstype, options| fstype == "cgroup" && options.split(',').any(|o| o == controller),
        path,
    )
}

/// The directory of cgroup `path` under the first mount that `matches`
/// (its file system type and super options), from `/proc/self/mountinfo`.
fn mount_dir(mounts: &str, matches: impl Fn(&str, &str) -> bool, path: &str) -> Option<PathBuf> {
    mounts.lines().find_map(|line| {
        let (fields, tail) = line.split_once(" - ")?;
        let mut tail = tail.split(' ');
        let (fstype, _, options) = (tail.next()?, tail.next()?, tail.next()?);
        if !matches(fstype, options) {
            return None;
        }
        let mut fields = fields.split(' ').skip(3);
        let (root, point) = (fields.next()?, fields.next()?);
        let inside = path.strip_prefix(root.trim_end_matches('/'))?;
        if !(inside.is_empty() || inside.starts_with('/')) {
            return None;
        }
        Some(Path::new(point).join(inside.trim_start_matches('/')))
    })
}

/// Makes `made` under `dir` with the memory and pids controllers, if the
/// unified hierarchy lets us: both available, and `dir` able to hand them down.
fn enable_v2(dir: &Path, made: &Path) -> bool {
    let has = |file: &Path| {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let names: Vec<&str> = text.split_whitespace().collect();
        names.contains(&"memory") && names.contains(&"pids")
    };
    if !has(&dir.join("cgroup.controllers")) {
        return false;
    }
    if !has(&dir.join("cgroup.subtree_control"))
        && std::fs::write(dir.join("cgroup.subtree_control"), "+memory +pids").is_err()
    {
        return false;
    }
    remove_stale(dir);
    std::fs::create_dir_all(made).is_ok()
        && std::fs::write(made.join("cgroup.subtree_control"), "+memory +pids").is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTS: &str = "\
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const OWN: &str = "8:pids:/\n4:memory:/api/abc\n0::/\n";

    #[test]
    fn directories_of_each_hierarchy() {
        assert_eq!(
            v1_dir(MOUNTS, OWN, "memory"),
            Some(PathBuf::from("/sys/fs/cgroup/memory/api/abc"))
        );
        assert_eq!(
            v1_dir(MOUNTS, OWN, "pids"),
            Some(PathBuf::from("/sys/fs/cgroup/pids"))
        );
        assert_eq!(v1_dir(MOUNTS, OWN, "cpu"), None);
        assert_eq!(
            v2_dir(MOUNTS, OWN),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
    }

    #[test]
    fn a_mount_of_a_subtree() {
        let mounts = "30 1 0:26 /user.slice /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            v2_dir(mounts, "0::/user.slice/me.scope\n"),
            Some(PathBuf::from("/sys/fs/cgroup/me.scope"))
        );
        assert_eq!(v2_dir(mounts, "0::/system.slice\n"), None);
    }
}
