//! The viewer's JSON about records: a page of a run's records, filtered and
//! searched on disk a line at a time, and one record drawn in full by the
//! HTML report's drill-down (its row from `report`, the same code).

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::index::Run;
use super::journal::{Line, read_line};
use super::shown::Shown;
use crate::report::{SpecInfo, drill_row};
use crate::run::record::Record;
use crate::verify::FailureKind;

/// Records a page holds at most.
pub(super) const PAGE_MAX: usize = 500;

/// Journal lines a search reads in one request; past them the page ends
/// with `next` to go on from.
const SCAN_MAX: usize = 20_000;

/// Which records a page holds.
#[derive(Debug, Default, Deserialize)]
pub(super) struct RecordQuery {
    /// One cell, by its place in the run's cells.
    cell: Option<u32>,
    /// `pass`, `fail`, `error` or `unreadable`.
    outcome: Option<Outcome>,
    /// One failure kind.
    failure: Option<FailureKind>,
    /// Text the record's line holds (case-insensitive).
    q: Option<String>,
    /// The first line to look at, counted through the run's journals.
    #[serde(default)]
    from: usize,
    /// Records wanted (at most [`PAGE_MAX`]).
    limit: Option<usize>,
}

/// A record's outcome, for filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Outcome {
    Pass,
    Fail,
    Error,
    Unreadable,
}

/// One record of a page.
#[derive(Serialize)]
pub(super) struct RecordItem {
    /// The run folder whose journal holds it.
    run: String,
    /// Its line in that journal (0-based): `/records/{n}` of that run reads it.
    n: usize,
    model: Option<String>,
    spec: Option<String>,
    instance: u64,
    sample: u32,
    passed: bool,
    error: bool,
    failure: Option<FailureKind>,
    unreadable: bool,
}

/// A page of records.
#[derive(Serialize)]
pub(super) struct RecordPage {
    items: Vec<RecordItem>,
    /// Where the next page starts; `None` at the journals' end.
    next: Option<usize>,
    /// Lines of the journals so far.
    lines: usize,
}

/// Whether `line` is one `query` keeps, before the text search; `cell`:
/// the run folder's own index of the cell asked for (`Some(None)`: that
/// folder has no such cell).
fn keeps(line: &Line, query: &RecordQuery, cell: Option<Option<u32>>) -> bool {
    let outcome = match (line.cell, line.error, line.passed) {
        (None, _, _) => Outcome::Unreadable,
        (_, true, _) => Outcome::Error,
        (_, _, true) => Outcome::Pass,
        _ => Outcome::Fail,
    };
    cell.is_none_or(|c| c.is_some() && line.cell == c)
        && query.outcome.is_none_or(|o| o == outcome)
        && query.failure.is_none_or(|f| line.failure == Some(f))
}

/// The page of `shown`'s records that `query` asks for: its run folders'
/// journals one after another; `cells` are its cells as the run page lists them.
pub(super) fn records(
    shown: &Shown,
    cells: &[(String, String)],
    query: &RecordQuery,
) -> std::io::Result<RecordPage> {
    let limit = query.limit.unwrap_or(100).clamp(1, PAGE_MAX);
    let needle = query
        .q
        .as_ref()
        .map(|q| q.to_lowercase())
        .filter(|q| !q.is_empty());
    let total: usize = shown.members.iter().map(|r| r.journal.lines.len()).sum();
    let (mut items, mut scanned, mut at) = (Vec::new(), 0, query.from);
    let mut base = 0;
    'runs: for run in &shown.members {
        let lines = &run.journal.lines;
        let path = run.journal_path();
        // The page counts cells across the folders; each folder numbers its own.
        let cell = query.cell.map(|c| {
            let (model, spec) = cells.get(c as usize)?;
            let at = run
                .journal
                .cells
                .iter()
                .position(|x| &x.model == model && &x.spec == spec)?;
            u32::try_from(at).ok()
        });
        while at < base + lines.len() && items.len() < limit {
            let n = at - base;
            let line = &lines[n];
            at += 1;
            if !keeps(line, query, cell) {
                continue;
            }
            if let Some(needle) = &needle {
                scanned += 1;
                if !holds(&path, line, needle)? {
                    if scanned >= SCAN_MAX {
                        break 'runs;
                    }
                    continue;
                }
            }
            items.push(item(run, n, line));
        }
        base += lines.len();
        if items.len() >= limit {
            break;
        }
    }
    Ok(RecordPage {
        items,
        next: (at < total).then_some(at),
        lines: total,
    })
}

/// Whether the journal line holds `needle` (lower case), case-insensitively.
fn holds(path: &Path, line: &Line, needle: &str) -> std::io::Result<bool> {
    let text = read_line(path, line)?;
    Ok(String::from_utf8_lossy(&text)
        .to_lowercase()
        .contains(needle))
}

fn item(run: &Run, n: usize, line: &Line) -> RecordItem {
    let cell = line.cell.map(|c| &run.journal.cells[c as usize]);
    RecordItem {
        run: run.id.clone(),
        n,
        model: cell.map(|c| c.model.clone()),
        spec: cell.map(|c| c.spec.clone()),
        instance: line.instance,
        sample: line.sample,
        passed: line.passed,
        error: line.error,
        failure: line.failure,
        unreadable: line.cell.is_none(),
    }
}

/// The journal line `n` of `run` (one it has), as written (the journal
/// keeps no secret).
pub(super) fn raw(run: &Run, n: usize) -> std::io::Result<Vec<u8>> {
    read_line(&run.journal_path(), &run.journal.lines[n])
}

/// One record as the drill-down draws it.
#[derive(Serialize)]
pub(super) struct Drill {
    /// `<spec>/<instance>`, `#<sample>` after a first sample.
    id: String,
    model: String,
    spec: SpecName,
    /// The report's row of it ([`crate::report::DRILL_JS`] draws it).
    row: serde_json::Value,
}

/// A spec as the drill-down names it.
#[derive(Serialize)]
struct SpecName {
    id: String,
    title: String,
}

/// Why a journal line cannot be drawn: it is not a record. Its text is
/// shown as it is.
#[derive(Serialize)]
pub(super) struct Unreadable {
    unreadable: String,
    text: String,
}

/// The record of journal line `n` of `run` (one it has) drawn as the
/// report draws it, against the run's golden transcripts (under `golden`).
pub(super) fn drill(
    run: &Run,
    n: usize,
    golden: Option<&Path>,
) -> std::io::Result<Result<Drill, Unreadable>> {
    let bytes = raw(run, n)?;
    Ok(match serde_json::from_slice::<Record>(&bytes) {
        Ok(record) => {
            let spec = run.spec(&record.spec);
            drilled(&record, &spec, golden).map_err(|e| unreadable(&e, &bytes))
        }
        Err(e) => Err(unreadable(&e, &bytes)),
    })
}

/// `record` drawn as a drill-down, against `golden` when given.
pub(super) fn drilled(
    record: &Record,
    spec: &SpecInfo,
    golden: Option<&Path>,
) -> serde_json::Result<Drill> {
    Ok(Drill {
        id: format!(
            "{}/{}{}",
            record.spec,
            record.instance,
            if record.sample > 0 {
                format!("#{}", record.sample)
            } else {
                String::new()
            }
        ),
        model: record.model.clone(),
        spec: SpecName {
            id: spec.id.clone(),
            title: spec.title.clone(),
        },
        row: drill_row(record, spec, golden)?,
    })
}

fn unreadable(e: &serde_json::Error, bytes: &[u8]) -> Unreadable {
    Unreadable {
        unreadable: e.to_string(),
        text: String::from_utf8_lossy(bytes).into_owned(),
    }
}
