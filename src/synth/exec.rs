//! Asking the model for one pipeline step: the runner's machinery (endpoint
//! concurrency, pacing, retries with backoff, the response cache, re-asks of
//! malformed JSON) with a journal of its own in the work folder. Every
//! finished request is a journal line before it counts; a request whose
//! line exists is never asked again, so an interrupted run resumes where it stopped.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use super::generate::AnswerError;
use crate::client::cache::{Cache, cache_key};
use crate::client::{ModelClient, ask};
use crate::files::{AppendLog, for_each_line};
use crate::progress::Progress;
use crate::provider::{ChatRequest, RequestKey, Usage};

/// Checks an answer's text: `Err` explains why it is not what was asked for.
pub(crate) type Check = Arc<dyn Fn(&str) -> Result<(), AnswerError> + Send + Sync>;

/// An answer a step's check rejected, as the journal and the re-ask log word it.
#[derive(Debug, thiserror::Error)]
#[error("malformed answer: {0}")]
struct Malformed(AnswerError);

/// One request of a step.
pub(crate) struct Task {
    /// The request's identity: the cache key of its content (model, endpoint, messages, options).
    pub key: String,
    /// A human label: `report chunk 2`.
    pub label: String,
    /// The request.
    pub request: ChatRequest,
    /// Asks allowed while `check` rejects the answer.
    pub attempts: u32,
    /// What makes an answer acceptable.
    pub check: Check,
}

impl Task {
    /// A task for `request` to `model`, keyed by its content.
    pub(crate) fn new(
        model: &ModelClient,
        label: String,
        request: ChatRequest,
        attempts: u32,
        check: Check,
    ) -> Task {
        Task {
            key: cache_key(&model.setup, &model.base_url, &request, 0, None),
            label,
            request,
            attempts,
            check,
        }
    }
}

/// One journal line: a finished request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Entry {
    /// The task key.
    pub key: String,
    /// The step: `summary`, `generate` or `rate`.
    pub stage: String,
    /// The task label.
    pub label: String,
    /// The last answer's text.
    pub response: Option<String>,
    /// Why the request failed, or why its last answer was unusable.
    pub error: Option<String>,
    /// HTTP attempts.
    pub attempts: u32,
    /// Answered from the cache.
    pub cached: bool,
    /// Why earlier attempts or asks were not accepted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retries: Vec<String>,
    /// The tokens the server reported for the answer.
    #[serde(flatten)]
    pub usage: Usage,
    /// The last attempt's latency.
    pub latency_ms: u64,
}

/// The work folder's journal and what it already holds.
pub(crate) struct SynthJournal {
    journal: AppendLog,
    entries: HashMap<String, Entry>,
}

impl SynthJournal {
    /// Opens (creating) `path`, dropping a torn last line, and loads its entries.
    pub(crate) fn open(path: &Path) -> std::io::Result<SynthJournal> {
        let journal = AppendLog::open::<Entry>(path)?;
        let mut entries = HashMap::new();
        for_each_line(path, |e: Entry| {
            entries.insert(e.key.clone(), e);
        })?;
        Ok(SynthJournal { journal, entries })
    }

    /// The finished request with this key.
    pub(crate) fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.get(key)
    }

    fn append(&mut self, entry: Entry) -> std::io::Result<()> {
        self.journal.append(&entry)?;
        self.entries.insert(entry.key.clone(), entry);
        Ok(())
    }
}

/// What running one step did.
#[derive(Debug, Default, Clone, Copy, Serialize)]
pub(crate) struct StageOutcome {
    /// Requests finished by this invocation (asked or from the cache).
    pub finished: u64,
    /// Of those, answered from the cache.
    pub cached: u64,
    /// HTTP attempts made.
    pub attempts: u64,
    /// Found in the journal: not asked again.
    pub resumed: u64,
    /// Stopped by Ctrl-C.
    pub interrupted: bool,
}

/// Runs the step's tasks not yet in the journal, `concurrency` at a time.
pub(crate) async fn run_stage(
    stage: &str,
    model: &Arc<ModelClient>,
    tasks: Vec<Task>,
    journal: &mut SynthJournal,
    cache: Option<Arc<Cache>>,
    progress: bool,
) -> std::io::Result<StageOutcome> {
    let mut outcome = StageOutcome::default();
    let mut seen = HashSet::new();
    let total = tasks.len() as u64;
    let mut queue = VecDeque::new();
    for task in tasks {
        if journal.get(&task.key).is_some() {
            outcome.resumed += 1;
        } else if seen.insert(task.key.clone()) {
            queue.push_back(task);
        }
    }
    // Identical requests (repeated chunks) are asked once; they count as done together.
    let duplicates = total - outcome.resumed - queue.len() as u64;
    let mut bar = Progress::new(
        &[(stage.to_owned(), outcome.resumed + duplicates, total)],
        progress,
    );
    let queue = Arc::new(Mutex::new(queue));
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, mut rx) = mpsc::channel::<Entry>(256);
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..model.setup.concurrency.max(1) {
        let (model, queue, stop, tx, cache) = (
            model.clone(),
            queue.clone(),
            stop.clone(),
            tx.clone(),
            cache.clone(),
        );
        let stage = stage.to_owned();
        workers.spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                let next = queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
                let Some(task) = next else { return };
                let entry = ask_task(&model, &stage, task, cache.as_deref()).await;
                if tx.send(entry).await.is_err() {
                    return;
                }
            }
        });
    }
    drop(tx);
    let interrupt = crate::interrupt::wait();
    tokio::pin!(interrupt);
    loop {
        tokio::select! {
            received = rx.recv() => {
                let Some(entry) = received else { break };
                outcome.finished += 1;
                outcome.cached += u64::from(entry.cached);
                outcome.attempts += u64::from(entry.attempts);
                bar.record(0, entry.error.is_none());
                journal.append(entry)?;
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
    journal.journal.sync()?;
    bar.finish();
    Ok(outcome)
}

async fn ask_task(model: &ModelClient, stage: &str, task: Task, cache: Option<&Cache>) -> Entry {
    let key = RequestKey {
        spec: "synth",
        instance: 0,
        sample: 0,
        judge: None,
        turn: 0,
        user: false,
    };
    let check = task.check.clone();
    let asked = ask(model, &task.request, key, cache, task.attempts, |text| {
        check(text).map_err(Malformed)
    })
    .await;
    let mut entry = Entry {
        key: task.key,
        stage: stage.to_owned(),
        label: task.label,
        response: None,
        error: None,
        attempts: 0,
        cached: false,
        retries: Vec::new(),
        usage: Usage::default(),
        latency_ms: 0,
    };
    // A synth model has no gate, so nothing refuses it; said as an error all the same.
    let asked = match asked {
        Ok(asked) => asked,
        Err(refused) => {
            entry.error = Some(refused.to_string());
            return entry;
        }
    };
    entry.latency_ms = asked.latency_ms();
    entry.attempts = asked.attempts;
    entry.cached = asked.cached;
    entry.retries = asked.retries;
    match asked.result {
        Ok(completion) => {
            if let Err(why) = (task.check)(&completion.text) {
                entry.error = Some(Malformed(why).to_string());
            }
            entry.usage = completion.usage;
            entry.response = Some(completion.text);
        }
        Err(e) => entry.error = Some(format!("{}: {e}", e.kind())),
    }
    entry
}
