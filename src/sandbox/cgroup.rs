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
//! hierarchy and one `run-<n>` inside it per run; a run's processes move in
//! themselves, while still root, before anything else (see `child.rs`).

use std::ffi::CString;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Which hierarchy bounds the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

/// Where this process may make cgroups, probed once.
#[derive(Debug)]
pub(super) struct TreeLimits {
    version: Version,
    /// `.../harness-<pid>` with the memory controller.
    memory: Option<PathBuf>,
    /// `.../harness-<pid>` with the pids controller (the same directory on v2).
    pids: Option<PathBuf>,
}

/// One run's cgroups: made before the fork, removed after the run.
pub(super) struct RunCgroup {
    dirs: Vec<PathBuf>,
    memory: Option<PathBuf>,
    version: Version,
    /// `cgroup.procs` of each, open for the child to write itself into.
    pub procs: Vec<OwnedFd>,
}

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
                return Some(TreeLimits {
                    version: Version::V2,
                    memory: Some(made.clone()),
                    pids: Some(made),
                });
            }
        }
        let make = |controller: &str| {
            let dir = v1_dir(&mounts, &own, controller)?.join(&leaf);
            remove_stale(dir.parent()?);
            std::fs::create_dir_all(&dir).ok().map(|()| dir)
        };
        let (memory, pids) = (make("memory"), make("pids"));
        (memory.is_some() || pids.is_some()).then_some(TreeLimits {
            version: Version::V1,
            memory,
            pids,
        })
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

    /// Cgroups for run `n` holding at most `memory` bytes and `processes` tasks.
    pub(super) fn create(&self, n: u32, memory: u64, processes: u64) -> std::io::Result<RunCgroup> {
        let name = format!("run-{n}");
        let mut run = RunCgroup {
            dirs: Vec::new(),
            memory: None,
            version: self.version,
            procs: Vec::new(),
        };
        let mut settings: Vec<(PathBuf, Vec<(&str, String)>)> = Vec::new();
        let (mem_file, swap_file) = match self.version {
            Version::V2 => ("memory.max", "memory.swap.max"),
            Version::V1 => ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"),
        };
        if let Some(base) = &self.memory {
            let dir = base.join(&name);
            // Swap would let the tree hold more than its limit; v1 caps memory + swap.
            let swap = match self.version {
                Version::V2 => "0".to_owned(),
                Version::V1 => memory.to_string(),
            };
            settings.push((
                dir.clone(),
                vec![(mem_file, memory.to_string()), (swap_file, swap)],
            ));
            run.memory = Some(dir);
        }
        if let Some(base) = &self.pids {
            let dir = base.join(&name);
            match settings.iter_mut().find(|(d, _)| *d == dir) {
                Some((_, files)) => files.push(("pids.max", processes.to_string())),
                None => settings.push((dir, vec![("pids.max", processes.to_string())])),
            }
        }
        for (dir, files) in settings {
            // A directory left by a run that could not be removed is reused.
            match std::fs::create_dir(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
            run.dirs.push(dir.clone());
            for (file, value) in files {
                match std::fs::write(dir.join(file), &value) {
                    // Swap accounting may be off; the memory limit itself must hold.
                    Err(e) if file != swap_file => return Err(e),
                    _ => {}
                }
            }
            run.procs.push(open_write(&dir.join("cgroup.procs"))?);
        }
        Ok(run)
    }
}

impl RunCgroup {
    /// Whether the kernel killed a process of the tree for its memory.
    pub(super) fn oom_killed(&self) -> bool {
        let Some(dir) = &self.memory else {
            return false;
        };
        let file = match self.version {
            Version::V2 => "memory.events",
            Version::V1 => "memory.oom_control",
        };
        let text = std::fs::read_to_string(dir.join(file)).unwrap_or_default();
        text.lines()
            .filter_map(|l| l.strip_prefix("oom_kill "))
            .any(|n| n.trim().parse::<u64>().unwrap_or(0) > 0)
    }
}

impl Drop for RunCgroup {
    fn drop(&mut self) {
        self.procs.clear();
        for dir in &self.dirs {
            remove(dir);
        }
    }
}

/// Removes a run's cgroup once its last process is gone: killed ones take a
/// moment to leave, and a survivor (there should be none) is killed.
fn remove(dir: &Path) {
    for attempt in 0..200 {
        if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
            return;
        }
        if attempt % 20 == 19 {
            let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
            for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
                // SAFETY: a process of our own run's cgroup.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Removes `harness-<pid>` directories of harness processes that no longer run.
fn remove_stale(parent: &Path) {
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
        if let Ok(runs) = std::fs::read_dir(entry.path()) {
            for run in runs.flatten().filter(|r| r.path().is_dir()) {
                remove(&run.path());
            }
        }
        let _ = std::fs::remove_dir(entry.path());
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

fn open_write(path: &Path) -> std::io::Result<OwnedFd> {
    let c = CString::new(path.as_os_str().as_encoded_bytes())
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
