//! `script`: a Rhai expression decides on the answer — the escape hatch that
//! still needs no recompiling. It sees `response`, `answer` and `vars`, and
//! returns a bool, a score in [0, 1], or `#{ passed, score, detail }`.

use rhai::{AST, Dynamic, Engine, Scope};
use serde_json::{Map, Value};

use super::kind::RuleKind;
use super::shared::{as_score, compile_rule_script, map_verdict};
use super::{BuildContext, FailureKind, Reads, ReadsText, Rule, Verdict};
use crate::error::Diagnostic;
use crate::scripting::{ScriptError, on_script_stack};

struct ScriptRule {
    engine: Engine,
    ast: AST,
    threshold: f64,
}

fn scope_for(response: &str, answer: &str, vars: Dynamic) -> Scope<'static> {
    let mut scope = Scope::new();
    scope.push_constant("response", response.to_owned());
    scope.push_constant("answer", answer.to_owned());
    scope.push_constant_dynamic("vars", vars);
    scope
}

/// `script`: a Rhai expression over `response`, `answer`, `vars` returns
/// `true`, a score ≥ `threshold`, or `#{ passed, score, detail }`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ScriptKeys {
    /// Rhai expression returning a bool, a score or `#{passed, score, detail}`.
    pub script: Option<String>,
    /// Minimum score to pass (default 1.0).
    pub threshold: Option<f64>,
}

impl RuleKind for ScriptKeys {
    fn build(self, cx: &BuildContext) -> Result<Box<dyn Rule>, Diagnostic> {
        let source = cx.required(
            self.script.as_ref(),
            cx.rule,
            "script",
            "'answer.len() > 0'",
        )?;
        let names = ["response", "answer", "vars"];
        let (engine, ast) = compile_rule_script(cx, "script", &names, source)?;
        let threshold = cx.threshold(self.threshold, 1.0)?;
        Ok(Box::new(ScriptRule {
            engine,
            ast,
            threshold,
        }))
    }
}

impl ScriptRule {
    fn run(
        &self,
        answer: &str,
        response: &str,
        vars: &Map<String, Value>,
    ) -> Result<Verdict, ScriptError> {
        let vars = rhai::serde::to_dynamic(vars)?;
        let mut scope = scope_for(response, answer, vars);
        let result: Dynamic = self.engine.eval_ast_with_scope(&mut scope, &self.ast)?;
        if let Ok(passed) = result.as_bool() {
            return Ok(if passed {
                Verdict::pass()
            } else {
                Verdict::fail("the script returned false")
            });
        }
        if let Some(score) = as_score(&result) {
            let passed = score >= self.threshold;
            return Ok(Verdict::scored(
                passed,
                score,
                format!("script score {score:.3}"),
            ));
        }
        if let Some(map) = result.read_lock::<rhai::Map>() {
            return Ok(map_verdict(&map, self.threshold));
        }
        Err(ScriptError {
            message: format!(
                "the script must return a bool, a number or a map, not {}",
                result.type_name()
            ),
            line: 0,
            column: 0,
        })
    }
}

impl Rule for ScriptRule {
    fn probe(&self, vars: &Map<String, Value>) -> Option<Verdict> {
        Some(self.verify("", "", vars))
    }

    fn reads(&self) -> Reads<'_> {
        Reads::Text(self)
    }
}

impl ReadsText for ScriptRule {
    fn verify(&self, answer: &str, response: &str, vars: &Map<String, Value>) -> Verdict {
        // Rhai walks the values a script builds recursively, however deep.
        on_script_stack(|| self.run(answer, response, vars)).unwrap_or_else(|e| {
            let at = if e.line > 0 {
                format!(" (script line {})", e.line)
            } else {
                String::new()
            };
            Verdict::failed(
                FailureKind::ScriptError,
                format!("script error: {}{at}", e.message),
            )
            .at_fault("script", e.line, e.column)
        })
    }
}
