//! OpenAI's Responses API: `POST {base}/responses` (base as for `openai:`,
//! `OPENAI_BASE_URL` or `https://api.openai.com/v1`), the key as a bearer
//! token. Reference: <https://platform.openai.com/docs/api-reference/responses>
//! and the OpenAPI document vendored under `schemas/vendor/openai/`.
//!
//! Every request is stateless (`store: false`, no `previous_response_id`):
//! the whole history goes in `input` each turn, as messages (`system`,
//! `user` with `input_text` and `input_image` parts, `assistant`), an
//! assistant's calls as `function_call` items (`{call_id, name, arguments}`,
//! arguments as JSON text) and each tool result as a `function_call_output`
//! item (`{call_id, output}`). Tools are `{type: function, name,
//! description, parameters, strict: false}`; `tool_choice` and
//! `parallel_tool_calls` are OpenAI's. A JSON answer is `text.format`
//! (`json_object`, or `json_schema` named `answer`). The API has no `n`, no
//! seed and no stop sequences: stop sequences are refused.
//!
//! The answer is the `output_text` parts of the `message` items, its calls
//! the `function_call` items. The reasoning is the `summary_text` parts of
//! the `reasoning` items, `usage.output_tokens_details.reasoning_tokens`
//! counts it. A `reasoning` item without a summary (the API gives one only
//! when asked) still says the model reasoned: its reasoning is kept empty, so
//! a length stop inside it is `unfinished_reasoning`. Reasoning is never
//! sent back: a stateless request could carry it only as encrypted content
//! (`include: ["reasoning.encrypted_content"]`), which this client does not
//! ask for, and the API reasons afresh each turn without it.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::prompt::{Message, Reasoning, Role};

use super::native_wire;
use super::openai::CallIds;
use super::tool_wire::{WireCall, WireNames};
use super::{
    ChatRequest, Completion, OPENAI_SAMPLING, OutputKind, ProviderError, SamplingNames, ToolChoice,
    Usage,
};

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    output: Vec<Item>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    incomplete_details: Option<Incomplete>,
    #[serde(default)]
    error: Option<Value>,
}

/// One output item; kinds this client does not read are skipped.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Item {
    Message {
        #[serde(default)]
        content: Vec<ContentPart>,
    },
    FunctionCall {
        call_id: String,
        name: String,
        #[serde(default)]
        arguments: Option<Value>,
    },
    Reasoning {
        #[serde(default)]
        summary: Vec<ContentPart>,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentPart {
    OutputText {
        text: String,
    },
    Refusal {
        refusal: String,
    },
    SummaryText {
        text: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct Incomplete {
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
    #[serde(default)]
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Deserialize)]
struct OutputDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct InputDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// The answer of a response body. A response whose status is `failed`
/// holds an error where its output would be: a malformed answer, retried.
pub(super) fn completion(bytes: &[u8], names: &WireNames) -> Result<Completion, ProviderError> {
    let parsed: Response = native_wire::parse(bytes)?;
    if parsed.status.as_deref() == Some("failed") {
        let error = parsed.error.map(|e| e.to_string()).unwrap_or_default();
        return Err(ProviderError::Malformed(format!(
            "the response failed: {}",
            crate::text::clip(&error, 200)
        )));
    }
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    let mut summaries: Option<Vec<String>> = None;
    for item in parsed.output {
        match item {
            Item::Reasoning { summary } => {
                let texts = summaries.get_or_insert_with(Vec::new);
                texts.extend(summary.into_iter().filter_map(|part| match part {
                    ContentPart::SummaryText { text } => Some(text),
                    _ => None,
                }));
            }
            Item::Message { content } => {
                for part in content {
                    match part {
                        ContentPart::OutputText { text: t }
                        | ContentPart::Refusal { refusal: t } => {
                            text.push_str(&t);
                        }
                        ContentPart::SummaryText { .. } | ContentPart::Other => {}
                    }
                }
            }
            Item::FunctionCall {
                call_id,
                name,
                arguments,
            } => {
                let call: WireCall = serde_json::from_value(
                    json!({"id": call_id, "function": {"name": name, "arguments": arguments}}),
                )
                .map_err(|e| ProviderError::Malformed(e.to_string()))?;
                tool_calls.push(call.into_call(names));
            }
            Item::Other => {}
        }
    }
    let finish_reason = match (parsed.status.as_deref(), parsed.incomplete_details) {
        (Some("incomplete"), Some(Incomplete { reason: Some(r) })) => {
            Some(native_wire::finish_reason(&r))
        }
        (Some("completed"), _) if !tool_calls.is_empty() => Some("tool_calls".to_owned()),
        (Some(status), _) => Some(native_wire::finish_reason(status)),
        (None, _) => None,
    };
    let usage = parsed.usage.map_or_else(Usage::default, |u| Usage {
        tokens_in: u.input_tokens,
        tokens_out: u.output_tokens,
        tokens_cached: u.input_tokens_details.and_then(|d| d.cached_tokens),
        tokens_reasoning: u.output_tokens_details.and_then(|d| d.reasoning_tokens),
    });
    let reasoning = summaries.map(|texts| Reasoning {
        text: texts.join("\n"),
        ..Reasoning::default()
    });
    Ok(Completion {
        text,
        reasoning,
        usage,
        finish_reason,
        served: native_wire::served(parsed.model),
        tool_calls,
        ..Completion::default()
    })
}

/// The body of `request` for `model` in the Responses API's form.
pub(super) fn request_body(model: &str, request: &ChatRequest) -> Result<Value, ProviderError> {
    if !request.stop.is_empty() {
        return Err(native_wire::cannot_carry(
            "OpenAI Responses",
            "stop sequences (`stop`)",
        ));
    }
    let names = WireNames::new(&request.tools);
    // A prefill is the start of the answer: the last assistant message, continued.
    let prefill = (request.prefill.iter()).map(|p| json!({"role": "assistant", "content": p}));
    let input: Vec<Value> = (wire_input(&request.messages, &names)?.into_iter())
        .chain(prefill)
        .collect();
    let mut body = json!({
        "model": model,
        "input": input,
        "store": false,
    });
    let map = body.as_object_mut().expect("object");
    map.extend(request.sampling(&SamplingNames {
        max_tokens: "max_output_tokens",
        seed: None,
        stop: None,
        ..OPENAI_SAMPLING
    }));
    let format = match &request.format {
        OutputKind::Text => None,
        OutputKind::Json => Some(json!({"type": "json_object"})),
        OutputKind::JsonSchema(schema) => {
            Some(json!({"type": "json_schema", "name": "answer", "schema": schema, "strict": true}))
        }
    };
    if let Some(format) = format {
        map.insert("text".into(), json!({ "format": format }));
    }
    if !request.tools.is_empty() {
        insert_tools(map, request, &names);
    }
    super::merge_extra(&mut body, request);
    Ok(body)
}

/// `tools`, `tool_choice` and `parallel_tool_calls` of a request with tools.
fn insert_tools(map: &mut Map<String, Value>, request: &ChatRequest, names: &WireNames) {
    let tools = names.declarations(&request.tools, |name, parameters| {
        json!({"type": "function", "name": name, "parameters": parameters, "strict": false})
    });
    map.insert("tools".into(), Value::Array(tools));
    let choice = request.tool_choice.as_ref().map(|choice| match choice {
        ToolChoice::Mode(mode) => json!(mode),
        ToolChoice::Function { function } => {
            json!({"type": "function", "name": names.wire(function)})
        }
    });
    map.extend(choice.map(|c| ("tool_choice".to_owned(), c)));
    let parallel = request
        .parallel_tool_calls
        .map(|p| ("parallel_tool_calls".to_owned(), json!(p)));
    map.extend(parallel);
}

/// The history as input items: messages, `function_call` and
/// `function_call_output` items, paired by `call_id`.
fn wire_input(messages: &[Message], names: &WireNames) -> Result<Vec<Value>, ProviderError> {
    let mut ids = CallIds::default();
    let mut input = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        if m.role == Role::Tool {
            let id = ids.result(m.tool_call_id.as_deref());
            input.push(json!({"type": "function_call_output", "call_id": id, "output": m.content}));
            continue;
        }
        if !m.content.is_empty() || (m.tool_calls.is_empty() && m.images.is_empty()) {
            input.push(json!({"role": m.role, "content": m.content}));
        }
        if !m.images.is_empty() {
            let mut parts = Vec::new();
            for image in &m.images {
                let url = image.data_url().map_err(|e| super::image_error(&e))?;
                parts.push(json!({"type": "input_image", "image_url": url, "detail": "auto"}));
            }
            input.push(json!({"role": m.role, "content": parts}));
        }
        for (call, id) in m.tool_calls.iter().zip(ids.assistant(i, m)) {
            // Text that was not JSON goes back as the model wrote it.
            let arguments = match (&call.arguments, &call.invalid) {
                (Value::String(text), Some(_)) => text.clone(),
                (arguments, _) => arguments.to_string(),
            };
            input.push(json!({"type": "function_call", "call_id": id,
                              "name": names.wire(&call.name), "arguments": arguments}));
        }
    }
    Ok(input)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::native_wire::test_request as request;

    #[test]
    fn an_episode_becomes_items_paired_by_call_id() {
        let r = request(json!({
            "messages": crate::provider::native_wire::test_episode(),
            "tools": [{"name": "math.factorial", "parameters": {"type": "object", "properties": {}}}],
            "tool_choice": "required", "parallel_tool_calls": false,
            "format": {"type": "json"}
        }));
        let body = request_body("gpt-x", &r).unwrap();
        assert_eq!(
            body["input"],
            json!([
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "5!?"},
                {"type": "function_call", "call_id": "call_0_0", "name": "math_factorial", "arguments": "{\"n\":5}"},
                {"type": "function_call_output", "call_id": "call_0_0", "output": "120"}
            ])
        );
        assert_eq!(
            (&body["tool_choice"], &body["parallel_tool_calls"]),
            (&json!("required"), &json!(false))
        );
        assert_eq!(body["text"], json!({"format": {"type": "json_object"}}));
        assert_eq!(body["store"], false);
        let mut stopped = r.clone();
        stopped.stop = vec!["END".into()];
        assert!(matches!(
            request_body("m", &stopped),
            Err(ProviderError::Config(_))
        ));
    }

    #[test]
    fn output_items_give_text_calls_and_stop_reasons() {
        let names = WireNames::default();
        let read = |v: Value| completion(v.to_string().as_bytes(), &names);
        let answer = read(json!({
            "status": "completed", "model": "gpt-x",
            "output": [
                {"type": "reasoning", "id": "rs_1", "summary": [
                    {"type": "summary_text", "text": "**Greeting**"},
                    {"type": "summary_text", "text": "Say hi."}]},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi", "annotations": []}]},
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{\"a\": 1"}
            ],
            "usage": {"input_tokens": 5, "output_tokens": 3, "input_tokens_details": {"cached_tokens": 1},
                      "output_tokens_details": {"reasoning_tokens": 2}}
        }))
        .unwrap();
        assert_eq!(answer.text, "hi");
        assert_eq!(answer.reasoning_text(), "**Greeting**\nSay hi.");
        assert_eq!(answer.usage.tokens_reasoning, Some(2));
        assert!(answer.tool_calls[0].invalid.is_some());
        assert_eq!(answer.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(answer.usage.tokens_cached, Some(1));
        let cut = read(
            json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
            "output": [{"type": "reasoning", "id": "rs_2", "summary": []}]}),
        )
        .unwrap();
        assert_eq!(cut.finish_reason.as_deref(), Some("length"));
        // A reasoning item without a summary: the model reasoned, no text to show.
        assert_eq!(cut.reasoning.as_ref().map(|r| r.text.as_str()), Some(""));
        let plain = read(json!({"status": "completed", "output": []})).unwrap();
        assert_eq!(plain.reasoning, None);
        let failed = read(
            json!({"status": "failed", "error": {"code": "server_error", "message": "x"}, "output": []}),
        );
        assert!(matches!(failed, Err(ProviderError::Malformed(_))));
    }
}
