//! Model references: `ollama:qwen3:8b`, `openai:gpt-4o-mini`,
//! `openai:my-model@http://gpu-box:8000/v1`, `replay:<model>`, or a name
//! defined in `harness.toml`.

use serde::{Deserialize, Serialize};

/// Which wire format a model speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI-compatible `/v1/chat/completions`.
    OpenAi,
    /// Ollama `/api/chat`.
    Ollama,
    /// Recorded golden transcripts.
    Replay,
}

impl ProviderKind {
    /// The prefix used in model references.
    pub fn prefix(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Ollama => "ollama",
            ProviderKind::Replay => "replay",
        }
    }
}

/// Per-model request defaults that override the spec's `[request]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelOptions {
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Generation limit.
    pub max_tokens: Option<u32>,
    /// Nucleus sampling.
    pub top_p: Option<f64>,
    /// Sampling seed.
    pub seed: Option<u64>,
    /// Ollama context window.
    pub num_ctx: Option<u32>,
    /// Extra top-level fields merged into every request body, for server
    /// options outside the common API (llama.cpp's `cache_prompt`, vLLM's
    /// `top_k`, ...).
    pub extra_body: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Everything needed to talk to one model; stored in a run's plan so resume
/// rebuilds the same clients (it holds the API key variable's name, never the key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelSpec {
    /// Display name: reports, raw files, golden transcripts.
    pub name: String,
    /// Wire format.
    pub provider: ProviderKind,
    /// The model id sent to the server.
    pub model: String,
    /// Server base URL; provider default or environment when unset.
    pub base_url: Option<String>,
    /// Name of the environment variable holding the API key (never the key).
    pub api_key_env: Option<String>,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Optional requests-per-minute ceiling.
    pub requests_per_minute: Option<u32>,
    /// Per-request timeout in seconds.
    pub timeout_secs: f64,
    /// Retries after the first attempt for retryable errors.
    pub max_retries: u32,
    /// Request defaults.
    pub options: ModelOptions,
    /// Ask for streamed responses (Ollama).
    #[serde(default)]
    pub stream: bool,
    /// Most samples asked in one request with OpenAI's `n` (1: one request per sample).
    #[serde(default = "one")]
    pub max_n: u32,
}

fn one() -> u32 {
    1
}

/// Default requests in flight per endpoint.
pub const DEFAULT_CONCURRENCY: usize = 4;

impl ModelSpec {
    /// A spec with defaults for `provider` and `model`.
    pub fn new(provider: ProviderKind, model: &str) -> ModelSpec {
        ModelSpec {
            name: model.to_owned(),
            provider,
            model: model.to_owned(),
            base_url: None,
            api_key_env: None,
            concurrency: DEFAULT_CONCURRENCY,
            requests_per_minute: None,
            timeout_secs: 300.0,
            max_retries: 4,
            options: ModelOptions::default(),
            stream: false,
            max_n: 1,
        }
    }

    /// Parses `provider:model[@base_url]`.
    pub fn parse(reference: &str) -> Result<ModelSpec, String> {
        let (prefix, rest) = reference.split_once(':').ok_or_else(|| {
            format!("`{reference}` is not a model reference: write provider:model (ollama:qwen3:8b, openai:gpt-4o-mini, replay:NAME) or a name from harness.toml")
        })?;
        let provider = match prefix {
            "openai" => ProviderKind::OpenAi,
            "ollama" => ProviderKind::Ollama,
            "replay" => ProviderKind::Replay,
            other => {
                return Err(format!(
                    "unknown provider `{other}` in `{reference}`: use ollama, openai or replay"
                ));
            }
        };
        let (model, base_url) = match rest.rsplit_once('@') {
            Some((model, url)) if url.starts_with("http://") || url.starts_with("https://") => {
                (model, Some(url.trim_end_matches('/').to_owned()))
            }
            _ => (rest, None),
        };
        if model.is_empty() {
            return Err(format!("`{reference}` names no model"));
        }
        let mut spec = ModelSpec::new(provider, model);
        spec.base_url = base_url;
        Ok(spec)
    }

    /// The name as a file-name-safe slug (`qwen3:8b` → `qwen3_8b`).
    pub fn file_stem(&self) -> String {
        file_stem(&self.name)
    }
}

/// A model name as a file-name-safe slug.
pub fn file_stem(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_parse() {
        let m = ModelSpec::parse("ollama:qwen3:8b").unwrap();
        assert_eq!(
            (m.provider, m.model.as_str(), m.name.as_str()),
            (ProviderKind::Ollama, "qwen3:8b", "qwen3:8b")
        );
        let m = ModelSpec::parse("openai:my-model@http://gpu-box:8000/v1/").unwrap();
        assert_eq!(m.base_url.as_deref(), Some("http://gpu-box:8000/v1"));
        assert_eq!(m.model, "my-model");
        let m = ModelSpec::parse("ollama:hf.co/t-tech/T-pro-it-1.0-Q4_K_M-GGUF").unwrap();
        assert_eq!(m.file_stem(), "hf.co_t-tech_T-pro-it-1.0-Q4_K_M-GGUF");
        assert!(ModelSpec::parse("gpt4").is_err());
        assert!(
            ModelSpec::parse("foo:bar")
                .unwrap_err()
                .contains("unknown provider")
        );
    }
}
