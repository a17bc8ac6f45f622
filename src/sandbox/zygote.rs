//! Warm starts: a Python interpreter that has imported a program's own
//! modules (never model code) clones a child per run straight into the
//! run's namespaces, and the child confines itself as `child.rs` does
//! before the run's main module starts.
//!
//! The zygote is started like any program (fresh exec, empty environment,
//! the parent-death signal), so its memory holds no secret of the harness;
//! as root, it starts in the sandbox's shared network namespace with no
//! supplementary groups. Per run it receives the run's uid and gid and a
//! bundle of descriptors over its control socket: the run's own socket, a
//! memory file with the plan, the standard streams, and the Landlock,
//! cgroup and channel descriptors. It clones without reading any of them;
//! the child reads the plan. So no run's data is in the zygote, and none
//! can reach a sibling (docs/sandbox.md, "Warm starts").
//!
//! The harness cannot wait for a grandchild: the zygote reaps the run's
//! init (PID 1 of its namespace) and reports the program's wait status,
//! which the init leaves it, and the tree's usage on the run's socket
//! (`warm_run.rs`).

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
use super::warm_run::{WarmRun, request};
use super::zygote_io::{receive, send_fds, seqpacket};
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
    /// The main is PID 1 of its namespace itself, with no init above it:
    /// one process fewer a run. Only for a program of the harness's own
    /// that starts no process and sends itself no signal: PID 1 ignores
    /// any signal from inside its namespace that it has no handler for.
    pub main_is_init: bool,
}

/// The zygotes of one sandbox, one per interpreter, flags, environment and modules.
#[derive(Default)]
pub(super) struct Zygotes {
    /// The sandbox's shared network namespace, which every zygote joins
    /// when it starts: its runs' inits cannot (they hold no privilege
    /// outside their own user namespace).
    netns: Option<RawFd>,
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

impl Zygotes {
    /// Zygotes that start in `netns` (the sandbox's, open as long as they are).
    pub(super) fn new(netns: Option<RawFd>) -> Zygotes {
        Zygotes {
            netns,
            ..Zygotes::default()
        }
    }

    /// Starts the zygotes of `programs` that are not running yet, side by side.
    /// Once they run, this costs no thread: under load a thread's start and
    /// join alone could wait milliseconds for a CPU, in every verdict.
    pub(super) fn prepare(&self, programs: &[&Program], scratch: &Path) {
        let missing: Vec<(&Program, &Warm)> = programs
            .iter()
            .filter_map(|p| Some((*p, p.warm.as_ref()?)))
            .filter(|(program, warm)| !self.running(program, warm))
            .collect();
        if let [(program, warm)] = missing[..] {
            self.get(program, warm, scratch);
            return;
        }
        std::thread::scope(|scope| {
            for (program, warm) in missing {
                scope.spawn(move || self.get(program, warm, scratch));
            }
        });
    }

    /// Whether `program`'s zygote was tried already (running, or failed for
    /// good): `get` then returns without starting one.
    fn running(&self, program: &Program, warm: &Warm) -> bool {
        let started = self.started.lock().unwrap_or_else(|e| e.into_inner());
        let Some(slot) = started.get(&key(program, warm)) else {
            return false;
        };
        // A slot locked by a start in progress is not known to be running.
        let Ok(slot) = slot.try_lock() else {
            return false;
        };
        match &*slot {
            Slot::Failed => true,
            Slot::Running(zygote) => zygote.alive.load(Ordering::Relaxed),
            Slot::Untried => false,
        }
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
        let zygote = Zygote::start(program, warm, scratch, self.netns)
            .ok()
            .map(Arc::new);
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
    fn start(
        program: &Program,
        warm: &Warm,
        scratch: &Path,
        netns: Option<RawFd>,
    ) -> std::io::Result<Zygote> {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        // A harness that ended without dropping its zygotes left their
        // directories, and a later one may have its pid: skip those names
        // (and never take one over, which would remove it when dropped).
        let dir = loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = scratch.join(format!("zygote-{}-{n}", std::process::id()));
            match std::fs::create_dir(&path) {
                Ok(()) => break super::workdir::Workdir(path),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        };
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
        // The namespaces each run's init is cloned into: a network namespace
        // of its own only where the zygote could not join a shared one.
        let mut namespaces = libc::CLONE_NEWUSER
            | libc::CLONE_NEWNS
            | libc::CLONE_NEWIPC
            | libc::CLONE_NEWUTS
            | libc::CLONE_NEWPID;
        if netns.is_none() {
            namespaces |= libc::CLONE_NEWNET;
        }
        let mut command = Command::new(interpreter);
        command
            .args(flags)
            .arg(&script)
            .arg(&dir.0)
            .arg(&warm.main)
            .arg(namespaces.to_string())
            .arg(libc::SYS_clone.to_string())
            .env_clear()
            .env("PATH", PATH)
            .env("LANG", "C.UTF-8")
            .envs(program.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        super::setup::child_of_harness(&mut command);
        let fd = theirs.as_raw_fd();
        let root = super::plan::is_root();
        // SAFETY: dup2, setns and setgroups are async-signal-safe; dup2
        // clears close-on-exec on the copy.
        unsafe {
            command.pre_exec(move || {
                // Once for all runs, what child.rs's child does as root
                // before its unshare: the shared network namespace, and no
                // supplementary groups (a user namespace's process cannot
                // drop them, and the clone inherits them). Before the dup2,
                // which may take the namespace's descriptor number.
                if let Some(netns) = netns
                    && libc::setns(netns, libc::CLONE_NEWNET) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                if root && libc::setgroups(0, std::ptr::null()) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
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
        pid.recv()
            .map_err(|_| std::io::Error::other("the zygote's thread is gone"))??;
        drop(theirs);
        // The zygote says it is ready once its modules are imported.
        ready(&control)?;
        Ok(Zygote {
            control,
            alive,
            seated: Mutex::default(),
            _dir: dir,
        })
    }

    /// Clones a child for `plan` in `seat` (when there is one), which then
    /// confines itself (see [`WarmRun::started`]).
    pub(super) fn run(
        &self,
        plan: (&ChildPlan, bool),
        seat: Option<&Lease>,
        stdio: [RawFd; 3],
        env: &[(String, String)],
        script: &str,
    ) -> Result<WarmRun, SandboxError> {
        let io = |what: &str, e: std::io::Error| SandboxError::Setup(format!("{what}: {e}"));
        let Some(lease) = seat else {
            return request(&self.control, plan, &[], (stdio, env, script));
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
            return request(&seated.control, plan, &[], (stdio, env, script));
        }
        // No zygote could stay in the seat: the child moves itself in.
        let cgroups = lease
            .procs_files()
            .map_err(|e| io("open the run's cgroup", e))?;
        request(&self.control, plan, &cgroups, (stdio, env, script))
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
