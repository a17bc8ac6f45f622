//! Running specs against models: the plan, the scheduler, the journal,
//! the cache and resume.
//!
//! Every model gets `concurrency` workers pulling tasks (spec, instance,
//! sample) in plan order; a single writer appends each finished record to
//! the journal before counting it. Ctrl-C stops new work, keeps everything
//! finished, and `--resume` completes the plan without repeating a request.

pub mod cache;
mod execute;
pub mod journal;
mod judge;
mod limits;
mod plan;
pub(crate) mod progress;
pub mod record;
pub mod transcript;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio::sync::{Semaphore, mpsc};

pub(crate) use execute::ask_checked;
pub use execute::{ModelRuntime, SpecRuntime, build_request};
use journal::Journal;
pub use plan::{Pending, execute_plan, managed_runtime, pending};
use progress::Progress;
use record::TaskKey;

use crate::provider::{
    ModelSpec, OllamaClient, OpenAiClient, OutputFormat, Provider, ProviderKind, ReplayProvider,
};
use crate::spec::Spec;
use crate::spec::model::ResponseFormat;

/// `results/runs/<run-id>/plan.json`: what a run is, so it can be resumed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    /// The run id.
    pub run_id: String,
    /// UTC creation time, `2026-11-21 22:30:00`.
    pub created: String,
    /// Spec files, in order.
    pub spec_files: Vec<PathBuf>,
    /// Models, in order.
    pub models: Vec<ModelSpec>,
    /// Instances per spec, overriding each spec's `runs`.
    pub runs: Option<u32>,
    /// The golden directory (replay reads transcripts from it).
    pub golden_dir: PathBuf,
    /// Per model, the spec ids it runs (absent: every spec).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only: Option<BTreeMap<String, Vec<String>>>,
    /// The judge model of `judge` rules, when one is named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<ModelSpec>,
}

impl Manifest {
    /// Whether `model` runs `spec` in this plan.
    pub fn includes(&self, model: &str, spec: &str) -> bool {
        self.only.as_ref().is_none_or(|only| {
            only.get(model)
                .is_some_and(|specs| specs.iter().any(|s| s == spec))
        })
    }
}

/// How a run behaves.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// Use the response cache.
    pub use_cache: bool,
    /// The cache database.
    pub cache_path: PathBuf,
    /// Show progress.
    pub progress: bool,
}

/// What a run did.
#[derive(Debug, Default)]
pub struct RunOutcome {
    /// Records written by this invocation.
    pub written: u64,
    /// Of those, answered from the cache.
    pub cached: u64,
    /// HTTP attempts made.
    pub attempts: u64,
    /// Stopped by Ctrl-C before the plan was complete.
    pub interrupted: bool,
}

/// A run failure that is not about any one request.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A file could not be read or written.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A model could not be set up.
    #[error("{0}")]
    Model(String),
    /// The cache could not be opened.
    #[error("cache: {0}")]
    Cache(#[from] rusqlite::Error),
    /// A managed model server could not start.
    #[error("{0}")]
    ServerStart(#[from] crate::provider::managed::ManagedError),
    /// A managed model server died mid-run; the journal keeps what finished.
    #[error("{0}")]
    ServerDied(String),
}

/// UTC now as (`2026-11-21 22:30:00`, `20261121_223000`).
pub fn timestamps() -> (String, String) {
    let now = time::OffsetDateTime::now_utc();
    let human = now
        .format(time::macros::format_description!(
            "[year]-[month]-[day] [hour]:[minute]:[second]"
        ))
        .expect("formats");
    let file = now
        .format(time::macros::format_description!(
            "[year][month][day]_[hour][minute][second]"
        ))
        .expect("formats");
    (human, file)
}

/// A fresh run id under `runs_dir` (the file stamp, suffixed if taken).
pub fn new_run_id(runs_dir: &Path, file_stamp: &str) -> String {
    let mut id = file_stamp.to_owned();
    let mut n = 1;
    while runs_dir.join(&id).exists() {
        n += 1;
        id = format!("{file_stamp}-{n}");
    }
    id
}

/// Finds a run directory by id or `latest`.
pub fn find_run(runs_dir: &Path, id: &str) -> Result<PathBuf, String> {
    if id != "latest" {
        let dir = runs_dir.join(id);
        return if dir.join("plan.json").exists() {
            Ok(dir)
        } else {
            Err(format!("no run `{id}` under {}", runs_dir.display()))
        };
    }
    let mut ids: Vec<PathBuf> = std::fs::read_dir(runs_dir)
        .map_err(|e| format!("{}: {e}", runs_dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("plan.json").exists())
        .collect();
    // Ids are `<stamp>` or `<stamp>-<n>`: order by stamp, then n as a number (`-10` after `-9`).
    ids.sort_by_key(|p| {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match name.split_once('-') {
            Some((stamp, n)) => (stamp.to_owned(), n.parse::<u64>().unwrap_or(0)),
            None => (name, 1),
        }
    });
    ids.pop()
        .ok_or_else(|| format!("no runs under {}", runs_dir.display()))
}

fn is_loopback(url: &str) -> bool {
    let host = url.split("://").nth(1).unwrap_or(url);
    host.starts_with("127.") || host.starts_with("localhost") || host.starts_with("[::1]")
}

/// Builds the client side of each model; endpoints shared by several models share a semaphore.
pub fn model_runtimes(
    models: &[ModelSpec],
    golden_dir: &Path,
) -> Result<Vec<Arc<ModelRuntime>>, RunError> {
    crate::provider::install_tls();
    let build = |direct: bool| {
        let b = reqwest::Client::builder()
            .pool_max_idle_per_host(256)
            .tcp_nodelay(true);
        let b = if direct { b.no_proxy() } else { b };
        b.build()
            .map_err(|e| RunError::Model(format!("HTTP client: {e}")))
    };
    let (direct, proxied) = (build(true)?, build(false)?);
    let mut semaphores: HashMap<String, Arc<Semaphore>> = HashMap::new();
    let mut out = Vec::new();
    for m in models {
        // Resolve the base URL once: clients, the endpoint semaphore and cache keys share it.
        let base_url = match m.provider {
            // Set by the caller to the started server's URL (see `managed_runtime`).
            ProviderKind::LlamaCpp | ProviderKind::Vllm => m.base_url.clone().ok_or_else(|| {
                RunError::Model(format!("model `{}`: its server is not running", m.name))
            })?,
            ProviderKind::OpenAi => m
                .base_url
                .clone()
                .unwrap_or_else(crate::provider::openai_default_base_url),
            ProviderKind::Ollama => m.base_url.clone().unwrap_or_else(|| {
                crate::provider::ollama_base_from_env(std::env::var("OLLAMA_HOST").ok())
            }),
            ProviderKind::Replay => format!("replay:{}", m.name),
        };
        let mut resolved = m.clone();
        resolved.base_url = Some(base_url.clone());
        let http = if is_loopback(&base_url) {
            direct.clone()
        } else {
            proxied.clone()
        };
        let provider = match m.provider {
            ProviderKind::OpenAi | ProviderKind::LlamaCpp | ProviderKind::Vllm => Provider::OpenAi(
                OpenAiClient::new(&resolved, http).map_err(|e| RunError::Model(e.to_string()))?,
            ),
            ProviderKind::Ollama => Provider::Ollama(OllamaClient::new(&resolved, http, m.stream)),
            ProviderKind::Replay => Provider::Replay(ReplayProvider::new(golden_dir, &m.name)),
        };
        let identity = cache_identity(m, &base_url);
        let semaphore = semaphores
            .entry(identity.clone())
            .or_insert_with(|| Arc::new(Semaphore::new(m.concurrency.max(1))))
            .clone();
        out.push(Arc::new(ModelRuntime {
            spec: m.clone(),
            provider,
            base_url: identity,
            semaphore,
            limiter: m.requests_per_minute.map(limits::RateLimiter::new),
            server: None,
        }));
    }
    Ok(out)
}

/// Prepares a spec for running: its answer format and re-ask budget.
pub fn spec_runtime(spec: Arc<Spec>, runs: Option<u32>) -> Result<SpecRuntime, String> {
    let request = &spec.def.request;
    let dir = spec.file.parent().unwrap_or(Path::new("."));
    let (format, validator) = match request.response_format {
        None | Some(ResponseFormat::Text) => (OutputFormat::Text, None),
        Some(ResponseFormat::Json) => (OutputFormat::Json, None),
        Some(ResponseFormat::JsonSchema) => {
            let path = dir.join(request.schema.as_deref().unwrap_or_default());
            let text =
                std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let schema: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
            let validator = jsonschema::validator_for(&schema)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            (OutputFormat::JsonSchema(schema), Some(validator))
        }
    };
    let max_asks = if format == OutputFormat::Text {
        1
    } else {
        request.attempts.unwrap_or(3).max(1)
    };
    Ok(SpecRuntime {
        runs: spec.runs_for(runs),
        spec,
        format,
        validator,
        max_asks,
    })
}

/// Tasks of one model in plan order, skipping samples already done: (spec, instance, samples).
struct TaskQueue {
    items: Vec<QueueItem>,
    next: usize,
}

type QueueItem = (usize, u64, Vec<u32>);

/// One model's tasks not yet in the journal (`done`), in plan order, as
/// requests of up to `per_request` samples; with the total and pending sample counts.
fn model_queue(
    manifest: &Manifest,
    model: &str,
    per_request: usize,
    specs: &[Arc<SpecRuntime>],
    done: &HashSet<TaskKey>,
) -> (Vec<QueueItem>, u64, u64) {
    let mut items = Vec::new();
    let (mut total, mut pending) = (0u64, 0u64);
    for (si, spec) in specs.iter().enumerate() {
        if !manifest.includes(model, &spec.spec.id) {
            continue;
        }
        let samples = spec.spec.samples();
        for instance in 0..u64::from(spec.runs) {
            total += u64::from(samples);
            let missing: Vec<u32> = (0..samples)
                .filter(|&sample| {
                    !done.contains(&TaskKey {
                        model: model.to_owned(),
                        spec: spec.spec.id.clone(),
                        instance,
                        sample,
                    })
                })
                .collect();
            for chunk in missing.chunks(per_request) {
                pending += chunk.len() as u64;
                items.push((si, instance, chunk.to_vec()));
            }
        }
    }
    (items, total, pending)
}

/// What stands for the endpoint in cache keys: the base URL, except for a
/// managed server, whose port changes with every start: its model file or id.
fn cache_identity(model: &ModelSpec, base_url: &str) -> String {
    if model.provider.is_managed() {
        format!("{}:{}", model.provider.prefix(), model.model)
    } else {
        base_url.to_owned()
    }
}

/// Executes the plan's remaining tasks, appending records to the journal at `journal_path`.
/// A watched managed server that dies stops the run with [`RunError::ServerDied`]
/// after every record finished before its death is safely in the journal.
pub async fn execute(
    manifest: &Manifest,
    models: &[Arc<ModelRuntime>],
    judge: Option<&Arc<ModelRuntime>>,
    specs: &[Arc<SpecRuntime>],
    journal_path: &Path,
    settings: &RunSettings,
) -> Result<RunOutcome, RunError> {
    // Open first: it drops a torn last line, so `done` only counts records that stay.
    let mut journal = Journal::open(journal_path)?;
    let mut done: HashSet<TaskKey> = HashSet::new();
    journal::for_each_record(journal_path, |r| {
        done.insert(r.key());
    })?;
    let cache = if settings.use_cache {
        Some(Arc::new(cache::Cache::open(&settings.cache_path)?))
    } else {
        None
    };
    let mut queues = Vec::new();
    let mut progress_rows = Vec::new();
    for model in models {
        // Samples asked together: up to `max_n` when the provider takes OpenAI's `n`.
        let per_request = if model.provider.supports_n() {
            model.spec.max_n.max(1) as usize
        } else {
            1
        };
        let (items, total, pending) =
            model_queue(manifest, &model.spec.name, per_request, specs, &done);
        progress_rows.push((model.spec.name.clone(), total - pending, total));
        queues.push(Arc::new(Mutex::new(TaskQueue { items, next: 0 })));
    }
    let mut progress = Progress::new(&progress_rows, settings.progress);
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, mut rx) = mpsc::channel::<(usize, record::Record)>(1024);
    let mut workers = tokio::task::JoinSet::new();
    for (mi, model) in models.iter().enumerate() {
        for _ in 0..model.spec.concurrency.max(1) {
            let (model, judge, queue, specs, tx, stop, cache) = (
                model.clone(),
                judge.cloned(),
                queues[mi].clone(),
                specs.to_vec(),
                tx.clone(),
                stop.clone(),
                cache.clone(),
            );
            workers.spawn(async move {
                loop {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let next = {
                        let mut q = queue.lock().unwrap_or_else(|e| e.into_inner());
                        let item = q.items.get(q.next).cloned();
                        q.next += 1;
                        item
                    };
                    let Some((si, instance, samples)) = next else {
                        return;
                    };
                    let records = execute::run_task(
                        &model,
                        judge.as_deref(),
                        &specs[si],
                        instance,
                        &samples,
                        cache.as_deref(),
                    )
                    .await;
                    // A request that failed because the server died is not an answer:
                    // leave it out of the journal, so `--resume` asks it again.
                    if let Some(server) = &model.server
                        && records.iter().any(server_failure)
                        && server.dies_within(SERVER_EXIT_GRACE).await
                    {
                        stop.store(true, Ordering::SeqCst);
                        return;
                    }
                    for record in records {
                        if tx.send((mi, record)).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    }
    drop(tx);
    let mut outcome = RunOutcome::default();
    let interrupt = tokio::signal::ctrl_c();
    tokio::pin!(interrupt);
    let (died_tx, mut died_rx) = mpsc::channel::<String>(models.len().max(1));
    let mut watchers = tokio::task::JoinSet::new();
    for server in models.iter().filter_map(|m| m.server.clone()) {
        let died_tx = died_tx.clone();
        watchers.spawn(async move {
            let _ = died_tx.send(server.died().await).await;
        });
    }
    let mut server_died: Option<String> = None;
    loop {
        tokio::select! {
            Some(message) = died_rx.recv(), if server_died.is_none() => {
                server_died = Some(message);
                stop.store(true, Ordering::SeqCst);
                workers.abort_all();
            }
            received = rx.recv() => {
                let Some((mi, record)) = received else { break };
                journal.append(&record)?;
                outcome.written += 1;
                outcome.cached += u64::from(record.cached);
                outcome.attempts += u64::from(record.attempts) + u64::from(record.judge_attempts);
                progress.record(mi, record.passed);
            }
            _ = &mut interrupt, if !outcome.interrupted => {
                outcome.interrupted = true;
                stop.store(true, Ordering::SeqCst);
                // Requests in flight are abandoned; finished ones still in the channel are kept.
                workers.abort_all();
            }
        }
    }
    while workers.join_next().await.is_some() {}
    watchers.abort_all();
    // Workers that saw the death may all have quit before the watcher's message arrived.
    if server_died.is_none()
        && let Some(server) = models
            .iter()
            .filter_map(|m| m.server.as_ref())
            .find(|s| s.has_died())
    {
        server_died = Some(server.died().await);
    }
    journal.sync()?;
    progress.finish();
    match server_died {
        Some(message) => Err(RunError::ServerDied(message)),
        None => Ok(outcome),
    }
}

/// How long a failed request waits for its server's exit notice.
const SERVER_EXIT_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Whether a record failed the way a dead server fails requests.
fn server_failure(record: &record::Record) -> bool {
    matches!(
        record.failure.as_deref(),
        Some("connection_error" | "timeout" | "server_error" | "malformed_response")
    ) && record.error.is_some()
}

/// Loads a run's manifest.
pub fn read_manifest(run_dir: &Path) -> Result<Manifest, RunError> {
    let text = std::fs::read_to_string(run_dir.join("plan.json"))?;
    serde_json::from_str(&text)
        .map_err(|e| RunError::Io(std::io::Error::other(format!("plan.json: {e}"))))
}

/// Writes a run's manifest.
pub fn write_manifest(run_dir: &Path, manifest: &Manifest) -> Result<(), RunError> {
    std::fs::create_dir_all(run_dir)?;
    let text = serde_json::to_string_pretty(manifest).expect("manifests serialize");
    std::fs::write(run_dir.join("plan.json"), text + "\n")?;
    Ok(())
}

/// Transcript lines by (model, spec), then (instance, sample), read one record
/// at a time so memory holds answers, not prompts (flat at 100,000 records).
pub type Transcripts = BTreeMap<(String, String), BTreeMap<(u64, u32), transcript::TranscriptLine>>;

/// The transcript lines of a journal; later lines win on duplicate keys.
pub fn transcripts(journal_path: &Path) -> Result<Transcripts, RunError> {
    let mut out = Transcripts::new();
    journal::for_each_record(journal_path, |r| {
        out.entry((r.model.clone(), r.spec.clone()))
            .or_default()
            .insert(
                (r.instance, r.sample),
                transcript::TranscriptLine::from_record(&r),
            );
    })?;
    Ok(out)
}
