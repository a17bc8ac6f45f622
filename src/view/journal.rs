//! One journal's index for `harness view`, grown as the journal grows.
//!
//! A journal is read from where the last read stopped, a chunk at a time:
//! each complete line adds an entry (where it starts, its length, its cell
//! and verdict) and counts to its cell; a line being written (no newline
//! yet) waits for the next read. The records themselves stay on disk: a
//! page of them is read back by offset. A line that does not parse as a
//! record is counted as unreadable and kept out of every cell.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::verify::FailureKind;

/// Bytes of journal read between two takes of the index's lock, so pages
/// are answered while a large journal is indexed.
pub(super) const CHUNK_BYTES: u64 = 8 << 20;

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

/// Complete lines read from a journal, not yet in its index.
pub(super) struct Chunk {
    /// Where the reading started: the index's offset then.
    from: u64,
    /// Where it stopped: after its last complete line.
    end: u64,
    /// Each line's start, length and fields (`None`: unreadable).
    lines: Vec<(u64, u32, Option<Head>)>,
}

impl Chunk {
    /// Nothing read at `offset`.
    pub(super) fn empty(offset: u64) -> Chunk {
        Chunk {
            from: offset,
            end: offset,
            lines: Vec::new(),
        }
    }

    /// Whether it holds no line.
    pub(super) fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

/// Reads the complete lines of the journal at `path` from `offset`, about
/// `max` bytes of them; `Ok(None)` when the journal is shorter than
/// `offset` (it was rewritten). A line still being written (no newline
/// yet) is left for the next read.
pub(super) fn read_chunk(path: &Path, offset: u64, max: u64) -> io::Result<Option<Chunk>> {
    let len = match std::fs::metadata(path) {
        Ok(m) => m.len(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => 0,
        Err(e) => return Err(e),
    };
    if len < offset {
        return Ok(None);
    }
    let mut chunk = Chunk::empty(offset);
    if len == offset {
        return Ok(Some(chunk));
    }
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(offset))?;
    let mut reader = BufReader::new(file.take(len - offset));
    let mut buf = Vec::new();
    while chunk.end - offset < max {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf)?;
        if n == 0 || buf.last() != Some(&b'\n') {
            break; // a line still being written waits for the next read
        }
        let text = &buf[..n - 1];
        let head = (text.len() <= MAX_LINE)
            .then(|| serde_json::from_slice::<Head>(text).ok())
            .flatten();
        let line_len = u32::try_from(text.len()).unwrap_or(u32::MAX);
        chunk.lines.push((chunk.end, line_len, head));
        chunk.end += n as u64;
    }
    Ok(Some(chunk))
}

impl JournalIndex {
    /// Reads everything `path` gained since the last call; `Ok(true)` when
    /// it gained a line. A journal shorter than what was read was
    /// rewritten: it is indexed again from the start.
    #[cfg(test)]
    pub(super) fn refresh(&mut self, path: &Path) -> io::Result<bool> {
        let mut grew = false;
        loop {
            let Some(chunk) = read_chunk(path, self.offset, CHUNK_BYTES)? else {
                *self = JournalIndex::default();
                continue;
            };
            if chunk.lines.is_empty() {
                return Ok(grew);
            }
            grew |= self.apply(chunk);
        }
    }

    /// Adds `chunk`'s lines, when it was read from where this index stands
    /// (a chunk read before a rewrite was noticed is dropped); whether any were added.
    pub(super) fn apply(&mut self, chunk: Chunk) -> bool {
        if chunk.from != self.offset || chunk.lines.is_empty() {
            return false;
        }
        self.offset = chunk.end;
        for (start, len, head) in chunk.lines {
            self.add(start, len, head);
        }
        true
    }

    /// Indexes the line at `start` of `len` bytes whose fields are `head`.
    fn add(&mut self, start: u64, len: u32, head: Option<Head>) {
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
