//! The native APIs' shapes for the fake server: Anthropic Messages
//! (`/v1/messages`), Gemini `generateContent` (`/v1beta/models/M:generateContent`)
//! and OpenAI Responses (`/v1/responses`): their answer bodies, their error
//! bodies, where a request's prompt is, and whether it asks for JSON. Built
//! from the providers' API references (docs/models.md cites them).

use serde_json::{Value, json};

use super::{COMPLETION_TOKENS, FakeCall, PROMPT_TOKENS};

/// Which native API a request path is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// Anthropic Messages.
    Anthropic,
    /// Gemini `generateContent`.
    Gemini,
    /// OpenAI Responses.
    Responses,
}

/// The native API of `route` (a path without its query), if any.
pub(super) fn wire(route: &str) -> Option<Wire> {
    match route {
        "/v1/messages" => Some(Wire::Anthropic),
        "/v1/responses" => Some(Wire::Responses),
        r if r.starts_with("/v1beta/models/") && r.ends_with(":generateContent") => {
            Some(Wire::Gemini)
        }
        _ => None,
    }
}

/// The text of the last user turn that has any: a chat message's text
/// (OpenAI's and Ollama's too), Anthropic's `text` blocks, Gemini's `text`
/// parts, a Responses `input` message's text. Turns of tool results alone are passed over.
pub(super) fn last_user_text(body: &Value) -> Option<String> {
    let (turns, parts_key) = if let Some(contents) = body["contents"].as_array() {
        (contents, "parts")
    } else if let Some(input) = body["input"].as_array() {
        (input, "content")
    } else {
        (body["messages"].as_array()?, "content")
    };
    let turn = turns.iter().rev().find(|t| {
        t["role"] == "user"
            && (t[parts_key].is_string()
                || t[parts_key]
                    .as_array()
                    .is_some_and(|p| p.iter().any(|p| p["text"].is_string())))
    })?;
    Some(match &turn[parts_key] {
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        text => text.as_str().unwrap_or_default().to_owned(),
    })
}

/// Whether a native body asks for a JSON answer.
pub(super) fn wants_json(body: &Value) -> bool {
    body["output_config"]["format"].is_object()
        || body["generationConfig"]["responseMimeType"] == "application/json"
        || body["text"]["format"]["type"]
            .as_str()
            .is_some_and(|t| t.starts_with("json"))
}

/// The model id of a Gemini path (`/v1beta/models/M:generateContent`).
fn gemini_model(route: &str) -> Value {
    let model = route
        .trim_start_matches("/v1beta/models/")
        .trim_end_matches(":generateContent");
    json!(model)
}

/// The success body of `wire` answering `content` and `calls` (request `index`).
pub(super) fn answer(
    wire: Wire,
    route: &str,
    body: &Value,
    (content, calls): (&str, &[FakeCall]),
    index: usize,
) -> Value {
    let model = body["model"].clone();
    let args = |c: &FakeCall| -> Value {
        serde_json::from_str(&c.arguments)
            .expect("a native API sends arguments as an object: a fake call needs JSON")
    };
    match wire {
        Wire::Anthropic => {
            let mut blocks = Vec::new();
            if !content.is_empty() {
                blocks.push(json!({"type": "text", "text": content}));
            }
            for (j, c) in calls.iter().enumerate() {
                blocks.push(
                    json!({"type": "tool_use", "id": format!("toolu_{index}_{j}"),
                                   "name": c.name, "input": args(c)}),
                );
            }
            let stop = if calls.is_empty() {
                "end_turn"
            } else {
                "tool_use"
            };
            json!({"id": format!("msg_fake{index}"), "type": "message", "role": "assistant",
                   "model": model, "content": blocks, "stop_reason": stop, "stop_sequence": null,
                   "usage": {"input_tokens": PROMPT_TOKENS, "output_tokens": COMPLETION_TOKENS}})
        }
        Wire::Gemini => {
            let n = body["generationConfig"]["candidateCount"]
                .as_u64()
                .unwrap_or(1);
            let mut parts = Vec::new();
            if !content.is_empty() {
                parts.push(json!({"text": content}));
            }
            for c in calls {
                parts.push(json!({"functionCall": {"name": c.name, "args": args(c)}}));
            }
            let candidates: Vec<Value> = (0..n)
                .map(|i| json!({"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": i}))
                .collect();
            json!({"candidates": candidates,
                   "usageMetadata": {"promptTokenCount": PROMPT_TOKENS,
                                     "candidatesTokenCount": COMPLETION_TOKENS * n,
                                     "totalTokenCount": PROMPT_TOKENS + COMPLETION_TOKENS * n},
                   "modelVersion": gemini_model(route), "responseId": format!("fake{index}")})
        }
        Wire::Responses => {
            let mut output = Vec::new();
            if !content.is_empty() {
                output.push(
                    json!({"type": "message", "id": format!("msg_{index}"), "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": content, "annotations": []}]}),
                );
            }
            for (j, c) in calls.iter().enumerate() {
                output.push(
                    json!({"type": "function_call", "id": format!("fc_{index}_{j}"),
                    "call_id": format!("call_{index}_{j}"), "name": c.name,
                    "arguments": c.arguments, "status": "completed"}),
                );
            }
            json!({"id": format!("resp_fake{index}"), "object": "response", "created_at": 1_767_225_600,
                   "status": "completed", "model": model, "output": output,
                   "usage": {"input_tokens": PROMPT_TOKENS,
                             "input_tokens_details": {"cached_tokens": 0},
                             "output_tokens": COMPLETION_TOKENS,
                             "output_tokens_details": {"reasoning_tokens": 0},
                             "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS}})
        }
    }
}

/// The error body of status `code` for a request to `path`: the native
/// API's own (see [`error`]), else OpenAI's.
pub(super) fn error_body(path: &str, code: u16) -> Value {
    // A base URL's query (`?api-key=...`) follows the path.
    match wire(path.split('?').next().unwrap_or_default()) {
        Some(wire) => error(wire, code),
        None => json!({"error": {"code": code, "message": "fake failure", "type": "server_error"}}),
    }
}

/// The error body `wire` sends with status `code`, in its own shape:
/// Anthropic's `{type: error, error: {type, message}}` (529 is
/// `overloaded_error`), Google's `{error: {code, message, status}}`, OpenAI's
/// `{error: {message, type, code}}`.
fn error(wire: Wire, code: u16) -> Value {
    match wire {
        Wire::Anthropic => {
            let kind = match code {
                400 => "invalid_request_error",
                401 => "authentication_error",
                429 => "rate_limit_error",
                529 => "overloaded_error",
                _ => "api_error",
            };
            json!({"type": "error", "error": {"type": kind, "message": "fake failure"}})
        }
        Wire::Gemini => {
            let status = match code {
                400 => "INVALID_ARGUMENT",
                429 => "RESOURCE_EXHAUSTED",
                503 => "UNAVAILABLE",
                _ => "INTERNAL",
            };
            json!({"error": {"code": code, "message": "fake failure", "status": status}})
        }
        Wire::Responses => {
            json!({"error": {"message": "fake failure", "type": "server_error", "param": null, "code": null}})
        }
    }
}
