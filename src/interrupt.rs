//! Ctrl-C for the commands that ask models (`run`, `synth`).
//!
//! The first SIGINT asks the process to stop: [`requested`] turns true and
//! [`wait`] resolves (the scheduler then cancels what is in flight, tool
//! scripts included, and keeps what finished). The second ends the process
//! at once with exit 130, after `last_words` (killing what programs left
//! running). A third, should that hang, ends it from the signal handler.
//!
//! The handler only counts and writes a byte to a pipe, which is all a
//! signal handler may safely do; a thread of its own reads the pipe and
//! does the rest, so a busy runtime cannot delay it.
//!
//! A leaf: it imports nothing from the rest of the crate.

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};

/// The exit code of an interrupted process: 128 + SIGINT.
pub(crate) const EXIT_CODE: i32 = 130;

/// SIGINTs received so far, counted by the handler.
static COUNT: AtomicU32 = AtomicU32::new(0);
/// Set by the thread on the first SIGINT.
static STOP: AtomicBool = AtomicBool::new(false);
/// The write end of the pipe the handler wakes the thread through.
static PIPE: AtomicI32 = AtomicI32::new(-1);
/// Wakes the tasks in [`wait`].
static WAKE: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Handles SIGINT as the module says, from now on.
/// `last_words` runs on the second SIGINT, just before the exit.
pub(crate) fn install(last_words: fn()) -> std::io::Result<()> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills `fds` with two new descriptors or fails.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and owned here; the write end is
    // kept open for the process's lifetime (the handler may use it any time).
    let read = unsafe { OwnedFd::from_raw_fd(fds[0]) };
    PIPE.store(fds[1], Ordering::SeqCst);
    std::thread::Builder::new()
        .name("interrupt".into())
        .spawn(move || watch(std::fs::File::from(read), last_words))?;
    // SAFETY: a zeroed sigaction is a valid value to fill in; `on_sigint`
    // only makes async-signal-safe calls.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigint as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(libc::SIGINT, &action, std::ptr::null_mut()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The signal handler: count, and wake the thread.
extern "C" fn on_sigint(_: libc::c_int) {
    let n = COUNT.fetch_add(1, Ordering::SeqCst) + 1;
    if n >= 3 {
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(EXIT_CODE) };
    }
    let fd = PIPE.load(Ordering::SeqCst);
    // SAFETY: write is async-signal-safe; `fd` is the pipe's open write end.
    unsafe { libc::write(fd, [1u8].as_ptr().cast(), 1) };
}

/// The thread: the first byte is the first SIGINT, the second ends the process.
fn watch(mut pipe: std::fs::File, last_words: fn()) {
    let mut byte = [0u8];
    let mut seen = 0;
    while let Ok(1) = pipe.read(&mut byte) {
        seen += 1;
        if seen == 1 {
            STOP.store(true, Ordering::SeqCst);
            WAKE.notify_waiters();
        } else {
            last_words();
            // SAFETY: ends the process without running destructors, which
            // could wait for the work the user asked twice to abandon.
            unsafe { libc::_exit(EXIT_CODE) };
        }
    }
}

/// Whether Ctrl-C asked the process to stop.
pub(crate) fn requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Resolves once Ctrl-C asked the process to stop (at once if it already
/// has); never when [`install`] was not called.
pub(crate) async fn wait() {
    loop {
        let notified = WAKE.notified();
        tokio::pin!(notified);
        // Registered before the check, so a notice between the two is not lost.
        notified.as_mut().enable();
        if requested() {
            return;
        }
        notified.await;
    }
}
