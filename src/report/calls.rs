//! A tool answer as text, for every report that shows a response as text
//! (Markdown, JUnit, the raw JSON, the HTML page's list and search): each
//! call as `→ name(key=value, ...)`, each tool result as `← name: content`,
//! so an answer that only called tools never shows as an empty string.

use serde_json::Value;

use crate::format::{Role, ToolCall};
use crate::prompt::Message;

/// A role as reports name it: `system`, `user`, `assistant`, `tool`.
pub(crate) fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

/// `name(key=value, ...)`, values as compact JSON (keys in the journal's
/// order); arguments that were not JSON show as their text, flagged.
pub(crate) fn call_text(c: &ToolCall) -> String {
    let args = match &c.arguments {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", "),
        Value::String(text) if c.invalid.is_some() => text.clone(),
        other => other.to_string(),
    };
    match &c.invalid {
        Some(why) => format!("{}({args}) [invalid arguments: {why}]", c.name),
        None => format!("{}({args})", c.name),
    }
}

/// A message as text: its content, then `→ call` per call; a tool result
/// as `← name: content`.
pub(crate) fn message_text(m: &Message) -> String {
    if m.role == Role::Tool {
        let name = m.tool_name.as_deref().unwrap_or_default();
        return format!("← {name}: {}", m.content);
    }
    let mut lines = Vec::new();
    if !m.content.is_empty() || m.tool_calls.is_empty() {
        lines.push(m.content.clone());
    }
    lines.extend(m.tool_calls.iter().map(|c| format!("→ {}", call_text(c))));
    lines.join("\n")
}

/// What the model answered, as text: the response alone, or with a
/// trajectory every step of it, one message per line (the response last
/// when the trajectory does not end with it).
pub(crate) fn answer_text(response: Option<&str>, trajectory: &[Message]) -> Option<String> {
    if trajectory.is_empty() {
        return response.map(str::to_owned);
    }
    let mut steps: Vec<String> = trajectory.iter().map(message_text).collect();
    let last = trajectory
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)
        .map(|m| m.content.as_str());
    if let Some(r) = response.filter(|r| !r.is_empty() && Some(*r) != last) {
        steps.push(r.to_owned());
    }
    Some(steps.join("\n"))
}

/// The arguments a failing rule's detail names (``argument `x` ``), in
/// order of first mention: what the HTML page's failed-argument filter offers.
pub(crate) fn named_arguments(detail: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for part in detail.split("argument `").skip(1) {
        if let Some((name, _)) = part.split_once('`')
            && !name.is_empty()
            && !names.iter().any(|n| n == name)
        {
            names.push(name.to_owned());
        }
    }
    names
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// A three-turn episode: a call, a result, a call with text that is
    /// not JSON, an error, a final answer.
    pub(crate) fn episode() -> Vec<Message> {
        let first = ToolCall {
            id: "call_1".into(),
            name: "math.factorial".into(),
            arguments: json!({"number": 6}),
            invalid: None,
        };
        let second = ToolCall::from_text("call_2", "<script>x()</script>", "{\"n\": ");
        vec![
            Message::assistant("", vec![first.clone()]),
            Message::tool_result(&first, "720"),
            Message::assistant("Checking.", vec![second.clone()]),
            Message::tool_result(&second, "{\"error\": \"no such tool\"}"),
            Message::assistant("6! = 720", Vec::new()),
        ]
    }

    #[test]
    fn an_episode_reads_as_one_step_a_line() {
        let text = answer_text(Some("6! = 720"), &episode()).unwrap();
        insta::assert_snapshot!(text, @r#"
        → math.factorial(number=6)
        ← math.factorial: 720
        Checking.
        → <script>x()</script>({"n": ) [invalid arguments: EOF while parsing a value at line 1 column 6]
        ← <script>x()</script>: {"error": "no such tool"}
        6! = 720
        "#);
    }

    #[test]
    fn plain_answers_stay_as_they_were() {
        let cases = [
            (Some("text"), Vec::new(), Some("text")),
            (None, Vec::new(), None),
            (
                Some("Done."),
                vec![Message::assistant(
                    "",
                    vec![episode()[0].tool_calls[0].clone()],
                )],
                Some("→ math.factorial(number=6)\nDone."),
            ),
        ];
        for (response, trajectory, shown) in cases {
            assert_eq!(
                answer_text(response, &trajectory).as_deref(),
                shown,
                "{trajectory:?}"
            );
        }
    }

    #[test]
    fn failed_arguments_are_read_from_details() {
        let detail = "call 1 `math.factorial`: argument `number`: 6 is not one of [5]; \
            missing required argument `base`; argument `number` again; argument ``";
        assert_eq!(named_arguments(detail), ["number", "base"]);
        assert!(named_arguments("wrong value").is_empty());
    }
}
