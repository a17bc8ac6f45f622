//! `final_state`: a Rhai expression over the tools' `state` after an
//! `[agent]` episode (and the instance's `vars`), the way τ-bench grades an
//! agent by the database its tools changed, e.g.
//! `state.orders[0].status == "cancelled"`. It returns a bool, or
//! `#{passed, detail}` to word its own failure. On a plain `false` the
//! failure names the first conjunct that is false and, for a comparison
//! with `==`, the first path where its two sides differ
//! (`state.cart[2].qty: 3 ≠ 2`), not the whole state.

use rhai::{AST, Dynamic, Engine, Scope};
use serde_json::{Map, Value};

use super::kind::RuleKind;
use super::shared::{SHOWN, compile_rule_script, first_difference, map_verdict};
use super::{BuildContext, FailureKind, Reads, ReadsReply, Reply, Rule, Verdict};
use crate::error::Diagnostic;
use crate::scripting::{ScriptError, compile, on_script_stack};
use crate::text::clip;

/// The names the expression sees.
const SCOPE_NAMES: [&str; 2] = ["state", "vars"];

struct FinalState {
    engine: Engine,
    ast: AST,
    source: String,
    /// The `state...` paths the expression reads, compiled: what a failure shows.
    paths: Vec<(String, AST)>,
}

/// `final_state`: the Rhai expression `expr` over `state` (the tools' state
/// when the `[agent]` episode ended) and `vars` is true, or returns
/// `#{passed: true}`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct FinalStateKeys {
    /// Rhai expression over `state` and `vars` returning a bool or `#{passed, detail}`.
    pub expr: Option<String>,
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
    fn build(self, cx: &BuildContext) -> Result<Box<dyn Rule>, Diagnostic> {
        let example = "'state.orders[0].status == \"cancelled\"'";
        let source = cx.required(self.expr.as_ref(), cx.rule, "expr", example)?;
        let (engine, ast) = compile_rule_script(cx, "expr", &SCOPE_NAMES, source)?;
        let paths = state_paths(source)
            .into_iter()
            .filter_map(|p| compile(&engine, &SCOPE_NAMES, &p).ok().map(|ast| (p, ast)))
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
        let result = run();
        if let Ok(map) = &result
            && let Some(map) = map.read_lock::<rhai::Map>()
        {
            let verdict = map_verdict(&map, 1.0);
            if !verdict.passed && verdict.detail.is_empty() {
                let why = format!("final state: `{}` returned passed = false", self.source);
                return Verdict::fail(why);
            }
            return verdict;
        }
        match result.map(|d| d.as_bool()) {
            Ok(Ok(true)) => Verdict::pass(),
            Ok(Ok(false)) => Verdict::fail(self.why_false(state, vars)),
            Ok(Err(kind)) => Verdict::failed(
                FailureKind::ScriptError,
                format!(
                    "final state: `{}` returned {kind}, not a bool or a map",
                    self.source
                ),
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

impl FinalState {
    /// Evaluates `source` (a part of the expression) to a JSON value.
    fn value_of(&self, source: &str, state: &Value, vars: &Map<String, Value>) -> Option<Value> {
        let ast = compile(&self.engine, &SCOPE_NAMES, source).ok()?;
        let mut scope = Self::scope(state, vars).ok()?;
        let d: Dynamic = self.engine.eval_ast_with_scope(&mut scope, &ast).ok()?;
        rhai::serde::from_dynamic(&d).ok()
    }

    /// Why the expression is false: its first false conjunct and, when that
    /// compares with `==`, the first path where the two sides differ; else
    /// what the state holds at the paths it reads.
    fn why_false(&self, state: &Value, vars: &Map<String, Value>) -> String {
        // A script of several statements has no one comparison to take apart.
        let statements = split_top_level(&self.source, ";");
        if statements.iter().filter(|s| !s.is_empty()).count() > 1 {
            return format!(
                "final state: `{}` is false ({})",
                self.source,
                self.shown(state, vars)
            );
        }
        let conjuncts = split_top_level(&self.source, "&&");
        let is_false = |part: &str| self.value_of(part, state, vars) == Some(Value::Bool(false));
        let part = match conjuncts.as_slice() {
            [_, _, ..] => conjuncts.iter().copied().find(|p| is_false(p)),
            _ => Some(self.source.as_str()),
        };
        let differs = part.and_then(|part| match split_top_level(part, "==").as_slice() {
            [left, right] => first_difference(
                left,
                &self.value_of(left, state, vars)?,
                &self.value_of(right, state, vars)?,
            ),
            _ => None,
        });
        let what = match part {
            Some(part) if part != self.source => format!("`{}` is false, at `{part}`", self.source),
            _ => format!("`{}` is false", self.source),
        };
        match differs {
            Some(differs) => format!("final state: {what}: {differs}"),
            None => format!("final state: {what} ({})", self.shown(state, vars)),
        }
    }
}

/// The parts of Rhai `source` between the occurrences of `op` outside
/// brackets and string literals, trimmed.
fn split_top_level<'a>(source: &'a str, op: &str) -> Vec<&'a str> {
    let bytes = source.as_bytes();
    let (mut depth, mut quote, mut start, mut parts) = (0i32, None, 0, Vec::new());
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        match quote {
            Some(_) if c == b'\\' => i += 1,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                b'"' | b'`' | b'\'' => quote = Some(c),
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth -= 1,
                _ if depth == 0 && source[i..].starts_with(op) => {
                    let after = bytes.get(i + op.len());
                    // `===` is no Rhai operator, but `!=`/`<=` must not split on `==`.
                    let before = i.checked_sub(1).map(|b| bytes[b]);
                    if !matches!(before, Some(b'!' | b'<' | b'>' | b'=')) && after != Some(&b'=') {
                        parts.push(source[start..i].trim());
                        start = i + op.len();
                        i = start;
                        continue;
                    }
                }
                _ => {}
            },
        }
        i += 1;
    }
    parts.push(source[start..].trim());
    parts
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
    use crate::scripting::{DEFAULT_MAX_OPERATIONS, sandboxed_engine};
    use serde_json::json;

    fn rule(expr: &str) -> FinalState {
        let engine = sandboxed_engine(DEFAULT_MAX_OPERATIONS);
        let ast = compile(&engine, &SCOPE_NAMES, expr).unwrap();
        let paths = state_paths(expr)
            .into_iter()
            .map(|p| {
                let ast = compile(&engine, &SCOPE_NAMES, &p).unwrap();
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
        let cases: &[(&str, bool, &str)] = &[
            (
                r#"state.orders[vars.order].status == "cancelled""#,
                true,
                "",
            ),
            (
                r#"state.orders[0].status == "cancelled""#,
                false,
                r#"is false: state.orders[0].status: "new" ≠ "cancelled""#,
            ),
            (
                "state.orders.len() == 3",
                false,
                "is false: state.orders.len(): 2 ≠ 3",
            ),
            (
                r#"state.orders == [#{status: "new"}, #{status: "refunded"}]"#,
                false,
                r#"state.orders[1].status: "cancelled" ≠ "refunded""#,
            ),
            (
                r#"state.orders == [#{status: "new"}]"#,
                false,
                "state.orders.len(): 2 ≠ 1",
            ),
            (
                r#"state.orders[0] == #{status: "new", paid: true}"#,
                false,
                "state.orders[0].paid: nothing ≠ true",
            ),
            (
                r#"state.orders.len() == 2 && state.orders[0].status == "done""#,
                false,
                r#"at `state.orders[0].status == "done"`: state.orders[0].status: "new" ≠ "done""#,
            ),
            (
                "state.orders.len() > 2",
                false,
                r#"is false (state.orders = [{"status":"new"},{"status":"cancelled"}])"#,
            ),
            (
                r#"#{passed: state.orders.len() == 3, detail: "expected 3 orders"}"#,
                false,
                "expected 3 orders",
            ),
            (
                r#"#{passed: state.orders.len() == 3}"#,
                false,
                "returned passed = false",
            ),
            ("#{passed: true}", true, ""),
            ("state.refunds.len() > 0", false, "state.refunds:"),
            ("state.orders", false, "not a bool or a map"),
        ];
        for &(expr, passed, detail) in cases {
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

    #[test]
    fn splits_only_outside_brackets_and_strings() {
        let cases: [(&str, &str, &[&str]); 4] = [
            ("a == b", "==", &["a", "b"]),
            (
                r#"a != "x == y" && f(b == c)"#,
                "==",
                &[r#"a != "x == y" && f(b == c)"#],
            ),
            (
                "a <= b && #{k: [1 && 2]}",
                "&&",
                &["a <= b", "#{k: [1 && 2]}"],
            ),
            ("a != b", "==", &["a != b"]),
        ];
        for (source, op, parts) in cases {
            assert_eq!(split_top_level(source, op), parts, "{source}");
        }
    }
}
