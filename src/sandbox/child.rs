//! What the sandboxed child does between `fork` and `exec`.
//!
//! This code runs in a child forked from a multi-threaded process, so it may
//! only make raw system calls: no allocation, no locks, no panics. Everything
//! it needs (paths, file contents, the seccomp program, the Landlock ruleset)
//! is prepared by the parent in a [`ChildPlan`] before the fork.
//!
//! The order matters:
//! 1. the network namespace (a shared empty one, see `spawn.rs`,
//!    or a new one), the uid change, then `unshare` of user, mount, IPC, UTS
//!    and PID namespaces as that unprivileged uid, which maps only itself:
//!    no root exists inside;
//! 2. a fork, because only children of the `unshare` caller enter the new
//!    PID namespace; the first process waits and mirrors the exit status;
//! 3. in the namespace's init: a private `/proc`, a size-capped tmpfs as the
//!    working directory holding the program's files, Landlock, seccomp,
//!    rlimits;
//! 4. a last fork: init stays behind to reap, the program execs as PID 2,
//!    keeping only its standard streams and its channel to a linked program.
//!
//! Before all of it, while still root, the child moves itself into the run's
//! cgroups, so the whole tree counts against the tree's limits.

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;

use super::setup::start;

/// Everything the child needs, prepared before the fork.
pub(super) struct ChildPlan {
    /// `cgroup.procs` of the run's cgroups, to write itself into while still root.
    pub cgroups: Vec<RawFd>,
    /// The channel to a linked program, kept open across `exec`.
    pub channel: Vec<RawFd>,
    /// `(resource, limits)` pairs for `setrlimit`.
    pub rlimits: Vec<(libc::__rlimit_resource_t, libc::rlimit)>,
    /// A shared empty network namespace to join instead of making one.
    pub netns: Option<RawFd>,
    /// The uid and gid to become, when the harness runs as root.
    pub ids: Option<(libc::uid_t, libc::gid_t)>,
    /// Contents of `/proc/self/uid_map`.
    pub uid_map: Vec<u8>,
    /// Contents of `/proc/self/gid_map`.
    pub gid_map: Vec<u8>,
    /// The working directory (a mount point for the tmpfs).
    pub workdir: CString,
    /// Options of the working directory's tmpfs.
    pub tmpfs_options: CString,
    /// Files to create in the working directory: absolute path and contents.
    pub files: Vec<(CString, Vec<u8>)>,
    /// The Landlock ruleset to enforce, if any.
    pub landlock: Option<RawFd>,
    /// Landlock rules for paths mounted after the fork (the working
    /// directory, `/proc`): a rule names an inode, and those are new ones.
    pub late_rules: Vec<(CString, u64)>,
    /// The seccomp programs to install, in order.
    pub seccomp: Vec<seccompiler::BpfProgram>,
    /// Where a failing step writes its name, for the parent's error message.
    pub report: RawFd,
    /// The harness's pid: the first process's parent.
    pub harness: libc::pid_t,
}

/// The kernel's `struct landlock_path_beneath_attr`.
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

const NAMESPACES: libc::c_int = libc::CLONE_NEWUSER
    | libc::CLONE_NEWNS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWPID;

/// Sets up isolation in the forked child; returning `Ok` lets `std` exec the program.
///
/// # Safety
/// Must only be called between `fork` and `exec` (from `pre_exec`).
pub(super) unsafe fn enter(plan: &ChildPlan) -> io::Result<()> {
    // SAFETY: raw system calls only, on descriptors and memory the plan owns
    // or this function maps; the forks happen in a process with one thread.
    unsafe {
        // First, so every process of the run counts against the tree's limits.
        if join_cgroups(&plan.cgroups).is_err() {
            return check(plan, b"join the run's cgroup", -1);
        }
        join_namespaces(plan)?;
        // Where the namespace's init leaves the program's wait status.
        let page = libc::mmap(
            std::ptr::null_mut(),
            8,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if page == libc::MAP_FAILED {
            return check(plan, b"mmap", -1);
        }
        let status = page.cast::<[libc::c_int; 2]>();
        let pid = libc::fork();
        check(plan, b"fork", pid)?;
        if pid > 0 {
            mirror_exit(pid, status);
        }
        // PID 1 of the new namespace: when it dies the kernel kills the rest.
        // Its parent lies outside the namespace, where `getppid` cannot see.
        starting(plan, None)?;
        mount_workdir(plan)?;
        restrict(plan)?;
        // The program runs as PID 2, under an init of ours: PID 1 ignores
        // signals it has no handler for, which would change how programs die.
        let pid = libc::fork();
        check(plan, b"fork", pid)?;
        if pid > 0 {
            init(pid, status);
        }
        starting(plan, Some(1))?;
        keep_open(&plan.channel)
    }
}

/// Moves the calling process into each cgroup whose `cgroup.procs` is open as `fds`.
///
/// # Safety
/// Only raw system calls: callable between `fork` and `exec`.
pub(super) unsafe fn join_cgroups(fds: &[RawFd]) -> io::Result<()> {
    for &fd in fds {
        // "0" names the writer itself.
        // SAFETY: a one-byte write from a static buffer.
        if unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) } != 1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Lets `fds` survive `exec` (they were made close-on-exec so that no other
/// child inherits them).
///
/// # Safety
/// Only raw system calls: callable between `fork` and `exec`.
pub(super) unsafe fn keep_open(fds: &[RawFd]) -> io::Result<()> {
    for &fd in fds {
        // SAFETY: fcntl on a descriptor number; a closed one fails with EBADF.
        if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Drops to the run's uid and enters new user, mount, PID, IPC, UTS and
/// network namespaces, mapping only that uid.
unsafe fn join_namespaces(plan: &ChildPlan) -> io::Result<()> {
    // SAFETY: raw system calls with NUL-terminated paths and buffers the plan owns.
    unsafe {
        // Joining the shared network namespace needs root, so it comes first.
        let mut namespaces = NAMESPACES;
        match plan.netns {
            Some(fd) => check(
                plan,
                b"setns(network namespace)",
                libc::setns(fd, libc::CLONE_NEWNET),
            )?,
            None => namespaces |= libc::CLONE_NEWNET,
        }
        if let Some((uid, gid)) = plan.ids {
            check(plan, b"setgroups", libc::setgroups(0, std::ptr::null()))?;
            check(plan, b"setgid", libc::setgid(gid))?;
            check(plan, b"setuid", libc::setuid(uid))?;
        }
        // The uid change made the process non-dumpable, which makes its
        // /proc files root-owned; the uid map below must be writable by us.
        check(
            plan,
            b"prctl(PR_SET_DUMPABLE)",
            libc::prctl(libc::PR_SET_DUMPABLE, 1),
        )?;
        check(
            plan,
            b"unshare(user, mount, net, ipc, uts, pid namespaces)",
            libc::unshare(namespaces),
        )?;
        write_file(plan, c"/proc/self/setgroups", b"deny")?;
        write_file(plan, c"/proc/self/uid_map", &plan.uid_map)?;
        write_file(plan, c"/proc/self/gid_map", &plan.gid_map)?;
        // If the harness dies, so does the sandbox. After the uid change,
        // which clears the parent-death signal.
        starting(plan, Some(plan.harness))
    }
}

/// A private mount tree with our own `/proc` and a tmpfs working directory
/// holding the program's files.
unsafe fn mount_workdir(plan: &ChildPlan) -> io::Result<()> {
    // SAFETY: raw system calls with NUL-terminated strings the plan owns or static ones.
    unsafe {
        check(
            plan,
            b"mount(/, MS_PRIVATE)",
            libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ),
        )?;
        check(
            plan,
            b"mount(/proc)",
            libc::mount(
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                std::ptr::null(),
            ),
        )?;
        check(
            plan,
            b"mount(tmpfs on the working directory)",
            libc::mount(
                c"tmpfs".as_ptr(),
                plan.workdir.as_ptr(),
                c"tmpfs".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                plan.tmpfs_options.as_ptr().cast(),
            ),
        )?;
        for (path, contents) in &plan.files {
            create_file(plan, path, contents)?;
        }
        check(plan, b"chdir", libc::chdir(plan.workdir.as_ptr()))?;
        let name = b"sandbox";
        let rc = libc::sethostname(name.as_ptr().cast(), name.len());
        check(plan, b"sethostname", rc)
    }
}

/// No new privileges, Landlock, seccomp, and the resource limits.
unsafe fn restrict(plan: &ChildPlan) -> io::Result<()> {
    // SAFETY: raw system calls; `prog` and the rule point into live memory for each call.
    unsafe {
        check(
            plan,
            b"prctl(PR_SET_NO_NEW_PRIVS)",
            libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0),
        )?;
        if let Some(fd) = plan.landlock {
            for (path, access) in &plan.late_rules {
                add_path_rule(plan, fd, path, *access)?;
            }
            let rc = libc::syscall(libc::SYS_landlock_restrict_self, fd, 0) as libc::c_int;
            check(plan, b"landlock_restrict_self", rc)?;
            libc::close(fd);
        }
        for program in &plan.seccomp {
            let prog = libc::sock_fprog {
                len: program.len() as libc::c_ushort,
                // Same layout: both mirror the kernel's `struct sock_filter`.
                filter: program.as_ptr().cast::<libc::sock_filter>().cast_mut(),
            };
            let rc = libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0,
                &prog as *const libc::sock_fprog,
            ) as libc::c_int;
            check(plan, b"seccomp", rc)?;
        }
        // Limits last: the address-space limit binds this copy of the
        // harness too, whose mappings may already exceed it until exec.
        for (resource, rl) in &plan.rlimits {
            check(plan, b"setrlimit", libc::setrlimit(*resource, rl))?;
        }
        Ok(())
    }
}

/// Lets the process see and use `path` (mounted after the ruleset was made).
unsafe fn add_path_rule(
    plan: &ChildPlan,
    ruleset: RawFd,
    path: &std::ffi::CStr,
    access: u64,
) -> io::Result<()> {
    // SAFETY: `rule` lives on this stack through the call; `dir` is closed once.
    unsafe {
        let dir = libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
        check(plan, b"open a path for Landlock", dir)?;
        let rule = PathBeneathAttr {
            allowed_access: access,
            parent_fd: dir,
        };
        const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;
        let rc = libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset,
            LANDLOCK_RULE_PATH_BENEATH,
            &rule as *const PathBeneathAttr,
            0,
        ) as libc::c_int;
        libc::close(dir);
        check(plan, b"landlock_add_rule", rc)
    }
}

/// The namespace's init: reap everything until the program exits, leave its
/// status for the first process, and exit, which ends the namespace.
unsafe fn init(program: libc::pid_t, status: *mut [libc::c_int; 2]) -> ! {
    // SAFETY: `status` is the shared page `enter` mapped; only raw system calls.
    unsafe {
        libc::syscall(libc::SYS_close_range, 0, libc::c_uint::MAX, 0);
        loop {
            let mut wstatus = 0;
            let pid = libc::waitpid(-1, &mut wstatus, 0);
            if pid == program {
                (*status)[1] = wstatus;
                (*status)[0] = 1;
                libc::_exit(0);
            }
            if pid < 0 && *libc::__errno_location() != libc::EINTR {
                libc::_exit(125);
            }
        }
    }
}

/// The first process: close everything, wait for the namespace's init, and
/// exit as the program did (or as init did, if it failed before the program).
unsafe fn mirror_exit(pid: libc::pid_t, program: *const [libc::c_int; 2]) -> ! {
    // SAFETY: `program` is the shared page `enter` mapped; only raw system calls.
    unsafe {
        // Holding std's exec-status pipe open would make `spawn` wait for the whole run.
        libc::syscall(libc::SYS_close_range, 0, libc::c_uint::MAX, 0);
        let mut status = 0;
        while libc::waitpid(pid, &mut status, 0) < 0 {
            if *libc::__errno_location() != libc::EINTR {
                libc::_exit(125);
            }
        }
        if (*program)[0] == 1 {
            status = (*program)[1];
        }
        if libc::WIFSIGNALED(status) {
            let sig = libc::WTERMSIG(status);
            libc::signal(sig, libc::SIG_DFL);
            libc::kill(libc::getpid(), sig);
            libc::_exit(128 + sig);
        }
        libc::_exit(libc::WEXITSTATUS(status));
    }
}

/// A process of the run's first steps (`setup.rs`), a failure named on the report pipe.
///
/// # Safety
/// Only raw system calls: callable between `fork` and `exec`.
unsafe fn starting(plan: &ChildPlan, parent: Option<libc::pid_t>) -> io::Result<()> {
    // SAFETY: as this function's own contract.
    match unsafe { start(parent) } {
        Ok(()) => Ok(()),
        // SAFETY: `check` only writes to the report pipe.
        Err(_) => unsafe { check(plan, b"prctl(PR_SET_PDEATHSIG)", -1) },
    }
}

/// Fails with the current errno after naming `step` on the report pipe.
unsafe fn check(plan: &ChildPlan, step: &[u8], rc: libc::c_int) -> io::Result<()> {
    if rc >= 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    // SAFETY: a write of a borrowed buffer to the report pipe.
    unsafe {
        libc::write(plan.report, step.as_ptr().cast(), step.len());
    }
    Err(err)
}

unsafe fn write_file(plan: &ChildPlan, path: &std::ffi::CStr, data: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated and `data` borrowed; the descriptor is closed once.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        check(plan, path.to_bytes(), fd)?;
        let written = libc::write(fd, data.as_ptr().cast(), data.len());
        libc::close(fd);
        check(plan, path.to_bytes(), if written < 0 { -1 } else { 0 })
    }
}

unsafe fn create_file(plan: &ChildPlan, path: &CString, mut data: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated and `data` borrowed; the descriptor is closed once.
    unsafe {
        let fd = libc::open(
            path.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC,
            0o644,
        );
        check(plan, b"create a program file", fd)?;
        while !data.is_empty() {
            let n = libc::write(fd, data.as_ptr().cast(), data.len());
            if n < 0 {
                libc::close(fd);
                return check(plan, b"write a program file", -1);
            }
            data = &data[n as usize..];
        }
        libc::close(fd);
        Ok(())
    }
}
