//! The run journal: `results/runs/<run-id>/journal.jsonl`, an append-only
//! log of [`Record`]s (see [`crate::files`] for its crash safety), and what
//! reading it back gives: records by key, transcript lines by model and spec.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use super::RunError;
use super::record::Record;
use crate::files::{AppendLog, for_each_line};
use crate::golden::transcript::TranscriptLine;

/// The run journal, open for appending.
pub(crate) type Journal = AppendLog;

/// Opens (creating) the journal at `path`, dropping a torn last line left by a crash.
pub(crate) fn open(path: &Path) -> io::Result<Journal> {
    AppendLog::open::<Record>(path)
}

/// Calls `f` with each record in file order; a line that cannot be read
/// fails with the journal's path and the line's number (a torn last line,
/// left by a crash, is skipped).
pub(crate) fn for_each_record(path: &Path, f: impl FnMut(Record)) -> io::Result<()> {
    for_each_line(path, f)
}

/// Transcript lines by (model, spec), then (instance, sample).
pub(crate) type Transcripts = BTreeMap<(String, String), BTreeMap<(u64, u32), TranscriptLine>>;

/// The transcript lines of the (model, spec) pairs `wanted` keeps, read one
/// record at a time: memory holds only the answers of the pairs asked for,
/// so a run whose pairs have no golden transcript holds none (flat in N).
/// Later lines win on duplicate keys.
pub(crate) fn transcripts(
    journal_path: &Path,
    wanted: impl Fn(&str, &str) -> bool,
) -> Result<Transcripts, RunError> {
    let mut out = Transcripts::new();
    for_each_record(journal_path, |r| {
        if wanted(&r.model, &r.spec) {
            out.entry((r.model.clone(), r.spec.clone()))
                .or_default()
                .insert((r.instance, r.sample), r.transcript_line());
        }
    })?;
    Ok(out)
}
