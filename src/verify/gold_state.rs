//! `gold_state`: the state an `[agent]` episode left equals the state the
//! instance's gold actions leave when replayed through the same tools from
//! the same initial state, as τ²-bench's DB check compares the database an
//! agent left with the one its gold actions produce. The gold state is
//! computed when the answer is scored, never stored: a change to a tool
//! changes both sides alike. A gold action whose tool throws leaves the state
//! as it was, as τ²-bench's replay does.

use serde_json::{Map, Value};

use super::kind::RuleKind;
use super::shared::{
    SHOWN, ValueProblem, first_difference, read_variable, variable_key, variable_problems,
};
use super::{BuildContext, FailureKind, Reads, ReadsReply, Reply, Rule, Verdict};
use crate::error::Diagnostic;
use crate::format::ToolCall;
use crate::text::{clip, json_kind};

/// `gold_state`: the tools' state after the episode equals the state the
/// instance's gold actions (`actions`: a variable holding a list of
/// `{name, arguments}`) leave, replayed through the spec's own `[[tools]]`
/// from the instance's initial state.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct GoldStateKeys {
    /// The instance variable (a dotted path) holding the gold actions: a list of `{name, arguments}`.
    pub actions: Option<String>,
}

impl RuleKind for GoldStateKeys {
    fn build(self, cx: &BuildContext) -> Result<Box<dyn Rule>, Diagnostic> {
        let actions = variable_key(cx, self.actions, "actions", "\"actions\"")?;
        Ok(Box::new(GoldState { actions }))
    }
}

struct GoldState {
    /// The variable holding the gold actions.
    actions: String,
}

/// The gold actions in `value` as calls, or why they are not a list of
/// `{name, arguments}` (`arguments` may be left out: no arguments).
fn gold_calls(var: &str, value: &Value) -> Result<Vec<ToolCall>, ValueProblem> {
    let Value::Array(items) = value else {
        return Err(ValueProblem(format!(
            "`{var}` must be a list of {{name, arguments}}, but it is {}",
            json_kind(value)
        )));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let name = item.get("name").and_then(Value::as_str);
            let arguments = item.get("arguments").cloned().unwrap_or_default();
            let arguments = match arguments {
                Value::Null => Value::Object(Map::new()),
                other => other,
            };
            match name {
                Some(name) if arguments.is_object() => Ok(ToolCall {
                    id: String::new(),
                    name: name.to_owned(),
                    arguments,
                    invalid: None,
                }),
                Some(_) => Err(ValueProblem(format!(
                    "`{var}[{i}]`'s `arguments` must be a map, but it is {}",
                    json_kind(&arguments)
                ))),
                None => Err(ValueProblem(format!(
                    "`{var}[{i}]` has no `name` naming a tool"
                ))),
            }
        })
        .collect()
}

impl Rule for GoldState {
    fn variables(&self) -> Vec<(&'static str, &str)> {
        vec![("actions", self.actions.as_str())]
    }

    fn value_problems(&self, vars: &Map<String, Value>) -> Vec<(&'static str, String)> {
        variable_problems("actions", vars, &self.actions, |v| {
            gold_calls(&self.actions, v)
        })
    }

    fn reads(&self) -> Reads<'_> {
        Reads::Reply(self)
    }
}

impl ReadsReply for GoldState {
    fn verify(&self, reply: &Reply, vars: &Map<String, Value>) -> (String, Verdict) {
        let Some(state) = reply.state else {
            let why = "no state (gold_state reads the tools' state of an [agent] episode)";
            return (String::new(), Verdict::failed(FailureKind::NoAnswer, why));
        };
        let shown = clip(&state.to_string(), SHOWN);
        let calls = match read_variable(vars, &self.actions, |v| gold_calls(&self.actions, v)) {
            Ok(calls) => calls,
            Err(why) => return (shown, Verdict::fail(why.0)),
        };
        let Some(tools) = reply.replay else {
            let why = "no tools to replay the gold actions through (an [agent] spec's [[tools]])";
            return (shown, Verdict::failed(FailureKind::ConfigError, why));
        };
        let gold = match tools.0.replay(vars, &calls) {
            Ok(gold) => gold,
            Err(why) => return (shown, Verdict::fail(why.to_string())),
        };
        let verdict = match first_difference("state", state, &gold) {
            None => Verdict::pass(),
            Some(differs) => Verdict::failed(
                FailureKind::WrongState,
                format!(
                    "differs from the state the gold actions leave ({} replayed): {differs}",
                    calls.len()
                ),
            ),
        };
        (shown, verdict)
    }
}

#[cfg(test)]
mod tests {
    use super::super::reply::{Replay, ReplayError, Replayer};
    use super::*;
    use serde_json::json;

    /// Tools over `{n}`: `add` adds `by` (and throws past 10), anything else is unknown.
    struct Counter;

    impl Replay for Counter {
        fn replay(
            &self,
            vars: &Map<String, Value>,
            calls: &[ToolCall],
        ) -> Result<Value, ReplayError> {
            let mut n = vars["start"]
                .as_i64()
                .ok_or(ReplayError("no start".into()))?;
            for call in calls {
                let by = call.arguments["by"].as_i64().unwrap_or(0);
                if call.name == "add" && n + by <= 10 {
                    n += by;
                }
            }
            Ok(json!({"n": n}))
        }
    }

    fn check(actions: Value, state: Option<Value>, replay: bool) -> Verdict {
        let vars = json!({"start": 1, "gold": actions});
        let reply = Reply {
            state: state.as_ref(),
            replay: replay.then_some(Replayer(&Counter)),
            ..Reply::text("")
        };
        let rule = GoldState {
            actions: "gold".into(),
        };
        ReadsReply::verify(&rule, &reply, vars.as_object().unwrap()).1
    }

    #[test]
    fn compares_the_state_with_the_gold_actions_replayed() {
        let add = |by: i64| json!({"name": "add", "arguments": {"by": by}});
        let cases = [
            (json!([add(2), add(3)]), json!({"n": 6}), None, ""),
            (json!([]), json!({"n": 1}), None, ""),
            // A gold action that throws leaves the state as it was.
            (json!([add(2), add(50)]), json!({"n": 3}), None, ""),
            (json!([{"name": "nothing"}]), json!({"n": 1}), None, ""),
            (
                json!([add(2)]),
                json!({"n": 1}),
                Some(FailureKind::WrongState),
                "(1 replayed): state.n: 1 ≠ 3",
            ),
            (
                json!([add(2)]),
                json!({"n": 3, "extra": true}),
                Some(FailureKind::WrongState),
                "state.extra: true ≠ nothing",
            ),
            (
                json!([{"arguments": {}}]),
                json!({"n": 1}),
                Some(FailureKind::WrongValue),
                "`gold[0]` has no `name`",
            ),
            (
                json!("add"),
                json!({"n": 1}),
                Some(FailureKind::WrongValue),
                "must be a list of {name, arguments}, but it is a string",
            ),
        ];
        for (actions, state, failure, detail) in cases {
            let verdict = check(actions.clone(), Some(state), true);
            assert_eq!(verdict.failure, failure, "{actions}: {}", verdict.detail);
            assert!(
                verdict.detail.contains(detail),
                "{actions}: {}",
                verdict.detail
            );
        }
        let no_state = check(json!([]), None, true);
        assert_eq!(no_state.failure, Some(FailureKind::NoAnswer));
        let no_tools = check(json!([]), Some(json!({"n": 1})), false);
        assert_eq!(no_tools.failure, Some(FailureKind::ConfigError));
    }

    #[test]
    fn names_bad_gold_actions_at_check() {
        let rule = GoldState {
            actions: "gold".into(),
        };
        let vars = json!({"gold": [{"name": "add", "arguments": [1]}]});
        let problems = rule.value_problems(vars.as_object().unwrap());
        assert_eq!(
            problems,
            [(
                "actions",
                "`gold[0]`'s `arguments` must be a map, but it is a list".to_owned()
            )]
        );
        assert_eq!(rule.variables(), [("actions", "gold")]);
    }
}
