//! The first steps of every child the harness starts, sandboxed or not, in
//! one place: signal dispositions back to their defaults, the parent-death
//! signal, and a check that the parent did not die before that signal was
//! set (it would then never come).
//!
//! Children that `exec` (models, servers, sandboxed programs) get these
//! through [`child_of_harness`], which also gives them a process group of
//! their own. The sandbox's own forks that never `exec` (the namespace's
//! first process and init, `child.rs`) call [`start`] directly: no `exec`
//! resets for them what the harness set up for itself (its ignored SIGPIPE,
//! its handlers), so this must.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// Makes `command`'s process the leader of a process group of its own
/// (so a terminal's Ctrl-C reaches only the harness, and stopping the
/// group reaches whatever it forks), with default signal dispositions, and
/// SIGKILLed when the thread that starts it ends (Linux ties the
/// parent-death signal to the forking thread, so callers fork from one
/// that outlives the program); it never starts if the harness died first.
pub(crate) fn child_of_harness(command: &mut Command) -> &mut Command {
    // SAFETY: getpid cannot fail.
    let parent = unsafe { libc::getpid() };
    command.process_group(0);
    // SAFETY: `start` makes only async-signal-safe system calls and does not allocate.
    unsafe { command.pre_exec(move || start(Some(parent))) }
}

/// Resets every signal's disposition and the signal mask, then sets the
/// parent-death signal (SIGKILL) and exits at once when the parent is no
/// longer `parent`. `None`: a parent this process cannot name, as a PID
/// namespace's init cannot (its parent lies outside, `getppid` says 0).
///
/// The parent-death signal is cleared when credentials change: call this
/// after any `setuid`.
///
/// # Safety
/// Only raw system calls: callable between `fork` and `exec`, and in a
/// forked child of a multi-threaded process that never execs.
pub(super) unsafe fn start(parent: Option<libc::pid_t>) -> io::Result<()> {
    // SAFETY: sigaction, sigprocmask, prctl, getppid and _exit are
    // async-signal-safe; the structures live on this stack.
    unsafe {
        reset_signals();
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
            return Err(io::Error::last_os_error());
        }
        // The parent died between fork and prctl: the signal will never come.
        if parent.is_some_and(|p| libc::getppid() != p) {
            libc::_exit(1);
        }
    }
    Ok(())
}

/// Every catchable signal back to its default action (an ignored SIGPIPE
/// would turn a Python program's broken pipe into an exception it does not
/// expect), none blocked.
///
/// # Safety
/// Only raw system calls.
unsafe fn reset_signals() {
    // SAFETY: a zeroed `sigaction` is SIG_DFL with an empty mask and no
    // flags; the numbers the kernel refuses (SIGKILL, SIGSTOP, those glibc
    // reserves) fail harmlessly with EINVAL.
    unsafe {
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        for sig in 1..libc::SIGRTMAX() {
            libc::sigaction(sig, &default, std::ptr::null_mut());
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_starts_with_default_signals_in_its_own_group() {
        // SAFETY: ignoring SIGUSR1 in this test process only; the harness
        // does not use it.
        unsafe { libc::signal(libc::SIGUSR1, libc::SIG_IGN) };
        let mut command = Command::new("/bin/sh");
        command.args([
            "-c",
            "grep -E '^(SigIgn|PPid)' /proc/self/status; cut -d' ' -f5 /proc/$$/stat; echo $$",
        ]);
        let out = child_of_harness(&mut command).output().unwrap();
        // SAFETY: restoring the default disposition.
        unsafe { libc::signal(libc::SIGUSR1, libc::SIG_DFL) };
        let text = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let ignored = lines
            .iter()
            .find_map(|l| l.strip_prefix("SigIgn:"))
            .unwrap();
        let ignored = u64::from_str_radix(ignored.trim(), 16).unwrap();
        // SIGPIPE: the Rust runtime ignores it in the harness.
        for sig in [libc::SIGUSR1, libc::SIGPIPE] {
            assert_eq!(
                ignored & (1 << (sig - 1)),
                0,
                "signal {sig} ignored: {text}"
            );
        }
        assert_eq!(lines[lines.len() - 2], lines[lines.len() - 1], "{text}");
    }
}
