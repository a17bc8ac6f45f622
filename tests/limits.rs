//! Limits: what a hostile model, program or spec sends ends in bounded time
//! and memory, with a named error in the record or a located exit 2. Never
//! an abort, a hang, a process left behind, a secret in any output, or a
//! record missing from the reports.
//!
//! One table per area, each in a module of its own:
//! - `records`: values nested past the depth limit (a model's arguments,
//!   spec data, agent state) and journals read back whole;
//! - `episodes`: calls per turn and in all, result and error sizes, state
//!   cost and an episode's wall time;
//! - `io`: HTTP bodies, files of every kind (devices, FIFOs, huge files),
//!   images that change after they were recorded;
//! - `children`: programs that read the harness's environment or outlive
//!   their call, and Ctrl-C;
//! - `config`: numbers out of range, credentials in URLs.
//!
//! Every case runs the real binary through [`capped`]: under a memory cap
//! (so a regression fails the test, not the machine), a wall-time limit and
//! a process group of its own that must be empty when it ends.

mod children;
mod config;
mod episodes;
mod io;
mod records;

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The address space a case's harness may map. Far above what an honest
/// run uses (threads and allocator arenas reserve much more than they
/// touch), far below what the unbounded inputs reached (gigabytes).
pub const MEMORY_CAP: u64 = 3 << 30;

/// How a capped run ended.
#[derive(Debug)]
pub struct Capped {
    /// The exit code; `None` when a signal ended the process.
    pub code: Option<i32>,
    /// Stdout, then stderr.
    pub out: String,
    /// From the start to the exit.
    pub elapsed: Duration,
}

impl Capped {
    /// Asserts the run ended with `code`, printing everything it said if not.
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code,
            Some(code),
            "exit {:?} after {:?}:\n{}",
            self.code,
            self.elapsed,
            self.out
        );
        self
    }

    /// Asserts the output names `what`.
    pub fn expect_output(&self, what: &str) -> &Self {
        assert!(
            self.out.contains(what),
            "the output does not say {what:?}:\n{}",
            self.out
        );
        self
    }
}

/// Runs `cmd` with its address space capped at [`MEMORY_CAP`], in a
/// process group of its own, for at most `wall`. Fails the test when the
/// process panicked, aborted or was killed by a signal, overran `wall`
/// (the group is then killed), or left any process of its group running.
pub fn capped(cmd: &mut Command, wall: Duration) -> Capped {
    capped_with(cmd, wall, |_| ())
}

/// [`capped`], calling `meanwhile` with the harness's pid once it started
/// (to signal it mid-run); a panic there kills the run's group first.
pub fn capped_with(cmd: &mut Command, wall: Duration, meanwhile: impl FnOnce(i32)) -> Capped {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // SAFETY: setrlimit is async-signal-safe and the closure allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: MEMORY_CAP,
                rlim_max: MEMORY_CAP,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let start = Instant::now();
    let child = cmd.spawn().expect("the harness binary starts");
    let group = child.id() as i32;
    let (done, waited) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| meanwhile(group)))
    {
        // SAFETY: kill with a negative pid signals the group this test started.
        unsafe { libc::kill(-group, libc::SIGKILL) };
        std::panic::resume_unwind(panic);
    }
    let output = match waited.recv_timeout(wall) {
        Ok(output) => output.expect("waiting for the harness"),
        Err(_) => {
            // SAFETY: kill with a negative pid signals the group this test started.
            unsafe { libc::kill(-group, libc::SIGKILL) };
            let output = waited
                .recv()
                .expect("the waiter ends")
                .expect("waiting for the harness");
            panic!(
                "still running after {wall:?}; it said:\n{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
    };
    let elapsed = start.elapsed();
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    use std::os::unix::process::ExitStatusExt;
    assert!(
        output.status.signal().is_none(),
        "ended by signal {:?} after {elapsed:?}:\n{out}",
        output.status.signal()
    );
    assert!(!out.contains("panicked"), "the harness panicked:\n{out}");
    assert!(
        !matches!(output.status.code(), Some(101 | 134)),
        "exit {:?} (a panic or an abort):\n{out}",
        output.status.code()
    );
    assert!(
        group_is_empty(group),
        "processes of the run's group are still running:\n{out}"
    );
    Capped {
        code: output.status.code(),
        out,
        elapsed,
    }
}

/// Whether no process of group `group` is left, after a short grace for
/// ones being reaped.
pub fn group_is_empty(group: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        // SAFETY: signal 0 only asks whether the group has a member.
        let alive = unsafe { libc::kill(-group, 0) } == 0;
        if !alive {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether process `pid` still runs (a zombie counts as gone).
pub fn pid_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}
