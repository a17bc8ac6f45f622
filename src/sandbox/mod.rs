//! Running model-written programs in isolation, without Docker.
//!
//! Each run gets fresh user, PID, network, mount, IPC and UTS namespaces, an
//! unprivileged uid of its own, a size-capped tmpfs as its working
//! directory, a Landlock ruleset hiding everything but system directories,
//! a seccomp deny-list (no Unix or netlink sockets, no x32 calls), rlimits,
//! a cgroup bounding the whole tree's memory and processes where the
//! machine allows one, an empty environment and a wall-clock deadline that
//! takes the whole process tree down. See `child.rs` for the order of the
//! steps and why.
//!
//! Two programs can run as a pair joined by pipes and nothing else
//! ([`Sandbox::run_pair`]): the `code` rule runs a model's program beside a
//! checker it cannot reach.
//!
//! Programs that run outside the sandbox (`exec` models, managed servers)
//! get their process setup here too: the same first steps as every child
//! (`setup.rs`: own process group, default signals, the parent-death
//! signal) and a cgroup per program that is emptied when its call ends
//! (`contain.rs`).
//!
//! A leaf: it imports nothing from the rest of the crate. The `code` rule
//! (in `verify`) decides what runs here and reads the outcome.

mod capture;
mod cgroup;
mod child;
mod contain;
mod fs_policy;
mod plan;
pub(crate) mod python;
mod seat;
mod seccomp;
mod setup;
mod spawn;
mod warm_run;
mod workdir;
mod zygote;
mod zygote_io;

use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub(crate) use contain::{Tree, kill_all as kill_all_trees};
pub use plan::own_uids;
pub(crate) use setup::child_of_harness;
pub(crate) use spawn::PATH;
pub use spawn::Sandbox;
pub use zygote::Warm;

/// Where a bare program name resolves on the sandbox's [`PATH`], if anywhere.
pub(crate) fn find_program(name: &str) -> Option<std::path::PathBuf> {
    PATH.split(':')
        .map(|dir| std::path::Path::new(dir).join(name))
        .find(|p| p.is_file())
}

/// `input` in an anonymous memory file, read from its start: a program's
/// stdin. Not a pipe: writing into a pipe whose reader exited raises
/// SIGPIPE, which ends the harness (it dies quietly on a closed pipe, as
/// Unix tools do), and a program may exit without reading all it was given.
pub(crate) fn memory_file(input: &[u8]) -> std::io::Result<std::fs::File> {
    use std::io::{Seek, Write};
    use std::os::fd::FromRawFd;
    // SAFETY: memfd_create takes a NUL-terminated name and returns a new fd or -1.
    let fd = unsafe { libc::memfd_create(c"harness-input".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nothing else owns.
    let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
    file.write_all(input)?;
    file.seek(std::io::SeekFrom::Start(0))?;
    Ok(file)
}

/// The tests' hook (`tests/code_rule.rs`): with `HARNESS_TEST_SLOW_START_MS`
/// set, each start waits that long before the program is started, as setup
/// on a loaded machine may: the program's time must not run meanwhile.
fn slow_start() {
    static DELAY: OnceLock<Option<Duration>> = OnceLock::new();
    let delay = DELAY.get_or_init(|| {
        let ms = std::env::var("HARNESS_TEST_SLOW_START_MS").ok()?;
        ms.parse().ok().map(Duration::from_millis)
    });
    if let Some(delay) = delay {
        std::thread::sleep(*delay);
    }
}

/// The variable naming a paired program's channel: `<read fd>,<write fd>`.
pub(crate) const CHANNEL_ENV: &str = "HARNESS_CHANNEL";

/// What confined model-written code in a run, as manifests record it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Isolation {
    /// Namespaces, own uid, Landlock and seccomp; false under `--unsandboxed`.
    pub isolated: bool,
    /// The cgroups bounding each run's whole process tree (`cgroup v1:
    /// memory, pids`), when any did; else only per-process rlimits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree_limits: Option<String>,
}

impl Isolation {
    /// One line for reports: `isolated; tree limits: cgroup v1: memory, pids`.
    pub fn describe(&self) -> String {
        let mode = if self.isolated {
            "isolated (namespaces, own uid, Landlock, seccomp)"
        } else {
            "NOT isolated (--unsandboxed: limits and an empty environment only)"
        };
        let tree = self
            .tree_limits
            .as_deref()
            .unwrap_or("none, per-process rlimits only");
        format!("{mode}; process-tree limits: {tree}")
    }
}

/// Resource limits of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Wall-clock time from the program's start before the whole process
    /// tree is killed (the sandbox's setup, and time waiting for a free CPU
    /// before it, do not count).
    pub wall: Duration,
    /// CPU time of each process: RLIMIT_CPU, which counts whole seconds,
    /// rounded up; a fractional limit is also watched to the CPU clock tick.
    pub cpu: Duration,
    /// Bytes: the address space of each process (RLIMIT_AS), and the
    /// memory of the whole tree where a cgroup can bound it.
    pub memory_bytes: u64,
    /// Processes and threads of the run's uid (RLIMIT_NPROC), and of the
    /// whole tree where a cgroup can bound it.
    pub processes: u64,
    /// Largest file the program may write (RLIMIT_FSIZE).
    pub file_size_bytes: u64,
    /// Open file descriptors (RLIMIT_NOFILE).
    pub open_files: u64,
    /// Captured stdout plus stderr; more kills the run.
    pub output_bytes: usize,
    /// Size of the working directory's tmpfs.
    pub disk_bytes: u64,
}

impl Limits {
    /// The CPU limit in the whole seconds RLIMIT_CPU counts, rounded up.
    pub fn cpu_rlimit(&self) -> u64 {
        self.cpu.as_secs() + u64::from(self.cpu.subsec_nanos() > 0)
    }

    /// The CPU limit when it is not whole seconds: RLIMIT_CPU cannot hold
    /// it, so the capture loop watches each process's CPU clock instead.
    pub(crate) fn fractional_cpu(&self) -> Option<Duration> {
        (self.cpu.subsec_nanos() > 0).then_some(self.cpu)
    }
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            wall: Duration::from_secs(21),
            cpu: Duration::from_secs(10),
            memory_bytes: 512 << 20,
            processes: 32,
            file_size_bytes: 16 << 20,
            open_files: 256,
            output_bytes: 1 << 20,
            disk_bytes: 64 << 20,
        }
    }
}

/// A program to run: its command line and the files it needs.
#[derive(Debug, Clone, Default)]
pub struct Program {
    /// The command; the first element is an absolute path.
    pub argv: Vec<String>,
    /// Files created in the working directory before the run: name and contents.
    pub files: Vec<(String, Vec<u8>)>,
    /// Environment variables beyond the minimal PATH, LANG, HOME and TMPDIR.
    pub env: Vec<(String, String)>,
    /// Bytes fed to standard input.
    pub stdin: Vec<u8>,
    /// Extra directories the program may read (an interpreter outside `/usr`).
    pub read_paths: Vec<PathBuf>,
    /// Resource limits.
    pub limits: Limits,
    /// How to start it warm (a fork of an interpreter that imported its
    /// modules ahead), when it is a Python program of the harness's own.
    pub warm: Option<Warm>,
}

/// How the program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Termination {
    /// It exited with a status code.
    Exited(i32),
    /// A signal killed it.
    Signaled(i32),
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// How it ended.
    pub termination: Termination,
    /// Why it or a process of its tree was killed, if one was.
    pub killed: Killed,
    /// Standard output (capped).
    pub stdout: Vec<u8>,
    /// Standard error (capped).
    pub stderr: Vec<u8>,
    /// The time and memory it used.
    pub usage: Usage,
}

/// Why a program or a process of its tree was killed: by the sandbox's
/// watch for a limit, or by the kernel for the tree's memory. More than one
/// can hold when a second limit passed before the first kill landed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Killed {
    /// The wall-clock deadline passed.
    pub timed_out: bool,
    /// The output exceeded its cap.
    pub output_limited: bool,
    /// Stopped because the program it was paired with had finished.
    pub stopped: bool,
    /// A process passed a fractional CPU limit.
    pub cpu_limited: bool,
    /// The kernel killed a process of the tree for the tree's memory limit.
    pub tree_memory_exceeded: bool,
}

/// The time and memory a run used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// CPU time, user plus system.
    pub cpu: Duration,
    /// CPU time of the whole process tree, at least `cpu`: the processes
    /// killed with the program at its deadline are counted too.
    pub tree_cpu: Duration,
    /// Peak resident memory in KiB.
    pub max_rss_kib: u64,
    /// Wall-clock time.
    pub wall: Duration,
}

impl Outcome {
    /// Exited with status 0 within every limit.
    pub fn success(&self) -> bool {
        self.termination == Termination::Exited(0)
            && !self.killed.timed_out
            && !self.killed.output_limited
    }

    /// Killed for using its CPU seconds.
    pub fn cpu_exhausted(&self, limits: &Limits) -> bool {
        if self.killed.cpu_limited {
            return true;
        }
        match self.termination {
            Termination::Signaled(libc::SIGXCPU) => true,
            // Killed at the hard limit (a second past the soft one) after ignoring SIGXCPU.
            Termination::Signaled(libc::SIGKILL) => {
                self.usage.cpu.as_secs_f64() + 0.05 >= limits.cpu.as_secs_f64()
            }
            _ => false,
        }
    }

    /// A one-line account of how the run ended, for verdict details.
    pub fn describe(&self, limits: &Limits) -> String {
        if self.killed.timed_out {
            format!("timed out after {:.1} s", limits.wall.as_secs_f64())
        } else if self.killed.output_limited {
            format!("killed: output over {} bytes", limits.output_bytes)
        } else if self.cpu_exhausted(limits) {
            format!("killed: CPU limit of {} s", limits.cpu.as_secs_f64())
        } else if self.killed.stopped {
            "stopped after the program it was paired with had ended".to_owned()
        } else {
            let tree = self.killed.tree_memory_exceeded.then(|| {
                format!(
                    "the process tree's memory limit of {} MiB",
                    limits.memory_bytes >> 20
                )
            });
            match (self.termination, tree) {
                (Termination::Signaled(libc::SIGKILL), Some(tree)) => format!("killed: {tree}"),
                (Termination::Exited(code), Some(tree)) => {
                    format!("exited with status {code} after a process was killed for {tree}")
                }
                (Termination::Signaled(sig), Some(tree)) => format!(
                    "killed by signal {} after a process was killed for {tree}",
                    signal_name(sig)
                ),
                (Termination::Exited(code), None) => format!("exited with status {code}"),
                (Termination::Signaled(sig), None) => {
                    format!("killed by signal {}", signal_name(sig))
                }
            }
        }
    }
}

/// A signal's conventional name.
pub(crate) fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGTERM => "SIGTERM",
        libc::SIGBUS => "SIGBUS",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGSYS => "SIGSYS",
        _ => return sig.to_string(),
    };
    name.to_owned()
}

/// Why a program could not be run.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SandboxError {
    /// The kernel cannot isolate a program.
    #[error(
        "cannot isolate model-written code: {0}\n  \
         the sandbox needs Linux user namespaces, Landlock and seccomp; \
         pass --unsandboxed to run such code without isolation (unsafe)"
    )]
    Unsupported(String),
    /// Setting up a run failed.
    #[error("sandbox setup failed: {0}")]
    Setup(String),
    /// No python3 was found.
    #[error("no python3 interpreter found; install python3 or set HARNESS_PYTHON")]
    NoInterpreter,
    /// Every python3 found is one the sandbox cannot run (each with why).
    #[error("no python3 the sandbox can run: {0}; install a system python3 or set HARNESS_PYTHON")]
    NoUsableInterpreter(String),
}

static UNSANDBOXED: AtomicBool = AtomicBool::new(false);
static SHARED: OnceLock<Result<Sandbox, SandboxError>> = OnceLock::new();

/// Lets code run without isolation (`--unsandboxed`); call before [`shared`].
pub(crate) fn allow_unsandboxed() {
    UNSANDBOXED.store(true, Ordering::SeqCst);
}

/// Whether `--unsandboxed` is in effect.
pub(crate) fn is_unsandboxed() -> bool {
    UNSANDBOXED.load(Ordering::SeqCst)
}

/// The warning printed on every unsandboxed run.
pub(crate) const UNSANDBOXED_WARNING: &str = "warning: --unsandboxed: model-written code runs WITHOUT \
     isolation, with access to this machine's files and network";

/// The process-wide sandbox, probed once.
pub(crate) fn shared() -> Result<&'static Sandbox, SandboxError> {
    SHARED
        .get_or_init(|| {
            if is_unsandboxed() {
                Ok(Sandbox::unsandboxed())
            } else {
                Sandbox::isolated()
            }
        })
        .as_ref()
        .map_err(Clone::clone)
}
