//! A model server's tokenizer, asked how it splits a text: llama.cpp's
//! `llama-server` and vLLM serve it at `POST /tokenize`, llama-cpp-python's
//! server at `POST /extras/tokenize`, all beside the `/v1` API.
//! `harness check -m` asks it whether `first_token` labels are one token
//! each, which only the model's own vocabulary can say.
//!
//! The request bodies follow each server's own definition: llama.cpp's
//! `tools/server/README.md` (`content`, `add_special`), vLLM's
//! `TokenizeCompletionRequest` (`prompt`, `add_special_tokens`) and
//! llama-cpp-python's `TokenizeInputRequest` (`input`). One body carries the
//! first two's fields, since each ignores the other's. llama-cpp-python
//! always adds the model's BOS token, so the tokens of the empty text are
//! learned first and cut from the front of every answer.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{ModelSetup, ProviderKind};

/// Why a server's tokenizer could not be asked.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum TokenizeError {
    /// The wire has no tokenizer endpoint the harness knows.
    #[error("provider `{0}` has no tokenizer endpoint")]
    Unsupported(&'static str),
    /// A server the harness starts itself is not running at check time.
    #[error("the harness starts this server itself at `run`; `check` does not start it")]
    Managed,
    /// The request did not get an answer.
    #[error("{url}: {why}")]
    Unreachable {
        /// The endpoint asked.
        url: String,
        /// What went wrong.
        why: String,
    },
    /// No endpoint asked exists on the server.
    #[error("no tokenizer endpoint answered (HTTP 404 at {})", .0.join(", "))]
    NotServed(Vec<String>),
    /// An answer that is not a list of token ids.
    #[error("{url} answered HTTP {status}: {body}")]
    Malformed {
        /// The endpoint asked.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The start of the body.
        body: String,
    },
}

/// Which server's tokenizer endpoint answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    /// `/tokenize`: llama-server, vLLM.
    Tokenize,
    /// `/extras/tokenize`: llama-cpp-python.
    Extras,
}

/// A server's tokenizer, found and ready to ask.
pub(crate) struct Tokenizer {
    http: reqwest::Client,
    root: String,
    endpoint: Endpoint,
    model: String,
    api_key: Option<String>,
    timeout: Duration,
    /// What the server puts before every text (a BOS token), cut off.
    prefix: Vec<i64>,
}

#[derive(Deserialize)]
struct Tokens {
    tokens: Vec<Value>,
}

/// The most a tokenizer request may take: `check` waits for nothing slow.
const TIMEOUT: Duration = Duration::from_secs(10);

impl Tokenizer {
    /// Finds `setup`'s tokenizer endpoint and learns what it puts before
    /// every text.
    pub(crate) async fn connect(setup: &ModelSetup) -> Result<Tokenizer, TokenizeError> {
        match setup.provider {
            ProviderKind::OpenAi => {}
            ProviderKind::LlamaCpp | ProviderKind::Vllm => return Err(TokenizeError::Managed),
            other => return Err(TokenizeError::Unsupported(other.prefix())),
        }
        let base = setup
            .base_url
            .clone()
            .unwrap_or_else(super::openai::default_base_url);
        crate::net::install_tls();
        let mut http = reqwest::Client::builder();
        if crate::net::is_loopback(&base) {
            http = http.no_proxy();
        }
        let key_var = setup.api_key_env.as_deref().unwrap_or("OPENAI_API_KEY");
        let mut tokenizer = Tokenizer {
            http: http.build().map_err(|e| TokenizeError::Unreachable {
                url: base.clone(),
                why: e.to_string(),
            })?,
            root: server_root(&base),
            endpoint: Endpoint::Tokenize,
            model: setup.model.clone(),
            api_key: crate::secrets::var(key_var).filter(|k| !k.is_empty()),
            timeout: Duration::from_secs_f64(setup.timeout_secs.clamp(0.1, 10.0)).min(TIMEOUT),
            prefix: Vec::new(),
        };
        tokenizer.prefix = match tokenizer.ask("").await {
            Err(TokenizeError::NotServed(..)) | Err(TokenizeError::Malformed { .. }) => {
                tokenizer.endpoint = Endpoint::Extras;
                tokenizer.ask("").await.map_err(|e| match e {
                    TokenizeError::NotServed(_) => TokenizeError::NotServed(vec![
                        tokenizer.url(Endpoint::Tokenize),
                        tokenizer.url(Endpoint::Extras),
                    ]),
                    e => e,
                })?
            }
            other => other?,
        };
        Ok(tokenizer)
    }

    /// The ids `text` tokenizes to, without the prefix the server adds.
    pub(crate) async fn tokens(&self, text: &str) -> Result<Vec<i64>, TokenizeError> {
        let all = self.ask(text).await?;
        Ok(match all.strip_prefix(self.prefix.as_slice()) {
            Some(rest) => rest.to_vec(),
            None => all,
        })
    }

    fn url(&self, endpoint: Endpoint) -> String {
        let path = match endpoint {
            Endpoint::Tokenize => "/tokenize",
            Endpoint::Extras => "/extras/tokenize",
        };
        super::model_ref::join_url(&self.root, path)
    }

    async fn ask(&self, text: &str) -> Result<Vec<i64>, TokenizeError> {
        let url = self.url(self.endpoint);
        let body = match self.endpoint {
            Endpoint::Tokenize => json!({
                "content": text, "add_special": false,
                "model": self.model, "prompt": text, "add_special_tokens": false,
            }),
            Endpoint::Extras => json!({"input": text, "model": self.model}),
        };
        let mut request = self.http.post(&url).timeout(self.timeout).json(&body);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let unreachable = |e: reqwest::Error| TokenizeError::Unreachable {
            url: url.clone(),
            why: e.to_string(),
        };
        let response = request.send().await.map_err(unreachable)?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND {
            return Err(TokenizeError::NotServed(vec![url.clone()]));
        }
        let bytes = response.bytes().await.map_err(unreachable)?;
        let malformed = || TokenizeError::Malformed {
            url: url.clone(),
            status: status.as_u16(),
            body: crate::text::clip(&String::from_utf8_lossy(&bytes), 200),
        };
        if !status.is_success() {
            return Err(malformed());
        }
        let parsed: Tokens = serde_json::from_slice(&bytes).map_err(|_| malformed())?;
        // llama-server lists `{id, piece}` objects when asked for pieces.
        (parsed.tokens.iter())
            .map(|t| t.as_i64().or_else(|| t["id"].as_i64()))
            .collect::<Option<Vec<i64>>>()
            .ok_or_else(malformed)
    }
}

/// The server's root: the base URL without its `/v1`.
fn server_root(base: &str) -> String {
    let (head, query) = base.split_at(base.find('?').unwrap_or(base.len()));
    let head = head.trim_end_matches('/');
    format!("{}{query}", head.strip_suffix("/v1").unwrap_or(head))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_root_drops_the_api_version_and_keeps_a_query() {
        for (base, root) in [
            ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080"),
            ("http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080"),
            ("http://host/proxy/v1?k=1", "http://host/proxy?k=1"),
            ("http://host:9", "http://host:9"),
        ] {
            assert_eq!(super::server_root(base), root, "{base}");
        }
    }
}
