//! The scheduler: every model gets `concurrency` workers pulling tasks
//! (spec, instance, samples) from its queue in plan order; one writer appends
//! each finished record to the journal before counting it; a dead managed
//! server or Ctrl-C stops new work and keeps everything finished.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use super::batch::Batcher;
use super::batch_log::Batches;
use super::budget::{Meter, judge_clock};
use super::journal::{self};
use super::queue::Tasks;
use super::record::Record;
use super::task::run_task;
use super::worker::Worker;
use super::{Manifest, RunError, RunOutcome, RunSettings, SpecRuntime};
use crate::client::ModelClient;
use crate::client::cache::Cache;
use crate::client::managed::ServerDeath;
use crate::progress::Progress;
use crate::verify::FailureKind;

/// Executes the plan's remaining tasks, appending records to the journal at `journal_path`.
/// A watched managed server that dies stops the run with [`RunError::ServerDied`]
/// after every record finished before its death is safely in the journal; a
/// budget the `meter` refuses a request for stops it the same way.
pub(super) async fn schedule(
    manifest: &Manifest,
    models: &[Arc<ModelClient>],
    judge: Option<&Arc<ModelClient>>,
    specs: &[Arc<SpecRuntime>],
    journal_path: &Path,
    settings: &RunSettings,
    meter: &Arc<Meter>,
) -> Result<RunOutcome, RunError> {
    meter_models(meter, models, judge);
    // Open first: it drops a torn last line, so `done` only counts records that stay.
    let mut journal = journal::open(journal_path)?;
    let (done, batches) = Batches::open(journal_path, settings.progress)?;
    let (done, batches) = (Arc::new(done), Arc::new(batches));
    let cache = if settings.use_cache {
        Some(Arc::new(Cache::open(&settings.cache_path)?))
    } else {
        None
    };
    let (queues, progress_rows) = model_queues(manifest, models, specs, &done);
    let mut progress = Progress::new(&progress_rows, settings.progress);
    let stop = Arc::new(AtomicBool::new(false));
    let refused = Arc::new(Mutex::new(None));
    let (tx, mut rx) = mpsc::channel::<(usize, Record)>(1024);
    let mut workers = tokio::task::JoinSet::new();
    for (mi, model) in models.iter().enumerate() {
        let (count, batched) = askers(model);
        let gave_logprobs = Arc::new(AtomicBool::new(false));
        for _ in 0..count {
            let worker = Worker {
                index: mi,
                model: model.clone(),
                judge: judge.cloned(),
                queue: queues[mi].clone(),
                specs: specs.to_vec(),
                tx: tx.clone(),
                stop: stop.clone(),
                cache: cache.clone(),
                meter: meter.clone(),
                gave_logprobs: gave_logprobs.clone(),
                refused: refused.clone(),
            };
            if batched {
                let b = batches.clone();
                workers.spawn(Batcher { w: worker, b }.run());
            } else {
                workers.spawn(worker.run());
            }
        }
    }
    drop(tx);
    let mut outcome = RunOutcome::default();
    let interrupt = crate::interrupt::wait();
    tokio::pin!(interrupt);
    let (died_tx, mut died_rx) = mpsc::channel::<ServerDeath>(models.len().max(1));
    let mut watchers = tokio::task::JoinSet::new();
    for server in models.iter().filter_map(|m| m.server.clone()) {
        let died_tx = died_tx.clone();
        watchers.spawn(async move {
            let _ = died_tx.send(server.died().await).await;
        });
    }
    let mut server_died: Option<ServerDeath> = None;
    loop {
        tokio::select! {
            Some(message) = died_rx.recv(), if server_died.is_none() => {
                server_died = Some(message);
                stop.store(true, Ordering::SeqCst);
                workers.abort_all();
            }
            received = rx.recv() => {
                let Some((mi, mut record)) = received else { break };
                let user = specs.iter().find(|s| s.spec.id == record.spec).and_then(|s| s.user.get());
                let roles = (judge.map(|j| &j.setup), user.map(|u| &u.setup));
                meter.charge_hours(&models[mi].setup, roles, &mut record);
                append_redacted(&mut journal, &record)?;
                outcome.written += 1;
                outcome.cached += u64::from(record.cached);
                let roles = u64::from(record.judge_attempts) + u64::from(record.user_attempts);
                outcome.attempts += u64::from(record.attempts) + roles;
                progress.record(mi, record.scored.passed);
            }
            _ = &mut interrupt, if !outcome.interrupted => {
                outcome.interrupted = true;
                stop.store(true, Ordering::SeqCst);
                // Requests in flight are abandoned; finished ones still in the channel are kept.
                workers.abort_all();
                // Scripts stop at their next operation; workers journal nothing more.
                crate::scripting::cancel_all();
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
    for model in models {
        meter.stop_clock(&model.setup.name);
    }
    outcome.budget_stopped = meter.refused();
    (outcome.identity_changes, outcome.adaptive) = summaries(models);
    if let Some(error) = refused.lock().unwrap_or_else(|e| e.into_inner()).take() {
        return Err(error);
    }
    ending(outcome, server_died, &batches)
}

/// The run's stop when `record` shows its model's server cannot answer what
/// the spec asks, so every later answer would fail the same way: no scored
/// prompt, or no log-probabilities from a model that never gave any (a
/// later answer without them, as llama-server leaves them out after a token
/// cut inside a UTF-8 character, fails alone).
fn refusal(record: &Record, gave_logprobs: bool) -> Option<RunError> {
    let kind = record.failure?;
    let refused = match kind {
        FailureKind::NoPromptLogprobs => true,
        FailureKind::NoLogprobs => !gave_logprobs,
        _ => false,
    };
    refused.then(|| RunError::Unsupported {
        model: record.model.clone(),
        spec: record.spec.clone(),
        why: format!(
            "{} ({})",
            record.scored.error.as_deref().unwrap_or_default(),
            kind.name()
        ),
    })
}

/// Each model's queue of tasks, and its progress row (name, done, total).
#[allow(clippy::type_complexity, reason = "two parallel lists, read once")]
fn model_queues(
    manifest: &Manifest,
    models: &[Arc<ModelClient>],
    specs: &[Arc<SpecRuntime>],
    done: &Arc<std::collections::HashSet<super::record::TaskKey>>,
) -> (Vec<Arc<Mutex<Tasks>>>, Vec<(String, u64, u64)>) {
    let mut queues = Vec::new();
    let mut progress_rows = Vec::new();
    for model in models {
        // Samples asked together: up to `max_n` when the provider takes OpenAI's `n`.
        let per_request = if model.provider().supports_n() {
            model.setup.max_n.max(1) as usize
        } else {
            1
        };
        let name = &model.setup.name;
        let tasks = Tasks::new(manifest, name, per_request, specs, done.clone());
        let (total, pending) = tasks.counts();
        progress_rows.push((name.clone(), total - pending, total));
        queues.push(Arc::new(Mutex::new(tasks)));
    }
    (queues, progress_rows)
}

/// How many tasks ask a model, and whether it is one [`Batcher`]: each
/// endpoint of a pool keeps its own concurrency; a batch is one task.
fn askers(model: &ModelClient) -> (usize, bool) {
    if model.setup.batch.is_some() && model.can_batch() {
        (1, true)
    } else {
        (
            model.setup.concurrency.max(1) * model.endpoints.len(),
            false,
        )
    }
}

/// The run's end: a server's death, else a batch left unfinished (unless
/// Ctrl-C stopped its polls), else the outcome.
fn ending(
    outcome: RunOutcome,
    server_died: Option<ServerDeath>,
    batches: &Batches,
) -> Result<RunOutcome, RunError> {
    let unfinished = batches.unfinished();
    match server_died {
        Some(death) => Err(RunError::ServerDied(death)),
        None if !unfinished.is_empty() && !outcome.interrupted => {
            Err(RunError::BatchUnfinished(unfinished))
        }
        None => Ok(outcome),
    }
}

/// What the run's summary says of its models: each change of a server's
/// reported identity, and how each adaptive `concurrency` moved.
fn summaries(models: &[Arc<ModelClient>]) -> (Vec<String>, Vec<String>) {
    let changes = models.iter().flat_map(|m| m.identity_changes()).collect();
    (
        changes,
        models.iter().flat_map(|m| m.adaptive_summary()).collect(),
    )
}

/// Starts the clocks of the models and judge priced by the hour and, under
/// a budget, puts their requests through the meter (replayed answers are no
/// requests). Without one nothing is gated: no request waits for a count.
fn meter_models(meter: &Arc<Meter>, models: &[Arc<ModelClient>], judge: Option<&Arc<ModelClient>>) {
    let gated = meter.limits() != Default::default();
    for model in models.iter().filter(|m| m.provider().is_remote()) {
        if gated {
            model.set_gate(meter.clone(), true);
        }
        meter.start_clock(&model.setup.name, model.setup.price);
    }
    if let Some(judge) = judge.filter(|j| j.provider().is_remote()) {
        if gated {
            judge.set_gate(meter.clone(), false);
        }
        meter.start_clock(&judge_clock(&judge.setup.name), judge.setup.price);
    }
}

/// Appends `record` with every configured API key removed, whatever field it hid in.
fn append_redacted(journal: &mut journal::Journal, record: &Record) -> std::io::Result<()> {
    let line = serde_json::to_string(record).map_err(std::io::Error::other)?;
    let line = crate::secrets::redact(&line).into_owned();
    let raw = serde_json::value::RawValue::from_string(line).map_err(std::io::Error::other)?;
    journal.append(&raw)
}

impl Worker {
    async fn run(self) {
        while !self.stop.load(Ordering::SeqCst) {
            let next = {
                let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
                q.next()
            };
            let Some((si, instance, samples)) = next else {
                return;
            };
            let records = run_task(
                &self.model,
                self.judge.as_deref(),
                &self.specs[si],
                instance,
                &samples.to_vec(),
                self.cache.as_deref(),
            )
            .await;
            // Finished after Ctrl-C, its answers may rest on tool scripts it
            // cancelled: none is journaled, and `--resume` asks them again.
            if crate::interrupt::requested() {
                return;
            }
            // A request that failed because the server died is not an answer:
            // leave it out of the journal, so `--resume` asks it again.
            if let Some(server) = &self.model.server
                && records.iter().any(server_failure)
                && server.dies_within(SERVER_EXIT_GRACE).await
            {
                self.stop.store(true, Ordering::SeqCst);
                return;
            }
            // The budget refused a request: no new work; this task's answers still count.
            if self.meter.refused() {
                self.stop.store(true, Ordering::SeqCst);
            }
            // A server that cannot answer what the spec asks: no new work,
            // before another request is sent; the record is still journaled.
            for record in &records {
                let gave = self
                    .gave_logprobs
                    .fetch_or(record.scored.logprobs.is_some(), Ordering::SeqCst)
                    || record.scored.logprobs.is_some();
                if let Some(error) = refusal(record, gave) {
                    self.refused
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .get_or_insert(error);
                    self.stop.store(true, Ordering::SeqCst);
                }
            }
            for record in records {
                if self.tx.send((self.index, record)).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// How long a failed request waits for its server's exit notice.
const SERVER_EXIT_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Whether a record failed the way a dead server fails requests.
fn server_failure(record: &Record) -> bool {
    matches!(
        record.failure,
        Some(
            FailureKind::ConnectionError
                | FailureKind::Timeout
                | FailureKind::ServerError
                | FailureKind::MalformedResponse
        )
    ) && record.scored.error.is_some()
}
