//! The OpenAI-compatible wire format: `POST {base}/chat/completions`, as
//! served by OpenAI, vLLM, llama.cpp's server and LiteLLM.
//!
//! Tools go out as `tools`, `tool_choice` and `parallel_tool_calls` under
//! wire-safe names (`tool_wire`); each choice's `message.tool_calls` come back
//! under the spec's names, arguments parsed from their JSON text (an object
//! is taken too; text that is not JSON is kept, marked invalid). History
//! sends an assistant's calls with their arguments as JSON text (`content`
//! null when it said nothing) and each tool result as `{role: "tool",
//! tool_call_id, content}`. This client never streams, so there are no
//! streamed call deltas to assemble.

use std::time::Duration;

use serde_json::{Value, json};

use crate::prompt::{Message, Role};

use super::body::{self, Cap};
use super::openai_response::completions;
use super::tool_wire::WireNames;
use super::{
    ChatRequest, Completion, ModelSetup, OPENAI_SAMPLING, OutputKind, ProviderError, ToolChoice,
    classify,
};

/// A client for one model on an OpenAI-compatible server.
pub(crate) struct OpenAiClient {
    pub(super) http: reqwest::Client,
    pub(super) endpoint: String,
    /// `{base}/completions`, where continuations are scored.
    pub(super) completions_endpoint: String,
    pub(super) model: String,
    pub(super) api_key: Option<String>,
    pub(super) timeout: Duration,
    pub(super) max_response_bytes: u64,
    /// Most continuations scored in one completions request.
    pub(super) max_prompts: u32,
    /// Which server speaks this wire: reasoning settings take its fields.
    wire: super::ProviderKind,
}

/// The default base URL: `OPENAI_BASE_URL`, else OpenAI's.
pub(crate) fn default_base_url() -> String {
    std::env::var("OPENAI_BASE_URL").unwrap_or_else(|_| "https://api.openai.com/v1".to_owned())
}

impl OpenAiClient {
    /// A client for `spec`; reads the API key from the variable it names.
    pub(crate) fn new(
        setup: &ModelSetup,
        http: reqwest::Client,
    ) -> Result<OpenAiClient, ProviderError> {
        let base = setup.base_url.clone().unwrap_or_else(default_base_url);
        let key_var = setup
            .api_key_env
            .clone()
            .unwrap_or_else(|| "OPENAI_API_KEY".to_owned());
        // A server the harness started itself needs no key: never send one to it.
        // Through the secrets module: the CLI took the keys out of the environment.
        let api_key =
            crate::secrets::var(&key_var).filter(|k| !k.is_empty() && !setup.provider.is_managed());
        if let Some(key) = &api_key {
            crate::secrets::register(key);
        }
        if setup.api_key_env.is_some() && api_key.is_none() {
            return Err(ProviderError::Config(format!(
                "model `{}`: environment variable {key_var} (api_key_env) is not set",
                setup.name
            )));
        }
        Ok(OpenAiClient {
            http,
            endpoint: super::model_ref::join_url(&base, "/chat/completions"),
            completions_endpoint: super::model_ref::join_url(&base, "/completions"),
            model: setup.model.clone(),
            api_key,
            timeout: super::model_ref::timeout(setup.timeout_secs),
            max_response_bytes: setup.max_response_bytes,
            max_prompts: setup.max_prompts,
            wire: setup.provider,
        })
    }

    /// The request body in OpenAI's format, asking for `n` choices.
    pub(crate) fn body(&self, request: &ChatRequest, n: u32) -> Result<Value, ProviderError> {
        let mut body = request_body(&self.model, request, n)?;
        super::reasoning_setting::add_to_body(self.wire, &request.reasoning, &mut body)?;
        Ok(body)
    }

    /// Sends one request for one answer.
    pub(crate) async fn complete(
        &self,
        request: &ChatRequest,
    ) -> Result<Completion, ProviderError> {
        let mut all = self.complete_n(request, 1).await?;
        Ok(all.remove(0))
    }

    /// Sends one request asking for `n` answers (OpenAI's `n`).
    pub(crate) async fn complete_n(
        &self,
        request: &ChatRequest,
        n: u32,
    ) -> Result<Vec<Completion>, ProviderError> {
        let response = self
            .post_json(&self.endpoint, &self.body(request, n)?)
            .await?;
        let cap = Cap::new(self.max_response_bytes, self.timeout);
        if !response.status().is_success() {
            let error = body::error_status(response, cap).await;
            return match super::tool_wire::unparsed_call(request, &error) {
                Some(answer) => Ok(vec![answer; n as usize]),
                None => Err(error),
            };
        }
        let spent = super::allowance_spent(response.headers());
        let bytes = body::read(response, cap).await?;
        let mut answers = completions(&bytes, &WireNames::new(&request.tools))?;
        for answer in &mut answers {
            answer.allowance_spent = spent;
        }
        Ok(answers)
    }
}

impl OpenAiClient {
    /// Posts `body` to `endpoint` with the key, if any, within the timeout.
    pub(super) async fn post_json(
        &self,
        endpoint: &str,
        body: &Value,
    ) -> Result<reqwest::Response, ProviderError> {
        let mut builder = self.http.post(endpoint).timeout(self.timeout).json(body);
        if let Some(key) = &self.api_key {
            builder = builder.bearer_auth(key);
        }
        builder.send().await.map_err(|e| classify(&e, self.timeout))
    }
}

/// The body of `request` for `model` in OpenAI's format, asking for `n` choices.
fn request_body(model: &str, request: &ChatRequest, n: u32) -> Result<Value, ProviderError> {
    let names = WireNames::new(&request.tools);
    let mut messages = wire_messages(&request.messages, &names)?;
    if let (Some(prefill), Some(list)) = (&request.prefill, messages.as_array_mut()) {
        list.push(json!({"role": "assistant", "content": prefill}));
    }
    let mut body = json!({
        "model": model,
        "messages": messages,
    });
    let map = body.as_object_mut().expect("object");
    map.extend(request.sampling(&OPENAI_SAMPLING));
    if let Some(top) = request.logprobs {
        map.insert("logprobs".into(), json!(true));
        map.insert("top_logprobs".into(), json!(top));
    }
    if n > 1 {
        map.insert("n".into(), json!(n));
    }
    match &request.format {
        OutputKind::Text => {}
        OutputKind::Json => {
            map.insert("response_format".into(), json!({"type": "json_object"}));
        }
        OutputKind::JsonSchema(schema) => {
            map.insert(
                "response_format".into(),
                json!({"type": "json_schema", "json_schema": {"name": "answer", "strict": true, "schema": schema}}),
            );
        }
    }
    insert_tools(map, request, &names);
    super::merge_extra(&mut body, request);
    Ok(body)
}

/// OpenAI's `tools`, `tool_choice` and `parallel_tool_calls`, when the request has tools.
fn insert_tools(
    map: &mut serde_json::Map<String, Value>,
    request: &ChatRequest,
    names: &WireNames,
) {
    if request.tools.is_empty() {
        return;
    }
    map.insert("tools".into(), names.definitions(&request.tools));
    if let Some(choice) = &request.tool_choice {
        let wire = match choice {
            ToolChoice::Mode(mode) => json!(mode),
            ToolChoice::Function { function } => {
                json!({"type": "function", "function": {"name": names.wire(function)}})
            }
        };
        map.insert("tool_choice".into(), wire);
    }
    if let Some(parallel) = request.parallel_tool_calls {
        map.insert("parallel_tool_calls".into(), json!(parallel));
    }
}

/// The messages in OpenAI's form: one with images has a list of content
/// parts, its text first, then each image as an `image_url` with a `data:` URL;
/// an assistant's calls and the tools' results take OpenAI's call fields.
fn wire_messages(messages: &[Message], names: &WireNames) -> Result<Value, ProviderError> {
    let mut ids = CallIds::default();
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            if !m.tool_calls.is_empty() {
                return Ok(assistant_calls(m, ids.assistant(i, m), names));
            }
            if m.role == Role::Tool {
                let id = ids.result(m.tool_call_id.as_deref());
                return Ok(json!({"role": m.role, "tool_call_id": id, "content": m.content}));
            }
            if m.images.is_empty() {
                return Ok(json!({"role": m.role, "content": m.content}));
            }
            let mut parts = vec![json!({"type": "text", "text": m.content})];
            for image in &m.images {
                let url = image.data_url().map_err(|e| super::image_error(&e))?;
                parts.push(json!({"type": "image_url", "image_url": {"url": url}}));
            }
            Ok(json!({"role": m.role, "content": parts}))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

/// An assistant message with calls: arguments as JSON text (a call whose
/// text was not JSON sends that text back as the model wrote it), `content`
/// null when the model said nothing, as OpenAI writes such a message.
fn assistant_calls(m: &Message, ids: Vec<String>, names: &WireNames) -> Value {
    let calls: Vec<Value> = m
        .tool_calls
        .iter()
        .zip(ids)
        .map(|(call, id)| {
            let arguments = match (&call.arguments, &call.invalid) {
                (Value::String(text), Some(_)) => text.clone(),
                (arguments, _) => arguments.to_string(),
            };
            json!({"id": id, "type": "function",
                   "function": {"name": names.wire(&call.name), "arguments": arguments}})
        })
        .collect();
    let content = (!m.content.is_empty()).then_some(&m.content);
    json!({"role": m.role, "content": content, "tool_calls": calls})
}

/// Call ids for history: OpenAI pairs each tool result with its call by id,
/// and a server that gave none (the id is empty) still needs one, so such a
/// call gets `call_<message>_<call>`, and a result without an id answers the
/// next call of the assistant message before it, in order.
#[derive(Default)]
pub(super) struct CallIds {
    last: Vec<String>,
    answered: usize,
}

impl CallIds {
    pub(super) fn assistant(&mut self, index: usize, m: &Message) -> Vec<String> {
        self.last = m
            .tool_calls
            .iter()
            .enumerate()
            .map(|(j, c)| {
                if c.id.is_empty() {
                    format!("call_{index}_{j}")
                } else {
                    c.id.clone()
                }
            })
            .collect();
        self.answered = 0;
        self.last.clone()
    }

    pub(super) fn result(&mut self, id: Option<&str>) -> String {
        let position = self.answered;
        self.answered += 1;
        match id {
            Some(id) if !id.is_empty() => id.to_owned(),
            _ => self.last.get(position).cloned().unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ProviderKind;

    /// Two tools whose wire names collide (`math.factorial` becomes `math_factorial_2`).
    fn tools() -> Value {
        let params = json!({"type": "dict", "properties": {"n": {"type": "integer"}}});
        json!([{"name": "math.factorial", "parameters": params},
               {"name": "math_factorial", "parameters": params}])
    }

    #[test]
    fn history_calls_and_results_take_openai_form_under_wire_names() {
        let call = |id: &str, arguments: Value, invalid: Option<&str>| json!({"id": id, "name": "math.factorial", "arguments": arguments, "invalid": invalid});
        let request: ChatRequest = serde_json::from_value(json!({
            "messages": [
                {"role": "user", "content": "5! и 6!?"},
                {"role": "assistant", "content": "", "tool_calls": [
                    call("c1", json!({"n": 5}), None),
                    call("", json!("{\"n\": 6"), Some("EOF while parsing"))]},
                {"role": "tool", "content": "120", "tool_call_id": "c1", "tool_name": "math.factorial"},
                {"role": "tool", "content": "bad arguments", "tool_call_id": "", "tool_name": "math.factorial"},
                {"role": "assistant", "content": "Ещё раз.", "tool_calls": [
                    {"name": "math_factorial", "arguments": {"n": 6}}]},
                {"role": "tool", "content": "720", "tool_name": "math_factorial"}
            ],
            "temperature": 0.0, "max_tokens": 8, "format": {"type": "text"},
            "tools": tools(), "tool_choice": {"function": "math.factorial"}
        }))
        .unwrap();
        let mut setup = ModelSetup::new(ProviderKind::OpenAi, "m");
        setup.base_url = Some("http://127.0.0.1:9/v1".into());
        let body = request_body("m", &request, 1).unwrap();
        let function = |name: &str, arguments: &str| json!({"name": name, "arguments": arguments});
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": "5! и 6!?"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": function("math_factorial_2", "{\"n\":5}")},
                    {"id": "call_1_1", "type": "function", "function": function("math_factorial_2", "{\"n\": 6")}]},
                {"role": "tool", "tool_call_id": "c1", "content": "120"},
                {"role": "tool", "tool_call_id": "call_1_1", "content": "bad arguments"},
                {"role": "assistant", "content": "Ещё раз.", "tool_calls": [
                    {"id": "call_4_0", "type": "function", "function": function("math_factorial", "{\"n\":6}")}]},
                {"role": "tool", "tool_call_id": "call_4_0", "content": "720"}
            ])
        );
        let names: Vec<&Value> = body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| &t["function"]["name"])
            .collect();
        assert_eq!(
            names,
            [&json!("math_factorial_2"), &json!("math_factorial")]
        );
        assert_eq!(body["tools"][0]["function"]["parameters"]["type"], "object");
        assert_eq!(
            body["tool_choice"],
            json!({"type": "function", "function": {"name": "math_factorial_2"}})
        );
    }

    #[test]
    fn every_choice_keeps_its_calls_under_the_spec_names() {
        let tools: Vec<crate::prompt::Tool> = serde_json::from_value(tools()).unwrap();
        let names = WireNames::new(&tools);
        let calls = |name: &str, arguments: Value| json!([{"id": "call_a", "type": "function", "function": {"name": name, "arguments": arguments}}]);
        let body = json!({"model": "m", "choices": [
            {"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                "tool_calls": calls("math_factorial_2", json!("{\"n\": 5}"))}},
            {"index": 1, "finish_reason": "stop", "message": {"role": "assistant", "content": "120"}},
            {"index": 2, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": "",
                "tool_calls": calls("math_factorial", json!("{n: 5}"))}},
            {"index": 3, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": "",
                "tool_calls": calls("invented.fn", json!({"n": 5}))}}
        ], "usage": {"prompt_tokens": 10, "completion_tokens": 20}});
        let answers = completions(body.to_string().as_bytes(), &names).unwrap();
        assert_eq!(answers.len(), 4);
        let first = &answers[0].tool_calls[0];
        assert_eq!(
            (first.id.as_str(), first.name.as_str()),
            ("call_a", "math.factorial")
        );
        assert_eq!(first.arguments, json!({"n": 5}));
        assert_eq!(answers[0].text, "");
        assert_eq!(answers[0].finish_reason.as_deref(), Some("tool_calls"));
        assert!(answers[1].tool_calls.is_empty());
        assert_eq!(answers[1].text, "120");
        let bad = &answers[2].tool_calls[0];
        assert_eq!(bad.name, "math_factorial");
        assert_eq!(bad.arguments, json!("{n: 5}"));
        assert!(bad.invalid.is_some(), "kept as a call, marked invalid");
        assert_eq!(answers[3].tool_calls[0].name, "invented.fn");
        assert_eq!(answers[3].tool_calls[0].arguments, json!({"n": 5}));
        assert!(answers.iter().all(|a| a.shared.is_some()));
    }

    #[test]
    fn a_prefill_is_the_last_message_and_only_when_set() {
        let mut request: ChatRequest = serde_json::from_value(json!({
            "messages": [{"role": "user", "content": "5!?"}],
            "temperature": 0.0, "max_tokens": 8, "format": {"type": "text"},
            "tools": tools(), "tool_choice": "required"
        }))
        .unwrap();
        let plain = request_body("m", &request, 1).unwrap();
        assert_eq!(plain["messages"].as_array().unwrap().len(), 1);
        request.prefill = Some("<tool_calls>".into());
        let body = request_body("m", &request, 1).unwrap();
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": "5!?"},
                   {"role": "assistant", "content": "<tool_calls>"}])
        );
    }
}
