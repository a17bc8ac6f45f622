//! Running specs against models: the plan, the scheduler, one task per
//! instance, the journal and resume.
//!
//! Data flow: [`plan::run_plan`] connects every model of a [`Manifest`]
//! (starting managed servers one at a time); [`scheduler::schedule`] gives
//! each model `concurrency` workers pulling tasks (spec, instance, samples) in
//! plan order; [`task::run_task`] renders the instance, asks the model through
//! the client layer, asks the judge ([`ask_judge`]) and verifies, making one
//! [`record::Record`] per sample; a single writer appends each record to the
//! [`journal`] before counting it. Ctrl-C stops new work, keeps everything
//! finished, and `--resume` completes the plan without repeating a request.
//!
//! Imports go down only: `client`, `spec`, `verify`, `golden`, `provider`,
//! `prompt`, `format`, `error`, `text` and the `progress`/`jsonl` leaves.

mod ask_judge;
mod batch;
mod batch_log;
pub(crate) mod budget;
mod choice_task;
pub(crate) mod cost;
mod episode;
mod estimate;
mod exec_call;
mod git;
pub(crate) mod journal;
mod manifest;
mod mcp_tools;
pub(crate) mod merge;
mod plan;
mod queue;
pub(crate) mod record;
mod rhai_tools;
mod scheduler;
pub(crate) mod shard;
mod task;
mod user_turn;
mod worker;

use std::path::PathBuf;

pub(crate) use budget::{Limits, Spent};
pub(crate) use estimate::{Estimate, estimate};
pub(crate) use git::head_commit;
pub(crate) use journal::transcripts;
pub(crate) use manifest::{
    Manifest, find_run, new_run_id, read_manifest, timestamps, write_manifest,
};
pub(crate) use plan::run_plan;
pub(crate) use shard::{Shard, plan_hash};
pub(crate) use task::{SpecRuntime, build_request, spec_runtime};

use crate::client::ClientError;

/// How a run asks: the cache, progress and the budget.
#[derive(Debug, Clone)]
pub(crate) struct RunSettings {
    /// Use the response cache.
    pub use_cache: bool,
    /// The cache database.
    pub cache_path: PathBuf,
    /// Show progress.
    pub progress: bool,
    /// The budget (`--max-cost`, `--max-tokens-total`).
    pub limits: Limits,
}

/// What a run did.
#[derive(Debug, Default)]
pub(crate) struct RunOutcome {
    /// Records written by this invocation.
    pub written: u64,
    /// Of those, answered from the cache.
    pub cached: u64,
    /// HTTP attempts made.
    pub attempts: u64,
    /// Stopped by Ctrl-C before the plan was complete.
    pub interrupted: bool,
    /// Stopped by the budget before the plan was complete.
    pub budget_stopped: bool,
    /// Under a budget, what the whole run has spent, earlier invocations of a resumed run included.
    pub spent: Spent,
    /// Each change of a server's reported model identity, one sentence each.
    pub identity_changes: Vec<String>,
    /// How each adaptive `concurrency` moved, one sentence each.
    pub adaptive: Vec<String>,
}

impl RunOutcome {
    fn add(&mut self, other: RunOutcome) {
        self.written += other.written;
        self.cached += other.cached;
        self.attempts += other.attempts;
        self.interrupted |= other.interrupted;
        self.budget_stopped |= other.budget_stopped;
        self.identity_changes.extend(other.identity_changes);
        self.adaptive.extend(other.adaptive);
    }
}

/// A run failure that is not about any one request.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RunError {
    /// A file could not be read or written.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A model could not be made ready to ask (endpoint, cache).
    #[error("{0}")]
    Client(ClientError),
    /// A managed model server could not start.
    #[error("{0}")]
    ServerStart(crate::client::managed::ManagedError),
    /// A managed model server died mid-run; the journal keeps what finished.
    #[error("{0}")]
    ServerDied(crate::client::managed::ServerDeath),
    /// The spec's answer schema could not be read.
    #[error("{0}")]
    Schema(#[from] crate::verify::SchemaError),
    /// A spec's instances could not be made (its golden subset needs them all).
    #[error("{0}")]
    Spec(Box<crate::error::Diagnostic>),
    /// A batch could not be polled to its end: none of its answers is
    /// journaled, and `--resume` polls it again.
    #[error("{0}; `harness run --resume` polls it again, submitting nothing")]
    BatchUnfinished(String),
    /// A model's server cannot answer what a spec asks (log-probabilities,
    /// scored prompts): the run stops at the first such answer rather than
    /// record a score for every instance out of nothing.
    #[error("model `{model}`, spec `{spec}`: {why}")]
    Unsupported {
        /// The model.
        model: String,
        /// The spec.
        spec: String,
        /// The server's refusal, named (`no_prompt_logprobs`, `no_logprobs`).
        why: String,
    },
    /// No run has the id asked for.
    #[error("no run `{id}` under {}", dir.display())]
    NoRun {
        /// The id asked for.
        id: String,
        /// The runs directory.
        dir: PathBuf,
    },
    /// `latest` was asked for, but there are no runs.
    #[error("no runs under {}", .0.display())]
    NoRuns(PathBuf),
}

impl From<ClientError> for RunError {
    fn from(e: ClientError) -> RunError {
        match e {
            ClientError::ServerStart(e) => RunError::ServerStart(e),
            other => RunError::Client(other),
        }
    }
}

impl From<crate::client::managed::ManagedError> for RunError {
    fn from(e: crate::client::managed::ManagedError) -> RunError {
        RunError::ServerStart(e)
    }
}

impl From<rusqlite::Error> for RunError {
    fn from(e: rusqlite::Error) -> RunError {
        RunError::Client(ClientError::Cache(e))
    }
}
