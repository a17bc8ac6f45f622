//! Model references: `ollama:qwen3:8b`, `openai:gpt-4o-mini`,
//! `openai:my-model@http://gpu-box:8000/v1`, the native APIs
//! `anthropic:<model>`, `gemini:<model>` and `openai-responses:<model>`, `replay:<model>`, the managed
//! local servers `llamacpp:<gguf file>` and `vllm:<model id or path>`, or a
//! name defined in `harness.toml` (`exec:NAME` too: a program is only ever
//! defined there).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::prompt::ReasoningSetting;

pub use super::provider_kind::ProviderKind;
pub(crate) use super::server_options::{DEFAULT_READY_TIMEOUT_SECS, ServerOptions};

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
    /// Text the assistant's turn starts with when a request requires a tool
    /// call (OpenAI wire; llama.cpp continues a final assistant message).
    /// A small model that writes prose before its call never reaches one:
    /// starting the turn at its template's call opener leaves it the call alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_prefill: Option<String>,
}

/// Everything needed to talk to one model; stored in a run's plan so resume
/// rebuilds the same clients (it holds the API key variable's name, never the key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelSetup {
    /// Display name: reports, raw files, golden transcripts.
    pub name: String,
    /// Wire format.
    pub provider: ProviderKind,
    /// The model id sent to the server.
    pub model: String,
    /// Server base URL; provider default or environment when unset. In a
    /// pool, the first endpoint.
    pub base_url: Option<String>,
    /// Every endpoint of a pool (two or more replicas of one model); empty
    /// for a single endpoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pool: Vec<String>,
    /// Name of the environment variable holding the API key (never the key).
    pub api_key_env: Option<String>,
    /// Requests in flight at once; with `adaptive`, the most.
    pub concurrency: usize,
    /// `concurrency = "auto"`: the number in flight adapts to the server's
    /// throttling, up to `concurrency`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adaptive: bool,
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
    /// Most continuations scored in one completions request, as a list of
    /// prompts (1: one request per continuation).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub max_prompts: u32,
    /// How a managed server (`llamacpp`, `vllm`) is started; unset for the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerOptions>,
    /// What the model costs (`price = { ... }` or `--prices`); unset: unknown, shown as "—".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<super::Price>,
    /// How an `exec` model's program runs; unset for the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec: Option<super::ExecOptions>,
    /// The most bytes of one response body (`max_response_bytes`); more
    /// fails the request as `response_too_large`.
    #[serde(
        default = "default_max_response_bytes",
        skip_serializing_if = "is_default_max_response_bytes"
    )]
    pub max_response_bytes: u64,
    /// The model's own reasoning setting (`reasoning = { ... }`): per key
    /// under the spec's `[request] reasoning`.
    #[serde(default, skip_serializing_if = "ReasoningSetting::is_empty")]
    pub reasoning: ReasoningSetting,
    /// Set on one cell of `--sweep`: the setting it runs, over the spec's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<super::SweepCell>,
    /// Asked through the provider's batch API (`--batch`, `batch = true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<super::BatchSetup>,
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

fn default_max_response_bytes() -> u64 {
    super::DEFAULT_MAX_RESPONSE_BYTES
}

fn is_default_max_response_bytes(bytes: &u64) -> bool {
    *bytes == super::DEFAULT_MAX_RESPONSE_BYTES
}

/// Default requests in flight per endpoint.
pub(crate) const DEFAULT_CONCURRENCY: usize = 4;

/// The URL of `path` under `base`: the path goes before the query of a
/// base URL that has one (`.../v1?api-key=K` → `.../v1/chat/completions?api-key=K`).
pub(crate) fn join_url(base: &str, path: &str) -> String {
    let (head, query) = base.split_at(base.find('?').unwrap_or(base.len()));
    format!("{}{path}{query}", head.trim_end_matches('/'))
}

/// The longest any timeout of a model may be (a request, a program's call,
/// a server's start): a day. `harness.toml` refuses more.
pub(crate) const MAX_TIMEOUT_SECS: f64 = 86_400.0;

/// The shortest: a millisecond, below which no request could finish.
const MIN_TIMEOUT_SECS: f64 = 0.001;

/// `secs` as a timeout. The configuration refuses what is not seconds within
/// range; a hand-edited `plan.json` is not checked, so what lies outside is
/// clamped into it (NaN: the longest), never a panic in `from_secs_f64`.
pub(crate) fn timeout(secs: f64) -> std::time::Duration {
    let secs = if secs.is_nan() {
        MAX_TIMEOUT_SECS
    } else {
        secs.clamp(MIN_TIMEOUT_SECS, MAX_TIMEOUT_SECS)
    };
    std::time::Duration::from_secs_f64(secs)
}

impl ModelSetup {
    /// A spec with defaults for `provider` and `model`.
    pub fn new(provider: ProviderKind, model: &str) -> ModelSetup {
        ModelSetup {
            name: model.to_owned(),
            provider,
            model: model.to_owned(),
            base_url: None,
            pool: Vec::new(),
            api_key_env: None,
            concurrency: DEFAULT_CONCURRENCY,
            adaptive: false,
            requests_per_minute: None,
            timeout_secs: 300.0,
            max_retries: 4,
            options: ModelOptions::default(),
            stream: false,
            max_n: 1,
            max_prompts: 1,
            server: provider.is_managed().then(ServerOptions::default),
            price: None,
            exec: None,
            max_response_bytes: super::DEFAULT_MAX_RESPONSE_BYTES,
            reasoning: ReasoningSetting::default(),
            sweep: None,
            batch: None,
        }
    }

    /// Parses `provider:model[@base_url]`.
    pub fn parse(reference: &str) -> Result<ModelSetup, ModelRefError> {
        let (prefix, rest) = reference
            .split_once(':')
            .ok_or_else(|| ModelRefError::NoProvider(reference.to_owned()))?;
        let provider = match prefix {
            "openai" => ProviderKind::OpenAi,
            "ollama" => ProviderKind::Ollama,
            "replay" => ProviderKind::Replay,
            "anthropic" => ProviderKind::Anthropic,
            "gemini" => ProviderKind::Gemini,
            "openai-responses" => ProviderKind::OpenAiResponses,
            "llamacpp" | "vllm" => return managed_reference(prefix, rest, reference),
            "exec" => return Err(ModelRefError::ExecNotDefined(rest.to_owned())),
            other => {
                return Err(ModelRefError::UnknownProvider {
                    provider: other.to_owned(),
                    reference: reference.to_owned(),
                });
            }
        };
        let is_url = |u: &str| u.starts_with("http://") || u.starts_with("https://");
        // `NAME@URL1,URL2`: a pool of replicas; every part must be a URL.
        let at = [rest.find("@http://"), rest.find("@https://")]
            .into_iter()
            .flatten()
            .min();
        let (model, urls) = match at.map(|at| (&rest[..at], &rest[at + 1..])) {
            Some((model, urls)) if urls.split(',').all(is_url) => (
                model,
                urls.split(',')
                    .map(|u| u.trim_end_matches('/').to_owned())
                    .collect::<Vec<_>>(),
            ),
            _ => (rest, Vec::new()),
        };
        if model.is_empty() {
            return Err(ModelRefError::NoModel(reference.to_owned()));
        }
        let mut spec = ModelSetup::new(provider, model);
        spec.set_endpoints(urls);
        Ok(spec)
    }

    /// Sets the endpoints: none (the provider's default), one, or a pool.
    pub fn set_endpoints(&mut self, urls: Vec<String>) {
        self.base_url = urls.first().cloned();
        self.pool = if urls.len() > 1 { urls } else { Vec::new() };
    }

    /// The endpoints a client sends to: the pool's, or the one base URL.
    pub fn endpoints(&self) -> Vec<String> {
        if self.pool.is_empty() {
            self.base_url.iter().cloned().collect()
        } else {
            self.pool.clone()
        }
    }

    /// This setup as a file may keep it (`plan.json`): the credentials of
    /// its URLs (`user:pass@`, `?api-key=`) redacted. A URL without any
    /// stays as it is.
    pub(crate) fn with_urls_redacted(&self) -> ModelSetup {
        let redact = |u: &String| crate::secrets::redact_url(u).into_owned();
        let mut shown = self.clone();
        shown.base_url = self.base_url.as_ref().map(redact);
        shown.pool = self.pool.iter().map(redact).collect();
        shown
    }

    /// Whether a URL of this setup had credentials that were redacted: a
    /// resume must take them from `harness.toml` again.
    pub(crate) fn lost_credentials(&self) -> bool {
        self.endpoints()
            .iter()
            .any(|u| u.contains(crate::secrets::REDACTED))
    }

    /// Takes the URLs of `configured` (the same model, read from
    /// `harness.toml` again) when they are this setup's with their
    /// credentials back; false when they are other URLs.
    pub(crate) fn restore_urls(&mut self, configured: &ModelSetup) -> bool {
        if configured.with_urls_redacted().endpoints() != self.endpoints() {
            return false;
        }
        self.base_url = configured.base_url.clone();
        self.pool = configured.pool.clone();
        true
    }

    /// The name as a file-name-safe slug (`qwen3:8b` → `qwen3_8b`).
    pub fn file_stem(&self) -> String {
        crate::text::file_stem(&self.name)
    }
}

/// Why a model reference does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelRefError {
    /// No `provider:` prefix.
    #[error(
        "`{0}` is not a model reference: write provider:model (ollama:qwen3:8b, openai:gpt-4o-mini, anthropic:MODEL, gemini:MODEL, openai-responses:MODEL, llamacpp:FILE.gguf, vllm:MODEL, replay:NAME) or a name from harness.toml"
    )]
    NoProvider(String),
    /// A prefix that names no provider.
    #[error(
        "unknown provider `{provider}` in `{reference}`: use ollama, openai, openai-responses, anthropic, gemini, replay, llamacpp, vllm or exec"
    )]
    UnknownProvider {
        /// The prefix.
        provider: String,
        /// The whole reference.
        reference: String,
    },
    /// `exec:NAME` with no `[models.NAME]` of provider `exec` in `harness.toml`.
    #[error(
        "`exec:{0}`: a program is a model only as `[models.{0}]` with provider = \"exec\" and a `command` in harness.toml"
    )]
    ExecNotDefined(String),
    /// A provider with no model after it.
    #[error("`{0}` names no model")]
    NoModel(String),
}

/// `llamacpp:<gguf file>` / `vllm:<model id or path>`: no `@URL` (the harness
/// picks the port). A path that exists is made absolute, so the plan, a resume
/// from another directory and the cache all name the same file; the display
/// name is the file name without `.gguf`.
fn managed_reference(
    prefix: &str,
    rest: &str,
    reference: &str,
) -> Result<ModelSetup, ModelRefError> {
    if rest.is_empty() {
        return Err(ModelRefError::NoModel(reference.to_owned()));
    }
    let provider = if prefix == "vllm" {
        ProviderKind::Vllm
    } else {
        ProviderKind::LlamaCpp
    };
    let (model, name) = managed_model_path(Path::new(rest), provider);
    let mut spec = ModelSetup::new(provider, &model);
    spec.name = name;
    Ok(spec)
}

/// A managed model's id and display name: an existing path (or any llama.cpp
/// path: a missing file is reported by the server itself) becomes absolute.
pub(crate) fn managed_model_path(path: &Path, provider: ProviderKind) -> (String, String) {
    let is_path = provider == ProviderKind::LlamaCpp || path.exists();
    if !is_path {
        let id = path.to_string_lossy().into_owned();
        return (id.clone(), id);
    }
    let absolute = path
        .canonicalize()
        .or_else(|_| std::path::absolute(path))
        .unwrap_or_else(|_| path.to_path_buf());
    let file = absolute
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| absolute.to_string_lossy().into_owned());
    let name = file.strip_suffix(".gguf").unwrap_or(&file).to_owned();
    (absolute.to_string_lossy().into_owned(), name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_parse() {
        let m = ModelSetup::parse("ollama:qwen3:8b").unwrap();
        assert_eq!(
            (m.provider, m.model.as_str(), m.name.as_str()),
            (ProviderKind::Ollama, "qwen3:8b", "qwen3:8b")
        );
        let m = ModelSetup::parse("openai:my-model@http://gpu-box:8000/v1/").unwrap();
        assert_eq!(m.base_url.as_deref(), Some("http://gpu-box:8000/v1"));
        assert_eq!(m.model, "my-model");
        assert!(m.pool.is_empty());
        let m = ModelSetup::parse("openai:m@http://a:8000/v1,http://b:8000/v1/").unwrap();
        assert_eq!(m.pool, ["http://a:8000/v1", "http://b:8000/v1"]);
        assert_eq!(m.base_url.as_deref(), Some("http://a:8000/v1"));
        assert_eq!(m.endpoints().len(), 2);
        let m = ModelSetup::parse("ollama:hf.co/t-tech/T-pro-it-1.0-Q4_K_M-GGUF").unwrap();
        assert_eq!(m.file_stem(), "hf.co_t-tech_T-pro-it-1.0-Q4_K_M-GGUF");
        assert!(ModelSetup::parse("gpt4").is_err());
        let unknown = ModelSetup::parse("foo:bar").unwrap_err().to_string();
        assert!(unknown.contains("unknown provider"), "{unknown}");
    }

    #[test]
    fn urls_lose_their_credentials_in_files_and_get_them_back_from_the_config() {
        let secret = "http://user:pass@127.0.0.1:9/v1?api-key=SECRETSECRET";
        let m = ModelSetup::parse(&format!("openai:m@{secret},http://b:8000/v1")).unwrap();
        let shown = m.with_urls_redacted();
        let text = serde_json::to_string(&shown).unwrap();
        assert!(
            !text.contains("pass") && !text.contains("SECRETSECRET"),
            "{text}"
        );
        assert_eq!(
            shown.base_url.as_deref(),
            Some("http://[redacted]@127.0.0.1:9/v1?api-key=[redacted]")
        );
        assert_eq!(shown.pool[1], "http://b:8000/v1");
        assert!(shown.lost_credentials() && !m.lost_credentials());
        let mut resumed = shown.clone();
        let other = ModelSetup::parse("openai:m@http://u:p@other:9/v1,http://b:8000/v1").unwrap();
        assert!(!resumed.restore_urls(&other));
        assert!(resumed.restore_urls(&m));
        assert_eq!(resumed, m);
        let plain = ModelSetup::parse("openai:m@http://a:8000/v1").unwrap();
        assert_eq!(plain.with_urls_redacted(), plain);
    }

    #[test]
    fn paths_join_before_the_query() {
        for (base, joined) in [
            ("http://h/v1", "http://h/v1/chat/completions"),
            ("http://h/v1/", "http://h/v1/chat/completions"),
            (
                "http://h/v1?api-key=K",
                "http://h/v1/chat/completions?api-key=K",
            ),
            (
                "http://h/v1/?a=1&b=2",
                "http://h/v1/chat/completions?a=1&b=2",
            ),
        ] {
            assert_eq!(join_url(base, "/chat/completions"), joined, "{base}");
        }
    }

    #[test]
    fn timeouts_out_of_range_are_clamped_never_a_panic() {
        use std::time::Duration;
        let day = Duration::from_secs(86_400);
        for (secs, want) in [
            (30.0, Duration::from_secs(30)),
            (0.5, Duration::from_millis(500)),
            (f64::INFINITY, day),
            (1e300, day),
            (f64::NAN, day),
            (0.0, Duration::from_millis(1)),
            (-5.0, Duration::from_millis(1)),
            (f64::NEG_INFINITY, Duration::from_millis(1)),
        ] {
            assert_eq!(timeout(secs), want, "{secs}");
        }
    }

    #[test]
    fn managed_references_name_absolute_files() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tiny.Q4.gguf");
        std::fs::write(&file, b"x").unwrap();
        let m = ModelSetup::parse(&format!("llamacpp:{}", file.display())).unwrap();
        assert_eq!(m.provider, ProviderKind::LlamaCpp);
        assert_eq!(m.name, "tiny.Q4");
        assert_eq!(Path::new(&m.model), file.canonicalize().unwrap());
        assert!(m.server.is_some() && m.base_url.is_none());
        // A missing GGUF still parses: llama-server reports it with its own words.
        let m = ModelSetup::parse("llamacpp:models/missing.gguf").unwrap();
        assert!(Path::new(&m.model).is_absolute());
        // A hub id stays an id.
        let m = ModelSetup::parse("vllm:Qwen/Qwen2.5-0.5B-Instruct").unwrap();
        assert_eq!(
            (m.provider, m.model.as_str()),
            (ProviderKind::Vllm, "Qwen/Qwen2.5-0.5B-Instruct")
        );
        assert!(ModelSetup::parse("llamacpp:").is_err());
    }
}
