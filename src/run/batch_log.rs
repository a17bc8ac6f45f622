//! The run's `batches.jsonl` beside its journal: every batch submitted,
//! with the `custom_id`s it holds, appended and synced before the batch is
//! first polled, so `--resume` polls it again instead of submitting anew;
//! and what the batched models of a run share.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::record::{Record, TaskKey};
use crate::failure::FailureKind;
use crate::files::AppendLog;

/// One line of `batches.jsonl`: a batch submitted for a model, and the
/// requests in it.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Submitted {
    pub model: String,
    pub batch: String,
    pub custom_ids: Vec<String>,
}

/// The run's `batches.jsonl`: every batch submitted, in order.
pub(super) struct BatchLog {
    file: Mutex<AppendLog>,
    known: Vec<Submitted>,
}

impl BatchLog {
    /// Opens (creating) the log beside the journal at `journal_path`.
    pub(super) fn open(journal_path: &Path) -> std::io::Result<BatchLog> {
        let path = journal_path.with_file_name("batches.jsonl");
        let file = AppendLog::open::<Submitted>(&path)?;
        let mut known = Vec::new();
        crate::files::for_each_line(&path, |s: Submitted| known.push(s))?;
        Ok(BatchLog {
            file: Mutex::new(file),
            known,
        })
    }

    /// Keeps a submitted batch on disk, synced before anything polls it.
    pub(super) fn append(&self, submitted: &Submitted) -> std::io::Result<()> {
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        file.append(submitted)?;
        file.sync()
    }

    /// The batch of `model` that holds `custom_id`, the latest first.
    pub(super) fn batch_of(&self, model: &str, custom_id: &str) -> Option<&str> {
        self.known
            .iter()
            .rev()
            .filter(|s| s.model == model)
            .find(|s| s.custom_ids.iter().any(|c| c == custom_id))
            .map(|s| s.batch.as_str())
    }
}

/// Whether a record's failure was its batch's, which `--resume` asks again.
pub(super) fn retried(failure: Option<FailureKind>) -> bool {
    matches!(
        failure,
        Some(FailureKind::BatchFailed | FailureKind::BatchExpired | FailureKind::BatchCancelled)
    )
}

/// What the batched models of a run share: the batch log, the keys to ask
/// again, and why batches were left unfinished.
pub(super) struct Batches {
    pub log: BatchLog,
    /// Keys whose journaled record is a batch failure: asked in a new batch.
    pub again: HashSet<TaskKey>,
    pub progress: bool,
    /// Why batches were left unfinished (polls or downloads that failed for good).
    pub unfinished: Mutex<Vec<String>>,
}

impl Batches {
    /// Reads the journal at `journal_path` (which must be open already, its
    /// torn line dropped): the keys done, and the batch log beside it.
    pub(super) fn open(
        journal_path: &Path,
        progress: bool,
    ) -> std::io::Result<(HashSet<TaskKey>, Batches)> {
        let (mut done, mut again) = (HashSet::new(), HashSet::new());
        super::journal::for_each_record(journal_path, |r: Record| {
            // A later line wins: a batch failure asked again and answered is done.
            if retried(r.failure) {
                done.remove(&r.key());
                again.insert(r.key());
            } else {
                again.remove(&r.key());
                done.insert(r.key());
            }
        })?;
        let batches = Batches {
            log: BatchLog::open(journal_path)?,
            again,
            progress,
            unfinished: Mutex::default(),
        };
        Ok((done, batches))
    }

    /// Why batches were left unfinished, joined; empty when none was.
    pub(super) fn unfinished(&self) -> String {
        self.unfinished
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .join("; ")
    }
}
