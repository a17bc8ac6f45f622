//! A `[models.<name>]` table of `harness.toml`, as written: `Config`
//! resolves it into the provider layer's `ModelSetup`.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::Concurrency;
use crate::provider::model_ref::{ModelOptions, ServerOptions};
use crate::provider::{Price, ProviderKind};

/// `[models.<name>]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// `ollama`, `openai`, or a server the harness runs: `llamacpp`, `vllm`.
    pub provider: ProviderKind,
    /// The model id sent to the server (default: the table name); for
    /// `llamacpp` the GGUF file, for `vllm` a hub id or a local path (relative
    /// paths are relative to this file).
    pub model: Option<String>,
    /// Server base URL, or a list of them: replicas of one model, a pool.
    pub base_url: Option<BaseUrl>,
    /// Environment variable holding the API key; the key itself never goes in a file.
    pub api_key_env: Option<String>,
    /// Requests in flight (default 4; 1 to 1024), or `"auto"`: adapted to
    /// the server's throttling, up to `max_concurrency`.
    pub concurrency: Option<Concurrency>,
    /// The ceiling of `concurrency = "auto"` (default 64; 1 to 1024).
    pub max_concurrency: Option<usize>,
    /// Requests-per-minute ceiling (1 to 1,000,000).
    pub requests_per_minute: Option<u32>,
    /// Per-request timeout in seconds (default 300; above 0, at most 86,400).
    pub timeout_secs: Option<f64>,
    /// Retries for retryable errors (default 4; 0 to 100).
    pub max_retries: Option<u32>,
    /// Request defaults for this model.
    #[serde(default)]
    pub options: ModelOptions,
    /// Stream responses (Ollama; default false).
    #[serde(default)]
    pub stream: bool,
    /// Ask through the provider's batch API: `true`, or `{ poll_secs = N }`.
    pub batch: Option<crate::provider::BatchConfig>,
    /// Samples per request via OpenAI's `n` (default 1, at most 128; llama-server allows up to its slot count).
    pub max_n: Option<u32>,
    /// Continuations scored in one `/v1/completions` request, sent as a
    /// list of prompts (`[choices] method = "loglikelihood"`; default 1, at
    /// most 64). vLLM and OpenAI take several; llama-cpp-python's server one.
    pub max_prompts: Option<u32>,
    /// How the harness starts a `llamacpp` or `vllm` server.
    pub server: Option<ServerOptions>,
    /// What the model costs: `{ input, output, cached_input }` per million
    /// tokens, or `{ per_hour }` of its server's wall time.
    pub price: Option<Price>,
    /// `exec`: the program and its arguments, each a minijinja template.
    pub command: Option<Vec<String>>,
    /// `exec`: variables passed from the harness's environment.
    pub env: Option<Vec<String>>,
    /// `exec`: variables set to fixed values.
    pub env_set: Option<BTreeMap<String, String>>,
    /// The most bytes of one response body (default 64 MiB), 1 KiB to 4 GiB.
    #[serde(default)]
    pub max_response_bytes: Option<u64>,
    /// How much the model thinks by default: `{ effort, budget_tokens,
    /// enabled }`; a spec's `[request] reasoning` wins per key.
    #[serde(default)]
    pub reasoning: crate::format::ReasoningSetting,
}

/// `base_url`: one URL, or a pool's list.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum BaseUrl {
    /// One endpoint.
    One(String),
    /// A pool: replicas of one model.
    Pool(Vec<String>),
}

impl BaseUrl {
    /// The URLs, without trailing slashes.
    pub(super) fn urls(&self) -> Vec<String> {
        let list = match self {
            BaseUrl::One(u) => std::slice::from_ref(u),
            BaseUrl::Pool(list) => list.as_slice(),
        };
        list.iter()
            .map(|u| u.trim_end_matches('/').to_owned())
            .collect()
    }
}
