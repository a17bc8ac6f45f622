//! The pieces the native wires (Anthropic, Gemini, Responses) share when
//! they build bodies and read answers. A leaf beside `native.rs`: the wires
//! import these, and `native.rs` imports the wires, so these cannot live
//! there without a circle.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::prompt::{Message, Role};

#[cfg(test)]
use super::ChatRequest;
use super::{ProviderError, ServedBy};

/// `bytes` as a `T`; what does not parse is a malformed response, quoted briefly.
pub(super) fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ProviderError> {
    serde_json::from_slice(bytes).map_err(|e| {
        ProviderError::Malformed(format!(
            "{e}: {}",
            crate::text::clip(&String::from_utf8_lossy(bytes), 200)
        ))
    })
}

/// The system messages' text, joined by blank lines (None without any), and
/// the other messages: Anthropic and Gemini take the system prompt apart.
pub(super) fn split_system(messages: &[Message]) -> (Option<String>, Vec<&Message>) {
    let system: Vec<&str> = messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.content.as_str())
        .collect();
    let rest = messages.iter().filter(|m| m.role != Role::System).collect();
    ((!system.is_empty()).then(|| system.join("\n\n")), rest)
}

/// A provider's stop reason in OpenAI's words where one means the same:
/// `stop`, `length`, `tool_calls`; any other is kept as the provider wrote it.
pub(super) fn finish_reason(raw: &str) -> String {
    match raw {
        // Anthropic `end_turn`/`stop_sequence`, Gemini `STOP`, Responses `completed`.
        "end_turn" | "stop_sequence" | "STOP" | "completed" => "stop",
        // Anthropic `max_tokens`, Gemini `MAX_TOKENS`, Responses `max_output_tokens`.
        "max_tokens" | "MAX_TOKENS" | "max_output_tokens" => "length",
        "tool_use" => "tool_calls",
        other => other,
    }
    .to_owned()
}

/// Adds `item` to the last of `turns` when that turn is `role`'s, else
/// starts a turn `{role, key: [item]}`: Anthropic and Gemini want turns to
/// alternate, and tool results to share the user turn after their calls.
pub(super) fn push_to_turn(turns: &mut Vec<Value>, role: &str, key: &str, item: Value) {
    if let Some(last) = turns.last_mut()
        && last["role"] == role
        && let Some(items) = last[key].as_array_mut()
    {
        items.push(item);
        return;
    }
    turns.push(serde_json::json!({"role": role, key: [item]}));
}

/// Who answered, from a response's model field (empty or missing: unknown).
pub(super) fn served(model: Option<String>) -> Option<ServedBy> {
    let model = model.filter(|m| !m.is_empty())?;
    Some(ServedBy {
        model,
        fingerprint: None,
    })
}

/// The error of a request this wire cannot carry: a configuration error, so
/// the answer is never scored as if the model had been held to it.
pub(super) fn cannot_carry(wire: &str, what: &str) -> ProviderError {
    ProviderError::Config(format!("the {wire} API cannot carry {what}"))
}

/// A request of the wires' unit tests: temperature 0, 64 tokens, text, and the fields of `fields`.
#[cfg(test)]
pub(super) fn test_request(fields: Value) -> ChatRequest {
    let mut base =
        serde_json::json!({"temperature": 0.0, "max_tokens": 64, "format": {"type": "text"}});
    let map = base.as_object_mut().expect("object");
    map.extend(fields.as_object().expect("an object of fields").clone());
    serde_json::from_value(base).expect("a request")
}

/// The history of the wires' unit tests: a system prompt, a question, a
/// call of `math.factorial` (id `call_0_0`) and its result.
#[cfg(test)]
pub(super) fn test_episode() -> Value {
    let call =
        serde_json::json!({"id": "call_0_0", "name": "math.factorial", "arguments": {"n": 5}});
    serde_json::json!([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "5!?"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": "120", "tool_call_id": "call_0_0", "tool_name": "math.factorial"}
    ])
}
