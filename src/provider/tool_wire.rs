//! What the OpenAI and Ollama wires do alike with tools: wire-safe function
//! names, the `tools` list, and a returned call read back.
//!
//! OpenAI-style APIs take function names matching `^[a-zA-Z0-9_-]{1,64}$`,
//! while BFCL's are dotted (`math.factorial`). Each tool of a request gets a
//! wire name: its own when that is already safe, else its name with every
//! other character as `_`, cut to 64, and `_2`, `_3`, ... added while another
//! tool of the request holds it. Safe names are claimed first, so a tool
//! never loses its own name to another's rewriting; and the same tools give
//! the same names on every turn of an episode, so history calls match the
//! `tools` list. Calls coming back are mapped to the spec's names.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Tool, ToolCall};

/// The longest name the OpenAI API accepts.
const MAX_NAME: usize = 64;

/// The wire name of each tool of one request, both ways.
#[derive(Debug, Default)]
pub(crate) struct WireNames {
    to_wire: HashMap<String, String>,
    to_spec: HashMap<String, String>,
}

fn is_safe(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `name` with every character outside `[a-zA-Z0-9_-]` as `_`, cut to 64.
fn sanitize(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_NAME)
        .collect();
    if safe.is_empty() { "_".into() } else { safe }
}

impl WireNames {
    /// The names of `tools`, in their order (which decides who gets `_2`).
    pub(crate) fn new(tools: &[Tool]) -> WireNames {
        let mut taken: HashSet<String> = tools
            .iter()
            .filter(|t| is_safe(&t.name))
            .map(|t| t.name.clone())
            .collect();
        let mut names = WireNames::default();
        for tool in tools {
            let wire = if is_safe(&tool.name) {
                tool.name.clone()
            } else {
                let base = sanitize(&tool.name);
                let mut candidate = base.clone();
                let mut n = 2;
                while taken.contains(&candidate) {
                    let suffix = format!("_{n}");
                    // `base` is ASCII, so any byte index is a character boundary.
                    let keep = base.len().min(MAX_NAME - suffix.len());
                    candidate = format!("{}{suffix}", &base[..keep]);
                    n += 1;
                }
                taken.insert(candidate.clone());
                candidate
            };
            names.to_spec.insert(wire.clone(), tool.name.clone());
            names.to_wire.insert(tool.name.clone(), wire);
        }
        names
    }

    /// The wire name of the spec's `name`; a name that is none of the
    /// request's tools (a call the model invented) is only made safe.
    pub(crate) fn wire<'a>(&'a self, name: &'a str) -> Cow<'a, str> {
        match self.to_wire.get(name) {
            Some(wire) => Cow::Borrowed(wire),
            None if is_safe(name) => Cow::Borrowed(name),
            None => Cow::Owned(sanitize(name)),
        }
    }

    /// The spec's name of a called `wire` name; unknown names stay as the model wrote them.
    pub(crate) fn spec(&self, wire: &str) -> String {
        self.to_spec
            .get(wire)
            .cloned()
            .unwrap_or_else(|| wire.to_owned())
    }

    /// Each tool as `shape(wire name, parameters)`, the parameters with
    /// BFCL's type names as JSON Schema's, and its description, when it has
    /// one, under `description`: every wire's declaration is built so.
    pub(crate) fn declarations(
        &self,
        tools: &[Tool],
        shape: impl Fn(&str, Value) -> Value,
    ) -> Vec<Value> {
        tools
            .iter()
            .map(|t| {
                let mut declaration = shape(&self.wire(&t.name), t.standard_parameters());
                if !t.description.is_empty() {
                    declaration["description"] = json!(t.description);
                }
                declaration
            })
            .collect()
    }

    /// The `tools` list both wires take: `{type: "function", function: {name,
    /// description, parameters}}`.
    pub(crate) fn definitions(&self, tools: &[Tool]) -> Value {
        let functions = self.declarations(
            tools,
            |name, parameters| json!({"name": name, "parameters": parameters}),
        );
        functions
            .into_iter()
            .map(|function| json!({"type": "function", "function": function}))
            .collect()
    }
}

/// A call as both wires return it: `{id?, function: {name, arguments}}`
/// (OpenAI adds `type`, Ollama `function.index`; neither matters here).
#[derive(Debug, Deserialize)]
pub(crate) struct WireCall {
    #[serde(default)]
    id: Option<String>,
    function: WireFunction,
}

#[derive(Debug, Deserialize)]
struct WireFunction {
    #[serde(default)]
    name: String,
    /// OpenAI sends a JSON text, Ollama an object; either is taken.
    #[serde(default)]
    arguments: Option<Value>,
}

impl WireCall {
    /// The call under the spec's name; arguments that are not JSON stay as
    /// text with `invalid` set, so a verdict can name them.
    pub(crate) fn into_call(self, names: &WireNames) -> ToolCall {
        let id = self.id.unwrap_or_default();
        let name = names.spec(&self.function.name);
        match self.function.arguments {
            None | Some(Value::Null) => ToolCall::from_text(id, name, ""),
            Some(Value::String(text)) => ToolCall::from_text(id, name, &text),
            Some(arguments) => ToolCall {
                id,
                name,
                arguments,
                invalid: None,
            },
        }
    }
}

/// Cleans every string inside a call's arguments, keys included (an
/// argument may echo an API key as well as text may).
pub(crate) fn scrub_value(value: &mut Value, clean: &impl Fn(&mut String)) {
    match value {
        Value::String(text) => clean(text),
        Value::Array(items) => items.iter_mut().for_each(|v| scrub_value(v, clean)),
        Value::Object(map) => {
            let entries = std::mem::take(map);
            for (mut key, mut v) in entries {
                clean(&mut key);
                scrub_value(&mut v, clean);
                map.insert(key, v);
            }
        }
        _ => {}
    }
}

/// A completion's calls made safe to keep, from whichever provider: each
/// call's arguments bounded ([`ToolCall::bounded`]: refused past the depth
/// and size limits), at most [`ToolCall::MOST_KEPT`] calls kept and one
/// standing for the rest, every call named `call_<turn>_<index>`.
///
/// Servers make ids up (llama.cpp: random per response), and an id that
/// changes between runs would change the next turn's request, its cache key
/// and every golden episode; the wire needs them only to pair results with calls.
pub(super) fn settle_calls(completion: &mut super::Completion, turn: u32) {
    let calls = &mut completion.tool_calls;
    if calls.len() > ToolCall::MOST_KEPT {
        let dropped = calls.len() - ToolCall::MOST_KEPT;
        calls.truncate(ToolCall::MOST_KEPT);
        calls.push(ToolCall {
            id: String::new(),
            name: String::new(),
            arguments: Value::Object(Default::default()),
            invalid: Some(format!(
                "{dropped} more calls of this answer are not kept (an answer keeps {})",
                ToolCall::MOST_KEPT
            )),
        });
    }
    for (i, call) in calls.iter_mut().enumerate() {
        *call = std::mem::replace(call, ToolCall::from_text("", "", "")).bounded();
        call.id = format!("call_{turn}_{i}");
    }
}

/// What llama.cpp says when the model's call does not parse (cut off at
/// `max_tokens`, or malformed).
const UNPARSED_CALL: &str = "Failed to parse tool call arguments";

/// llama.cpp parses calls itself and answers HTTP 500 when a model's call
/// is not JSON: that is the model's answer, a call with invalid arguments
/// (scored `invalid_tool_arguments`), not a server fault to retry.
pub(super) fn unparsed_call(
    request: &super::ChatRequest,
    error: &super::ProviderError,
) -> Option<super::Completion> {
    let super::ProviderError::Status {
        status: 500, body, ..
    } = error
    else {
        return None;
    };
    if request.tools.is_empty() || !body.contains(UNPARSED_CALL) {
        return None;
    }
    let message = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
        .unwrap_or_else(|| body.clone());
    Some(super::Completion {
        tool_calls: vec![ToolCall {
            id: String::new(),
            name: String::new(),
            arguments: Value::String(String::new()),
            invalid: Some(format!("the server could not parse the call: {message}")),
        }],
        ..super::Completion::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools(names: &[&str]) -> Vec<Tool> {
        names
            .iter()
            .map(|n| Tool {
                name: (*n).into(),
                description: String::new(),
                parameters: json!({"type": "object", "properties": {}}),
            })
            .collect()
    }

    #[test]
    fn names_are_made_safe_and_map_back() {
        let long = "x.".repeat(40);
        let cases: [(&[&str], &[&str]); 5] = [
            (
                &["math.factorial", "get_weather"],
                &["math_factorial", "get_weather"],
            ),
            (&["a.b", "a_b"], &["a_b_2", "a_b"]),
            (&["a.b", "a:b", "a b"], &["a_b", "a_b_2", "a_b_3"]),
            (&["погода", "ok-1"], &["______", "ok-1"]),
            (&[long.as_str()], &[&"x_".repeat(32)]),
        ];
        for (spec, wire) in cases {
            let names = WireNames::new(&tools(spec));
            for (s, w) in spec.iter().zip(wire) {
                assert_eq!(names.wire(s), *w, "{spec:?}");
                assert_eq!(names.spec(w), *s, "{spec:?}");
                assert!(is_safe(w), "{w}");
            }
        }
    }

    #[test]
    fn a_collision_at_the_length_limit_stays_within_it() {
        let (a, b) = ("a.".repeat(40), "a:".repeat(40));
        let names = WireNames::new(&tools(&[&a, &b]));
        let (wa, wb) = (names.wire(&a), names.wire(&b));
        assert_eq!(wa, "a_".repeat(32));
        assert_eq!(wb, format!("{}_2", &"a_".repeat(32)[..62]));
        assert_ne!(wa, wb);
        assert!(is_safe(&wb));
    }

    #[test]
    fn the_same_tools_give_the_same_names_and_strangers_pass() {
        let spec = tools(&["math.factorial", "math_factorial", "m.f"]);
        let (one, two) = (WireNames::new(&spec), WireNames::new(&spec));
        for t in &spec {
            assert_eq!(one.wire(&t.name), two.wire(&t.name));
        }
        assert_eq!(one.wire("math.factorial"), "math_factorial_2");
        assert_eq!(one.wire("other.fn"), "other_fn");
        assert_eq!(one.spec("invented"), "invented");
        assert_eq!(one.spec("math.factorial"), "math.factorial");
    }

    #[test]
    fn scrubbing_reaches_every_string_of_the_arguments() {
        let clean = |text: &mut String| *text = text.replace("sk-1", "[key]");
        let mut arguments = json!({"sk-1": ["a sk-1", {"k": "sk-1"}], "n": 5});
        scrub_value(&mut arguments, &clean);
        assert_eq!(
            arguments,
            json!({"[key]": ["a [key]", {"k": "[key]"}], "n": 5})
        );
        let mut text = json!("{\"key\": \"sk-1");
        scrub_value(&mut text, &clean);
        assert_eq!(text, json!("{\"key\": \"[key]"));
    }

    #[test]
    fn calls_read_text_objects_and_bad_json() {
        let names = WireNames::new(&tools(&["math.factorial"]));
        let read = |v: Value| {
            serde_json::from_value::<WireCall>(v)
                .unwrap()
                .into_call(&names)
        };
        let text = read(
            json!({"id": "c1", "type": "function", "function": {"name": "math_factorial", "arguments": "{\"n\": 5}"}}),
        );
        assert_eq!(
            (text.id.as_str(), text.name.as_str()),
            ("c1", "math.factorial")
        );
        assert_eq!(text.arguments, json!({"n": 5}));
        let object = read(
            json!({"function": {"index": 0, "name": "math_factorial", "arguments": {"n": 5}}}),
        );
        assert_eq!((object.id.as_str(), object.invalid), ("", None));
        assert_eq!(object.arguments, json!({"n": 5}));
        let bad = read(json!({"function": {"name": "x", "arguments": "{\"n\": 5"}}));
        assert_eq!(bad.arguments, json!("{\"n\": 5"));
        assert!(bad.invalid.is_some());
        let none = read(json!({"function": {"name": "x"}}));
        assert_eq!(none.arguments, json!({}));
    }

    #[test]
    fn calls_are_numbered_by_turn_and_position_and_bounded() {
        let mut completion: crate::provider::Completion = serde_json::from_value(json!({
            "text": "", "usage": {"tokens_in": null, "tokens_out": null},
            "tool_calls": [{"id": "xYz", "name": "a", "arguments": {}}, {"name": "b", "arguments": {}}]
        }))
        .unwrap();
        settle_calls(&mut completion, 3);
        let ids: Vec<&str> = completion
            .tool_calls
            .iter()
            .map(|c| c.id.as_str())
            .collect();
        assert_eq!(ids, ["call_3_0", "call_3_1"]);
        let deep = (0..70).fold(json!(1), |v, _| json!([v]));
        let call = |arguments: Value| json!({"name": "a", "arguments": arguments});
        let mut calls = vec![call(json!({"deep": deep}))];
        calls.extend((0..ToolCall::MOST_KEPT + 9).map(|i| call(json!({ "i": i }))));
        let mut flood: crate::provider::Completion = serde_json::from_value(json!({
            "text": "", "usage": {"tokens_in": null, "tokens_out": null}, "tool_calls": calls
        }))
        .unwrap();
        settle_calls(&mut flood, 0);
        let kept = &flood.tool_calls;
        assert_eq!(kept.len(), ToolCall::MOST_KEPT + 1);
        assert!(kept[0].too_deep(), "{:?}", kept[0].invalid);
        assert_eq!(kept[1].arguments, json!({"i": 0}));
        let last = kept.last().unwrap();
        assert_eq!(
            last.invalid.as_deref(),
            Some("10 more calls of this answer are not kept (an answer keeps 1024)")
        );
        assert_eq!(last.id, "call_0_1024");
    }
    #[test]
    fn a_call_llama_cpp_cannot_parse_is_the_models_invalid_call() {
        let request: crate::provider::ChatRequest = serde_json::from_value(json!({
            "messages": [{"role": "user", "content": "5!?"}],
            "temperature": 0.0, "max_tokens": 8, "format": {"type": "text"},
            "tools": tools(&["math.factorial"])
        }))
        .unwrap();
        let status = |status: u16, body: &str| crate::provider::ProviderError::Status {
            status,
            body: body.into(),
            retry_after: None,
        };
        let body = r#"{"error":{"code":500,"message":"Failed to parse tool call arguments as JSON: parse error","type":"server_error"}}"#;
        let answer = unparsed_call(&request, &status(500, body)).expect("a call");
        let call = &answer.tool_calls[0];
        assert_eq!(
            call.invalid.as_deref(),
            Some(
                "the server could not parse the call: Failed to parse tool call arguments as JSON: parse error"
            )
        );
        assert!(unparsed_call(&request, &status(500, "out of memory")).is_none());
        assert!(unparsed_call(&request, &status(503, body)).is_none());
        let mut plain = request.clone();
        plain.tools.clear();
        assert!(unparsed_call(&plain, &status(500, body)).is_none());
    }
}
