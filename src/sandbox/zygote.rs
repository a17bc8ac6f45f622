//! Warm starts: a Python interpreter that has imported a program's own
//! modules (never model code) forks a child per run, and the child confines
//! itself exactly as `child.rs` does before the run's main module starts.
//!
//! The zygote is started like any program (fresh exec, empty environment,
//! the parent-death signal), so its memory holds no secret of the harness.
//! Per run it receives one byte and a bundle of descriptors over its control
//! socket: the run's own socket, a memory file with the plan, the standard
//! streams, and the namespace, Landlock, cgroup and channel descriptors. It
//! forks without reading any of them; the child reads the plan. So no run's
//! data is in the zygote, and none can reach a sibling (docs/sandbox.md,
//! "Warm starts").
//!
//! The harness cannot wait for a grandchild: the zygote reaps the run's
//! first process and reports its wait status and usage on the run's socket.

use std::collections::HashMap;
use std::io::{Seek, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::child::ChildPlan;
use super::{PATH, Program, SandboxError};

/// The zygote's script.
const SCRIPT: &str = include_str!("zygote.py");

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
}

/// The zygotes of one sandbox, one per interpreter, flags, environment and modules.
#[derive(Default)]
pub(super) struct Zygotes {
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
    pid: u32,
    /// Cleared when the zygote exits: the next run starts a new one.
    alive: Arc<AtomicBool>,
    _dir: super::spawn::Workdir,
}

/// What the harness holds of a warm run: its socket, on which the zygote
/// reports the exit.
pub(super) struct WarmRun {
    socket: OwnedFd,
    /// Whether the program was seen to start.
    started: bool,
}

impl Zygotes {
    /// Starts the zygotes of `programs` that are not running yet, side by side.
    pub(super) fn prepare(&self, programs: &[&Program], scratch: &Path) {
        std::thread::scope(|scope| {
            for program in programs {
                if let Some(warm) = &program.warm {
                    scope.spawn(|| self.get(program, warm, scratch));
                }
            }
        });
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
        let zygote = Zygote::start(program, warm, scratch).ok().map(Arc::new);
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
    fn start(program: &Program, warm: &Warm, scratch: &Path) -> std::io::Result<Zygote> {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = super::spawn::Workdir(scratch.join(format!("zygote-{}-{n}", std::process::id())));
        std::fs::create_dir(&dir.0)?;
        for (name, contents) in &program.files {
            if warm.modules.contains(name) && !name.contains('/') {
                std::fs::write(dir.0.join(name), contents)?;
            }
        }
        let script = dir.0.join("zygote.py");
        std::fs::write(&script, SCRIPT)?;
        let (control, theirs) = seqpacket()?;
        let Some((interpreter, flags)) = program.argv.split_first() else {
            return Err(std::io::Error::other("no command"));
        };
        let flags = &flags[..flags.len().saturating_sub(1)];
        let mut command = Command::new(interpreter);
        command
            .args(flags)
            .arg(&script)
            .arg(&dir.0)
            .arg(&warm.main)
            .env_clear()
            .env("PATH", PATH)
            .env("LANG", "C.UTF-8")
            .envs(program.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        super::setup::child_of_harness(&mut command);
        let fd = theirs.as_raw_fd();
        // SAFETY: dup2 is async-signal-safe; it clears close-on-exec on the copy.
        unsafe {
            command.pre_exec(move || {
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
        let pid = pid
            .recv()
            .map_err(|_| std::io::Error::other("the zygote's thread is gone"))??;
        drop(theirs);
        // The zygote says it is ready once its modules are imported.
        let ready = receive(&control, Some(START_LIMIT))?;
        if ready != b"R" {
            return Err(std::io::Error::other("the zygote did not start"));
        }
        Ok(Zygote {
            control,
            pid,
            alive,
            _dir: dir,
        })
    }

    /// Forks a confined child for `plan`; returns the pid of its first
    /// process, which then confines itself (see [`WarmRun::started`]).
    pub(super) fn run(
        &self,
        plan: &ChildPlan,
        cgroups: &[OwnedFd],
        stdio: [RawFd; 3],
        env: &[(String, String)],
        script: &str,
    ) -> Result<(libc::pid_t, WarmRun), SandboxError> {
        let io = |what: &str, e: std::io::Error| SandboxError::Setup(format!("{what}: {e}"));
        let (socket, theirs) = seqpacket().map_err(|e| io("socketpair", e))?;
        let mut fds: Vec<RawFd> = vec![theirs.as_raw_fd()];
        let plan_file = plan_file(plan, (cgroups, stdio), (env, script, self.pid), &mut fds)
            .map_err(|e| io("write the plan", e))?;
        fds.insert(1, plan_file.as_raw_fd());
        send_fds(&self.control, b"r", &fds).map_err(|e| io("reach the zygote", e))?;
        drop((theirs, plan_file));
        let message = receive(&socket, None).map_err(|e| io("zygote", e))?;
        let pid = std::str::from_utf8(&message)
            .ok()
            .and_then(|m| m.strip_prefix('P'))
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| SandboxError::Setup("the zygote did not fork".into()))?;
        Ok((
            pid,
            WarmRun {
                socket,
                started: false,
            },
        ))
    }
}

impl WarmRun {
    /// Waits until the child is confined and its program starts, or names
    /// the step that failed.
    pub(super) fn started(&mut self, program: &Program) -> Result<(), SandboxError> {
        if self.started {
            return Ok(());
        }
        let message = receive(&self.socket, None).unwrap_or_default();
        let why = match message.split_first() {
            Some((b'G', _)) => {
                self.started = true;
                return Ok(());
            }
            Some((b'E', step)) => String::from_utf8_lossy(step).into_owned(),
            _ => "the run ended before its program started".into(),
        };
        Err(SandboxError::Setup(format!(
            "{why} (running {} warm)",
            program.argv[0]
        )))
    }

    /// Waits for the zygote's report of how the run's first process ended.
    pub(super) fn reap(self) -> (libc::c_int, libc::rusage) {
        // SAFETY: rusage is plain data.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let message = receive(&self.socket, None).unwrap_or_default();
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

/// The plan in a memory file: an 8-byte length, a JSON header, then blobs
/// (files, seccomp programs). Descriptors the child needs are appended to
/// `fds` and named in the header by their index there (the memory file
/// itself goes in at index 1).
fn plan_file(
    plan: &ChildPlan,
    (cgroups, stdio): (&[OwnedFd], [RawFd; 3]),
    (env, script, zygote): (&[(String, String)], &str, u32),
    fds: &mut Vec<RawFd>,
) -> std::io::Result<std::fs::File> {
    // Index 1 is the plan file, inserted by the caller.
    let push = |fd: RawFd, fds: &mut Vec<RawFd>| {
        fds.push(fd);
        fds.len()
    };
    let stdio: Vec<usize> = stdio.iter().map(|&fd| push(fd, fds)).collect();
    let cgroup_indices: Vec<usize> = cgroups.iter().map(|fd| push(fd.as_raw_fd(), fds)).collect();
    let netns = plan.netns.map(|fd| push(fd, fds));
    let landlock = plan.landlock.map(|fd| push(fd, fds));
    let channel: Vec<usize> = plan.channel.iter().map(|&fd| push(fd, fds)).collect();
    let mut blobs: Vec<&[u8]> = Vec::new();
    let mut files = Vec::new();
    for (path, contents) in &plan.files {
        files.push((path.to_string_lossy().into_owned(), blobs.len()));
        blobs.push(contents);
    }
    let filters: Vec<Vec<u8>> = plan.seccomp.iter().map(bpf_bytes).collect();
    let mut seccomp = Vec::new();
    for filter in &filters {
        seccomp.push(blobs.len());
        blobs.push(filter);
    }
    let header = serde_json::json!({
        "cgroups": cgroup_indices,
        "netns": netns,
        "landlock": landlock,
        "channel": channel,
        "stdio": stdio,
        "namespaces": libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWIPC
            | libc::CLONE_NEWUTS | libc::CLONE_NEWPID,
        "clone_newnet": libc::CLONE_NEWNET,
        "ids": plan.ids,
        "uid_map": String::from_utf8_lossy(&plan.uid_map),
        "gid_map": String::from_utf8_lossy(&plan.gid_map),
        "zygote": zygote,
        "workdir": plan.workdir.to_string_lossy(),
        "tmpfs_options": plan.tmpfs_options.to_string_lossy(),
        "files": files,
        "late_rules": plan.late_rules.iter()
            .map(|(p, a)| (p.to_string_lossy().into_owned(), a)).collect::<Vec<_>>(),
        "seccomp": seccomp,
        "rlimits": plan.rlimits.iter()
            .map(|(r, l)| (*r, l.rlim_cur, l.rlim_max)).collect::<Vec<_>>(),
        "sys_landlock_add_rule": libc::SYS_landlock_add_rule,
        "sys_landlock_restrict_self": libc::SYS_landlock_restrict_self,
        "sys_seccomp": libc::SYS_seccomp,
        "env": env,
        "channel_env": super::CHANNEL_ENV,
        "script": script,
        "blobs": blobs.iter().map(|b| b.len()).collect::<Vec<_>>(),
    });
    let header = serde_json::to_vec(&header)?;
    let mut file = super::memory_file(&[])?;
    file.write_all(&(header.len() as u64).to_le_bytes())?;
    file.write_all(&header)?;
    for blob in blobs {
        file.write_all(blob)?;
    }
    file.seek(std::io::SeekFrom::Start(0))?;
    Ok(file)
}

/// A seccomp program as the kernel reads it: `struct sock_filter`s, native order.
fn bpf_bytes(program: &seccompiler::BpfProgram) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for insn in program {
        bytes.extend_from_slice(&insn.code.to_ne_bytes());
        bytes.push(insn.jt);
        bytes.push(insn.jf);
        bytes.extend_from_slice(&insn.k.to_ne_bytes());
    }
    bytes
}

/// A connected pair of close-on-exec `SOCK_SEQPACKET` sockets.
fn seqpacket() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: socketpair fills two descriptors we then own.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both are fresh descriptors.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Sends `data` with `fds` attached (`SCM_RIGHTS`).
fn send_fds(socket: &OwnedFd, data: &[u8], fds: &[RawFd]) -> std::io::Result<()> {
    let payload = std::mem::size_of_val(fds);
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(payload as u32) } as usize;
    let mut control = vec![0u64; space.div_ceil(8)];
    let mut iov = libc::iovec {
        iov_base: data.as_ptr().cast_mut().cast(),
        iov_len: data.len(),
    };
    // SAFETY: msghdr is plain data; the fields set below point into live locals.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space;
    // SAFETY: the control buffer holds one header of `payload` bytes, as
    // CMSG_SPACE said; the copy stays within it.
    let rc = unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(payload as u32) as usize;
        std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(cmsg).cast(), fds.len());
        libc::sendmsg(socket.as_raw_fd(), &msg, libc::MSG_NOSIGNAL)
    };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// One message from `socket`; empty at end of file. With a limit, an error
/// when nothing comes in time.
fn receive(socket: &OwnedFd, limit: Option<Duration>) -> std::io::Result<Vec<u8>> {
    if let Some(limit) = limit {
        let mut poll = libc::pollfd {
            fd: socket.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd on the stack.
        let rc = unsafe { libc::poll(&mut poll, 1, limit.as_millis() as libc::c_int) };
        if rc == 0 {
            return Err(std::io::Error::other("timed out"));
        }
    }
    let mut buffer = vec![0u8; 4096];
    loop {
        // SAFETY: reads into a buffer we own, of its length.
        let n = unsafe {
            libc::recv(
                socket.as_raw_fd(),
                buffer.as_mut_ptr().cast(),
                buffer.len(),
                0,
            )
        };
        if n >= 0 {
            buffer.truncate(n as usize);
            return Ok(buffer);
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}
