//! Waiting for a sandboxed process: its output read with a size cap, its exit
//! watched through a pidfd, and a wall-clock deadline, all in one `poll` loop.

use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// What the loop saw.
pub(super) struct Captured {
    /// Standard output, at most the cap.
    pub stdout: Vec<u8>,
    /// Standard error, at most the cap.
    pub stderr: Vec<u8>,
    /// The deadline passed and the process was killed.
    pub timed_out: bool,
    /// The output passed the cap and the process was killed.
    pub output_limited: bool,
}

/// How long to keep reading after the process exited, for output still in flight.
const DRAIN_GRACE: Duration = Duration::from_millis(200);

/// Reads `stdout`/`stderr` of `pid` until it exits; calls `kill` on timeout or
/// when the output exceeds `cap` bytes.
pub(super) fn capture(
    pid: libc::pid_t,
    stdout: std::fs::File,
    stderr: std::fs::File,
    deadline: Instant,
    cap: usize,
    kill: &dyn Fn(),
) -> Captured {
    let mut streams = [Stream::new(stdout), Stream::new(stderr)];
    let pidfd = pidfd_open(pid);
    let mut out = Captured {
        stdout: Vec::new(),
        stderr: Vec::new(),
        timed_out: false,
        output_limited: false,
    };
    let mut exited = false;
    let mut stop_at = deadline;
    loop {
        let open: Vec<usize> = (0..2).filter(|&i| streams[i].file.is_some()).collect();
        // Without a pidfd (kernels before 5.3), closed pipes stand for the exit.
        if open.is_empty() && (exited || pidfd.is_none()) {
            break;
        }
        let now = Instant::now();
        if now >= stop_at {
            if !exited {
                out.timed_out = true;
                kill();
            }
            break;
        }
        let mut fds: Vec<libc::pollfd> = open
            .iter()
            .map(|&i| libc::pollfd {
                fd: streams[i].file.as_ref().map_or(-1, |f| f.as_raw_fd()),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        if let (Some(fd), false) = (&pidfd, exited) {
            fds.push(libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
        let timeout = (stop_at - now).as_millis().min(i32::MAX as u128) as i32 + 1;
        // SAFETY: `fds` is a valid array of pollfd for its length.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
        if rc < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            break;
        }
        for (slot, &i) in open.iter().enumerate() {
            if fds[slot].revents != 0 {
                streams[i].read_some();
            }
        }
        if !exited && fds.len() > open.len() && fds[open.len()].revents != 0 {
            exited = true;
            // Output may still be in flight from the process's last moments.
            stop_at = Instant::now() + DRAIN_GRACE;
        }
        if streams.iter().map(|s| s.data.len()).sum::<usize>() > cap {
            out.output_limited = true;
            kill();
            break;
        }
    }
    let [o, e] = streams;
    out.stdout = o.data;
    out.stderr = e.data;
    out.stdout.truncate(cap);
    out.stderr.truncate(cap);
    out
}

struct Stream {
    file: Option<std::fs::File>,
    data: Vec<u8>,
}

impl Stream {
    fn new(file: std::fs::File) -> Stream {
        Stream {
            file: Some(file),
            data: Vec::new(),
        }
    }

    fn read_some(&mut self) {
        let mut buf = [0u8; 16 * 1024];
        match self.file.as_mut().map(|f| f.read(&mut buf)) {
            Some(Ok(0)) | Some(Err(_)) => self.file = None,
            Some(Ok(n)) => self.data.extend_from_slice(&buf[..n]),
            None => {}
        }
    }
}

fn pidfd_open(pid: libc::pid_t) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    // SAFETY: a non-negative return is a descriptor we now own.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Reaps `pid`, returning its wait status and resource use.
pub(super) fn reap(pid: libc::pid_t) -> (libc::c_int, libc::rusage) {
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid pointers to locals.
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if rc >= 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return (status, usage);
        }
    }
}
