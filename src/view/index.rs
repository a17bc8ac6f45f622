//! What `harness view` knows of a results folder: every run under
//! `runs/`, its plan, and an index of its journal that grows with it.
//!
//! A journal is read once, from where the last refresh stopped: each
//! complete line adds an entry (where it starts, its length, its cell and
//! verdict) and counts to its cell; a line being written (no newline yet)
//! waits for the next refresh. The records themselves stay on disk: a page
//! of them is read back by offset. A line that does not parse as a record
//! is counted as unreadable and kept out of every cell.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::run::Manifest;
use crate::verify::FailureKind;

/// How long after its journal last grew an unfinished run still counts as running.
pub(super) const LIVE_FOR: Duration = Duration::from_secs(5);

/// The longest journal line indexed; a longer one is counted unreadable
/// (the journal's writer never makes one this long).
const MAX_LINE: usize = 256 << 20;

/// The fields of a record the index keeps; the rest stays on disk.
#[derive(Deserialize)]
struct Head {
    model: String,
    spec: String,
    instance: u64,
    sample: u32,
    #[serde(default)]
    passed: bool,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    failure: Option<FailureKind>,
    #[serde(default)]
    cost: Option<Amount>,
    #[serde(default)]
    judge_cost: Option<Amount>,
    #[serde(default)]
    user_cost: Option<Amount>,
}

/// A cost as the journal keeps it.
#[derive(Deserialize)]
struct Amount {
    amount: f64,
}

/// One indexed journal line.
#[derive(Debug, Clone)]
pub(super) struct Line {
    /// Its first byte in the journal.
    pub start: u64,
    /// Its length, without the newline.
    pub len: u32,
    /// Its cell in [`JournalIndex::cells`]; `None`: the line is unreadable.
    pub cell: Option<u32>,
    /// The record's instance and sample.
    pub instance: u64,
    /// The sample.
    pub sample: u32,
    /// The record passed.
    pub passed: bool,
    /// The record is an error (no verdict).
    pub error: bool,
    /// What failed it.
    pub failure: Option<FailureKind>,
}

/// One (model, spec) cell's counts.
#[derive(Debug, Clone, Default, Serialize)]
pub(super) struct Cell {
    /// The model.
    pub model: String,
    /// The spec.
    pub spec: String,
    /// Records.
    pub records: u64,
    /// Records that passed.
    pub passed: u64,
    /// Error records (a failed request, no verdict).
    pub errors: u64,
    /// What the records cost, judge and simulated user included; `None`
    /// when no record had a price.
    pub cost: Option<f64>,
}

/// A journal's index so far.
#[derive(Debug, Default)]
pub(super) struct JournalIndex {
    /// Bytes read: every line before this offset is indexed.
    pub offset: u64,
    /// Every complete line, in file order.
    pub lines: Vec<Line>,
    /// The cells in order of their first record.
    pub cells: Vec<Cell>,
}

impl JournalIndex {
    /// Reads what `path` gained since the last call; `Ok(true)` when it
    /// gained a line. A journal shorter than what was read was rewritten:
    /// it is indexed again from the start.
    pub(super) fn refresh(&mut self, path: &Path) -> io::Result<bool> {
        let len = match std::fs::metadata(path) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        if len < self.offset {
            *self = JournalIndex::default();
        }
        if len == self.offset {
            return Ok(false);
        }
        let mut file = File::open(path)?;
        file.seek(SeekFrom::Start(self.offset))?;
        let mut reader = BufReader::new(file.take(len - self.offset));
        let mut buf = Vec::new();
        let before = self.lines.len();
        loop {
            buf.clear();
            let n = reader.read_until(b'\n', &mut buf)?;
            if n == 0 || buf.last() != Some(&b'\n') {
                break; // a line still being written waits for the next refresh
            }
            let start = self.offset;
            self.offset += n as u64;
            self.add(start, &buf[..n - 1]);
        }
        Ok(self.lines.len() > before)
    }

    /// Indexes the line `text` found at `start`.
    fn add(&mut self, start: u64, text: &[u8]) {
        let len = u32::try_from(text.len()).unwrap_or(u32::MAX);
        let head = (text.len() <= MAX_LINE)
            .then(|| serde_json::from_slice::<Head>(text).ok())
            .flatten();
        let Some(head) = head else {
            self.lines.push(Line {
                start,
                len,
                cell: None,
                instance: 0,
                sample: 0,
                passed: false,
                error: false,
                failure: None,
            });
            return;
        };
        let cell = self.cell_of(&head.model, &head.spec);
        let c = &mut self.cells[cell as usize];
        c.records += 1;
        c.passed += u64::from(head.passed);
        c.errors += u64::from(head.error.is_some());
        let costs = [&head.cost, &head.judge_cost, &head.user_cost];
        for amount in costs.into_iter().flatten() {
            *c.cost.get_or_insert(0.0) += amount.amount;
        }
        self.lines.push(Line {
            start,
            len,
            cell: Some(cell),
            instance: head.instance,
            sample: head.sample,
            passed: head.passed,
            error: head.error.is_some(),
            failure: head.failure,
        });
    }

    /// The index of the cell of (`model`, `spec`), added when new.
    fn cell_of(&mut self, model: &str, spec: &str) -> u32 {
        let found = self
            .cells
            .iter()
            .position(|c| c.model == model && c.spec == spec);
        let i = found.unwrap_or_else(|| {
            self.cells.push(Cell {
                model: model.to_owned(),
                spec: spec.to_owned(),
                ..Cell::default()
            });
            self.cells.len() - 1
        });
        u32::try_from(i).unwrap_or(u32::MAX)
    }

    /// Lines that did not parse as records.
    pub(super) fn unreadable(&self) -> usize {
        self.lines.iter().filter(|l| l.cell.is_none()).count()
    }
}

/// Reads the bytes of `line` from the journal at `path`.
pub(super) fn read_line(path: &Path, line: &Line) -> io::Result<Vec<u8>> {
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(line.start))?;
    let mut buf = vec![0; line.len as usize];
    file.read_exact(&mut buf)?;
    Ok(buf)
}

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Status {
    /// Its journal grew within [`LIVE_FOR`] and it wrote no report yet.
    Running,
    /// It wrote its reports.
    Finished,
    /// It stopped without its reports: killed, or its machine went away.
    Interrupted,
}

/// One run folder.
#[derive(Debug)]
pub(super) struct Run {
    /// Its id: the folder's name.
    pub id: String,
    /// Its folder.
    pub dir: PathBuf,
    /// Its plan, once `plan.json` reads.
    pub plan: Option<Manifest>,
    /// Its journal so far.
    pub journal: JournalIndex,
    /// When its journal (else its plan) last changed.
    pub modified: Option<SystemTime>,
    /// A report of it exists under `reports/`.
    pub reported: bool,
}

impl Run {
    /// Its journal's path.
    pub(super) fn journal_path(&self) -> PathBuf {
        self.dir.join("journal.jsonl")
    }

    /// Where it stands at `now`.
    pub(super) fn status(&self, now: SystemTime) -> Status {
        if self.reported {
            return Status::Finished;
        }
        let fresh = self
            .modified
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|age| age < LIVE_FOR);
        if fresh {
            Status::Running
        } else {
            Status::Interrupted
        }
    }
}

/// Every run of a results folder.
#[derive(Debug)]
pub(super) struct Index {
    /// The results folder.
    pub root: PathBuf,
    /// Runs by id.
    pub runs: BTreeMap<String, Run>,
    /// Bumped whenever a refresh finds anything new.
    pub version: u64,
}

impl Index {
    /// An empty index of `root`; [`Index::refresh`] fills it.
    pub(super) fn new(root: &Path) -> Index {
        Index {
            root: root.to_path_buf(),
            runs: BTreeMap::new(),
            version: 0,
        }
    }

    /// Finds new runs, new journal lines and new reports; a run whose folder
    /// is gone is dropped. A folder that cannot be read is skipped until it can.
    pub(super) fn refresh(&mut self) -> bool {
        let mut changed = false;
        let runs_dir = self.root.join("runs");
        let mut seen = Vec::new();
        for entry in std::fs::read_dir(&runs_dir).into_iter().flatten().flatten() {
            let dir = entry.path();
            let Some(id) = dir.file_name().and_then(|n| n.to_str()).map(str::to_owned) else {
                continue;
            };
            if !dir.join("plan.json").is_file() {
                continue;
            }
            seen.push(id.clone());
            let run = self.runs.entry(id.clone()).or_insert_with(|| {
                changed = true;
                Run {
                    id: id.clone(),
                    dir: dir.clone(),
                    plan: None,
                    journal: JournalIndex::default(),
                    modified: None,
                    reported: false,
                }
            });
            changed |= refresh_run(run, &self.root);
        }
        let before = self.runs.len();
        self.runs.retain(|id, _| seen.contains(id));
        changed |= self.runs.len() != before;
        if changed {
            self.version += 1;
        }
        changed
    }
}

/// Reads what `run` gained: its plan once, new journal lines, its report.
fn refresh_run(run: &mut Run, root: &Path) -> bool {
    let mut changed = false;
    if run.plan.is_none() {
        run.plan = crate::run::read_manifest(&run.dir).ok();
        changed |= run.plan.is_some();
    }
    let journal = run.journal_path();
    changed |= run.journal.refresh(&journal).unwrap_or(false);
    let modified = std::fs::metadata(&journal)
        .or_else(|_| std::fs::metadata(run.dir.join("plan.json")))
        .and_then(|m| m.modified())
        .ok();
    if modified != run.modified {
        run.modified = modified;
        changed = true;
    }
    if !run.reported {
        let reports = root.join("reports");
        run.reported = ["md", "html", "json"]
            .iter()
            .any(|ext| reports.join(format!("report_{}.{ext}", run.id)).is_file());
        changed |= run.reported;
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(model: &str, passed: bool) -> String {
        format!(
            r#"{{"model":"{model}","spec":"s","instance":0,"sample":0,"passed":{passed},"cost":{{"amount":0.5}}}}"#
        )
    }

    #[test]
    fn a_journal_is_indexed_as_it_grows_and_a_torn_line_waits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        let mut index = JournalIndex::default();
        assert!(!index.refresh(&path).unwrap(), "no journal yet");
        let first = format!("{}\n{}\nnot json\n", record("a", true), record("b", false));
        std::fs::write(&path, &first).unwrap();
        assert!(index.refresh(&path).unwrap());
        assert_eq!((index.lines.len(), index.unreadable()), (3, 1));
        assert_eq!(index.cells.len(), 2);
        assert_eq!((index.cells[0].passed, index.cells[0].cost), (1, Some(0.5)));
        // Half a line: read only once it ends.
        let torn = record("a", false);
        std::fs::write(&path, format!("{first}{}", &torn[..10])).unwrap();
        assert!(!index.refresh(&path).unwrap());
        std::fs::write(&path, format!("{first}{torn}\n")).unwrap();
        assert!(index.refresh(&path).unwrap());
        assert_eq!(index.cells[0].records, 2);
        let last = index.lines.last().unwrap();
        assert_eq!(read_line(&path, last).unwrap(), torn.as_bytes());
        // Rewritten shorter: indexed again from the start.
        std::fs::write(&path, format!("{}\n", record("c", true))).unwrap();
        assert!(index.refresh(&path).unwrap());
        assert_eq!(index.cells.len(), 1);
    }
}
