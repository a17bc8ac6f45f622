//! Asking a model: the layer between the run scheduler (and the judge, and
//! `harness synth`) and the wire formats of `provider`.
//!
//! Data flow: [`connect`] turns each configured model into a [`ModelClient`]
//! (its provider, resolved endpoint, requests-in-flight [`slots`] shared per
//! endpoint (fixed or adaptive), rate limiter, and the managed server it watches, if any);
//! [`ask::ask`] sends one request through the response [`cache`], the
//! endpoint's limits, bounded retries with backoff ([`limits`]) and bounded
//! re-asks of answers the caller rejects. [`managed`] starts, watches and
//! stops local model servers (`llamacpp`, `vllm`).
//!
//! Imports go down only: `provider`, `golden` (replay) and `text`. Nothing
//! here knows about specs, rules or runs.

pub(crate) mod ask;
pub(crate) mod batch;
pub(crate) mod cache;
pub(crate) mod gate;
pub(crate) mod limits;
pub(crate) mod managed;
pub(crate) mod mcp;
pub(crate) mod pool;
pub(crate) mod slots;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use crate::provider::{
    ExecClient, ModelSetup, NativeClient, OllamaClient, OpenAiClient, Provider, ProviderKind,
    ReplayProvider, ServedBy,
};
use cache::Cache;
use limits::RateLimiter;
use managed::{ManagedServer, ServerWatch};
use slots::Slots;

pub(crate) use ask::{Asked, Refused, ask, ask_batch};
pub(crate) use gate::{Attempt, Gate, Reservation};

/// Why a model could not be made ready to ask.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ClientError {
    /// The HTTP client could not be built.
    #[error("HTTP client: {0}")]
    Http(reqwest::Error),
    /// A managed model whose server was not started first.
    #[error("model `{0}`: its server is not running")]
    NotRunning(String),
    /// The model's endpoint could not be set up (its API key, its URL).
    #[error("{0}")]
    Endpoint(#[from] crate::provider::ProviderError),
    /// The response cache could not be opened or read.
    #[error("cache: {0}")]
    Cache(#[from] rusqlite::Error),
    /// A managed model server could not start.
    #[error("{0}")]
    ServerStart(#[from] managed::ManagedError),
}

/// A model ready to be asked.
pub(crate) struct ModelClient {
    /// Its configuration.
    pub setup: ModelSetup,
    /// Where requests go: one endpoint, or a pool of replicas.
    pub endpoints: Vec<pool::Endpoint>,
    /// What stands for the endpoints in cache keys: the resolved base URL, a
    /// managed model's `llamacpp:<file>`, or a pool's `pool:<name>` (so a
    /// resume may use other replicas).
    pub base_url: String,
    /// The managed server behind this model, watched for its death.
    pub server: Option<ServerWatch>,
    /// The model identity the endpoint reported last (`None` inside: never);
    /// the outer `None` until it is read from the cache.
    served: std::sync::Mutex<Option<Option<ServedBy>>>,
    /// Each change of the reported identity seen in this run, for the summary.
    changes: std::sync::Mutex<Vec<String>>,
    /// The run's budget, and whether it may refuse this model's requests
    /// (a judge's never are: the answer it grades is already paid for).
    gate: std::sync::OnceLock<(Arc<dyn Gate>, bool)>,
}

impl ModelClient {
    /// The wire format (every endpoint of a pool speaks the same one).
    pub(crate) fn provider(&self) -> &Provider {
        &self.endpoints[0].provider
    }

    /// Whether requests are spread over several endpoints.
    pub(crate) fn is_pool(&self) -> bool {
        self.endpoints.len() > 1
    }

    fn endpoint(&self) -> String {
        endpoint_key(&self.setup, &self.base_url)
    }

    /// The identity cache keys are made with: the one the endpoint reported
    /// last, in this run or an earlier one (read from `cache` once).
    pub(crate) fn served(&self, cache: Option<&Cache>) -> Option<ServedBy> {
        let mut served = self.served.lock().unwrap_or_else(|e| e.into_inner());
        served
            .get_or_insert_with(|| cache.and_then(|c| c.identity(&self.endpoint()).ok().flatten()))
            .clone()
    }

    /// Notes the identity a live answer reported. A different one than before
    /// is kept for the run summary and stored, so from now on the cache
    /// answers only with what this model said.
    pub(crate) fn observe(&self, cache: Option<&Cache>, reported: Option<&ServedBy>) {
        let Some(reported) = reported else { return };
        let before = self.served(cache);
        if before.as_ref() == Some(reported) {
            return;
        }
        *self.served.lock().unwrap_or_else(|e| e.into_inner()) = Some(Some(reported.clone()));
        if let Some(cache) = cache {
            let _ = cache.set_identity(&self.endpoint(), reported);
        }
        if let Some(before) = before {
            self.changes.lock().unwrap_or_else(|e| e.into_inner()).push(format!(
                "model `{}`: the server now reports {reported}, no longer {before}; answers cached from {before} are not reused (answers this run took from the cache before the change showed are asked again on the next run)",
                self.setup.name
            ));
        }
    }

    /// Puts every later attempt of this model through `gate`; `refusable`
    /// lets it refuse first attempts. The first gate set stays.
    pub(crate) fn set_gate(&self, gate: Arc<dyn Gate>, refusable: bool) {
        let _ = self.gate.set((gate, refusable));
    }

    /// The gate and whether it may refuse, when one is set.
    fn gate(&self) -> Option<(&dyn Gate, bool)> {
        self.gate.get().map(|(g, r)| (g.as_ref(), *r))
    }

    /// For each endpoint whose requests in flight adapt (`concurrency =
    /// "auto"`), how they moved: one sentence each.
    pub(crate) fn adaptive_summary(&self) -> Vec<String> {
        self.endpoints
            .iter()
            .filter_map(|e| {
                let (trace, now) = e.slots.trace()?;
                let at = if self.is_pool() {
                    format!(" at {}", e.url)
                } else {
                    String::new()
                };
                Some(format!(
                    "model `{}`{at}: requests in flight adapted to the server (ceiling {}): {trace}; {now} at the end",
                    self.setup.name, self.setup.concurrency
                ))
            })
            .collect()
    }

    /// The identity changes seen so far, one sentence each.
    pub(crate) fn identity_changes(&self) -> Vec<String> {
        self.changes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// Builds the client side of each model; endpoints shared by several models share their [`Slots`].
pub(crate) fn connect(
    models: &[ModelSetup],
    golden_dir: &Path,
) -> Result<Vec<Arc<ModelClient>>, ClientError> {
    crate::net::install_tls();
    let build = |direct: bool| {
        let b = reqwest::Client::builder()
            .pool_max_idle_per_host(256)
            .tcp_nodelay(true);
        let b = if direct { b.no_proxy() } else { b };
        b.build().map_err(ClientError::Http)
    };
    let (direct, proxied) = (build(true)?, build(false)?);
    let mut shared_slots: HashMap<String, Arc<Slots>> = HashMap::new();
    let mut out = Vec::new();
    for m in models {
        // Resolve the base URLs once: clients, the endpoints' slots and cache keys share them.
        let urls = match m.provider {
            // Set by the caller to the started server's URL (see `connect_managed`).
            ProviderKind::LlamaCpp | ProviderKind::Vllm => {
                vec![
                    m.base_url
                        .clone()
                        .ok_or_else(|| ClientError::NotRunning(m.name.clone()))?,
                ]
            }
            ProviderKind::OpenAi if m.endpoints().is_empty() => {
                vec![crate::provider::openai_default_base_url()]
            }
            ProviderKind::Ollama if m.endpoints().is_empty() => {
                vec![crate::provider::ollama_base_from_env(
                    std::env::var("OLLAMA_HOST").ok(),
                )]
            }
            ProviderKind::Anthropic | ProviderKind::Gemini | ProviderKind::OpenAiResponses
                if m.endpoints().is_empty() =>
            {
                vec![crate::provider::native_base_url(m.provider)]
            }
            ProviderKind::OpenAi
            | ProviderKind::Ollama
            | ProviderKind::Anthropic
            | ProviderKind::Gemini
            | ProviderKind::OpenAiResponses => m.endpoints(),
            ProviderKind::Replay => vec![format!("replay:{}", m.name)],
            ProviderKind::Exec => vec![format!("exec:{}", m.name)],
        };
        let mut endpoints = Vec::new();
        for url in &urls {
            let mut resolved = m.clone();
            resolved.set_endpoints(vec![url.clone()]);
            let http = if crate::net::is_loopback(url) {
                direct.clone()
            } else {
                proxied.clone()
            };
            let provider = match m.provider {
                ProviderKind::OpenAi | ProviderKind::LlamaCpp | ProviderKind::Vllm => {
                    Provider::OpenAi(OpenAiClient::new(&resolved, http)?)
                }
                ProviderKind::Ollama => {
                    Provider::Ollama(OllamaClient::new(&resolved, http, m.stream))
                }
                ProviderKind::Replay => Provider::Replay(ReplayProvider::new(golden_dir, &m.name)),
                ProviderKind::Exec => Provider::Exec(exec_client(m)?),
                ProviderKind::Anthropic | ProviderKind::Gemini | ProviderKind::OpenAiResponses => {
                    Provider::Native(NativeClient::new(&resolved, http)?)
                }
            };
            // Models at one endpoint share its concurrency limit.
            let shared = if m.provider.is_managed() {
                cache_identity(m, url)
            } else {
                url.clone()
            };
            let slots = shared_slots
                .entry(shared)
                .or_insert_with(|| {
                    Arc::new(if m.adaptive {
                        Slots::adaptive(m.concurrency)
                    } else {
                        Slots::fixed(m.concurrency)
                    })
                })
                .clone();
            let limiter = m.requests_per_minute.map(RateLimiter::new);
            // The endpoint's URL is only shown (records, retries): the client has its own.
            endpoints.push(pool::Endpoint::new(
                crate::secrets::redact_url(url).into_owned(),
                provider,
                slots,
                limiter,
            ));
        }
        let identity = cache_identity(m, &urls[0]);
        out.push(Arc::new(ModelClient {
            setup: m.clone(),
            endpoints,
            base_url: identity,
            server: None,
            served: Default::default(),
            changes: Default::default(),
            gate: Default::default(),
        }));
    }
    Ok(out)
}

/// The program runner of an `exec` model.
fn exec_client(m: &ModelSetup) -> Result<ExecClient, ClientError> {
    let options = m.exec.clone().ok_or_else(|| {
        crate::provider::ProviderError::Config(format!("model `{}` has no `command`", m.name))
    })?;
    Ok(ExecClient::new(&m.name, options, m.timeout_secs))
}

/// What identifies a model's endpoint in the cache's identity table; `identity`
/// is its [`cache_identity`].
pub(crate) fn endpoint_key(model: &ModelSetup, identity: &str) -> String {
    format!("{}|{identity}|{}", model.provider.prefix(), model.model)
}

/// What stands for the endpoint in cache keys: the base URL (its credentials
/// redacted: the cache is a file under `results/`, and a URL without any keeps
/// its keys), except for a managed server, whose port changes with every
/// start: its model file or id; and for a pool, whose answers are the model's
/// whichever replica gave them: `pool:<name>`.
pub(crate) fn cache_identity(model: &ModelSetup, base_url: &str) -> String {
    if !model.pool.is_empty() {
        format!("pool:{}", model.name)
    } else if model.provider.is_managed() {
        format!("{}:{}", model.provider.prefix(), model.model)
    } else {
        crate::secrets::redact_url(base_url).into_owned()
    }
}

/// The runtime of a managed model whose server is up: an `openai` client at
/// the server's URL that also watches the server, so its death stops the run.
pub(crate) fn connect_managed(
    model: &ModelSetup,
    server: &ManagedServer,
    golden_dir: &Path,
) -> Result<Arc<ModelClient>, ClientError> {
    let mut live = model.clone();
    live.base_url = Some(server.base_url().to_owned());
    let runtime = connect(std::slice::from_ref(&live), golden_dir)?
        .pop()
        .expect("one model in, one runtime out");
    let mut runtime = Arc::into_inner(runtime).expect("not shared yet");
    runtime.server = Some(server.watch());
    Ok(Arc::new(runtime))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ProviderKind;

    #[test]
    fn cache_identities_keep_plain_urls_and_lose_credentials() {
        let model = ModelSetup::new(ProviderKind::OpenAi, "m");
        assert_eq!(
            cache_identity(&model, "http://127.0.0.1:8000/v1"),
            "http://127.0.0.1:8000/v1",
            "a URL without credentials keys the cache as before"
        );
        assert_eq!(
            cache_identity(&model, "http://u:pw@127.0.0.1:8000/v1?api-key=k"),
            "http://[redacted]@127.0.0.1:8000/v1?api-key=[redacted]"
        );
    }
}
