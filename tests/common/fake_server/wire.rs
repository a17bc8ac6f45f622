//! Response bodies in the providers' wire formats, and the answer each prompt gets.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::arith::{eval, expression};
use super::{
    CACHED_TOKENS, COMPLETION_TOKENS, FakeCall, PROMPT_TOKENS, REASONING_TOKENS, Request, Thought,
};

/// `/v1/chat/completions` response, shaped like llama.cpp's server output: `n` choices
/// of the same content, and (as llama-server does) usage counting one choice only.
/// With calls, each choice carries them as OpenAI does: `content` null when
/// empty, arguments as JSON text, ids `call_<request>_<choice>_<call>`, and
/// `finish_reason` `tool_calls`.
pub(super) fn openai_body(
    model: &Value,
    (content, thought): (&str, Option<&Thought>),
    calls: &[FakeCall],
    index: usize,
    n: u64,
) -> Value {
    let choices: Vec<Value> = (0..n)
        .map(|i| {
            if calls.is_empty() {
                return json!({
                    "index": i,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop"
                });
            }
            let tool_calls: Vec<Value> = calls
                .iter()
                .enumerate()
                .map(|(j, c)| {
                    json!({"id": format!("call_{index}_{i}_{j}"), "type": "function",
                           "function": {"name": c.name, "arguments": c.arguments}})
                })
                .collect();
            let content = (!content.is_empty()).then_some(content);
            json!({
                "index": i,
                "message": {"role": "assistant", "content": content, "tool_calls": tool_calls},
                "finish_reason": "tool_calls"
            })
        })
        .collect();
    let mut body = json!({
        "id": format!("chatcmpl-fake{index}"),
        "object": "chat.completion",
        "created": 1_767_225_600,
        "model": model,
        "system_fingerprint": "b0000-fake",
        "choices": choices,
        "usage": {
            "prompt_tokens": PROMPT_TOKENS,
            "completion_tokens": COMPLETION_TOKENS,
            "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
            "prompt_tokens_details": {"cached_tokens": CACHED_TOKENS}
        },
        "timings": {"prompt_n": PROMPT_TOKENS, "predicted_n": COMPLETION_TOKENS, "predicted_ms": 12.5}
    });
    if let Some(thought) = thought {
        think_openai(&mut body, thought);
    }
    body
}

/// A reasoning model's OpenAI-compatible answer: every choice's message
/// carries the thought in its own field beside `content` (DeepSeek's
/// `reasoning_content`, OpenRouter's `reasoning`), usage counts the
/// reasoning tokens in `completion_tokens_details.reasoning_tokens` (OpenAI's
/// chat completion object), and a cut thought ends with `length`.
fn think_openai(body: &mut Value, thought: &Thought) {
    for choice in body["choices"].as_array_mut().into_iter().flatten() {
        choice["message"][thought.field] = json!(thought.text);
        if thought.cut {
            choice["finish_reason"] = json!("length");
        }
    }
    body["usage"]["completion_tokens_details"] = json!({"reasoning_tokens": REASONING_TOKENS});
}

/// A thinking model's Ollama answer (`think: true`): `message.thinking`
/// beside `content`; Ollama counts no reasoning tokens apart (`eval_count`
/// is all of them). A cut thought ends with `done_reason` `length`.
fn think_ollama(body: &mut Value, thought: &Thought) {
    body["message"]["thinking"] = json!(thought.text);
    if thought.cut {
        body["done_reason"] = json!("length");
    }
}

/// Ollama's calls: `{id, function: {index, name, arguments: {...}}}`, the
/// arguments parsed as Ollama parses the model's output. `with_id`: newer
/// Ollama versions give each call an id, older ones none.
fn ollama_calls(calls: &[FakeCall], first: usize, with_id: bool) -> Vec<Value> {
    calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let arguments: Value = serde_json::from_str(&c.arguments)
                .expect("Ollama sends arguments as an object: a fake call needs JSON");
            let mut call =
                json!({"function": {"index": first + i, "name": c.name, "arguments": arguments}});
            if with_id {
                call["id"] = json!(format!("call_{}", first + i));
            }
            call
        })
        .collect()
}

/// Ollama's non-streaming response (also the last line of a stream, with
/// empty content and no calls): the calls, when any, with ids.
pub(super) fn ollama_final(
    model: &Value,
    (content, thought): (&str, Option<&Thought>),
    calls: &[FakeCall],
) -> Value {
    let mut message = json!({"role": "assistant", "content": content});
    if !calls.is_empty() {
        message["tool_calls"] = json!(ollama_calls(calls, 0, true));
    }
    let mut body = json!({
        "model": model,
        "created_at": "2026-01-01T00:00:00.000000Z",
        "message": message,
        "done_reason": "stop",
        "done": true,
        "total_duration": 123_456_789,
        "load_duration": 1_234_567,
        "prompt_eval_count": PROMPT_TOKENS,
        "prompt_eval_duration": 2_345_678,
        "eval_count": COMPLETION_TOKENS,
        "eval_duration": 3_456_789
    });
    if let Some(thought) = thought {
        think_ollama(&mut body, thought);
    }
    body
}

/// Ollama's NDJSON stream: content in 2-character lines, then each call in
/// a line of its own (no id, as older versions send them), sent in 7-byte
/// HTTP chunks that cut lines (and UTF-8 sequences) apart, so the client must
/// buffer. A cut stream ends cleanly but never sends the `done: true` line.
pub(super) async fn ollama_stream(
    stream: &mut TcpStream,
    model: &Value,
    (content, calls, thought): (&str, &[FakeCall], Option<&Thought>),
    truncated: bool,
) -> bool {
    let mut ndjson = String::new();
    // A thinking model streams its thought first, in `thinking` with empty content.
    let thinking: Vec<char> = thought.map_or(Vec::new(), |t| t.text.chars().collect());
    for piece in thinking.chunks(3) {
        let line = json!({
            "model": model,
            "created_at": "2026-01-01T00:00:00.000000Z",
            "message": {"role": "assistant", "content": "", "thinking": piece.iter().collect::<String>()},
            "done": false
        });
        ndjson.push_str(&format!("{line}\n"));
    }
    let chars: Vec<char> = content.chars().collect();
    for piece in chars.chunks(2) {
        let line = json!({
            "model": model,
            "created_at": "2026-01-01T00:00:00.000000Z",
            "message": {"role": "assistant", "content": piece.iter().collect::<String>()},
            "done": false
        });
        ndjson.push_str(&format!("{line}\n"));
    }
    for (i, call) in calls.iter().enumerate() {
        let line = json!({
            "model": model,
            "created_at": "2026-01-01T00:00:00.000000Z",
            "message": {"role": "assistant", "content": "",
                        "tool_calls": ollama_calls(std::slice::from_ref(call), i, false)},
            "done": false
        });
        ndjson.push_str(&format!("{line}\n"));
    }
    if !truncated {
        let mut last = ollama_final(model, ("", None), &[]);
        if thought.is_some_and(|t| t.cut) {
            last["done_reason"] = json!("length");
        }
        ndjson.push_str(&format!("{last}\n"));
    }
    let head = "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n";
    if stream.write_all(head.as_bytes()).await.is_err() {
        return false;
    }
    let bytes = ndjson.as_bytes();
    let mut start = 0;
    while start < bytes.len() {
        let end = (start + 7).min(bytes.len());
        let chunk = &bytes[start..end];
        let framed = [format!("{:x}\r\n", chunk.len()).as_bytes(), chunk, b"\r\n"].concat();
        if stream.write_all(&framed).await.is_err() {
            return false;
        }
        start = end;
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    stream.write_all(b"0\r\n\r\n").await.is_ok()
}

pub(super) fn last_user_message(body: &Value) -> String {
    super::native::last_user_text(body).unwrap_or_default()
}

/// The answer to the prompt's expression (plus `offset`), as JSON when the request asks for JSON.
pub(super) fn answer_text(request: &Request, offset: i64) -> String {
    let value = expression(&request.prompt)
        .and_then(|e| eval(&e))
        .unwrap_or(42)
        + offset;
    let structured = request.body.get("response_format").is_some()
        || request.body.get("format").is_some()
        || super::native::wants_json(&request.body);
    if structured {
        json!({"answer": value}).to_string()
    } else {
        value.to_string()
    }
}
