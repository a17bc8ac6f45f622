//! `code`: the answer is a program; the instance's tests run against it, and
//! the verdict names the first failing test and why.
//!
//! Two sandboxed processes, joined by nothing but a pair of pipes
//! ([`crate::sandbox::Sandbox::run_pair`]). The program holds the model's
//! code and a server (`serve.py`, or a spec's `runner` for another language)
//! answering calls of its functions. The checker (`check.py`) holds the
//! tests and the task's prelude; each call of the program's functions in a
//! test crosses as data (`wire.py`), so the expected values never enter the
//! program's process and a test passes only on values it computed, compared
//! by the checker's own built-in types. What is not data crosses by
//! reference (`remote.py`): its truth, `repr`, attributes and items are the
//! program's answers, and a comparison its own class would decide fails. The checker reads a nonce from its
//! stdin and reports one line per test, `<nonce> {"test": i, "status":
//! "pass"|"fail"|"gone"|"error", "kind", "error"}`; the program can write
//! to neither.

mod outcome;

use std::time::Duration;

use minijinja::Environment;
use serde_json::{Map, Value};

use super::code_input::{Runtime, runtime, test_sources, test_template};
use super::kind::RuleKind;
use super::{BuildContext, FailureKind, Reads, ReadsText, Rule, Verdict};
use crate::error::{Diagnostic, ErrorKind};
use crate::sandbox::{self, Limits, Program};

/// The checker: runs the tests and reports each result.
const CHECKER: &str = include_str!("check.py");
/// The Python program's server: loads the solution and answers calls.
const SERVER: &str = include_str!("serve.py");
/// Values on the wire, shared by both.
const WIRE: &str = include_str!("wire.py");
/// The checker's stand-ins for the program's objects.
const REMOTE: &str = include_str!("remote.py");
/// How the checker resolves a test's names.
const NAMES: &str = include_str!("names.py");
const SHARE: &str = include_str!("share.py");

/// The largest `memory_mb`: a tebibyte.
const MAX_MEMORY_MB: u64 = 1 << 20;

/// How test results become a score.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum Scoring {
    /// Every test must pass: the score is 1 or 0.
    #[default]
    All,
    /// The fraction of tests passed.
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
    /// Whether the checker guards the tests' tools from the program.
    guard: bool,
}

/// `code`: the answer (a program) passes its tests, run in the sandbox
/// (`docs/sandbox.md`).
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct CodeKeys {
    /// The instance variable holding the tests: a list of snippets.
    pub tests: Option<String>,
    /// minijinja template making each test's source from `test`; `| py` writes Python literals.
    pub test_template: Option<String>,
    /// Instance variable with code put before the answer: the task's imports and helpers.
    pub prelude: Option<String>,
    /// The solution's language: fence to extract and runtime (default python).
    pub language: Option<String>,
    /// `all` (default: every test must pass) or `fraction` of tests passed.
    pub score: Option<Scoring>,
    /// CPU limit in seconds; the wall clock gets twice that and a second (default 10).
    pub timeout_secs: Option<f64>,
    /// Address-space limit in MiB (default 512).
    pub memory_mb: Option<u64>,
    /// Command line of a custom runtime, run in the working directory.
    pub command: Option<Vec<String>>,
    /// A custom runtime's runner file, relative to the spec.
    pub runner: Option<String>,
    /// File name the solution is written to (default `solution.py`).
    pub solution_file: Option<String>,
    /// `true` keeps the tests' built-ins, modules, globals and objects out
    /// of the program's reach, where plain Python would not (default false).
    pub guard: Option<bool>,
}

impl RuleKind for CodeKeys {
    fn build(self, cx: &BuildContext) -> Result<Box<dyn Rule>, Diagnostic> {
        let tests = cx
            .required(self.tests.as_ref(), cx.rule, "tests", "\"tests\"")?
            .clone();
        let scoring = self.score.unwrap_or_default();
        let template = test_template(self.test_template.as_ref(), cx)?;
        let mut limits = Limits::default();
        if let Some(secs) = cx.code_timeout.or(self.timeout_secs) {
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
            limits.cpu = Duration::from_secs_f64(secs);
            limits.wall = Duration::from_secs_f64(secs * 2.0 + 1.0);
        }
        if let Some(mb) = self.memory_mb {
            // Above a tebibyte, `mb << 20` would wrap around to a tiny limit.
            if !(16..=MAX_MEMORY_MB).contains(&mb) {
                return Err(cx.error(
                    ErrorKind::Invalid,
                    "memory_mb",
                    format!("memory_mb must be at least 16 and at most {MAX_MEMORY_MB} (1 TiB), not {mb}"),
                ));
            }
            limits.memory_bytes = mb << 20;
        }
        let language = self.language.as_deref().unwrap_or("python");
        let runtime = runtime(self.command.as_ref(), self.runner.as_ref(), cx, language)?;
        let solution_file = self
            .solution_file
            .clone()
            .unwrap_or_else(|| match language {
                "python" => "solution.py".into(),
                other => format!("solution.{other}"),
            });
        Ok(Box::new(CodeRule {
            tests,
            prelude: self.prelude.clone(),
            template,
            scoring,
            solution_file,
            runtime,
            limits,
            guard: self.guard.unwrap_or(false),
        }))
    }

    fn fence_language(&self) -> Option<String> {
        self.language.clone()
    }
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

    fn reads(&self) -> Reads<'_> {
        Reads::Text(self)
    }
}

impl ReadsText for CodeRule {
    fn verify(&self, answer: &str, _response: &str, vars: &Map<String, Value>) -> Verdict {
        let tests = match test_sources(&self.tests, self.template.as_ref(), vars) {
            Ok(tests) => tests,
            Err(e) => {
                return Verdict::failed(FailureKind::ScriptError, e.message)
                    .at_fault(e.key, e.line, e.column);
            }
        };
        let (solution, prelude) = match self.solution(answer, vars) {
            Ok(parts) => parts,
            Err(e) => return Verdict::failed(FailureKind::ScriptError, e.to_string()),
        };
        let nonce = outcome::nonce();
        let (program, checker) = match self.programs(&solution, prelude, &tests, &nonce) {
            Ok(programs) => programs,
            Err(e) => return Verdict::failed(FailureKind::SandboxError, e.to_string()),
        };
        let outcomes = sandbox::shared().and_then(|s| s.run_pair(&program, &checker));
        let (program, checker) = match outcomes {
            Ok(outcomes) => outcomes,
            Err(e) => return Verdict::failed(FailureKind::SandboxError, e.to_string()),
        };
        let ran = outcome::Ran {
            program: &program,
            checker: &checker,
            nonce: &nonce,
            limits: &self.limits,
        };
        outcome::verdict(&tests, &ran, self.scoring == Scoring::Fraction)
    }
}

/// A warm start of the harness's own module `main`, importing `modules`
/// (never the model's code or the tests) ahead.
fn warm(main: &str, modules: &[&str]) -> sandbox::Warm {
    sandbox::Warm {
        main: main.to_owned(),
        modules: modules.iter().map(|m| m.to_string()).collect(),
        main_is_init: false,
    }
}

/// Why an answer's programs could not be put together.
#[derive(Debug, thiserror::Error)]
enum CodeError {
    /// The prelude variable holds no string.
    #[error("prelude `{name}` must be a string, found {found}")]
    PreludeNotString {
        /// The variable.
        name: String,
        /// What it holds, as JSON.
        found: String,
    },
    /// The prelude variable is not set.
    #[error("variable `{0}` is not set")]
    Unset(String),
    /// No interpreter the sandbox can run.
    #[error("{0}")]
    Sandbox(#[from] sandbox::SandboxError),
    /// The tests could not be written as JSON.
    #[error("{0}")]
    Tests(#[from] serde_json::Error),
}

impl CodeRule {
    /// The program's code (the answer after the task's prelude, if any) and
    /// the prelude alone, for the checker.
    fn solution<'a>(
        &self,
        answer: &str,
        vars: &'a Map<String, Value>,
    ) -> Result<(String, Option<&'a str>), CodeError> {
        let Some(name) = &self.prelude else {
            return Ok((answer.to_owned(), None));
        };
        match super::lookup(vars, name) {
            Some(Value::String(prelude)) if prelude.ends_with('\n') => {
                Ok((format!("{prelude}{answer}"), Some(prelude)))
            }
            Some(Value::String(prelude)) => Ok((format!("{prelude}\n{answer}"), Some(prelude))),
            Some(other) => Err(CodeError::PreludeNotString {
                name: name.clone(),
                found: other.to_string(),
            }),
            None => Err(CodeError::Unset(name.clone())),
        }
    }

    /// The program (the model's code and its server) and the checker (the
    /// tests, the prelude and the nonce), each for a sandbox of its own.
    fn programs(
        &self,
        solution: &str,
        prelude: Option<&str>,
        tests: &[String],
        nonce: &str,
    ) -> Result<(Program, Program), CodeError> {
        let python = sandbox::python::interpreter()?;
        let env: Vec<(String, String)> = sandbox::python::ENV
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let file = |name: &str, text: &str| (name.to_owned(), text.as_bytes().to_vec());
        let mut program = Program {
            files: vec![file(&self.solution_file, solution)],
            limits: self.limits.clone(),
            ..Program::default()
        };
        match &self.runtime {
            Runtime::Python => {
                program.argv = python.argv("serve.py");
                program.read_paths = python.read_paths.clone();
                program.env = env.clone();
                program.files.extend([
                    file("serve.py", SERVER),
                    file("wire.py", WIRE),
                    file("share.py", SHARE),
                ]);
                program.warm = Some(warm("serve", &["serve.py", "wire.py", "share.py"]));
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
        let tests_json = serde_json::to_string(tests)?;
        let mut checker_env = env;
        if self.guard {
            checker_env.push(("HARNESS_GUARD".to_owned(), "1".to_owned()));
        }
        let mut checker = Program {
            argv: python.own_argv("check.py"),
            files: vec![
                file("check.py", CHECKER),
                file("wire.py", WIRE),
                file("remote.py", REMOTE),
                file("names.py", NAMES),
                file("tests.json", &tests_json),
                file("share.py", SHARE),
            ],
            env: checker_env,
            stdin: format!("{nonce}\n").into_bytes(),
            read_paths: python.read_paths.clone(),
            limits: self.limits.clone(),
            // The checker starts no process and signals nothing: it needs
            // no init of its own (the model's program keeps one, so that its
            // signals to itself act as they would anywhere).
            warm: Some(sandbox::Warm {
                main_is_init: true,
                ..warm(
                    "check",
                    &["check.py", "wire.py", "remote.py", "names.py", "share.py"],
                )
            }),
        };
        // The tests' own work is not the program's: the checker keeps at least the default memory.
        let default_memory = Limits::default().memory_bytes;
        checker.limits.memory_bytes = checker.limits.memory_bytes.max(default_memory);
        if let Some(prelude) = prelude {
            checker.files.push(file("prelude.py", prelude));
        }
        Ok((program, checker))
    }
}
