//! Batches: a model with `batch` set (`--batch`, `batch = true`) is asked
//! through its provider's batch API at a discount, instead of request by
//! request.
//!
//! Design. The scheduler gives every other model `concurrency` workers that
//! ask the client per request; a batched model gets one [`Batcher`] instead.
//! It drains the model's queue (the same [`Tasks`] the workers pull), builds
//! each single-turn request exactly as a worker would, answers what the
//! response cache holds, and puts the rest in one batch, each line named by
//! a `custom_id` made from its (spec, instance, sample), through the
//! model's batch API (OpenAI's Batch API, Anthropic's Message Batches:
//! `provider/batch.rs`). The batch id is
//! appended to `batches.jsonl` beside the journal, and synced, *before* the
//! first poll: a run killed while polling finds it there on `--resume` and
//! polls the same batch instead of submitting (and paying for) another.
//! Polls repeat every `poll_secs` until the batch ends; progress shows its
//! state and counts at every change. Its results files are read by
//! `custom_id`, never by order, and each entry becomes an ask that goes
//! through the same path as a live answer ([`answer_record`]: judged,
//! verified, priced, then sent to the one journal writer), so the cache,
//! journal, reports and costs see no difference but the price: the model's
//! price less the batch `discount`.
//!
//! Failed, expired and cancelled entries become `batch_failed`,
//! `batch_expired` and `batch_cancelled` records; a request the results do
//! not answer (a partial or malformed file) becomes `malformed_response`.
//! A `--resume` asks the batch kinds again, in a new batch (the scheduler
//! leaves them out of what is done). Agent episodes, whose turns depend on
//! each other, are asked live as usual.
//!
//! The window left open: a kill after the provider created a batch and
//! before its id reached the disk loses that id, and a resume submits anew.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::SpecRuntime;
use super::batch_log::{Batches, Submitted};
use super::record::{Record, TaskKey};
use super::task::{answer_record, build_request, run_task};
use super::worker::Worker;
use crate::client::ModelClient;
use crate::client::{Asked, batch as client_batch};
use crate::failure::FailureKind;
use crate::output::errln;
use crate::provider::{BatchEntry, BatchState, ChatRequest, ProviderError};
use crate::spec::Instance;

/// The `custom_id` of a request: the spec id's FNV-1a hash, the instance and
/// the sample (at most 48 characters of `[0-9a-f-]`, as both providers take).
pub(super) fn custom_id(spec: &str, instance: u64, sample: u32) -> String {
    let hash = spec.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("{hash:016x}-{instance}-{sample}")
}

/// Whether a spec's requests can go in a batch: single turns only.
pub(super) fn batchable(spec: &SpecRuntime) -> bool {
    spec.spec.agent().is_none()
}

/// A request waiting for its batch.
struct Pending {
    spec: usize,
    instance: Arc<Instance>,
    sample: u32,
    request: ChatRequest,
    custom_id: String,
}

/// A batched model's one task, in place of its workers: see the module's design.
pub(super) struct Batcher {
    /// What a worker of the model would have.
    pub w: Worker,
    pub b: Arc<Batches>,
}

impl Batcher {
    pub(super) async fn run(self) {
        let Some(pending) = self.collect().await else {
            return;
        };
        // On resume, requests an earlier invocation submitted wait for that batch.
        let mut groups: HashMap<Option<String>, Vec<Pending>> = HashMap::new();
        for p in pending {
            let key = TaskKey {
                model: self.w.model.setup.name.clone(),
                spec: self.w.specs[p.spec].spec.id.clone(),
                instance: p.instance.index,
                sample: p.sample,
            };
            let earlier = (!self.b.again.contains(&key))
                .then(|| self.b.log.batch_of(&self.w.model.setup.name, &p.custom_id))
                .flatten();
            groups
                .entry(earlier.map(str::to_owned))
                .or_default()
                .push(p);
        }
        let mut batches = Vec::new();
        for (batch, group) in groups {
            let id = match batch {
                Some(id) => Ok(id),
                None => self.submit(&group).await,
            };
            batches.push((id, group));
        }
        for (id, group) in batches {
            let (ended, attempts) = match id {
                Ok(id) => match self.wait(&id).await {
                    Some(ended) => ended,
                    // Not polled to its end: no record, so `--resume` polls it again.
                    None => continue,
                },
                // Nothing was submitted: each request is a `batch_failed` record.
                Err(e) => (
                    Err((
                        FailureKind::BatchFailed,
                        format!("batch not submitted: {e}"),
                    )),
                    1,
                ),
            };
            if self.w.stop.load(Ordering::SeqCst) || !self.answer(group, ended, attempts).await {
                return;
            }
        }
    }

    /// Drains the queue: cached answers and tasks that cannot be batched go
    /// out at once; the rest come back to be batched. `None` when the run stopped.
    async fn collect(&self) -> Option<Vec<Pending>> {
        let cache = self.w.cache.as_deref();
        let mut pending = Vec::new();
        loop {
            let next = self
                .w
                .queue
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .next();
            let Some((si, instance, samples)) = next else {
                return Some(pending);
            };
            let spec = &self.w.specs[si];
            let inst = match spec.spec.instance(instance) {
                Ok(inst) if batchable(spec) => Arc::new(inst),
                // An episode, or an instance that cannot be made: as a worker would.
                _ => {
                    let samples = samples.to_vec();
                    let judge = self.w.judge.as_deref();
                    let records = run_task(&self.w.model, judge, spec, instance, &samples, cache);
                    self.send_all(records.await).await?;
                    continue;
                }
            };
            let base = build_request(
                spec,
                &self.w.model.setup,
                inst.messages.clone(),
                &inst.tools,
            );
            for sample in samples {
                let request = base.for_sample(sample);
                if let Some(hit) = client_batch::cached(&self.w.model, &request, sample, cache) {
                    let record = self.record(si, (&inst, sample), hit).await;
                    self.send_all(vec![record]).await?;
                    continue;
                }
                pending.push(Pending {
                    spec: si,
                    custom_id: custom_id(&spec.spec.id, instance, sample),
                    instance: inst.clone(),
                    sample,
                    request,
                });
            }
        }
    }

    /// Submits `group` as one batch and keeps its id on disk.
    async fn submit(&self, group: &[Pending]) -> Result<String, ProviderError> {
        let api = self.w.model.batch_api().ok_or_else(|| {
            ProviderError::Config(format!(
                "model `{}`: its provider has no batch API",
                self.w.model.setup.name
            ))
        })?;
        let lines = group
            .iter()
            .map(|p| api.batch_line(&p.custom_id, &p.request))
            .collect::<Result<Vec<_>, _>>()?;
        let id = self.w.model.submit_batch(&lines).await?;
        let submitted = Submitted {
            model: self.w.model.setup.name.clone(),
            batch: id.clone(),
            custom_ids: group.iter().map(|p| p.custom_id.clone()).collect(),
        };
        // Without the id on disk a resume would pay for the batch again: stop.
        if let Err(e) = self.b.log.append(&submitted) {
            self.w.stop.store(true, Ordering::SeqCst);
            return Err(ProviderError::Config(format!(
                "batch {id} was submitted but could not be recorded: {e}"
            )));
        }
        self.say(&format!("submitted batch {id} ({} requests)", group.len()));
        Ok(id)
    }

    /// Polls batch `id` until it ends, then reads its results: the entries
    /// by `custom_id`, and the HTTP calls made. `None` when the run stopped
    /// or polling failed for good (said on stderr).
    async fn wait(&self, id: &str) -> Option<(Result<Ended, Named>, u32)> {
        let every = Duration::from_secs_f64(self.w.model.setup.batch.unwrap_or_default().poll_secs);
        let (mut shown, mut calls, mut failures) = (String::new(), 0u32, 0u32);
        let status = loop {
            if self.w.stop.load(Ordering::SeqCst) {
                return None;
            }
            calls += 1;
            match self.w.model.poll_batch(id).await {
                Ok(status) => {
                    failures = 0;
                    let now = status.describe();
                    if now != shown {
                        self.say(&format!("batch {id}: {now}"));
                        shown = now;
                    }
                    if status.status.ended() {
                        break status;
                    }
                }
                // A poll that fails is asked again, up to the model's retries.
                Err(e) if e.retryable() && failures < self.w.model.setup.max_retries => {
                    failures += 1;
                }
                Err(e) => {
                    self.poll_failed(id, &e);
                    return None;
                }
            }
            tokio::time::sleep(every).await;
        };
        let api = self.w.model.batch_api()?;
        let files = [&status.output_file_id, &status.error_file_id];
        calls += files.iter().filter(|f| f.is_some()).count() as u32;
        match api.batch_results(&status).await {
            Ok(results) => Some((
                Ok(Ended {
                    id: status.id.clone(),
                    state: status.status,
                    entries: results.entries,
                    unreadable: results.unreadable,
                }),
                calls,
            )),
            Err(e) if e.retryable() => {
                self.poll_failed(id, &e);
                None
            }
            Err(e) => {
                let why = format!("batch {id}: its results could not be read: {e}");
                Some((Err((FailureKind::MalformedResponse, why)), calls))
            }
        }
    }

    /// Keeps why batch `id` was left unfinished, for the run's error.
    fn poll_failed(&self, id: &str, e: &ProviderError) {
        let why = format!(
            "model `{}`: batch {id} was left unfinished: {e}",
            self.w.model.setup.name
        );
        self.b
            .unfinished
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(why);
    }

    /// Makes each request's record from its entry; `false` when the writer is gone.
    async fn answer(
        &self,
        group: Vec<Pending>,
        ended: Result<Ended, Named>,
        attempts: u32,
    ) -> bool {
        let cache = self.w.cache.as_deref();
        for (i, p) in group.into_iter().enumerate() {
            let result = match &ended {
                Ok(ended) => ended.result(&self.w.model, &p),
                Err(named) => Err(named.clone()),
            };
            let attempts = if i == 0 { attempts } else { 0 };
            // The error is named below: the wire's error only carries its text.
            let (result, named) = match result {
                Ok(answer) => (Ok(answer), None),
                Err((kind, why)) => (
                    Err(ProviderError::Malformed(why.clone())),
                    Some((kind, why)),
                ),
            };
            let asked = client_batch::answered(
                &self.w.model,
                (&p.request, p.sample),
                result,
                attempts,
                cache,
            );
            let mut record = self.record(p.spec, (&p.instance, p.sample), asked).await;
            if let Some((kind, why)) = named {
                // Providers bill no request of a batch that did not answer it.
                record.cost = None;
                record.failure = Some(kind);
                record.scored.error = Some(why);
            }
            if self.send_all(vec![record]).await.is_none() {
                return false;
            }
        }
        true
    }

    /// One answer's record, its cost at the batch price.
    async fn record(&self, spec: usize, (inst, sample): (&Instance, u32), asked: Asked) -> Record {
        let live = !asked.cached;
        let s = &self.w.specs[spec].spec;
        let judge = self.w.judge.as_deref();
        let cache = self.w.cache.as_deref();
        let mut record = answer_record(&self.w.model, judge, s, (inst, sample), asked, cache).await;
        let discount = self.w.model.setup.batch.unwrap_or_default().discount;
        if let (Some(cost), true) = (record.cost.as_mut(), live) {
            cost.amount = super::cost::round(cost.amount * (1.0 - discount));
        }
        record
    }

    async fn send_all(&self, records: Vec<Record>) -> Option<()> {
        for record in records {
            self.w.tx.send((self.w.index, record)).await.ok()?;
        }
        Some(())
    }

    /// A progress line about the model's batches.
    fn say(&self, what: &str) {
        if self.b.progress {
            errln!(
                "{}: {}",
                self.w.model.setup.name,
                crate::text::visible(what)
            );
        }
    }
}

/// An ended batch's results.
struct Ended {
    id: String,
    state: BatchState,
    entries: HashMap<String, BatchEntry>,
    unreadable: usize,
}

/// A request's failure, named: its kind and why.
type Named = (FailureKind, String);

impl Ended {
    /// The answer or the named error of one request.
    fn result(
        &self,
        model: &ModelClient,
        p: &Pending,
    ) -> Result<crate::provider::Completion, Named> {
        // A batch that failed as a whole answers every request alike.
        let entry = self
            .entries
            .get(&p.custom_id)
            .or_else(|| self.entries.get(""));
        match entry {
            Some(BatchEntry::Body(body)) => model
                .batch_api()
                .ok_or_else(|| (FailureKind::BatchFailed, "no batch API".to_owned()))?
                .batch_answer(&p.request, body)
                .map_err(|e| (e.kind(), format!("batch {}: {e}", self.id))),
            Some(BatchEntry::Failed(kind, message)) => Err((*kind, message.clone())),
            None => {
                let unreadable = match self.unreadable {
                    0 => String::new(),
                    n => format!("; {n} lines of its results could not be read"),
                };
                Err((
                    self.state.missing_kind(),
                    format!(
                        "batch {} ended {} with no result for {}{unreadable}",
                        self.id,
                        self.state.name(),
                        p.custom_id
                    ),
                ))
            }
        }
    }
}
