//! Reading a checked run: the checker's report lines, and the two outcomes
//! when tests went unreported, turned into a verdict naming the first
//! failing test and why.
//!
//! Only the checker's output counts, and only its lines that start with the
//! nonce it read from its stdin: the program holding the model's code can
//! write neither.

use serde::Deserialize;

use super::super::{FailureKind, Verdict};
use crate::sandbox::{Limits, Outcome};
use crate::text::clip;

/// One line of the checker's report.
#[derive(Debug, Deserialize)]
struct TestReport {
    test: Option<usize>,
    status: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    error: String,
}

/// What came back from a checked run.
pub(super) struct Ran<'a> {
    /// The program holding the model's code.
    pub program: &'a Outcome,
    /// The checker running the tests.
    pub checker: &'a Outcome,
    /// The nonce the checker's report lines start with.
    pub nonce: &'a str,
    /// The limits both ran under.
    pub limits: &'a Limits,
}

/// The verdict on `tests` from a checked run; `fraction` scores the share passed.
pub(super) fn verdict(tests: &[String], ran: &Ran, fraction: bool) -> Verdict {
    let stdout = String::from_utf8_lossy(&ran.checker.stdout);
    let prefix = format!("{} ", ran.nonce);
    let reports: Vec<TestReport> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .filter_map(|json| serde_json::from_str(json).ok())
        .collect();
    let total = tests.len().max(1);
    if let Some(load) = reports.iter().find(|r| r.test.is_none()) {
        return match (load.status.as_str(), load.kind.as_str()) {
            ("gone", _) => {
                let (why, kind) = unfinished(ran, true);
                Verdict::failed(
                    kind,
                    format!("0/{total} tests ran: the solution ended while loading: {why}"),
                )
            }
            (_, "prelude") => Verdict::failed(
                FailureKind::ScriptError,
                format!("the task's prelude fails on its own: {}", load.error),
            ),
            (_, kind) => Verdict::failed(
                failure_of(kind),
                format!(
                    "0/{total} tests ran: the solution failed to load: {}",
                    load.error
                ),
            ),
        };
    }
    let mut passed = 0;
    let mut first_failure: Option<(usize, String, FailureKind)> = None;
    for i in 0..tests.len() {
        match reports.iter().find(|r| r.test == Some(i)) {
            Some(r) if r.status == "pass" => passed += 1,
            Some(r) if r.status == "fail" => {
                first_failure.get_or_insert((i, r.error.clone(), failure_of(&r.kind)));
            }
            // Gone, or never reported: no later test ran either.
            other => {
                let gone = other.is_some_and(|r| r.status == "gone");
                let (why, kind) = unfinished(ran, gone);
                first_failure.get_or_insert((i, why, kind));
                break;
            }
        }
    }
    let score = match (fraction, &first_failure) {
        (_, None) => 1.0,
        (true, Some(_)) => passed as f64 / total as f64,
        (false, Some(_)) => 0.0,
    };
    match first_failure {
        None => Verdict::scored(true, 1.0, format!("{passed}/{total} tests passed")),
        Some((i, why, kind)) => {
            let mut verdict = Verdict::scored(
                false,
                score,
                format!(
                    "{passed}/{total} tests passed; test {} `{}` failed: {why}",
                    i + 1,
                    clip(tests[i].lines().last().unwrap_or("").trim(), 80)
                ),
            );
            verdict.failure = Some(kind);
            verdict
        }
    }
}

/// Why the tests stopped before one was reported: the program's end when
/// the checker saw it go (`gone`) or both ran out of time, else the checker's.
fn unfinished(ran: &Ran, gone: bool) -> (String, FailureKind) {
    let (who, outcome) = if gone || ran.checker.killed.timed_out {
        ("", ran.program)
    } else {
        ("the checker ", ran.checker)
    };
    let limits = ran.limits;
    let kind = if outcome.killed.timed_out || outcome.cpu_exhausted(limits) {
        FailureKind::Timeout
    } else if outcome.killed.output_limited || outcome.killed.tree_memory_exceeded {
        FailureKind::ResourceLimit
    } else {
        FailureKind::RuntimeError
    };
    let ended = if outcome.killed.stopped {
        // Still running after the checker saw its channel close.
        "closed its channel to the checker".to_owned()
    } else {
        outcome.describe(limits)
    };
    let stderr = String::from_utf8_lossy(&outcome.stderr);
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
    let why = match last {
        Some(line) if !outcome.killed.timed_out => {
            format!("{who}{ended} ({})", clip(line.trim(), 120))
        }
        _ => format!("{who}{ended}"),
    };
    (why, kind)
}

fn failure_of(kind: &str) -> FailureKind {
    match kind {
        "assertion" => FailureKind::WrongValue,
        "memory" | "recursion" => FailureKind::ResourceLimit,
        // An operation on an object of the program's that the checker
        // refused (`==` decided by its own `__eq__`): not a wrong value,
        // since none was compared.
        "unsupported" => FailureKind::RuntimeError,
        _ => FailureKind::RuntimeError,
    }
}

/// A fresh nonce from the OS, so that nothing but the checker knows it.
pub(super) fn nonce() -> String {
    let mut bytes = [0u8; 16];
    // SAFETY: getrandom fills the buffer it is given.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if n != bytes.len() as isize {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        bytes[..16].copy_from_slice(&t.as_nanos().to_le_bytes());
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_kinds() {
        assert_eq!(failure_of("assertion"), FailureKind::WrongValue);
        assert_eq!(failure_of("memory"), FailureKind::ResourceLimit);
        assert_eq!(failure_of("exception"), FailureKind::RuntimeError);
        assert_eq!(failure_of("unsupported"), FailureKind::RuntimeError);
    }
}
