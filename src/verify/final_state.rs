//! `final_state`: a Rhai boolean expression over the tools' `state` after an
//! `[agent]` episode (and the instance's `vars`), the way τ-bench grades an
//! agent by the database its tools changed, e.g.
//! `state.orders[0].status == "cancelled"`.

use rhai::{AST, Dynamic, Engine, Scope};
use serde_json::{Map, Value};

use super::kind::RuleKind;
use super::{BuildContext, FailureKind, Reads, ReadsReply, Reply, Rule, Verdict};
use crate::error::{Diagnostic, ErrorKind};
use crate::scripting::{DEFAULT_MAX_OPERATIONS, ScriptError, on_script_stack, sandboxed_engine};
use crate::text::clip;

/// The most characters of one state value a failure detail shows.
const SHOWN: usize = 200;

struct FinalState {
    engine: Engine,
    ast: AST,
    source: String,
    /// The `state...` paths the expression reads, compiled: what a failure shows.
    paths: Vec<(String, AST)>,
}

/// `final_state`: the Rhai boolean expression `expr` over `state` (the
/// tools' state when the `[agent]` episode ended) and `vars` is true.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct FinalStateKeys {
    /// Rhai expression over `state` and `vars` returning a bool.
    pub expr: Option<String>,
}

fn compile(engine: &Engine, source: &str) -> Result<AST, ScriptError> {
    // Names only: constants in a compile-time scope would be folded into the AST.
    let mut scope = Scope::new();
    for name in ["state", "vars"] {
        scope.push_dynamic(name, Dynamic::UNIT);
    }
    Ok(engine.compile_with_scope(&scope, source)?)
}

/// The `state.a.b[0]` paths written in `source`, longest first, each once.
fn state_paths(source: &str) -> Vec<String> {
    let pattern = regex::Regex::new(r"\bstate(?:\.[A-Za-z_][A-Za-z0-9_]*|\[[^\[\]]*\])+")
        .expect("a valid pattern");
    let mut paths: Vec<String> = Vec::new();
    for found in pattern.find_iter(source) {
        let mut path = found.as_str().to_owned();
        // `state.items.len()`: the last name is a method, not a key.
        if source[found.end()..].starts_with('(')
            && let Some(dot) = path.rfind('.')
        {
            path.truncate(dot);
        }
        if path != "state" && !paths.contains(&path) {
            paths.push(path);
        }
    }
    paths
}

impl RuleKind for FinalStateKeys {
    const NAME: &'static str = "final_state";

    fn build(self, cx: &BuildContext) -> Result<Box<dyn Rule>, Diagnostic> {
        let source = cx.required(
            self.expr.as_ref(),
            cx.rule,
            "expr",
            "'state.orders[0].status == \"cancelled\"'",
        )?;
        let engine = sandboxed_engine(DEFAULT_MAX_OPERATIONS);
        let ast = compile(&engine, source).map_err(|e| {
            Diagnostic::new(
                ErrorKind::Script,
                cx.locate_in("expr", e.line, e.column),
                e.message,
            )
        })?;
        let paths = state_paths(source)
            .into_iter()
            .filter_map(|p| compile(&engine, &p).ok().map(|ast| (p, ast)))
            .collect();
        Ok(Box::new(FinalState {
            engine,
            ast,
            source: source.clone(),
            paths,
        }))
    }
}

impl FinalState {
    fn scope(state: &Value, vars: &Map<String, Value>) -> Result<Scope<'static>, ScriptError> {
        let mut scope = Scope::new();
        scope.push_constant_dynamic("state", rhai::serde::to_dynamic(state)?);
        scope.push_constant_dynamic("vars", rhai::serde::to_dynamic(vars)?);
        Ok(scope)
    }

    /// What the state holds at each path the expression reads (or the whole state, clipped).
    fn shown(&self, state: &Value, vars: &Map<String, Value>) -> String {
        let mut parts = Vec::new();
        for (path, ast) in &self.paths {
            let Ok(mut scope) = Self::scope(state, vars) else {
                continue;
            };
            let value = self
                .engine
                .eval_ast_with_scope::<Dynamic>(&mut scope, ast)
                .map_err(|e| ScriptError::from(e).message)
                .and_then(|d| rhai::serde::from_dynamic::<Value>(&d).map_err(|e| e.to_string()));
            parts.push(match value {
                Ok(v) => format!("{path} = {}", clip(&v.to_string(), SHOWN)),
                Err(why) => format!("{path}: {why}"),
            });
        }
        if parts.is_empty() {
            format!("state = {}", clip(&state.to_string(), SHOWN))
        } else {
            parts.join(", ")
        }
    }

    fn decide(&self, state: &Value, vars: &Map<String, Value>) -> Verdict {
        let run = || -> Result<Dynamic, ScriptError> {
            let mut scope = Self::scope(state, vars)?;
            Ok(self.engine.eval_ast_with_scope(&mut scope, &self.ast)?)
        };
        match run().map(|d| d.as_bool()) {
            Ok(Ok(true)) => Verdict::pass(),
            Ok(Ok(false)) => Verdict::fail(format!(
                "final state: `{}` is false ({})",
                self.source,
                self.shown(state, vars)
            )),
            Ok(Err(kind)) => Verdict::failed(
                FailureKind::ScriptError,
                format!("final state: `{}` returned {kind}, not a bool", self.source),
            )
            .at_fault("expr", 0, 0),
            // A path the state lacks fails the answer: the episode left no such thing.
            Err(e) => Verdict::fail(format!(
                "final state: `{}`: {} ({})",
                self.source,
                e.message,
                self.shown(state, vars)
            )),
        }
    }
}

impl Rule for FinalState {
    fn reads(&self) -> Reads<'_> {
        Reads::Reply(self)
    }
}

impl ReadsReply for FinalState {
    fn verify(&self, reply: &Reply, vars: &Map<String, Value>) -> (String, Verdict) {
        let Some(state) = reply.state else {
            let why =
                "final state: no state (final_state reads the tools' state of an [agent] episode)";
            return (String::new(), Verdict::failed(FailureKind::NoAnswer, why));
        };
        // Rhai walks the values a script builds recursively, however deep.
        let verdict = on_script_stack(|| self.decide(state, vars));
        (clip(&state.to_string(), SHOWN), verdict)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(expr: &str) -> FinalState {
        let engine = sandboxed_engine(DEFAULT_MAX_OPERATIONS);
        let ast = compile(&engine, expr).unwrap();
        let paths = state_paths(expr)
            .into_iter()
            .map(|p| {
                let ast = compile(&engine, &p).unwrap();
                (p, ast)
            })
            .collect();
        FinalState {
            engine,
            ast,
            source: expr.into(),
            paths,
        }
    }

    fn check(expr: &str, state: Option<Value>) -> Verdict {
        let vars = json!({"order": 1}).as_object().unwrap().clone();
        let reply = Reply {
            state: state.as_ref(),
            ..Reply::text("")
        };
        ReadsReply::verify(&rule(expr), &reply, &vars).1
    }

    #[test]
    fn checks_the_state_and_shows_what_it_read() {
        let state = json!({"orders": [{"status": "new"}, {"status": "cancelled"}]});
        let cases: [(&str, bool, &str); 5] = [
            (
                r#"state.orders[vars.order].status == "cancelled""#,
                true,
                "",
            ),
            (
                r#"state.orders[0].status == "cancelled""#,
                false,
                r#"is false (state.orders[0].status = "new")"#,
            ),
            (
                "state.orders.len() == 3",
                false,
                r#"state.orders = [{"status":"new"},{"status":"cancelled"}]"#,
            ),
            ("state.refunds.len() > 0", false, "state.refunds:"),
            ("state.orders", false, "not a bool"),
        ];
        for (expr, passed, detail) in cases {
            let verdict = check(expr, Some(state.clone()));
            assert_eq!(verdict.passed, passed, "{expr}: {}", verdict.detail);
            assert!(
                verdict.detail.contains(detail),
                "{expr}: {}",
                verdict.detail
            );
        }
        let none = check("true", None);
        assert_eq!(none.failure, Some(FailureKind::NoAnswer));
    }

    #[test]
    fn finds_the_paths_an_expression_reads() {
        assert_eq!(
            state_paths(r#"state.a[0].b == 1 && state.c.len() > state.a[0].b"#),
            ["state.a[0].b", "state.c"]
        );
    }
}
