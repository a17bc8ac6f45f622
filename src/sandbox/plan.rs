//! What a run needs before the fork: its uid, rlimits, the child's plan, the
//! shared network namespace, scratch directories, and the CPU slots that
//! bound how many runs go at once.

use std::ffi::CString;
use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

use seccompiler::BpfProgram;

use super::child::ChildPlan;
use super::{Limits, Program, SandboxError, fs_policy};

/// First uid handed to sandboxes when the harness runs as root.
const UID_BASE: u32 = 200_000;

/// The descriptors and settings shared by every run of one sandbox.
pub(super) struct Shared<'a> {
    pub netns: Option<RawFd>,
    pub seccomp: &'a [BpfProgram],
}

/// The child's plan for `program` in `workdir` as `uid`/`gid`.
pub(super) fn child_plan(
    shared: &Shared,
    program: &Program,
    workdir: &Path,
    (uid, gid): (u32, u32),
    fds: (Vec<RawFd>, Vec<RawFd>, RawFd),
) -> Result<ChildPlan, SandboxError> {
    let (cgroups, channel, report) = fds;
    let limits = &program.limits;
    let mut files = Vec::new();
    for (name, contents) in &program.files {
        if name.contains('/') || name.starts_with('.') {
            return Err(SandboxError::Setup(format!(
                "program file names are plain names, not `{name}`"
            )));
        }
        files.push((path_cstring(&workdir.join(name))?, contents.clone()));
    }
    let landlock = fs_policy::ruleset(&program.read_paths)?;
    Ok(ChildPlan {
        cgroups,
        channel,
        netns: shared.netns,
        ids: is_root().then_some((uid, gid)),
        rlimits: rlimits(limits),
        uid_map: format!("{uid} {uid} 1").into_bytes(),
        gid_map: format!("{gid} {gid} 1").into_bytes(),
        workdir: path_cstring(workdir)?,
        tmpfs_options: CString::new(format!(
            "size={},nr_inodes=4096,mode=0700,uid={uid},gid={gid}",
            limits.disk_bytes
        ))
        .expect("no NUL"),
        files,
        // The child inherits the descriptor; the parent's copy closes with the plan.
        landlock: Some(landlock.into_raw_fd()),
        late_rules: vec![
            (path_cstring(workdir)?, fs_policy::access_bits(true)),
            (c"/proc".to_owned(), fs_policy::access_bits(false)),
        ],
        seccomp: shared.seccomp.to_vec(),
        report,
        // SAFETY: getpid cannot fail.
        harness: unsafe { libc::getpid() },
    })
}

impl Drop for ChildPlan {
    fn drop(&mut self) {
        if let Some(fd) = self.landlock.take() {
            // SAFETY: the descriptor was made for this plan and is closed once.
            drop(unsafe { OwnedFd::from_raw_fd(fd) });
        }
    }
}

/// A permit to run one program; the number of permits is the CPU count
/// (`HARNESS_SANDBOX_JOBS` overrides).
pub(super) struct CpuSlot;

static SLOTS: Mutex<usize> = Mutex::new(0);
static SLOT_FREED: Condvar = Condvar::new();

impl CpuSlot {
    pub(super) fn take() -> CpuSlot {
        static LIMIT: OnceLock<usize> = OnceLock::new();
        let limit = *LIMIT.get_or_init(|| {
            std::env::var("HARNESS_SANDBOX_JOBS")
                .ok()
                .and_then(|v| v.parse().ok())
                .filter(|&n| n > 0)
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        });
        let mut busy = SLOTS.lock().unwrap_or_else(|e| e.into_inner());
        while *busy >= limit {
            busy = SLOT_FREED.wait(busy).unwrap_or_else(|e| e.into_inner());
        }
        *busy += 1;
        CpuSlot
    }
}

impl Drop for CpuSlot {
    fn drop(&mut self) {
        *SLOTS.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
        SLOT_FREED.notify_one();
    }
}

/// One empty network namespace (a loopback that is down, nothing else) for
/// every run: making one per run costs about a millisecond, and sharing it
/// leaks nothing, because no interface is up, no Unix or netlink socket can
/// be made (seccomp) and Landlock (ABI 6+) scopes abstract Unix sockets to
/// each run. Joining needs root; others make their own.
pub(super) fn shared_netns() -> Option<OwnedFd> {
    if !is_root() || fs_policy::kernel_abi() < 6 {
        return None;
    }
    // unshare moves only the calling thread, so a short-lived thread does it.
    std::thread::spawn(|| {
        // SAFETY: affects this thread only; it ends right after.
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            return None;
        }
        std::fs::File::open("/proc/thread-self/ns/net")
            .ok()
            .map(OwnedFd::from)
    })
    .join()
    .ok()
    .flatten()
}

/// `(resource, limit)` pairs for `setrlimit`.
pub(super) fn rlimits(limits: &Limits) -> Vec<(libc::__rlimit_resource_t, libc::rlimit)> {
    let mut processes = limits.processes;
    if !is_root() {
        // RLIMIT_NPROC counts every process of the real uid, and without
        // root the run keeps ours: leave room for what is already running.
        processes += running_processes();
    }
    let both = |n: u64| libc::rlimit {
        rlim_cur: n,
        rlim_max: n,
    };
    vec![
        // SIGXCPU at the limit names the cause; SIGKILL a second later if ignored.
        (
            libc::RLIMIT_CPU,
            libc::rlimit {
                rlim_cur: limits.cpu_rlimit(),
                rlim_max: limits.cpu_rlimit() + 1,
            },
        ),
        (libc::RLIMIT_AS, both(limits.memory_bytes)),
        (libc::RLIMIT_NPROC, both(processes)),
        (libc::RLIMIT_FSIZE, both(limits.file_size_bytes)),
        (libc::RLIMIT_NOFILE, both(limits.open_files)),
        (libc::RLIMIT_CORE, both(0)),
    ]
}

/// The uid and gid of run `n`: as root, one unprivileged uid per concurrent
/// run, so RLIMIT_NPROC is enforced and runs cannot signal each other.
///
/// Each harness process takes the thousand uids of its slot (see
/// [`own_uids`]), so concurrent harness processes rarely share one (when
/// they do, their runs' processes count against one RLIMIT_NPROC; they still
/// cannot see or signal each other, each in its own namespaces).
pub(super) fn run_ids(n: u32) -> (u32, u32) {
    if is_root() {
        let uid = own_uids().start + n % 1000;
        (uid, uid)
    } else {
        // SAFETY: getuid/getgid cannot fail.
        unsafe { (libc::getuid(), libc::getgid()) }
    }
}

/// The uids this process's runs take when it runs as root.
pub fn own_uids() -> std::ops::Range<u32> {
    // One of 4000 slots by pid: a test suite starts dozens of harnesses at
    // once, and 100 slots made two of them share uids every few runs.
    let start = UID_BASE + (std::process::id() % 4000) * 1000;
    start..start + 1000
}

pub(super) fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn running_processes() -> u64 {
    // The fourth field of /proc/loadavg is `running/total`.
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().nth(3)?.split('/').nth(1)?.parse().ok())
        .unwrap_or(4096)
}

/// `$TMPDIR/harness-sandbox`, traversable by the sandbox uids but not listable.
pub(super) fn scratch_dir() -> Result<PathBuf, SandboxError> {
    let dir = std::env::temp_dir().join("harness-sandbox");
    std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o711)))
        .map_err(|e| SandboxError::Setup(format!("{}: {e}", dir.display())))?;
    Ok(dir)
}

pub(super) fn path_cstring(path: &Path) -> Result<CString, SandboxError> {
    CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| SandboxError::Setup(format!("NUL in path {}", path.display())))
}

/// A close-on-exec pipe: (read end, write end).
pub(super) fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors we then own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both are fresh descriptors.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

pub(super) fn timeval(t: libc::timeval) -> Duration {
    Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
}
