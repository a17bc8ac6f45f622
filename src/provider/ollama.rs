//! Ollama's native wire format: `POST {base}/api/chat`, non-streaming or
//! streaming (newline-delimited JSON chunks, the last with `done: true`).

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::prompt::Message;

use super::{
    ChatRequest, Completion, ModelSetup, OutputKind, ProviderError, Usage, classify, error_status,
};

/// A client for one model on an Ollama server.
pub struct OllamaClient {
    http: reqwest::Client,
    endpoint: String,
    model: String,
    timeout: Duration,
    stream: bool,
}

#[derive(Deserialize, Default)]
struct ChatChunk {
    #[serde(default)]
    message: Option<ChunkMessage>,
    #[serde(default)]
    done: bool,
    #[serde(default)]
    done_reason: Option<String>,
    #[serde(default)]
    prompt_eval_count: Option<u64>,
    #[serde(default)]
    eval_count: Option<u64>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    model: Option<String>,
}

#[derive(Deserialize, Default)]
struct ChunkMessage {
    #[serde(default)]
    content: String,
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
            endpoint: format!("{}/api/chat", base.trim_end_matches('/')),
            model: setup.model.clone(),
            timeout: Duration::from_secs_f64(setup.timeout_secs),
            stream,
        }
    }

    /// The request body in Ollama's format.
    pub fn body(&self, request: &ChatRequest) -> Result<Value, ProviderError> {
        // Dropping them would score a tool spec as if the model had ignored its tools.
        if !request.tools.is_empty() {
            return Err(ProviderError::Config(
                "this spec has tools, and the Ollama wire does not send them yet".into(),
            ));
        }
        let mut options = json!({
            "temperature": request.temperature,
            "num_predict": request.max_tokens,
        });
        let opts = options.as_object_mut().expect("object");
        request.insert_optional(opts);
        if let Some(num_ctx) = request.num_ctx {
            opts.insert("num_ctx".into(), json!(num_ctx));
        }
        let mut body = json!({
            "model": self.model,
            "messages": wire_messages(&request.messages)?,
            "stream": self.stream,
            "options": options,
        });
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
        if !response.status().is_success() {
            return Err(error_status(response).await);
        }
        if !self.stream {
            let bytes = response
                .bytes()
                .await
                .map_err(|e| classify(&e, self.timeout))?;
            let mut chunk = parse_chunk(&bytes)?;
            let text = chunk.message.take().unwrap_or_default().content;
            return finish(text, chunk);
        }
        let (mut text, mut pending) = (String::new(), Vec::new());
        while let Some(bytes) = response
            .chunk()
            .await
            .map_err(|e| classify(&e, self.timeout))?
        {
            pending.extend_from_slice(&bytes);
            while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = pending.drain(..=end).collect();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let chunk = parse_chunk(&line)?;
                if let Some(m) = &chunk.message {
                    text.push_str(&m.content);
                }
                if chunk.done {
                    return finish(text, chunk);
                }
            }
        }
        if !pending.iter().all(u8::is_ascii_whitespace) {
            let chunk = parse_chunk(&pending)?;
            if chunk.done {
                text.push_str(
                    &chunk
                        .message
                        .as_ref()
                        .map(|m| m.content.clone())
                        .unwrap_or_default(),
                );
                return finish(text, chunk);
            }
        }
        Err(ProviderError::Malformed(
            "the stream ended before a chunk with \"done\": true".into(),
        ))
    }
}

fn parse_chunk(bytes: &[u8]) -> Result<ChatChunk, ProviderError> {
    let chunk: ChatChunk = serde_json::from_slice(bytes).map_err(|e| {
        ProviderError::Malformed(format!(
            "{e}: {}",
            crate::text::clip(&String::from_utf8_lossy(bytes), 200)
        ))
    })?;
    if let Some(error) = &chunk.error {
        return Err(ProviderError::Malformed(format!(
            "server error in stream: {error}"
        )));
    }
    Ok(chunk)
}

fn finish(text: String, last: ChatChunk) -> Result<Completion, ProviderError> {
    if !last.done {
        return Err(ProviderError::Malformed(
            "the response is not marked done".into(),
        ));
    }
    Ok(Completion {
        text,
        usage: Usage {
            tokens_in: last.prompt_eval_count,
            tokens_out: last.eval_count,
            tokens_cached: None,
        },
        finish_reason: last.done_reason,
        shared: None,
        served: last
            .model
            .filter(|m| !m.is_empty())
            .map(|model| super::ServedBy {
                model,
                fingerprint: None,
            }),
        tool_calls: Vec::new(),
    })
}

/// The messages in Ollama's form: a message's images are a list of base64
/// strings in its `images` field.
fn wire_messages(messages: &[Message]) -> Result<Value, ProviderError> {
    messages
        .iter()
        .map(|m| {
            let mut message = json!({"role": m.role, "content": m.content});
            if !m.images.is_empty() {
                let images = m
                    .images
                    .iter()
                    .map(|image| image.base64().map_err(|e| super::image_error(image, &e)))
                    .collect::<Result<Vec<_>, _>>()?;
                message["images"] = json!(images);
            }
            Ok(message)
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

#[cfg(test)]
mod tests {
    use super::*;

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
