//! `code`: the answer is a program; it runs in the sandbox against the
//! instance's tests, and the verdict names the first failing test and why.
//!
//! The run's working directory holds the solution, `tests.json` (the test
//! snippets, rendered through `test_template` if the spec has one) and a
//! runner. The runner reads a nonce from stdin and prints one line per test,
//! `<nonce> {"test": i, "status": "pass"|"fail"|"error", "kind", "error"}`;
//! Python's runner is built in, other languages bring theirs (`runner`,
//! `command`) without recompiling.

use std::time::Duration;

use minijinja::Environment;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::code_input::{Runtime, runtime, test_sources, test_template};
use super::{BuildContext, FailureKind, Rule, Verdict};
use crate::error::{Diagnostic, ErrorKind};
use crate::format::RuleDef;
use crate::sandbox::{self, Limits, Outcome, Program};
use crate::text::clip;

/// How test results become a score.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Scoring {
    All,
    Fraction,
}

struct CodeRule {
    tests: String,
    prelude: Option<String>,
    template: Option<Environment<'static>>,
    scoring: Scoring,
    solution_file: String,
    runtime: Runtime,
    limits: Limits,
}

/// One line of the runner's report.
#[derive(Debug, Deserialize)]
struct TestReport {
    test: Option<usize>,
    status: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    error: String,
}

/// Builds a `code` rule.
pub fn build(def: &RuleDef, cx: &BuildContext) -> Result<Box<dyn Rule>, Diagnostic> {
    let Some(tests) = def.tests.clone() else {
        return Err(cx.missing(&def.rule, "tests", "\"tests\""));
    };
    let scoring = match def.score.as_deref() {
        None | Some("all") => Scoring::All,
        Some("fraction") => Scoring::Fraction,
        Some(other) => {
            return Err(cx
                .error(
                    ErrorKind::Invalid,
                    "score",
                    format!("unknown score `{other}`"),
                )
                .with_help("use \"all\" (every test must pass) or \"fraction\""));
        }
    };
    let template = test_template(def, cx)?;
    let mut limits = Limits::default();
    if let Some(secs) = def.timeout_secs {
        if !(secs.is_finite() && secs > 0.0 && secs <= 3600.0) {
            return Err(cx.error(
                ErrorKind::Invalid,
                "timeout_secs",
                "timeout_secs must be within (0, 3600]",
            ));
        }
        // The limit is CPU time, which a busy machine does not eat into, so a
        // verdict does not depend on load; the wall clock, generous, catches
        // programs that wait instead of compute.
        limits.cpu_secs = secs.ceil() as u64;
        limits.wall = Duration::from_secs_f64(secs * 2.0 + 1.0);
    }
    if let Some(mb) = def.memory_mb {
        if mb < 16 {
            return Err(cx.error(
                ErrorKind::Invalid,
                "memory_mb",
                "memory_mb must be at least 16",
            ));
        }
        limits.memory_bytes = mb << 20;
    }
    let language = def.language.as_deref().unwrap_or("python");
    let runtime = runtime(def, cx, language)?;
    let solution_file = def.solution_file.clone().unwrap_or_else(|| match language {
        "python" => "solution.py".into(),
        other => format!("solution.{other}"),
    });
    Ok(Box::new(CodeRule {
        tests,
        prelude: def.prelude.clone(),
        template,
        scoring,
        solution_file,
        runtime,
        limits,
    }))
}

impl Rule for CodeRule {
    fn variables(&self) -> Vec<(&'static str, &str)> {
        let mut vars = vec![("tests", self.tests.as_str())];
        if let Some(prelude) = &self.prelude {
            vars.push(("prelude", prelude));
        }
        vars
    }

    fn expected(&self, vars: &Map<String, Value>) -> Option<Value> {
        test_sources(&self.tests, self.template.as_ref(), vars)
            .ok()
            .map(Value::from)
    }

    fn value_problems(&self, vars: &Map<String, Value>) -> Vec<(&'static str, String)> {
        match test_sources(&self.tests, self.template.as_ref(), vars) {
            Err(e) if e.key != "variable" => vec![(e.key, e.message)],
            _ => Vec::new(),
        }
    }

    fn needs_sandbox(&self) -> bool {
        true
    }

    fn verify(&self, answer: &str, _response: &str, vars: &Map<String, Value>) -> Verdict {
        let tests = match test_sources(&self.tests, self.template.as_ref(), vars) {
            Ok(tests) => tests,
            Err(e) => {
                return Verdict::failed(FailureKind::ScriptError, e.message)
                    .at_fault(e.key, e.line, e.column);
            }
        };
        let solution = match self.solution(answer, vars) {
            Ok(solution) => solution,
            Err(e) => return Verdict::failed(FailureKind::ScriptError, e),
        };
        let program = match self.program(&solution, &tests) {
            Ok(program) => program,
            Err(e) => return Verdict::failed(FailureKind::SandboxError, e),
        };
        let outcome = match sandbox::shared().and_then(|s| s.run(&program)) {
            Ok(outcome) => outcome,
            Err(e) => return Verdict::failed(FailureKind::SandboxError, e.to_string()),
        };
        let nonce = String::from_utf8_lossy(&program.stdin).trim().to_owned();
        self.judge(&tests, &outcome, &nonce)
    }
}

impl CodeRule {
    /// The answer, after the prelude (imports and helpers the task gave) if any.
    fn solution(&self, answer: &str, vars: &Map<String, Value>) -> Result<String, String> {
        let Some(name) = &self.prelude else {
            return Ok(answer.to_owned());
        };
        match super::lookup(vars, name) {
            Some(Value::String(prelude)) if prelude.ends_with('\n') => {
                Ok(format!("{prelude}{answer}"))
            }
            Some(Value::String(prelude)) => Ok(format!("{prelude}\n{answer}")),
            Some(other) => Err(format!("prelude `{name}` must be a string, found {other}")),
            None => Err(format!("variable `{name}` is not set")),
        }
    }

    fn program(&self, answer: &str, tests: &[String]) -> Result<Program, String> {
        let tests_json = serde_json::to_vec(tests).map_err(|e| e.to_string())?;
        let nonce = nonce();
        let mut program = Program {
            files: vec![
                (self.solution_file.clone(), answer.as_bytes().to_vec()),
                ("tests.json".into(), tests_json),
            ],
            stdin: format!("{nonce}\n").into_bytes(),
            limits: self.limits.clone(),
            ..Program::default()
        };
        match &self.runtime {
            Runtime::Python => {
                let python = sandbox::python::interpreter().map_err(|e| e.to_string())?;
                program.argv = python.argv();
                program.read_paths = python.read_paths.clone();
                program.env = sandbox::python::ENV
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect();
                program.files.push((
                    "main.py".into(),
                    sandbox::python::RUNNER.as_bytes().to_vec(),
                ));
            }
            Runtime::Custom {
                command,
                runner_name,
                runner,
            } => {
                program.argv = command.clone();
                program.files.push((runner_name.clone(), runner.clone()));
            }
        }
        Ok(program)
    }

    fn judge(&self, tests: &[String], outcome: &Outcome, nonce: &str) -> Verdict {
        let stdout = String::from_utf8_lossy(&outcome.stdout);
        let prefix = format!("{nonce} ");
        let reports: Vec<TestReport> = stdout
            .lines()
            .filter_map(|l| l.strip_prefix(&prefix))
            .filter_map(|json| serde_json::from_str(json).ok())
            .collect();
        let total = tests.len().max(1);
        if let Some(load) = reports.iter().find(|r| r.status == "error") {
            let kind = failure_of(&load.kind);
            return Verdict::failed(
                kind,
                format!(
                    "0/{total} tests ran: the solution failed to load: {}",
                    load.error
                ),
            );
        }
        let mut passed = 0;
        let mut first_failure: Option<(usize, String, FailureKind)> = None;
        for (i, test) in tests.iter().enumerate() {
            match reports.iter().find(|r| r.test == Some(i)) {
                Some(r) if r.status == "pass" => passed += 1,
                Some(r) => {
                    first_failure.get_or_insert((i, r.error.clone(), failure_of(&r.kind)));
                }
                None => {
                    let (why, kind) = unfinished(outcome, &self.limits);
                    first_failure.get_or_insert((i, why, kind));
                    let _ = test;
                    break;
                }
            }
        }
        let score = match self.scoring {
            Scoring::All => f64::from(u8::from(first_failure.is_none())),
            Scoring::Fraction => passed as f64 / total as f64,
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
}

/// Why the run stopped before reporting a test.
fn unfinished(outcome: &Outcome, limits: &Limits) -> (String, FailureKind) {
    let kind = if outcome.timed_out || outcome.cpu_exhausted(limits) {
        FailureKind::Timeout
    } else if outcome.output_limited {
        FailureKind::ResourceLimit
    } else {
        FailureKind::RuntimeError
    };
    let stderr = String::from_utf8_lossy(&outcome.stderr);
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
    let why = match last {
        Some(line) if !outcome.timed_out => {
            format!("{} ({})", outcome.describe(limits), clip(line.trim(), 120))
        }
        _ => outcome.describe(limits),
    };
    (why, kind)
}

fn failure_of(kind: &str) -> FailureKind {
    match kind {
        "assertion" => FailureKind::WrongValue,
        "memory" | "recursion" => FailureKind::ResourceLimit,
        _ => FailureKind::RuntimeError,
    }
}

/// A fresh nonce from the OS, so neither the solution nor the tests can predict it.
fn nonce() -> String {
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
    }
}
