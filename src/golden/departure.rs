//! Where an agent episode departs from its golden one: the first step of
//! the two trajectories that differs, named by turn, call, tool and
//! argument (or the tool's result, or the text), instead of every later
//! step that differs only because the first did.

use serde_json::Value;

use super::fields::{FieldChange, field_changes};

/// The fields that differ between two lines of a golden file: as
/// [`field_changes`], but an episode's trajectory shown as the one step
/// where it departs from the golden one.
pub(crate) fn line_changes(old: &Value, new: &Value) -> Vec<FieldChange> {
    collapse_trajectory(old, new, field_changes(old, new))
}

/// `changes` between two transcript lines with every `trajectory...`
/// change replaced by the one step where the new episode departs from
/// the old, at the place of the first of them.
pub(crate) fn collapse_trajectory(
    old: &Value,
    new: &Value,
    changes: Vec<FieldChange>,
) -> Vec<FieldChange> {
    let in_trajectory =
        |c: &FieldChange| c.path == "trajectory" || c.path.starts_with("trajectory[");
    let Some(at) = changes.iter().position(in_trajectory) else {
        return changes;
    };
    let steps = |v: &Value| v["trajectory"].as_array().cloned().unwrap_or_default();
    let mut kept: Vec<FieldChange> = changes.into_iter().filter(|c| !in_trajectory(c)).collect();
    if let Some(departure) = departure(&steps(old), &steps(new)) {
        kept.insert(at.min(kept.len()), departure);
    }
    kept
}

/// The first step where `new` departs from `old`, if it does.
pub(crate) fn departure(old: &[Value], new: &[Value]) -> Option<FieldChange> {
    let mut turns = 0usize;
    for i in 0..old.len().max(new.len()) {
        let (a, b) = (old.get(i), new.get(i));
        let assistant = |m: Option<&Value>| m.is_some_and(|m| m["role"] == "assistant");
        if assistant(a) || assistant(b) {
            turns += 1;
        }
        let turn = turns.saturating_sub(1);
        match (a, b) {
            (Some(a), Some(b)) if a == b => continue,
            (Some(a), Some(b)) => return Some(step_change(turn, a, b)),
            (a, b) => {
                let which = if a.is_some() {
                    "the new episode ends"
                } else {
                    "the golden episode ended"
                };
                return Some(change(
                    format!("trajectory turn {turn}: {which} here"),
                    a,
                    b,
                ));
            }
        }
    }
    None
}

fn change(path: String, old: Option<&Value>, new: Option<&Value>) -> FieldChange {
    FieldChange {
        path,
        old: old.cloned(),
        new: new.cloned(),
    }
}

/// How step `a` became `b`, both in turn `turn`.
fn step_change(turn: usize, a: &Value, b: &Value) -> FieldChange {
    let at = format!("trajectory turn {turn}");
    if a["role"] != b["role"] {
        return change(at, Some(a), Some(b));
    }
    if a["role"] == "tool" {
        let name = a["tool_name"].as_str().unwrap_or_default();
        return within(
            format!("{at}, `{name}` result"),
            &a["content"],
            &b["content"],
        );
    }
    let none = Vec::new();
    let calls = |m: &Value| {
        m["tool_calls"]
            .as_array()
            .cloned()
            .unwrap_or_else(|| none.clone())
    };
    let (old_calls, new_calls) = (calls(a), calls(b));
    for j in 0..old_calls.len().max(new_calls.len()) {
        let (x, y) = (old_calls.get(j), new_calls.get(j));
        let (Some(x), Some(y)) = (x, y) else {
            return change(format!("{at}, call {j}"), x, y);
        };
        if x == y {
            continue;
        }
        let path = format!("{at}, call {j}");
        if x["name"] != y["name"] {
            return change(format!("{path}: tool"), Some(&x["name"]), Some(&y["name"]));
        }
        let name = x["name"].as_str().unwrap_or_default();
        if x["arguments"] != y["arguments"] {
            return within(
                format!("{path} `{name}` arguments"),
                &x["arguments"],
                &y["arguments"],
            );
        }
        return change(format!("{path} `{name}`"), Some(x), Some(y));
    }
    change(
        format!("{at}: text"),
        Some(&a["content"]),
        Some(&b["content"]),
    )
}

/// The first field that differs inside `a` and `b` under `path`: JSON text
/// (a tool's result) is compared as the JSON it holds.
fn within(path: String, a: &Value, b: &Value) -> FieldChange {
    let parsed = |v: &Value| match v {
        Value::String(s) => serde_json::from_str::<Value>(s)
            .ok()
            .filter(|v| v.is_object() || v.is_array()),
        _ => Some(v.clone()),
    };
    if let (Some(x), Some(y)) = (parsed(a), parsed(b))
        && let Some(first) = field_changes(&x, &y).into_iter().next()
    {
        let path = if first.path.is_empty() {
            path
        } else {
            format!("{path} {}", first.path)
        };
        return FieldChange { path, ..first };
    }
    change(path, Some(a), Some(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn episode(id: &str, result: &str, last: &str) -> Value {
        json!([
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c0", "name": "list_orders", "arguments": {}}]},
            {"role": "tool", "content": "[]", "tool_call_id": "c0", "tool_name": "list_orders"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "cancel_order", "arguments": {"order_id": id}}]},
            {"role": "tool", "content": result, "tool_call_id": "c1", "tool_name": "cancel_order"},
            {"role": "assistant", "content": last},
        ])
    }

    fn first(old: &Value, new: &Value) -> String {
        let steps = |v: &Value| v.as_array().unwrap().clone();
        departure(&steps(old), &steps(new)).map_or("same".into(), |c| c.render(false))
    }

    #[test]
    fn the_first_departure_is_named_by_turn_call_tool_and_argument() {
        let golden = episode(
            "A-1002",
            r#"{"order_id":"A-1002","status":"отменён"}"#,
            "Готово.",
        );
        let mut renamed = golden.clone();
        renamed[2]["tool_calls"][0]["name"] = json!("refund_order");
        let mut extra = golden.clone();
        extra[2]["tool_calls"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "submit", "arguments": {}}));
        let mut short = golden.clone();
        short.as_array_mut().unwrap().truncate(4);
        let cases = [
            (golden.clone(), "same"),
            (
                episode("A-1003", r#"{"error":"нельзя"}"#, "Нет."),
                r#"trajectory turn 1, call 0 `cancel_order` arguments order_id: "A-1002" → "A-1003""#,
            ),
            (
                episode(
                    "A-1002",
                    r#"{"order_id":"A-1002","status":"в обработке"}"#,
                    "Готово.",
                ),
                r#"trajectory turn 1, `cancel_order` result status: "отменён" → "в обработке""#,
            ),
            (
                episode(
                    "A-1002",
                    r#"{"order_id":"A-1002","status":"отменён"}"#,
                    "Всё.",
                ),
                r#"trajectory turn 2: text: "Готово." → "Всё.""#,
            ),
            (
                renamed,
                r#"trajectory turn 1, call 0: tool: "cancel_order" → "refund_order""#,
            ),
            (
                extra,
                r#"trajectory turn 1, call 1: (absent) → {"arguments":{},"name":"submit"}"#,
            ),
            (
                short,
                r#"trajectory turn 2: the new episode ends here: {"content":"Готово.","role":"assistant"} → (absent)"#,
            ),
        ];
        let mut shown = Vec::new();
        for (new, want) in cases {
            let got = first(&golden, &new);
            assert_eq!(got, want);
            shown.push(got);
        }
        insta::assert_snapshot!(shown.join("\n"));
    }

    /// A golden transcript line against a new one whose episode cancelled
    /// another order: one line for the departure, then the state and verdict.
    #[test]
    fn a_changed_episode_in_a_transcript_diff() {
        use crate::golden::transcript::{ScoredAnswer, TranscriptLine, compare_transcripts};
        let line = |id: &str, status: &str, passed: bool| TranscriptLine {
            id: "shop/0".into(),
            instance: 0,
            sample: 0,
            model: "m".into(),
            scored: ScoredAnswer {
                response: Some("Готово.".into()),
                passed,
                score: f64::from(u8::from(passed)),
                trajectory: serde_json::from_value(episode(id, "{}", "Готово.")).unwrap(),
                state: Some(json!({"orders": [{"id": "A-1002", "status": status}]})),
                ..ScoredAnswer::default()
            },
            judge: Default::default(),
        };
        let golden = [line("A-1002", "отменён", true)];
        let new = [line("A-1003", "в обработке", false)];
        let diff = compare_transcripts(Some(&golden), &new);
        let shown: Vec<String> = diff.fields[0].1.iter().map(|c| c.render(false)).collect();
        insta::assert_snapshot!(shown.join("\n"));
    }
}
