//! Starting programs, isolated or (with `--unsandboxed`) not, alone or as a
//! linked pair, and turning what happened into [`Outcome`]s.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use seccompiler::BpfProgram;

use super::capture::{Captured, Watch, capture, exited, kill_namespace_init, reap, signal};
use super::cgroup::TreeLimits;
use super::child::{enter, join_cgroups, keep_open};
use super::plan::{
    CpuSlot, Shared, child_plan, is_root, path_cstring, pipe, rlimits, run_ids, scratch_dir,
    shared_netns, timeval,
};
use super::seat::Lease;
use super::warm_run::WarmRun;
use super::workdir::Workdir;
use super::zygote::{Zygote, Zygotes};
use super::{
    CHANNEL_ENV, Isolation, Killed, Limits, Outcome, Program, SandboxError, Termination, Usage,
};
use super::{fs_policy, seccomp};

/// The environment a program sees: nothing of the harness's.
pub(crate) const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

static RUN_COUNTER: AtomicU32 = AtomicU32::new(0);

/// Runs programs; one per process is enough (see [`super::shared`]).
pub struct Sandbox {
    isolated: bool,
    netns: Option<OwnedFd>,
    seccomp: Vec<BpfProgram>,
    scratch: PathBuf,
    tree: Option<TreeLimits>,
    zygotes: Zygotes,
}

/// A program on its way: what the parent holds until it is reaped.
struct Started {
    pid: libc::pid_t,
    stdout: Option<std::fs::File>,
    stderr: Option<std::fs::File>,
    seat: Option<Lease>,
    /// When its program started, after the exec (cold) or its `G` (warm):
    /// its wall-clock limit counts from here, not from the sandbox's setup.
    start: Instant,
    /// Set when a zygote forked the run: it reports the exit.
    warm: Option<WarmRun>,
    /// The init of a warm run's namespace, held from when its program
    /// started: the zygote, not the harness, reaps it, and a reused pid must
    /// not be signalled.
    pidfd: Option<Arc<OwnedFd>>,
    _workdir: Workdir,
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
        let netns = shared_netns();
        let sandbox = Sandbox {
            isolated: true,
            zygotes: Zygotes::new(netns.as_ref().map(AsRawFd::as_raw_fd)),
            netns,
            seccomp: seccomp::filters()?,
            scratch: scratch_dir()?,
            tree: TreeLimits::probe(),
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

    /// A sandbox that does not isolate: rlimits, tree limits where cgroups
    /// allow, an empty environment and a deadline only. For machines that
    /// cannot isolate, by explicit choice.
    pub fn unsandboxed() -> Sandbox {
        Sandbox {
            isolated: false,
            netns: None,
            seccomp: Vec::new(),
            scratch: scratch_dir().unwrap_or_else(|_| std::env::temp_dir()),
            tree: TreeLimits::probe(),
            zygotes: Zygotes::default(),
        }
    }

    /// What confines a run here, for manifests and reports.
    pub fn isolation(&self) -> Isolation {
        Isolation {
            isolated: self.isolated,
            tree_limits: self.tree.as_ref().map(TreeLimits::describe),
        }
    }

    /// Runs `program` to completion or to its limits.
    ///
    /// At most one run per CPU at a time (more wait their turn): programs
    /// then get a CPU each, so their time limits mean the same on any load.
    pub fn run(&self, program: &Program) -> Result<Outcome, SandboxError> {
        let _slot = CpuSlot::take();
        let mut started = self.start(program, &[])?;
        self.confirm(&mut started, program)?;
        let kill = self.killer(&started);
        let watch = watch(&mut started, &program.limits, &kill)?;
        let deadline = started.start + program.limits.wall;
        let captured = capture(vec![watch], deadline, program.limits.output_bytes, None);
        let [captured] = <[Captured; 1]>::try_from(captured).map_err(|_| lost())?;
        Ok(self.finish(started, captured, &kill))
    }

    /// Runs `worker` and `leader` together, joined by two pipes: each reads
    /// what the other writes, through the descriptors named in its
    /// `HARNESS_CHANNEL` variable (`<read>,<write>`). Neither can reach the
    /// other otherwise: distinct uids, namespaces, working directories.
    /// When the leader ends, the worker is stopped.
    ///
    /// The pair takes one CPU slot: one waits while the other computes.
    pub fn run_pair(
        &self,
        worker: &Program,
        leader: &Program,
    ) -> Result<(Outcome, Outcome), SandboxError> {
        let _slot = CpuSlot::take();
        let io = |e: std::io::Error| SandboxError::Setup(format!("pipe: {e}"));
        let (to_worker_read, to_worker_write) = pipe().map_err(io)?;
        let (to_leader_read, to_leader_write) = pipe().map_err(io)?;
        let worker_fds = [to_worker_read.as_raw_fd(), to_leader_write.as_raw_fd()];
        let leader_fds = [to_leader_read.as_raw_fd(), to_worker_write.as_raw_fd()];
        // Both are started before either is waited for: zygotes start, and
        // warm children confine themselves, side by side.
        if self.isolated {
            self.zygotes.prepare(&[worker, leader], &self.scratch);
        }
        let mut w = self.start(worker, &worker_fds)?;
        let mut l = match self.start(leader, &leader_fds) {
            Ok(l) => l,
            Err(e) => {
                self.abandon(w, worker);
                return Err(e);
            }
        };
        if let Err(e) = self.confirm(&mut w, worker) {
            self.abandon(l, leader);
            return Err(e);
        }
        if let Err(e) = self.confirm(&mut l, leader) {
            self.abandon(w, worker);
            return Err(e);
        }
        // Only the two programs may hold the ends: an end open here would
        // keep the other from seeing end-of-file when its peer dies.
        drop((
            to_worker_read,
            to_worker_write,
            to_leader_read,
            to_leader_write,
        ));
        let (kill_w, kill_l) = (self.killer(&w), self.killer(&l));
        let watches = vec![
            watch(&mut w, &worker.limits, &kill_w)?,
            watch(&mut l, &leader.limits, &kill_l)?,
        ];
        // From the later start: neither program's setup eats into its time.
        let deadline = w.start.max(l.start) + worker.limits.wall.max(leader.limits.wall);
        let cap = worker.limits.output_bytes.max(leader.limits.output_bytes);
        let mut captured = capture(watches, deadline, cap, Some(1)).into_iter();
        let (cw, cl) = (
            captured.next().ok_or_else(lost)?,
            captured.next().ok_or_else(lost)?,
        );
        Ok((self.finish(w, cw, &kill_w), self.finish(l, cl, &kill_l)))
    }

    /// Starts `program` in a fresh working directory; `channel` descriptors
    /// stay open in it and are named in `HARNESS_CHANNEL`.
    fn start(&self, program: &Program, channel: &[RawFd]) -> Result<Started, SandboxError> {
        let io = |what: &str, e: std::io::Error| SandboxError::Setup(format!("{what}: {e}"));
        let n = RUN_COUNTER.fetch_add(1, Ordering::Relaxed);
        let workdir = Workdir(self.scratch.join(format!("{}-{n}", std::process::id())));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&workdir.0)
            .map_err(|e| io("create the working directory", e))?;
        let limits = &program.limits;
        let seat = match &self.tree {
            Some(tree) => Some(
                tree.lease(limits.memory_bytes, limits.processes)
                    .map_err(|e| io("take a cgroup seat", e))?,
            ),
            None => None,
        };
        if self.isolated
            && let Some(warm) = &program.warm
            && let Some(zygote) = self.zygotes.get(program, warm, &self.scratch)
        {
            return self.start_warm(&zygote, program, channel, (n, workdir, seat));
        }
        let cgroup_fds: Vec<RawFd> = seat.iter().flat_map(Lease::join_fds).collect();
        let mut command = Command::new(&program.argv[0]);
        command
            .args(&program.argv[1..])
            .env_clear()
            .env("PATH", PATH)
            .env("LANG", "C.UTF-8")
            .env("HOME", &workdir.0)
            .env("TMPDIR", &workdir.0)
            .envs(program.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::from(
                super::memory_file(&program.stdin).map_err(|e| io("write its input", e))?,
            ))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let [read, write] = channel {
            command.env(CHANNEL_ENV, format!("{read},{write}"));
        }
        let channel = channel.to_vec();
        let (report_read, report_write) = pipe().map_err(|e| io("pipe", e))?;
        super::slow_start();
        let child = if self.isolated {
            let fds = (cgroup_fds, channel, report_write.as_raw_fd());
            let plan = self.plan(program, &workdir, n, fds)?;
            // SAFETY: `enter` makes only async-signal-safe system calls.
            unsafe {
                command.pre_exec(move || enter(&plan));
            }
            spawn_in(&seat, command)
        } else {
            for (name, contents) in &program.files {
                std::fs::write(workdir.0.join(name), contents)
                    .map_err(|e| io("write a program file", e))?;
            }
            let rlimits = rlimits(limits);
            command.current_dir(&workdir.0);
            super::setup::child_of_harness(&mut command);
            // SAFETY: write, fcntl and setrlimit are async-signal-safe.
            unsafe {
                command.pre_exec(move || {
                    join_cgroups(&cgroup_fds)?;
                    keep_open(&channel)?;
                    for (resource, rl) in &rlimits {
                        if libc::setrlimit(*resource, rl) != 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                    }
                    Ok(())
                });
            }
            spawn_in(&seat, command)
        };
        drop(report_write);
        let mut child = child.map_err(|e| {
            let mut step = String::new();
            let _ = std::io::Read::read_to_string(&mut std::fs::File::from(report_read), &mut step);
            let at = if step.is_empty() { "exec".into() } else { step };
            SandboxError::Setup(format!("{at}: {e} (running {})", program.argv[0]))
        })?;
        // The child has exec'd its program: its time starts now, not before
        // the sandbox's setup, which a loaded machine can stretch.
        let start = Instant::now();
        let file = |f: Option<OwnedFd>| f.map(std::fs::File::from);
        Ok(Started {
            pid: child.id() as libc::pid_t,
            stdout: file(child.stdout.take().map(OwnedFd::from)),
            stderr: file(child.stderr.take().map(OwnedFd::from)),
            seat,
            start,
            warm: None,
            pidfd: None,
            _workdir: workdir,
        })
    }

    /// Waits until a warm run's program has started (a cold one has when
    /// `start` returns), and takes hold of its namespace's init.
    fn confirm(&self, started: &mut Started, program: &Program) -> Result<(), SandboxError> {
        let Some(warm) = &mut started.warm else {
            return Ok(());
        };
        if started.pidfd.is_some() {
            return Ok(());
        }
        let (pid, pidfd) = warm.started(program)?;
        // Its time starts with its program, as a cold run's does after the exec.
        started.start = Instant::now();
        started.pid = pid;
        started.pidfd = Some(Arc::new(pidfd));
        Ok(())
    }

    /// Ends a run that will not be watched: kills its tree and reaps it.
    fn abandon(&self, mut started: Started, program: &Program) {
        // A warm run that failed to start ends by itself, and its pid is
        // not ours to signal.
        if self.confirm(&mut started, program).is_ok() {
            self.killer(&started)();
        }
        match started.warm {
            Some(warm) => drop(warm.reap()),
            None => drop(reap(started.pid)),
        }
    }

    /// The isolated child's plan for run `n` of `program` in `workdir`.
    fn plan(
        &self,
        program: &Program,
        workdir: &Workdir,
        n: u32,
        fds: (Vec<RawFd>, Vec<RawFd>, RawFd),
    ) -> Result<super::child::ChildPlan, SandboxError> {
        let (uid, gid) = run_ids(n);
        let c = path_cstring(&workdir.0)?;
        // SAFETY: chown of a directory we just created.
        if unsafe { libc::chown(c.as_ptr(), uid, gid) } != 0 && is_root() {
            let e = std::io::Error::last_os_error();
            return Err(SandboxError::Setup(format!("chown: {e}")));
        }
        let shared = Shared {
            netns: self.netns.as_ref().map(AsRawFd::as_raw_fd),
            seccomp: &self.seccomp,
        };
        child_plan(&shared, program, &workdir.0, (uid, gid), fds)
    }

    /// Starts `program` as a fork of its warm `zygote`, confined the same way.
    fn start_warm(
        &self,
        zygote: &Zygote,
        program: &Program,
        channel: &[RawFd],
        (n, workdir, seat): (u32, Workdir, Option<Lease>),
    ) -> Result<Started, SandboxError> {
        let io = |what: &str, e: std::io::Error| SandboxError::Setup(format!("{what}: {e}"));
        // The child reports on its own socket, not a report pipe.
        let plan = self.plan(program, &workdir, n, (Vec::new(), channel.to_vec(), -1))?;
        let stdin = super::memory_file(&program.stdin).map_err(|e| io("write its input", e))?;
        let (stdout, stdout_write) = pipe().map_err(|e| io("pipe", e))?;
        let (stderr, stderr_write) = pipe().map_err(|e| io("pipe", e))?;
        let home = workdir.0.to_string_lossy().into_owned();
        let mut env: Vec<(String, String)> = [
            ("PATH", PATH),
            ("LANG", "C.UTF-8"),
            ("HOME", &home),
            ("TMPDIR", &home),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        env.extend(program.env.iter().cloned());
        let script = program.argv.last().map_or("", String::as_str);
        let stdio = [
            stdin.as_raw_fd(),
            stdout_write.as_raw_fd(),
            stderr_write.as_raw_fd(),
        ];
        super::slow_start();
        let main_is_init = program.warm.as_ref().is_some_and(|w| w.main_is_init);
        let warm = zygote.run((&plan, main_is_init), seat.as_ref(), stdio, &env, script)?;
        Ok(Started {
            // Known once its program starts (`confirm`).
            pid: 0,
            pidfd: None,
            stdout: Some(stdout.into()),
            stderr: Some(stderr.into()),
            seat,
            // Set again once its program starts (`confirm`).
            start: Instant::now(),
            warm: Some(warm),
            _workdir: workdir,
        })
    }

    /// Kills the process tree of `pid`.
    fn killer(&self, started: &Started) -> impl Fn() + use<> {
        let (isolated, pid, pidfd) = (self.isolated, started.pid, started.pidfd.clone());
        move || {
            // A warm run not confirmed has no pid of its own yet.
            if pid <= 0 || pidfd.as_deref().is_some_and(exited) {
                return;
            }
            // A warm run's pid is its namespace's init already.
            if let Some(pidfd) = &pidfd {
                signal(pidfd, libc::SIGKILL);
                return;
            }
            // Isolated: killing the namespace's init means the first process
            // exits, and is reaped, only after every process of the run is
            // gone. Before init exists (or after it is gone) the first
            // process's own death takes the namespace down with it.
            if isolated && kill_namespace_init(pid) {
                return;
            }
            // Unsandboxed: the process group is the best we can do.
            let target = if isolated { pid } else { -pid };
            // SAFETY: signalling a process we started.
            unsafe { libc::kill(target, libc::SIGKILL) };
        }
    }

    /// Reaps a program the capture loop let go, and reads its limits' marks.
    fn finish(&self, started: Started, captured: Captured, kill: &dyn Fn()) -> Outcome {
        if !self.isolated {
            kill();
        }
        let (status, usage) = match started.warm {
            Some(warm) => warm.reap(),
            None => reap(started.pid),
        };
        let wall = started.start.elapsed();
        let termination = if libc::WIFSIGNALED(status) {
            Termination::Signaled(libc::WTERMSIG(status))
        } else {
            Termination::Exited(libc::WEXITSTATUS(status))
        };
        let killed = Killed {
            tree_memory_exceeded: started.seat.as_ref().is_some_and(Lease::oom_killed),
            ..captured.killed
        };
        let cpu = timeval(usage.ru_utime) + timeval(usage.ru_stime);
        Outcome {
            termination,
            killed,
            stdout: captured.stdout,
            stderr: captured.stderr,
            usage: Usage {
                cpu,
                tree_cpu: cpu.max(captured.tree_cpu),
                max_rss_kib: usage.ru_maxrss.max(0) as u64,
                wall,
            },
        }
    }
}

/// Starts `command`, in `seat` when there is one.
fn spawn_in(seat: &Option<Lease>, command: Command) -> std::io::Result<std::process::Child> {
    match seat {
        Some(seat) => seat.spawn(command),
        None => {
            let mut command = command;
            command.spawn()
        }
    }
}

/// Hands a program's output streams to the capture loop.
fn watch<'a>(
    started: &mut Started,
    limits: &Limits,
    kill: &'a dyn Fn(),
) -> Result<Watch<'a>, SandboxError> {
    Ok(Watch {
        pid: started.pid,
        stdout: started.stdout.take().ok_or_else(lost)?,
        stderr: started.stderr.take().ok_or_else(lost)?,
        kill,
        cpu_budget: limits.cpu,
        cpu_limit: limits.fractional_cpu(),
    })
}

fn lost() -> SandboxError {
    SandboxError::Setup("lost track of a program's output".into())
}
