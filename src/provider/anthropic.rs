//! Anthropic's Messages API: `POST {base}/messages` (base
//! `https://api.anthropic.com/v1`), the key in `x-api-key`, the API version
//! in `anthropic-version: 2023-06-01`. Reference:
//! <https://docs.anthropic.com/en/api/messages>.
//!
//! The system prompt is the top-level `system`; the history alternates
//! `user` and `assistant` messages of content blocks: `text`, `image`
//! (`source: {type: base64, media_type, data}`), an assistant's `tool_use`
//! (`{id, name, input}`) and, in the next user message, each `tool_result`
//! (`{tool_use_id, content}`); consecutive results share one user message.
//! Tools are `{name, description, input_schema}`; `tool_choice` is `auto`,
//! `any`, `none` or `{type: tool, name}`, and `parallel_tool_calls = false`
//! is its `disable_parallel_tool_use`. A JSON schema answer is
//! `output_config.format = {type: json_schema, schema}`; the API has no
//! "any JSON" mode, nor `n` or a seed. A prefill is the last assistant
//! message, which the API continues.
//!
//! The answer is the `text` blocks joined, its calls the `tool_use` blocks.
//! Its reasoning is the `thinking` blocks' text; those blocks (with their
//! `signature`) and the `redacted_thinking` ones (`data`, encrypted) are kept
//! whole in [`Reasoning::blocks`] and sent back unchanged, first in the
//! assistant message of an episode's later turns (the API checks the
//! signatures when a turn continues after tool use). Thinking is counted
//! inside `output_tokens`, never apart: reasoning tokens stay unknown.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::prompt::{Message, Reasoning, Role, ToolMode};

use super::native_wire;
use super::openai::CallIds;
use super::tool_wire::WireNames;
use super::{
    ChatRequest, Completion, OPENAI_SAMPLING, OutputKind, ProviderError, SamplingNames, ToolChoice,
    Usage,
};

/// The API version every request names.
pub(crate) const API_VERSION: &str = "2023-06-01";

#[derive(Deserialize)]
struct Response {
    /// Raw, so reasoning blocks can be kept exactly as sent.
    content: Vec<Value>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

/// One content block of an answer; kinds this client does not read are skipped.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    Thinking {
        thinking: String,
    },
    RedactedThinking,
    #[serde(other)]
    Other,
}

/// `usage`: cache reads and writes are counted apart from `input_tokens`.
#[derive(Deserialize, Default)]
#[serde(default)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

/// The answer of a response body, calls under the spec's names.
pub(super) fn completion(bytes: &[u8], names: &WireNames) -> Result<Completion, ProviderError> {
    let parsed: Response = native_wire::parse(bytes)?;
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    let (mut thoughts, mut kept) = (Vec::new(), Vec::new());
    for raw in parsed.content {
        let block = serde_json::from_value(raw.clone())
            .map_err(|e| ProviderError::Malformed(format!("a content block: {e}")))?;
        match block {
            Block::Thinking { thinking } => {
                thoughts.push(thinking);
                kept.push(raw);
            }
            // Encrypted reasoning: no text to show, but it must go back.
            Block::RedactedThinking => kept.push(raw),
            Block::Text { text: t } => text.push_str(&t),
            Block::ToolUse { id, name, input } => tool_calls.push(crate::prompt::ToolCall {
                id,
                name: names.spec(&name),
                arguments: input,
                invalid: None,
            }),
            Block::Other => {}
        }
    }
    let usage = parsed.usage.map_or_else(Usage::default, |u| {
        let cached = u.cache_read_input_tokens;
        // Anthropic counts cache reads and writes apart from `input_tokens`; all are prompt.
        let parts = [u.input_tokens, cached, u.cache_creation_input_tokens];
        Usage {
            tokens_in: u.input_tokens.map(|_| parts.iter().flatten().sum::<u64>()),
            tokens_out: u.output_tokens,
            tokens_cached: cached,
            // Thinking is counted inside `output_tokens`, never apart.
            tokens_reasoning: None,
        }
    });
    // A redacted block alone still says the model reasoned: kept, with no text.
    let reasoning = (!kept.is_empty()).then(|| Reasoning {
        text: thoughts.join("\n"),
        blocks: kept,
        ..Reasoning::default()
    });
    Ok(Completion {
        text,
        reasoning,
        usage,
        finish_reason: parsed
            .stop_reason
            .as_deref()
            .map(native_wire::finish_reason),
        served: native_wire::served(parsed.model),
        tool_calls,
        ..Completion::default()
    })
}

/// The body of `request` for `model` in the Messages API's form.
pub(super) fn request_body(model: &str, request: &ChatRequest) -> Result<Value, ProviderError> {
    let names = WireNames::new(&request.tools);
    let (system, history) = native_wire::split_system(&request.messages);
    let mut messages = wire_messages(&history, &names)?;
    if let Some(prefill) = &request.prefill {
        push_block(
            &mut messages,
            "assistant",
            json!({"type": "text", "text": prefill}),
        );
    }
    let mut body = json!({
        "model": model,
        "messages": messages,
    });
    let map = body.as_object_mut().expect("object");
    map.extend(request.sampling(&SamplingNames {
        seed: None,
        stop: Some("stop_sequences"),
        ..OPENAI_SAMPLING
    }));
    if let Some(system) = system {
        map.insert("system".into(), json!(system));
    }
    match &request.format {
        OutputKind::Text => {}
        OutputKind::Json => {
            return Err(native_wire::cannot_carry(
                "Anthropic",
                "a JSON answer without a schema (give `format` a JSON schema)",
            ));
        }
        OutputKind::JsonSchema(schema) => {
            map.insert(
                "output_config".into(),
                json!({"format": {"type": "json_schema", "schema": schema}}),
            );
        }
    }
    insert_tools(map, request, &names);
    super::merge_extra(&mut body, request);
    Ok(body)
}

/// `tools` and `tool_choice`, when the request has tools.
fn insert_tools(map: &mut Map<String, Value>, request: &ChatRequest, names: &WireNames) {
    if request.tools.is_empty() {
        return;
    }
    let tools = names.declarations(
        &request.tools,
        |name, parameters| json!({"name": name, "input_schema": parameters}),
    );
    map.insert("tools".into(), Value::Array(tools));
    let mut choice = match &request.tool_choice {
        None | Some(ToolChoice::Mode(ToolMode::Auto)) => json!({"type": "auto"}),
        Some(ToolChoice::Mode(ToolMode::Required)) => json!({"type": "any"}),
        Some(ToolChoice::Mode(ToolMode::None)) => json!({"type": "none"}),
        Some(ToolChoice::Function { function }) => {
            json!({"type": "tool", "name": names.wire(function)})
        }
    };
    if request.parallel_tool_calls == Some(false) && choice["type"] != "none" {
        choice["disable_parallel_tool_use"] = json!(true);
    }
    if request.tool_choice.is_some() || request.parallel_tool_calls == Some(false) {
        map.insert("tool_choice".into(), choice);
    }
}

/// Adds `block` to the last message when it has `role`, else starts one.
fn push_block(messages: &mut Vec<Value>, role: &str, block: Value) {
    native_wire::push_to_turn(messages, role, "content", block);
}

/// The history as Messages API turns of content blocks.
fn wire_messages(history: &[&Message], names: &WireNames) -> Result<Vec<Value>, ProviderError> {
    let mut ids = CallIds::default();
    let mut messages = Vec::new();
    for (i, m) in history.iter().enumerate() {
        match m.role {
            Role::Assistant => {
                for block in assistant_blocks(m, ids.assistant(i, m), names) {
                    push_block(&mut messages, "assistant", block);
                }
            }
            Role::Tool => {
                let mut result = json!({"type": "tool_result", "tool_use_id": ids.result(m.tool_call_id.as_deref())});
                if !m.content.is_empty() {
                    result["content"] = json!(m.content);
                }
                push_block(&mut messages, "user", result);
            }
            Role::User | Role::System => {
                if !m.content.is_empty() || m.images.is_empty() {
                    push_block(
                        &mut messages,
                        "user",
                        json!({"type": "text", "text": m.content}),
                    );
                }
                for image in &m.images {
                    let data = image.base64().map_err(|e| super::image_error(&e))?;
                    let source = json!({"type": "base64", "media_type": image.mime, "data": data});
                    push_block(
                        &mut messages,
                        "user",
                        json!({"type": "image", "source": source}),
                    );
                }
            }
        }
    }
    Ok(messages)
}

/// An assistant message's blocks: its reasoning blocks as the API sent
/// them, its text (when it said any), then a `tool_use` per call; arguments
/// that were not a JSON object go as `{}` (the API takes only an object, and
/// Anthropic itself never returns other).
fn assistant_blocks(m: &Message, ids: Vec<String>, names: &WireNames) -> Vec<Value> {
    // Only this API's own kinds: a history is one model's, but a block of
    // another shape would be refused by the API.
    let mut blocks: Vec<Value> = (m.reasoning.iter().flat_map(|r| &r.blocks))
        .filter(|b| b["type"] == "thinking" || b["type"] == "redacted_thinking")
        .cloned()
        .collect();
    if !m.content.is_empty() {
        blocks.push(json!({"type": "text", "text": m.content}));
    }
    for (call, id) in m.tool_calls.iter().zip(ids) {
        let input = if call.arguments.is_object() {
            call.arguments.clone()
        } else {
            json!({})
        };
        blocks.push(
            json!({"type": "tool_use", "id": id, "name": names.wire(&call.name), "input": input}),
        );
    }
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::native_wire::test_request as request;

    fn tools() -> Value {
        json!([{"name": "math.factorial", "description": "n!",
                "parameters": {"type": "dict", "properties": {"n": {"type": "integer"}}}}])
    }

    #[test]
    fn an_episode_alternates_turns_and_pairs_results_with_calls() {
        let call =
            |id: &str, n: i64| json!({"id": id, "name": "math.factorial", "arguments": {"n": n}});
        let r = request(json!({
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "5! и 6!?"},
                {"role": "assistant", "content": "", "tool_calls": [call("call_0_0", 5), call("", 6)]},
                {"role": "tool", "content": "120", "tool_call_id": "call_0_0"},
                {"role": "tool", "content": "720"},
                {"role": "user", "content": "And?"}
            ],
            "tools": tools(), "tool_choice": "required", "parallel_tool_calls": false,
            "stop": ["END"], "top_p": 0.5
        }));
        let body = request_body("claude-x", &r).unwrap();
        assert_eq!(body["system"], "Be brief.");
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "5! и 6!?"}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "call_0_0", "name": "math_factorial", "input": {"n": 5}},
                    {"type": "tool_use", "id": "call_1_1", "name": "math_factorial", "input": {"n": 6}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_0_0", "content": "120"},
                    {"type": "tool_result", "tool_use_id": "call_1_1", "content": "720"},
                    {"type": "text", "text": "And?"}]}
            ])
        );
        assert_eq!(
            body["tools"][0],
            json!({"name": "math_factorial", "description": "n!",
                   "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}}})
        );
        assert_eq!(
            body["tool_choice"],
            json!({"type": "any", "disable_parallel_tool_use": true})
        );
        assert_eq!(
            (&body["stop_sequences"], &body["top_p"]),
            (&json!(["END"]), &json!(0.5))
        );
    }

    #[test]
    fn formats_map_to_output_config_or_are_refused() {
        let mut r = request(json!({"messages": [{"role": "user", "content": "q"}]}));
        let plain = request_body("m", &r).unwrap();
        assert!(plain.get("output_config").is_none() && plain.get("tool_choice").is_none());
        r.format = OutputKind::JsonSchema(json!({"type": "object"}));
        assert_eq!(
            request_body("m", &r).unwrap()["output_config"],
            json!({"format": {"type": "json_schema", "schema": {"type": "object"}}})
        );
        r.format = OutputKind::Json;
        assert!(matches!(
            request_body("m", &r),
            Err(ProviderError::Config(_))
        ));
        r.format = OutputKind::Text;
        r.prefill = Some("{".into());
        assert_eq!(
            request_body("m", &r).unwrap()["messages"][1],
            json!({"role": "assistant", "content": [{"type": "text", "text": "{"}]})
        );
    }

    #[test]
    fn answers_join_text_blocks_and_read_calls_and_usage() {
        let names = WireNames::new(&serde_json::from_value::<Vec<_>>(tools()).unwrap());
        let body = json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [
                {"type": "thinking", "thinking": "hm", "signature": "sig"},
                {"type": "redacted_thinking", "data": "EmwKAhgB"},
                {"type": "text", "text": "Let me "},
                {"type": "text", "text": "compute."},
                {"type": "tool_use", "id": "toolu_1", "name": "math_factorial", "input": {"n": 5}}
            ],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 7,
                      "cache_read_input_tokens": 4, "cache_creation_input_tokens": 2}
        });
        let answer = completion(body.to_string().as_bytes(), &names).unwrap();
        assert_eq!(answer.text, "Let me compute.");
        let reasoning = answer.reasoning.as_ref().unwrap();
        assert_eq!(reasoning.text, "hm");
        assert_eq!(reasoning.blocks, body["content"].as_array().unwrap()[..2]);
        assert_eq!(answer.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(answer.tool_calls[0].name, "math.factorial");
        assert_eq!(answer.tool_calls[0].arguments, json!({"n": 5}));
        assert_eq!(
            answer.usage,
            Usage {
                tokens_in: Some(16),
                tokens_out: Some(7),
                tokens_cached: Some(4),
                tokens_reasoning: None,
            }
        );
        assert_eq!(answer.served.unwrap().model, "claude-x");
        let bad = completion(b"{\"type\": \"error\"}", &names).unwrap_err();
        assert!(matches!(bad, ProviderError::Malformed(_)), "{bad}");
    }

    #[test]
    fn reasoning_blocks_go_back_unchanged_before_the_turns_text_and_calls() {
        let thinking = json!({"type": "thinking", "thinking": "5! = 120?", "signature": "EqQB+/="});
        let redacted = json!({"type": "redacted_thinking", "data": "EmwK=="});
        let mut history = crate::provider::native_wire::test_episode();
        let turn = &mut history[2];
        turn["content"] = json!("Calling.");
        turn["reasoning"] = json!({"text": "5! = 120?",
            "blocks": [thinking, redacted, {"thought": true, "text": "not Anthropic's"}]});
        let r = request(json!({"messages": history, "tools": tools()}));
        let body = request_body("claude-x", &r).unwrap();
        let blocks = body["messages"][1]["content"].as_array().unwrap();
        assert_eq!(blocks[..2], [thinking, redacted.clone()]);
        assert_eq!(
            blocks[2..].iter().map(|b| &b["type"]).collect::<Vec<_>>(),
            ["text", "tool_use"]
        );
        let names = WireNames::default();
        let only_redacted = json!({"content": [redacted], "stop_reason": "max_tokens"});
        let answer = completion(only_redacted.to_string().as_bytes(), &names).unwrap();
        let kept = answer.reasoning.unwrap();
        assert_eq!((kept.text.as_str(), kept.blocks.len()), ("", 1));
        let plain = json!({"content": [{"type": "text", "text": "hi"}]});
        let answer = completion(plain.to_string().as_bytes(), &names).unwrap();
        assert_eq!(answer.reasoning, None);
    }
}
