//! Starting a program, isolated or (with `--unsandboxed`) not, and turning
//! what happened into an [`Outcome`].

use std::ffi::CString;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use seccompiler::BpfProgram;

use super::capture::{capture, reap};
use super::child::{ChildPlan, enter};
use super::{Limits, Outcome, Program, SandboxError, Termination, fs_policy, seccomp};

/// The environment a program sees: nothing of the harness's.
pub const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// First uid handed to sandboxes when the harness runs as root.
const UID_BASE: u32 = 200_000;

static RUN_COUNTER: AtomicU32 = AtomicU32::new(0);

/// Runs programs; one per process is enough (see [`super::shared`]).
pub struct Sandbox {
    isolated: bool,
    netns: Option<OwnedFd>,
    seccomp: Vec<BpfProgram>,
    scratch: PathBuf,
}

impl Sandbox {
    /// A sandbox that isolates, after checking this kernel can.
    pub fn isolated() -> Result<Sandbox, SandboxError> {
        if !Path::new("/proc/self/ns/user").exists() {
            return Err(SandboxError::Unsupported(
                "this kernel has no user namespaces".into(),
            ));
        }
        if fs_policy::kernel_abi() < 1 {
            return Err(SandboxError::Unsupported(
                "this kernel does not enforce Landlock".into(),
            ));
        }
        let sandbox = Sandbox {
            isolated: true,
            netns: shared_netns(),
            seccomp: seccomp::filters()?,
            scratch: scratch_dir()?,
        };
        // A trial run turns "user namespaces are disabled" and the like into
        // one clear error before any model is asked anything.
        let probe = Program {
            argv: vec!["/bin/sh".into(), "-c".into(), "exit 0".into()],
            ..Program::default()
        };
        match sandbox.run(&probe) {
            Ok(outcome) if outcome.success() => Ok(sandbox),
            Ok(outcome) => Err(SandboxError::Unsupported(format!(
                "a trial run {}: {}",
                outcome.describe(&probe.limits),
                String::from_utf8_lossy(&outcome.stderr).trim()
            ))),
            Err(SandboxError::Setup(message)) => Err(SandboxError::Unsupported(message)),
            Err(e) => Err(e),
        }
    }

    /// A sandbox that does not isolate: rlimits, an empty environment and a
    /// deadline only. For machines that cannot isolate, by explicit choice.
    pub fn unsandboxed() -> Sandbox {
        Sandbox {
            isolated: false,
            netns: None,
            seccomp: Vec::new(),
            scratch: scratch_dir().unwrap_or_else(|_| std::env::temp_dir()),
        }
    }

    /// Whether programs run isolated.
    pub fn is_isolated(&self) -> bool {
        self.isolated
    }

    /// Runs `program` to completion or to its limits.
    ///
    /// At most one run per CPU at a time (more wait their turn): programs
    /// then get a CPU each, so their time limits mean the same on any load.
    pub fn run(&self, program: &Program) -> Result<Outcome, SandboxError> {
        let _slot = CpuSlot::take();
        let n = RUN_COUNTER.fetch_add(1, Ordering::Relaxed);
        let workdir = self.scratch.join(format!("{}-{n}", std::process::id()));
        let result = self.run_in(program, &workdir, n);
        let _ = std::fs::remove_dir_all(&workdir);
        result
    }

    fn run_in(&self, program: &Program, workdir: &Path, n: u32) -> Result<Outcome, SandboxError> {
        let io = |what: &str, e: std::io::Error| SandboxError::Setup(format!("{what}: {e}"));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(workdir)
            .map_err(|e| io("create the working directory", e))?;
        let (uid, gid) = run_ids(n);
        let limits = &program.limits;
        let mut command = Command::new(&program.argv[0]);
        command
            .args(&program.argv[1..])
            .env_clear()
            .env("PATH", PATH)
            .env("LANG", "C.UTF-8")
            .env("HOME", workdir)
            .env("TMPDIR", workdir)
            .envs(program.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let (report_read, report_write) = pipe().map_err(|e| io("pipe", e))?;
        let start = Instant::now();
        let child = if self.isolated {
            // SAFETY: chown of a directory we just created.
            let c = path_cstring(workdir)?;
            if unsafe { libc::chown(c.as_ptr(), uid, gid) } != 0 && is_root() {
                return Err(io("chown", std::io::Error::last_os_error()));
            }
            let plan = self.plan(program, workdir, uid, gid, report_write.as_raw_fd())?;
            // SAFETY: `enter` makes only async-signal-safe system calls.
            unsafe {
                command.pre_exec(move || enter(&plan));
            }
            command.spawn()
        } else {
            for (name, contents) in &program.files {
                std::fs::write(workdir.join(name), contents)
                    .map_err(|e| io("write a program file", e))?;
            }
            let rlimits = rlimits(limits);
            command.current_dir(workdir).process_group(0);
            // SAFETY: setrlimit is async-signal-safe.
            unsafe {
                command.pre_exec(move || {
                    for (resource, rl) in &rlimits {
                        if libc::setrlimit(*resource, rl) != 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                    }
                    Ok(())
                });
            }
            command.spawn()
        };
        drop(report_write);
        let mut child = match child {
            Ok(child) => child,
            Err(e) => {
                let mut step = String::new();
                let _ =
                    std::io::Read::read_to_string(&mut std::fs::File::from(report_read), &mut step);
                let at = if step.is_empty() { "exec".into() } else { step };
                return Err(SandboxError::Setup(format!(
                    "{at}: {e} (running {})",
                    program.argv[0]
                )));
            }
        };
        let pid = child.id() as libc::pid_t;
        if let Some(mut stdin) = child.stdin.take() {
            // A program that never reads its input must not fail the run.
            let _ = stdin.write_all(&program.stdin);
        }
        let isolated = self.isolated;
        let kill = move || {
            // Isolated: the first process's death takes the PID namespace with it.
            // Unsandboxed: the process group is the best we can do.
            let target = if isolated { pid } else { -pid };
            // SAFETY: signalling a process we started.
            unsafe { libc::kill(target, libc::SIGKILL) };
        };
        let stdout = std::fs::File::from(OwnedFd::from(child.stdout.take().expect("piped")));
        let stderr = std::fs::File::from(OwnedFd::from(child.stderr.take().expect("piped")));
        let captured = capture(
            pid,
            stdout,
            stderr,
            start + limits.wall,
            limits.output_bytes,
            &kill,
        );
        if !isolated {
            kill();
        }
        let (status, usage) = reap(pid);
        let wall = start.elapsed();
        let termination = if libc::WIFSIGNALED(status) {
            Termination::Signaled(libc::WTERMSIG(status))
        } else {
            Termination::Exited(libc::WEXITSTATUS(status))
        };
        Ok(Outcome {
            termination,
            timed_out: captured.timed_out,
            output_limited: captured.output_limited,
            stdout: captured.stdout,
            stderr: captured.stderr,
            cpu: timeval(usage.ru_utime) + timeval(usage.ru_stime),
            max_rss_kib: usage.ru_maxrss.max(0) as u64,
            wall,
        })
    }

    fn plan(
        &self,
        program: &Program,
        workdir: &Path,
        uid: u32,
        gid: u32,
        report: i32,
    ) -> Result<ChildPlan, SandboxError> {
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
            netns: self.netns.as_ref().map(AsRawFd::as_raw_fd),
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
            seccomp: self.seccomp.clone(),
            report,
        })
    }
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
struct CpuSlot;

static SLOTS: Mutex<usize> = Mutex::new(0);
static SLOT_FREED: Condvar = Condvar::new();

impl CpuSlot {
    fn take() -> CpuSlot {
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
/// leaks nothing, because no interface is up and Landlock (ABI 6+) scopes
/// abstract Unix sockets to each run. Joining needs root; others make their own.
fn shared_netns() -> Option<OwnedFd> {
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

fn rlimits(limits: &Limits) -> Vec<(libc::__rlimit_resource_t, libc::rlimit)> {
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
                rlim_cur: limits.cpu_secs,
                rlim_max: limits.cpu_secs + 1,
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
fn run_ids(n: u32) -> (u32, u32) {
    if is_root() {
        let slot = (std::process::id() % 100) * 1000 + n % 1000;
        (UID_BASE + slot, UID_BASE + slot)
    } else {
        // SAFETY: getuid/getgid cannot fail.
        unsafe { (libc::getuid(), libc::getgid()) }
    }
}

fn is_root() -> bool {
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
fn scratch_dir() -> Result<PathBuf, SandboxError> {
    let dir = std::env::temp_dir().join("harness-sandbox");
    std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o711)))
        .map_err(|e| SandboxError::Setup(format!("{}: {e}", dir.display())))?;
    Ok(dir)
}

fn path_cstring(path: &Path) -> Result<CString, SandboxError> {
    CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| SandboxError::Setup(format!("NUL in path {}", path.display())))
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors we then own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both are fresh descriptors.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn timeval(t: libc::timeval) -> Duration {
    Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
}
