//! The OpenAI-compatible wire format: `POST {base}/chat/completions`, as
//! served by OpenAI, vLLM, llama.cpp's server and LiteLLM.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::prompt::Message;

use super::{
    ChatRequest, Completion, ModelSetup, OutputKind, ProviderError, ToolChoice, Usage, classify,
    error_status,
};

/// A client for one model on an OpenAI-compatible server.
pub(crate) struct OpenAiClient {
    http: reqwest::Client,
    endpoint: String,
    model: String,
    api_key: Option<String>,
    timeout: Duration,
}

#[derive(Deserialize)]
struct ChatResponse {
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    system_fingerprint: Option<String>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
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
        let api_key = std::env::var(&key_var)
            .ok()
            .filter(|k| !k.is_empty() && !setup.provider.is_managed());
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
            endpoint: format!("{}/chat/completions", base.trim_end_matches('/')),
            model: setup.model.clone(),
            api_key,
            timeout: Duration::from_secs_f64(setup.timeout_secs),
        })
    }

    /// The request body in OpenAI's format, asking for `n` choices.
    pub(crate) fn body(&self, request: &ChatRequest, n: u32) -> Result<Value, ProviderError> {
        let mut body = json!({
            "model": self.model,
            "messages": wire_messages(&request.messages)?,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        });
        let map = body.as_object_mut().expect("object");
        request.insert_optional(map);
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
        insert_tools(map, request);
        super::merge_extra(&mut body, request);
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
        let mut builder = self
            .http
            .post(&self.endpoint)
            .timeout(self.timeout)
            .json(&self.body(request, n)?);
        if let Some(key) = &self.api_key {
            builder = builder.bearer_auth(key);
        }
        let response = builder
            .send()
            .await
            .map_err(|e| classify(&e, self.timeout))?;
        if !response.status().is_success() {
            return Err(error_status(response).await);
        }
        let bytes = response
            .bytes()
            .await
            .map_err(|e| classify(&e, self.timeout))?;
        let parsed: ChatResponse = serde_json::from_slice(&bytes).map_err(|e| {
            ProviderError::Malformed(format!(
                "{e}: {}",
                crate::text::clip(&String::from_utf8_lossy(&bytes), 200)
            ))
        })?;
        if parsed.choices.is_empty() {
            return Err(ProviderError::Malformed(
                "the response has no choices".into(),
            ));
        }
        let usage = parsed.usage.map_or_else(Usage::default, |u| Usage {
            tokens_in: u.prompt_tokens,
            tokens_out: u.completion_tokens,
            tokens_cached: u.prompt_tokens_details.and_then(|d| d.cached_tokens),
        });
        let served = parsed
            .model
            .filter(|m| !m.is_empty())
            .map(|model| super::ServedBy {
                model,
                fingerprint: parsed.system_fingerprint.filter(|f| !f.is_empty()),
            });
        let count = parsed.choices.len() as u32;
        // With several choices the server's output count is not per choice (OpenAI sums them,
        // llama-server counts one): keep the request's figure aside instead of guessing.
        let shared = (count > 1).then_some(super::SharedUsage {
            choices: count,
            tokens_out: usage.tokens_out,
        });
        Ok(parsed
            .choices
            .into_iter()
            .map(|c| Completion {
                text: c.message.content.unwrap_or_default(),
                usage: Usage {
                    tokens_in: usage.tokens_in,
                    tokens_out: if shared.is_some() {
                        None
                    } else {
                        usage.tokens_out
                    },
                    tokens_cached: usage.tokens_cached,
                },
                finish_reason: c.finish_reason,
                shared,
                served: served.clone(),
                tool_calls: Vec::new(),
            })
            .collect())
    }
}

/// OpenAI's `tools`, `tool_choice` and `parallel_tool_calls`, when the request has tools.
fn insert_tools(map: &mut serde_json::Map<String, Value>, request: &ChatRequest) {
    if request.tools.is_empty() {
        return;
    }
    let tools: Vec<Value> = request
        .tools
        .iter()
        .map(|t| {
            let mut function = json!({"name": t.name, "parameters": t.standard_parameters()});
            if !t.description.is_empty() {
                function["description"] = json!(t.description);
            }
            json!({"type": "function", "function": function})
        })
        .collect();
    map.insert("tools".into(), Value::Array(tools));
    if let Some(choice) = &request.tool_choice {
        let wire = match choice {
            ToolChoice::Mode(mode) => json!(mode),
            ToolChoice::Function { function } => {
                json!({"type": "function", "function": {"name": function}})
            }
        };
        map.insert("tool_choice".into(), wire);
    }
    if let Some(parallel) = request.parallel_tool_calls {
        map.insert("parallel_tool_calls".into(), json!(parallel));
    }
}

/// The messages in OpenAI's form: one with images has a list of content
/// parts, its text first, then each image as an `image_url` with a `data:` URL.
fn wire_messages(messages: &[Message]) -> Result<Value, ProviderError> {
    messages
        .iter()
        .map(|m| {
            if m.images.is_empty() {
                return Ok(json!({"role": m.role, "content": m.content}));
            }
            let mut parts = vec![json!({"type": "text", "text": m.content})];
            for image in &m.images {
                let url = image
                    .data_url()
                    .map_err(|e| super::image_error(image, &e))?;
                parts.push(json!({"type": "image_url", "image_url": {"url": url}}));
            }
            Ok(json!({"role": m.role, "content": parts}))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}
