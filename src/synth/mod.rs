//! `harness synth`: documents to a rated, filtered QA dataset.
//!
//! Documents are read to text (`read`), cut into overlapping token chunks
//! (`chunk`), optionally summarized, turned into question-answer pairs by
//! the model (`generate`), rated 1-10 in batches (`rate`), filtered by a
//! threshold and de-duplicated (`dedup`), and written as JSONL. The prompts,
//! schemas and settings are data (`pipeline`); requests go through the
//! client layer (cache, limits, retries, re-asks) with a journal of its own in
//! the work folder (`exec`), so an interrupted run resumes without repeating
//! a finished request.
//!
//! Beside `run`, not above it: it imports `client`, `provider`, `files`,
//! `progress`, `extract`, `format`, `prompt` and `text`, never `run`.

mod assemble;
pub(crate) mod chunk;
pub(crate) mod dedup;
pub(crate) mod exec;
pub(crate) mod generate;
mod in_range;
#[cfg(test)]
mod in_range_tests;
pub(crate) mod output;
pub(crate) mod pipeline;
mod pipeline_file;
pub(crate) mod rate;
pub(crate) mod read;

use crate::output::errln;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use crate::client::ModelClient;
use crate::client::cache::Cache;
use crate::client::managed::ManagedServer;
use crate::provider::ModelSetup;
use exec::{Check, StageOutcome, SynthJournal, Task};
use output::{WorkDir, WriteError};
pub(crate) use pipeline::Overrides;
use pipeline::{Pipeline, PipelineError};
use read::{Document, Skipped};

/// What `harness synth` was asked to do.
#[derive(Debug, Clone)]
pub(crate) struct SynthOptions {
    /// Files and folders to read.
    pub inputs: Vec<PathBuf>,
    /// The model that generates and rates.
    pub model: ModelSetup,
    /// The final JSONL.
    pub out: PathBuf,
    /// The work folder (default: beside `out`).
    pub work: Option<PathBuf>,
    /// A pipeline file replacing the default.
    pub pipeline: Option<PathBuf>,
    /// Add metadata to each final line.
    pub metadata: bool,
    /// The response cache (none: ask every time).
    pub cache: Option<PathBuf>,
    /// Show progress.
    pub progress: bool,
    /// What the command line changes in the pipeline.
    pub overrides: Overrides,
}

/// Why a synth run could not go on.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SynthError {
    /// The pipeline file is unusable.
    #[error("{0}")]
    Pipeline(#[from] PipelineError),
    /// A file could not be written.
    #[error("{0}")]
    Write(#[from] WriteError),
    /// The journal could not be read or appended.
    #[error("{}: {source}", path.display())]
    Journal {
        /// The journal.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The model could not be made ready to ask.
    #[error("{0}")]
    Client(#[from] crate::client::ClientError),
    /// The model's managed server did not start.
    #[error("{0}")]
    Server(#[from] crate::client::managed::ManagedError),
    /// The response cache could not be opened.
    #[error("{}: {source}", path.display())]
    Cache {
        /// The cache database.
        path: PathBuf,
        /// The cause.
        source: rusqlite::Error,
    },
    /// The chunking settings are unusable.
    #[error("{0}")]
    Chunk(#[from] chunk::ChunkError),
    /// A step's request did not render.
    #[error("{0}")]
    Step(#[from] pipeline::StepError),
    /// Nothing readable was found.
    #[error("no readable document among the inputs ({0} skipped)")]
    NoDocuments(usize),
}

/// What a synth run did: `report.json` in the work folder.
#[derive(Debug, Default, Serialize)]
pub(crate) struct SynthReport {
    /// Documents read.
    pub documents: usize,
    /// Files not read, with the reason.
    pub skipped: Vec<Skipped>,
    /// Chunks made.
    pub chunks: usize,
    /// Pairs parsed from generation answers.
    pub generated: usize,
    /// List items in generation answers that were not pairs.
    pub invalid_items: usize,
    /// Failed requests and unusable answers, `label: why`.
    pub errors: Vec<String>,
    /// Pairs whose rating batch failed (dropped).
    pub unrated: usize,
    /// Pairs rated below the threshold (dropped).
    pub below_threshold: usize,
    /// Near-duplicate questions dropped.
    pub duplicates: usize,
    /// Pairs in the final file.
    pub kept: usize,
    /// The rating threshold used.
    pub threshold: f64,
    /// Requests per step.
    pub stages: BTreeMap<String, StageOutcome>,
    /// Stopped by Ctrl-C: run the same command again to resume.
    pub interrupted: bool,
    /// The work folder.
    pub work: PathBuf,
    /// The final JSONL.
    pub out: PathBuf,
}

/// A document cut into chunks.
pub(crate) struct ChunkedDoc {
    /// The document.
    pub doc: Document,
    /// Its chunks.
    pub chunks: Vec<chunk::Chunk>,
}

/// Runs the whole pipeline; a Ctrl-C returns early with `interrupted` set.
pub(crate) async fn run(opts: &SynthOptions) -> Result<SynthReport, SynthError> {
    let mut pipeline = Pipeline::load(opts.pipeline.as_deref())?;
    pipeline.apply(&opts.overrides);
    let work_root = opts
        .work
        .clone()
        .unwrap_or_else(|| WorkDir::default_for(&opts.out));
    let mut report = SynthReport {
        threshold: pipeline.threshold(),
        work: work_root.clone(),
        out: opts.out.clone(),
        ..SynthReport::default()
    };
    let (documents, skipped) = read::read_inputs(&opts.inputs);
    for s in &skipped {
        errln!("skipped {}: {}", s.source.display(), s.reason);
    }
    report.documents = documents.len();
    report.skipped = skipped;
    if documents.is_empty() {
        return Err(SynthError::NoDocuments(report.skipped.len()));
    }
    let work = WorkDir::create(&work_root)?;
    let docs = assemble::chunk_documents(documents, &pipeline, &work)?;
    report.chunks = docs.iter().map(|d| d.chunks.len()).sum();

    let (models, _server) = connect_model(opts, &work_root).await?;
    let cache = match &opts.cache {
        Some(path) => Some(Arc::new(Cache::open(path).map_err(|source| {
            SynthError::Cache {
                path: path.clone(),
                source,
            }
        })?)),
        None => None,
    };
    let journal_path = work.journal();
    let mut journal = SynthJournal::open(&journal_path).map_err(|source| SynthError::Journal {
        path: journal_path.clone(),
        source,
    })?;
    let steps = Steps {
        model: models[0].clone(),
        cache,
        progress: opts.progress,
        journal_path,
    };
    let Some(summaries) = summarize(&steps, &pipeline, &docs, &mut journal, &mut report).await?
    else {
        return Ok(report);
    };

    // Generation: one request per chunk.
    let mut tasks = Vec::new();
    let mut where_ = Vec::new();
    for (di, d) in docs.iter().enumerate() {
        for c in &d.chunks {
            let ctx = minijinja::context! {
                text => &c.text, num_pairs => pipeline.num_pairs(), summary => &summaries[di],
                document => &d.doc.name, chunk => c.index,
            };
            let check: Check = Arc::new(|t: &str| generate::parse_pairs(t).map(|_| ()));
            let label = format!("{} chunk {}", d.doc.name, c.index);
            tasks.push(steps.task(&pipeline.generation, &ctx, label, check)?);
            where_.push((di, c.index));
        }
    }
    let Some(keys) = steps
        .run("generate", tasks, &mut journal, &mut report)
        .await?
    else {
        return Ok(report);
    };
    let candidates = assemble::generated(
        &docs,
        &summaries,
        &where_,
        &keys,
        &journal,
        &work,
        &mut report,
    )?;

    // Rating: batches of `batch_size` pairs of one document.
    let batches = assemble::batches(&candidates, pipeline.batch_size());
    let mut tasks = Vec::new();
    for batch in &batches {
        let pairs: Vec<&generate::QaPair> = batch.iter().map(|&i| &candidates[i].pair).collect();
        let doc = &docs[candidates[batch[0]].doc].doc.name;
        let ctx = minijinja::context! { pairs => minijinja::Value::from(minijinja::value::Serde(&pairs)), document => doc };
        let count = batch.len();
        let check: Check = Arc::new(move |t: &str| rate::parse_ratings(t, count).map(|_| ()));
        let label = format!("{doc} pairs {}-{}", batch[0] + 1, batch[count - 1] + 1);
        tasks.push(steps.task(&pipeline.rating, &ctx, label, check)?);
    }
    let Some(keys) = steps.run("rate", tasks, &mut journal, &mut report).await? else {
        return Ok(report);
    };
    let rated = assemble::rated(candidates, &batches, &keys, &journal, &mut report);
    assemble::finish(rated, &docs, &pipeline, opts, &work, &mut report)?;
    output::write_json(&work.report(), &report)?;
    Ok(report)
}

/// The model's client; a managed model (`llamacpp:`, `vllm:`) gets its server for
/// the whole pipeline, with the run's lifecycle: own process group, parent-death
/// signal, SIGTERM then SIGKILL on drop, its log in the work folder.
async fn connect_model(
    opts: &SynthOptions,
    work_root: &Path,
) -> Result<(Vec<Arc<ModelClient>>, Option<ManagedServer>), SynthError> {
    if !opts.model.provider.is_managed() {
        let clients =
            crate::client::connect(std::slice::from_ref(&opts.model), Path::new("golden"))?;
        return Ok((clients, None));
    }
    let log = work_root.join("server.log");
    errln!(
        "model {}: starting its {} server (log: {})",
        opts.model.name,
        opts.model.provider.prefix(),
        log.display()
    );
    let started = ManagedServer::start(&opts.model, &log).await?;
    let client = crate::client::connect_managed(&opts.model, &started, Path::new("golden"))?;
    Ok((vec![client], Some(started)))
}

/// One summary per document, of its first chunk (what fits the context), when
/// the pipeline summarizes; empty ones when it does not. `None`: interrupted.
async fn summarize(
    steps: &Steps,
    pipeline: &Pipeline,
    docs: &[ChunkedDoc],
    journal: &mut SynthJournal,
    report: &mut SynthReport,
) -> Result<Option<Vec<String>>, SynthError> {
    let mut summaries = vec![String::new(); docs.len()];
    if !pipeline.summarize() {
        return Ok(Some(summaries));
    }
    let mut tasks = Vec::new();
    for d in docs {
        let ctx = minijinja::context! { text => &d.chunks[0].text, document => &d.doc.name };
        let check: Check = Arc::new(|t: &str| {
            (!t.trim().is_empty())
                .then_some(())
                .ok_or(generate::AnswerError::Empty)
        });
        let label = format!("{} summary", d.doc.name);
        tasks.push(steps.task(&pipeline.summary, &ctx, label, check)?);
    }
    let Some(keys) = steps.run("summary", tasks, journal, report).await? else {
        return Ok(None);
    };
    for (i, key) in keys.iter().enumerate() {
        summaries[i] = assemble::answer(journal, key, &mut report.errors)
            .map(|t| crate::extract::strip_think(&t).trim().to_owned())
            .unwrap_or_default();
    }
    Ok(Some(summaries))
}

/// What every model step shares.
struct Steps {
    model: Arc<ModelClient>,
    cache: Option<Arc<Cache>>,
    progress: bool,
    journal_path: PathBuf,
}

impl Steps {
    /// The task of `stage`'s request rendered for `ctx`.
    fn task(
        &self,
        stage: &pipeline::Stage,
        ctx: &minijinja::Value,
        label: String,
        check: Check,
    ) -> Result<Task, SynthError> {
        let request = stage.request(ctx, &self.model.setup)?;
        Ok(Task::new(
            &self.model,
            label,
            request,
            stage.attempts(),
            check,
        ))
    }

    /// Runs one step and records its outcome: the tasks' keys in order, or
    /// `None` when Ctrl-C stopped it.
    async fn run(
        &self,
        name: &str,
        tasks: Vec<Task>,
        journal: &mut SynthJournal,
        report: &mut SynthReport,
    ) -> Result<Option<Vec<String>>, SynthError> {
        let keys: Vec<String> = tasks.iter().map(|t| t.key.clone()).collect();
        let outcome = exec::run_stage(
            name,
            &self.model,
            tasks,
            journal,
            self.cache.clone(),
            self.progress,
        )
        .await
        .map_err(|source| SynthError::Journal {
            path: self.journal_path.clone(),
            source,
        })?;
        report.stages.insert(name.to_owned(), outcome);
        report.interrupted |= outcome.interrupted;
        Ok((!outcome.interrupted).then_some(keys))
    }
}
