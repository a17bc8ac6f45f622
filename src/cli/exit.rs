//! Exit codes: one named outcome per code, decided here and nowhere else.
//!
//! Commands return an [`Exit`]. A failure is printed once, where it happens,
//! by [`fail`], [`fail_with`] or [`diagnostics`], which hand back the exit so
//! `?` can carry it to `main`. Which exit an error ends in follows from its
//! kind through [`Failure`], implemented here for every error type that can
//! end in something other than [`Exit::BadInput`]; no caller picks a code by
//! hand or by reading a message.

use crate::output::{err, errln};
use std::fmt::Display;
use std::process::ExitCode;

use crate::error::Diagnostic;
use crate::run::RunError;

/// How a `harness` command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything held.
    Success,
    /// Golden files differ (instances or transcripts), a spec has no golden
    /// file yet, `review` skipped pending files, or `merge` found shards
    /// missing answers.
    Differences,
    /// Bad input: a spec error, a failing example, an unreadable file, a bad
    /// configuration, or any other error that stops a command.
    BadInput,
    /// A managed model server (`llamacpp:`, `vllm:`) failed to start or died mid-run.
    ServerFailed,
    /// `harness run` finished, but some instances ended as error records (a
    /// failed request, no verdict) and `--allow-errors` was not given.
    RequestErrors,
    /// `harness run` stopped at its budget (`--max-cost`, `--max-tokens-total`);
    /// every finished answer is kept for `--resume` with a larger one.
    Budget,
    /// Interrupted by Ctrl-C; every finished answer is kept for `--resume`.
    Interrupted,
}

impl Exit {
    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::Differences => 1,
            Exit::BadInput => 2,
            Exit::ServerFailed => 3,
            Exit::RequestErrors => 4,
            Exit::Budget => 5,
            Exit::Interrupted => 130,
        }
    }

    /// [`Exit::Differences`] when `differ`, else [`Exit::Success`].
    pub fn differences_if(differ: bool) -> Exit {
        if differ {
            Exit::Differences
        } else {
            Exit::Success
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit.code())
    }
}

/// Prints `error: <message>` and returns [`Exit::BadInput`].
pub(super) fn fail(message: impl Display) -> Exit {
    // Errors can quote a server's reply; no configured key and no URL's
    // credentials are ever printed, and model text in them shows its
    // control characters escaped.
    let message = message.to_string();
    let message = crate::secrets::redact(&crate::secrets::redact_urls(&message)).into_owned();
    errln!("error: {}", crate::text::visible(&message));
    Exit::BadInput
}

/// An error that stops a command; the exit it ends in follows from its kind.
pub(super) trait Failure: Display {
    /// The named exit this error ends a command with.
    fn exit(&self) -> Exit;
}

impl Failure for RunError {
    fn exit(&self) -> Exit {
        match self {
            RunError::ServerStart(_) | RunError::ServerDied(_) => Exit::ServerFailed,
            RunError::BatchUnfinished(_) => Exit::RequestErrors,
            RunError::Io(_)
            | RunError::Unsupported { .. }
            | RunError::Client(_)
            | RunError::Schema(_)
            | RunError::Spec(_)
            | RunError::NoRun { .. }
            | RunError::NoRuns(_) => Exit::BadInput,
        }
    }
}

impl Failure for Diagnostic {
    fn exit(&self) -> Exit {
        // Every kind of diagnostic is a problem in the user's input.
        Exit::BadInput
    }
}

/// Prints `error: <message>` and returns the exit `error`'s kind names.
pub(super) fn fail_with(error: &impl Failure) -> Exit {
    fail(error);
    error.exit()
}

/// Prints each diagnostic with its source line and returns the exit they
/// name ([`Exit::BadInput`]); callers print them all before stopping.
pub(super) fn diagnostics<'a>(all: impl IntoIterator<Item = &'a Diagnostic>, color: bool) -> Exit {
    let mut exit = Exit::BadInput;
    for d in all {
        // The line shown may be a `base_url` with its credentials.
        let shown = super::render::diagnostic(d, color);
        err!("{}", crate::secrets::redact_urls(&shown));
        exit = d.exit();
    }
    exit
}

/// The exit of a command that returns `Result<Exit, Exit>` internally.
pub(super) fn either(result: Result<Exit, Exit>) -> Exit {
    result.unwrap_or_else(|exit| exit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_documented_ones() {
        let codes: Vec<u8> = [
            Exit::Success,
            Exit::Differences,
            Exit::BadInput,
            Exit::ServerFailed,
            Exit::RequestErrors,
            Exit::Budget,
            Exit::Interrupted,
        ]
        .iter()
        .map(|e| e.code())
        .collect();
        assert_eq!(codes, [0, 1, 2, 3, 4, 5, 130]);
    }

    #[test]
    fn a_server_failure_is_its_own_exit_and_every_other_run_error_bad_input() {
        let died = RunError::ServerDied(crate::client::managed::ServerDeath {
            server: "llama-server for `m`".into(),
            status: "signal 9".into(),
            log: "server.log".into(),
            lines: String::new(),
        });
        assert_eq!(died.exit(), Exit::ServerFailed);
        let missing = RunError::NoRuns("results/runs".into());
        assert_eq!(missing.exit(), Exit::BadInput);
    }
}
