//! Writing to standard output and standard error when the reader may be
//! gone (`harness show ... | head -1`, a closed terminal, a CI log that
//! stopped reading).
//!
//! The harness keeps Rust's default SIGPIPE handling (ignored), so a write
//! into a closed pipe returns `EPIPE` instead of killing the process; this
//! matters because children may exit without reading what they were given.
//! `println!` panics on that error, so every line the harness prints goes
//! through [`outln!`] and friends: a failed write marks the stream closed
//! and later writes are skipped. The work goes on to its end (journals,
//! reports), and the exit code says how the work went, not whether anyone
//! read the screen.

use std::fmt::Arguments;
use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// A standard stream that stops printing after its first failed write.
struct Stream {
    closed: AtomicBool,
    name: &'static str,
}

static STDOUT: Stream = Stream {
    closed: AtomicBool::new(false),
    name: "standard output",
};
static STDERR: Stream = Stream {
    closed: AtomicBool::new(false),
    name: "standard error",
};

impl Stream {
    /// Writes `args` to `w` unless the stream is closed; a failure closes it.
    fn write(&self, w: &mut impl Write, args: Arguments<'_>, flush: bool) {
        if self.closed.load(Ordering::Relaxed) {
            return;
        }
        let written = w
            .write_fmt(args)
            .and_then(|()| if flush { w.flush() } else { Ok(()) });
        if let Err(e) = written {
            self.closed.store(true, Ordering::Relaxed);
            // A reader that went away is the normal end of a pipe; any other
            // failure (a full disk behind `>`) is worth one line elsewhere.
            if e.kind() != ErrorKind::BrokenPipe && !std::ptr::eq(self, &STDERR) {
                stderr(format_args!("warning: {} stopped: {e}\n", self.name));
            }
        }
    }
}

/// Writes to standard output, or nothing once it is closed.
pub(crate) fn stdout(args: Arguments<'_>) {
    STDOUT.write(&mut std::io::stdout().lock(), args, false);
}

/// Sends what standard output holds (a prompt without a newline).
pub(crate) fn flush_stdout() {
    STDOUT.write(&mut std::io::stdout().lock(), format_args!(""), true);
}

/// Writes to standard error, or nothing once it is closed.
pub(crate) fn stderr(args: Arguments<'_>) {
    STDERR.write(&mut std::io::stderr().lock(), args, false);
}

/// `print!` that stops quietly on a closed standard output.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::stdout(format_args!($($arg)*))
    };
}

/// `println!` that stops quietly on a closed standard output.
macro_rules! outln {
    () => {
        $crate::output::stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprint!` that stops quietly on a closed standard error.
macro_rules! err {
    ($($arg:tt)*) => {
        $crate::output::stderr(format_args!($($arg)*))
    };
}

/// `eprintln!` that stops quietly on a closed standard error.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::output::stderr(format_args!("{}\n", format_args!($($arg)*)))
    };
}

pub(crate) use {err, errln, out, outln};

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer whose reader has gone: every write fails as a closed pipe does.
    struct ClosedPipe(usize);

    impl Write for ClosedPipe {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            self.0 += 1;
            Err(ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_is_tried_once_then_skipped() {
        let stream = Stream {
            closed: AtomicBool::new(false),
            name: "test stream",
        };
        let mut pipe = ClosedPipe(0);
        for i in 0..3 {
            stream.write(&mut pipe, format_args!("line {i}\n"), false);
        }
        assert_eq!(pipe.0, 1);
        assert!(stream.closed.load(Ordering::Relaxed));
    }

    #[test]
    fn an_open_writer_gets_every_line() {
        let stream = Stream {
            closed: AtomicBool::new(false),
            name: "test stream",
        };
        let mut buf = Vec::new();
        stream.write(&mut buf, format_args!("a {}\n", 1), false);
        stream.write(&mut buf, format_args!("b"), true);
        assert_eq!(buf, b"a 1\nb");
        assert!(!stream.closed.load(Ordering::Relaxed));
    }
}
