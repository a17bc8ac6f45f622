//! Ollama's native wire format: `POST {base}/api/chat`, non-streaming or
//! streaming (newline-delimited JSON chunks, the last with `done: true`).
//!
//! Tools go out as `tools` (`{type: "function", function: {name,
//! description, parameters}}`, under the same wire-safe names as OpenAI's,
//! see `tool_wire`); calls come back in `message.tool_calls` as
//! `{id?, function: {index?, name, arguments: {...}}}`, on a stream in any
//! chunk before the last, and are gathered in order. History sends an
//! assistant's calls with their arguments as objects and each tool result as
//! `{role: "tool", content, tool_name}` (with `tool_call_id` when the call
//! had an id).
//!
//! Ollama has no `tool_choice` and no `parallel_tool_calls`: it shows the
//! model its tools and returns whatever calls the model makes, which is
//! `auto` with parallel calls allowed. So `tool_choice = "auto"`,
//! `parallel_tool_calls = true` and leaving either out are sent as that;
//! `required`, `none`, a named function and `parallel_tool_calls = false`
//! are constraints this wire cannot impose, and a request with one fails as
//! a configuration error instead of being scored as if the model had been
//! held to it.

use std::time::Duration;

use serde_json::{Value, json};

use crate::prompt::{Message, Role};

use super::body::{self, Cap};
use super::ollama_response::{Answer, finish, parse_chunk};
use super::tool_wire::WireNames;
use super::{
    ChatRequest, Completion, ModelSetup, OPENAI_SAMPLING, OutputKind, ProviderError, SamplingNames,
    ToolChoice, classify,
};

/// A client for one model on an Ollama server.
pub struct OllamaClient {
    http: reqwest::Client,
    endpoint: String,
    model: String,
    timeout: Duration,
    stream: bool,
    max_response_bytes: u64,
}

/// `OLLAMA_HOST` as a base URL (`0.0.0.0:11434` → `http://127.0.0.1:11434`).
pub(crate) fn base_from_env(value: Option<String>) -> String {
    let Some(host) = value.filter(|h| !h.trim().is_empty()) else {
        return "http://127.0.0.1:11434".to_owned();
    };
    let host = host.trim().trim_end_matches('/');
    // As Ollama reads it: an explicit scheme keeps its own default port.
    let with_port = if host.starts_with("http://") || host.starts_with("https://") {
        host.to_owned()
    } else if host
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.chars().all(|c| c.is_ascii_digit()))
    {
        format!("http://{host}")
    } else {
        format!("http://{host}:11434")
    };
    with_port.replace("://0.0.0.0", "://127.0.0.1")
}

impl OllamaClient {
    /// A client for `spec`; `stream` chooses streaming responses.
    pub fn new(setup: &ModelSetup, http: reqwest::Client, stream: bool) -> OllamaClient {
        let base = setup
            .base_url
            .clone()
            .unwrap_or_else(|| base_from_env(std::env::var("OLLAMA_HOST").ok()));
        OllamaClient {
            http,
            endpoint: super::model_ref::join_url(&base, "/api/chat"),
            model: setup.model.clone(),
            timeout: super::model_ref::timeout(setup.timeout_secs),
            stream,
            max_response_bytes: setup.max_response_bytes,
        }
    }

    /// The request body in Ollama's format.
    pub fn body(&self, request: &ChatRequest) -> Result<Value, ProviderError> {
        let mut body = request_body(&self.model, self.stream, request)?;
        super::reasoning_setting::add_to_body(
            super::ProviderKind::Ollama,
            &request.reasoning,
            &mut body,
        )?;
        Ok(body)
    }

    /// Sends one request.
    pub async fn complete(&self, request: &ChatRequest) -> Result<Completion, ProviderError> {
        let mut response = self
            .http
            .post(&self.endpoint)
            .timeout(self.timeout)
            .json(&self.body(request)?)
            .send()
            .await
            .map_err(|e| classify(&e, self.timeout))?;
        let mut cap = Cap::new(self.max_response_bytes, self.timeout);
        if !response.status().is_success() {
            return Err(body::error_status(response, cap).await);
        }
        let names = WireNames::new(&request.tools);
        let mut answer = Answer::default();
        if !self.stream {
            let bytes = body::read(response, cap).await?;
            let mut chunk = parse_chunk(&bytes)?;
            answer.add(&mut chunk);
            return finish(answer, chunk, &names);
        }
        // The cap counts the whole stream, so neither one endless line nor
        // endless small chunks grow `pending` or `answer` past it.
        let mut pending = Vec::new();
        while let Some(bytes) = cap.next(&mut response).await? {
            pending.extend_from_slice(&bytes);
            while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = pending.drain(..=end).collect();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let mut chunk = parse_chunk(&line)?;
                answer.add(&mut chunk);
                if chunk.done {
                    return finish(answer, chunk, &names);
                }
            }
        }
        if !pending.iter().all(u8::is_ascii_whitespace) {
            let mut chunk = parse_chunk(&pending)?;
            answer.add(&mut chunk);
            if chunk.done {
                return finish(answer, chunk, &names);
            }
        }
        Err(ProviderError::Malformed(
            "the stream ended before a chunk with \"done\": true".into(),
        ))
    }
}

/// The body of `request` for `model` in Ollama's format.
fn request_body(model: &str, stream: bool, request: &ChatRequest) -> Result<Value, ProviderError> {
    if let Some(problem) = unsupported_tool_option(request) {
        return Err(ProviderError::Config(problem));
    }
    let names = WireNames::new(&request.tools);
    let mut options = request.sampling(&SamplingNames {
        max_tokens: "num_predict",
        ..OPENAI_SAMPLING
    });
    if let Some(num_ctx) = request.num_ctx {
        options.insert("num_ctx".into(), json!(num_ctx));
    }
    let mut body = json!({
        "model": model,
        "messages": wire_messages(&request.messages, &names)?,
        "stream": stream,
        "options": options,
    });
    if !request.tools.is_empty() {
        body["tools"] = names.definitions(&request.tools);
    }
    if let Some(top) = request.logprobs {
        body["logprobs"] = json!(true);
        body["top_logprobs"] = json!(top);
    }
    match &request.format {
        OutputKind::Text => {}
        OutputKind::Json => {
            body["format"] = json!("json");
        }
        OutputKind::JsonSchema(schema) => {
            body["format"] = schema.clone();
        }
    }
    super::merge_extra(&mut body, request);
    Ok(body)
}

/// Why Ollama cannot send `request`'s tool options as asked, if it cannot
/// (see the module doc: it has neither option, and behaves as `auto` with
/// parallel calls).
fn unsupported_tool_option(request: &ChatRequest) -> Option<String> {
    if request.tools.is_empty() {
        return None;
    }
    let choice = match &request.tool_choice {
        None => None,
        Some(ToolChoice::Mode(mode)) => {
            // The mode as the spec and the wire spell it: "auto", "required", "none".
            let mode = json!(mode);
            (mode != "auto").then(|| format!("`tool_choice = {mode}`"))
        }
        Some(ToolChoice::Function { function }) => {
            Some(format!("`tool_choice = {{ function = \"{function}\" }}`"))
        }
    };
    if let Some(choice) = choice {
        return Some(format!(
            "{choice}: Ollama has no `tool_choice` and lets the model decide; \
             remove it (or set \"auto\") to run this spec on an Ollama model"
        ));
    }
    (request.parallel_tool_calls == Some(false)).then(|| {
        "`parallel_tool_calls = false`: Ollama cannot hold a model to one call per turn; \
         remove it to run this spec on an Ollama model"
            .to_owned()
    })
}

/// The messages in Ollama's form: a message's images are a list of base64
/// strings in its `images` field; an assistant's calls carry their arguments
/// as objects, and a tool's result names its tool.
fn wire_messages(messages: &[Message], names: &WireNames) -> Result<Value, ProviderError> {
    messages
        .iter()
        .map(|m| {
            let mut message = json!({"role": m.role, "content": m.content});
            if !m.images.is_empty() {
                let images = m
                    .images
                    .iter()
                    .map(|image| image.base64().map_err(|e| super::image_error(&e)))
                    .collect::<Result<Vec<_>, _>>()?;
                message["images"] = json!(images);
            }
            if !m.tool_calls.is_empty() {
                let calls = m
                    .tool_calls
                    .iter()
                    .map(|call| wire_call(call, names))
                    .collect::<Result<Vec<_>, _>>()?;
                message["tool_calls"] = Value::Array(calls);
            }
            if m.role == Role::Tool {
                if let Some(name) = &m.tool_name {
                    message["tool_name"] = json!(names.wire(name));
                }
                if let Some(id) = m.tool_call_id.as_deref().filter(|id| !id.is_empty()) {
                    message["tool_call_id"] = json!(id);
                }
            }
            Ok(message)
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

/// One call of history in Ollama's form. Ollama reads arguments as an
/// object only; a call whose arguments are not one (text that was not JSON)
/// cannot be sent back as the model wrote it, so the request fails rather
/// than tell the model it said something else.
fn wire_call(call: &crate::prompt::ToolCall, names: &WireNames) -> Result<Value, ProviderError> {
    if !call.arguments.is_object() {
        return Err(ProviderError::Config(format!(
            "the call of `{}` in the history has arguments that are not a JSON object, \
             which the Ollama wire cannot carry",
            call.name
        )));
    }
    let mut wire =
        json!({"function": {"name": names.wire(&call.name), "arguments": call.arguments}});
    if !call.id.is_empty() {
        wire["id"] = json!(call.id);
    }
    Ok(wire)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(extra: Value) -> ChatRequest {
        let mut request = json!({
            "messages": [{"role": "user", "content": "5!?"}],
            "temperature": 0.0, "max_tokens": 8, "format": {"type": "text"},
            "tools": [{"name": "math.factorial", "description": "n!",
                       "parameters": {"type": "dict", "properties": {"n": {"type": "integer"}}}}]
        });
        request
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value(request).unwrap()
    }

    #[test]
    fn tools_and_history_take_ollama_form() {
        let history = json!({"messages": [
            {"role": "user", "content": "5!?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_x", "name": "math.factorial", "arguments": {"n": 5}},
                {"name": "math.factorial", "arguments": {"n": 6}}]},
            {"role": "tool", "content": "120", "tool_call_id": "call_x", "tool_name": "math.factorial"},
            {"role": "tool", "content": "720", "tool_call_id": "", "tool_name": "math.factorial"}
        ]});
        let body = request_body("qwen3", false, &request(history)).unwrap();
        assert_eq!(
            body["tools"],
            json!([{"type": "function", "function": {"name": "math_factorial", "description": "n!",
                "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}}}}])
        );
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": "5!?"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "call_x", "function": {"name": "math_factorial", "arguments": {"n": 5}}},
                    {"function": {"name": "math_factorial", "arguments": {"n": 6}}}]},
                {"role": "tool", "content": "120", "tool_name": "math_factorial", "tool_call_id": "call_x"},
                {"role": "tool", "content": "720", "tool_name": "math_factorial"}
            ])
        );
        assert!(body.get("tool_choice").is_none());
        let invalid = json!({"messages": [{"role": "assistant", "content": "",
            "tool_calls": [{"name": "math.factorial", "arguments": "{n", "invalid": "key must be a string"}]}]});
        let err = request_body("qwen3", false, &request(invalid)).unwrap_err();
        assert!(err.to_string().contains("not a JSON object"), "{err}");
    }

    #[test]
    fn tool_options_ollama_cannot_impose_are_refused() {
        let cases = [
            (json!({}), None),
            (
                json!({"tool_choice": "auto", "parallel_tool_calls": true}),
                None,
            ),
            (
                json!({"tool_choice": "required"}),
                Some("`tool_choice = \"required\"`"),
            ),
            (
                json!({"tool_choice": "none"}),
                Some("`tool_choice = \"none\"`"),
            ),
            (
                json!({"tool_choice": {"function": "math.factorial"}}),
                Some("function = \"math.factorial\""),
            ),
            (
                json!({"parallel_tool_calls": false}),
                Some("one call per turn"),
            ),
        ];
        for (extra, refused) in cases {
            let result = request_body("m", true, &request(extra.clone()));
            match (result, refused) {
                (Ok(body), None) => {
                    assert_eq!(body["tools"][0]["function"]["name"], "math_factorial")
                }
                (Err(e), Some(why)) => {
                    assert_eq!(e.kind(), crate::failure::FailureKind::ConfigError);
                    assert!(e.to_string().contains(why), "{extra}: {e}");
                }
                (result, _) => panic!("{extra}: {result:?}"),
            }
        }
    }

    #[test]
    fn calls_of_every_chunk_are_gathered_in_order() {
        let names = WireNames::new(&request(json!({})).tools);
        let call = |i: u64, n: u64| json!({"function": {"index": i, "name": "math_factorial", "arguments": {"n": n}}});
        let lines = [
            json!({"message": {"role": "assistant", "content": "Считаю"}, "done": false}),
            json!({"message": {"role": "assistant", "content": "", "tool_calls": [call(0, 5)]}, "done": false}),
            json!({"message": {"role": "assistant", "content": "", "tool_calls": [call(1, 6), call(2, 7)]}, "done": false}),
            json!({"message": {"role": "assistant", "content": ""}, "done": true, "done_reason": "stop",
                   "prompt_eval_count": 3, "eval_count": 4}),
        ];
        let mut answer = Answer::default();
        let mut last = None;
        for line in lines {
            let mut chunk = parse_chunk(line.to_string().as_bytes()).unwrap();
            answer.add(&mut chunk);
            last = Some(chunk);
        }
        let completion = finish(answer, last.unwrap(), &names).unwrap();
        assert_eq!(completion.text, "Считаю");
        let calls: Vec<(&str, &Value)> = completion
            .tool_calls
            .iter()
            .map(|c| (c.name.as_str(), &c.arguments))
            .collect();
        assert_eq!(
            calls,
            [
                ("math.factorial", &json!({"n": 5})),
                ("math.factorial", &json!({"n": 6})),
                ("math.factorial", &json!({"n": 7}))
            ]
        );
        assert_eq!(completion.usage.tokens_out, Some(4));
    }

    #[test]
    fn ollama_host_forms() {
        assert_eq!(base_from_env(None), "http://127.0.0.1:11434");
        assert_eq!(
            base_from_env(Some("0.0.0.0".into())),
            "http://127.0.0.1:11434"
        );
        assert_eq!(
            base_from_env(Some("gpu-box:9999".into())),
            "http://gpu-box:9999"
        );
        assert_eq!(
            base_from_env(Some("https://ollama.example/".into())),
            "https://ollama.example"
        );
    }
}
