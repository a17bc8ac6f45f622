//! The records of several journals in report order, read on demand.
//!
//! Loading 100,000 records with their prompts could take gigabytes, so a
//! first pass keeps only each record's journal and byte offset (one word,
//! sorted by the records' keys, which are then dropped); reports then seek to
//! each record when they need it. Like every journal reader, a line that
//! cannot be read fails with its file and line (only a torn last line is
//! skipped), later lines win on duplicate keys, and a missing journal
//! counts as empty.
//!
//! Model names: a model found in one journal keeps its name; a model found
//! in several is shown as `<run-id>/<model>` in each, so the runs stay apart.
//! Models are ordered as `ctx.models`, then the unlisted ones by name, each
//! model's runs in journal order; a name that would repeat (one journal
//! given twice) gets `#2`, `#3`. Specs: `ctx.specs`, then the others by id.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{self, BufReader};
use std::ops::Range;
use std::path::Path;

use crate::files::{for_each_line_at, open_existing, read_line_at};
use crate::run::record::Record;

use super::{ReportContext, SpecInfo};

/// Where one record lives, with its sort key, while the journals are indexed.
#[derive(Debug, Clone, Copy)]
struct Found {
    /// Index into the raw model names, then into [`Journals::models`].
    model: u32,
    /// Index into the raw spec ids, then into `Journals::spec_ids` (sorted, so
    /// comparing indices compares ids).
    spec: u32,
    instance: u64,
    sample: u32,
    journal: u32,
    offset: u64,
}

impl Found {
    /// The record's key: (shown model, spec id, instance, sample) once mapped.
    fn key(&self) -> (u32, u32, u64, u32) {
        (self.model, self.spec, self.instance, self.sample)
    }
}

/// The first position in [`Journals::locations`] of one (model, spec) cell.
#[derive(Debug, Clone, Copy)]
struct Cell {
    model: u32,
    spec: u32,
    start: usize,
}

/// Bits of a location holding the byte offset; the journal index takes the rest.
const OFFSET_BITS: u32 = 48;

/// Where a shown model's records come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Origin {
    /// Index of its journal (and run) in `ctx.journals`; none for a planned model
    /// without records.
    pub run: Option<usize>,
    /// The model's name in that journal.
    pub model: String,
}

/// The indexed records of every journal in a report.
pub(crate) struct Journals {
    /// Shown model names, in report order.
    pub models: Vec<String>,
    /// Per shown model, where its records come from.
    pub origins: Vec<Origin>,
    /// Specs in report order.
    pub specs: Vec<SpecInfo>,
    /// All spec ids with records, sorted.
    spec_ids: Vec<String>,
    /// The cells with records, in (model, spec) order, each with its first location.
    cells: Vec<Cell>,
    /// Each record's journal and byte offset in one word (the journal in the top
    /// 16 bits), sorted by (model, spec id, instance, sample) like `TaskKey`:
    /// 8 bytes a record, so 100,000 records cost under a megabyte.
    locations: Vec<u64>,
    readers: Vec<Option<BufReader<File>>>,
    /// Each journal's path, for errors.
    paths: Vec<std::path::PathBuf>,
}

impl Journals {
    /// Indexes every journal of `ctx`.
    pub(super) fn open(ctx: &ReportContext) -> io::Result<Journals> {
        let (mut raw_models, mut spec_names) = (Interner::default(), Interner::default());
        let mut found = Vec::new();
        let mut readers = Vec::new();
        for (j, path) in ctx.journals.iter().enumerate() {
            let j = u32::try_from(j)
                .ok()
                .filter(|&j| j < 1 << (64 - OFFSET_BITS))
                .ok_or_else(|| io::Error::other("too many journals to index"))?;
            let names = (&mut raw_models, &mut spec_names);
            readers.push(index_journal(path, j, names, &mut found)?);
        }
        // (raw model, journal) → shown model position.
        let mut runs_of: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); raw_models.names.len()];
        for f in &found {
            runs_of[f.model as usize].insert(f.journal as usize);
        }
        let mut models: Vec<String> = Vec::new();
        let mut origins: Vec<Origin> = Vec::new();
        let mut shown: BTreeMap<(usize, usize), usize> = BTreeMap::new();
        let mut listed: Vec<&str> = ctx.models.iter().map(String::as_str).collect();
        let mut unlisted: Vec<&str> = raw_models
            .names
            .iter()
            .map(String::as_str)
            .filter(|m| !listed.contains(m))
            .collect();
        unlisted.sort_unstable();
        listed.extend(unlisted);
        for (i, name) in listed.iter().enumerate() {
            if listed[..i].contains(name) {
                continue;
            }
            let Some(raw) = raw_models.get(name) else {
                models.push((*name).to_owned()); // planned but no records yet: an empty row
                origins.push(Origin {
                    run: None,
                    model: (*name).to_owned(),
                });
                continue;
            };
            for &j in &runs_of[raw] {
                let mut shown_name = if runs_of[raw].len() > 1 {
                    format!("{}/{name}", run_id(ctx, j))
                } else {
                    (*name).to_owned()
                };
                // Two journals with one run id (the same path given twice) must not merge.
                let base = shown_name.clone();
                for n in 2.. {
                    if !models.contains(&shown_name) {
                        break;
                    }
                    shown_name = format!("{base}#{n}");
                }
                shown.insert((raw, j), models.len());
                models.push(shown_name);
                origins.push(Origin {
                    run: Some(j),
                    model: (*name).to_owned(),
                });
            }
        }
        let spec_ids: Vec<String> = spec_names
            .names
            .iter()
            .cloned()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let rank: Vec<usize> = spec_names
            .names
            .iter()
            .map(|s| spec_ids.binary_search(s).unwrap_or(0))
            .collect();
        for f in &mut found {
            f.model = shown[&(f.model as usize, f.journal as usize)] as u32;
            f.spec = rank[f.spec as usize] as u32;
        }
        let (cells, locations) = locate(found);
        let mut specs: Vec<SpecInfo> = ctx.specs.to_vec();
        for id in &spec_ids {
            if !specs.iter().any(|s| &s.id == id) {
                specs.push(SpecInfo::plain(id));
            }
        }
        Ok(Journals {
            models,
            origins,
            specs,
            spec_ids,
            cells,
            locations,
            readers,
            paths: ctx.journals.to_vec(),
        })
    }

    /// The first location of the `i`th cell (the end when there is none).
    fn start(&self, i: usize) -> usize {
        self.cells.get(i).map_or(self.locations.len(), |c| c.start)
    }

    /// The positions in [`Journals::locations`] of one shown model's records.
    pub(super) fn model_range(&self, model: usize) -> Range<usize> {
        let lo = self.cells.partition_point(|c| (c.model as usize) < model);
        let hi = self.cells.partition_point(|c| (c.model as usize) <= model);
        self.start(lo)..self.start(hi)
    }

    /// The positions in [`Journals::locations`] of one shown model's records of `spec`.
    pub(super) fn cell_range(&self, model: usize, spec: &str) -> Range<usize> {
        let Ok(s) = self.spec_ids.binary_search_by(|x| x.as_str().cmp(spec)) else {
            return 0..0;
        };
        let at = |c: &Cell| (c.model as usize, c.spec as usize);
        let lo = self.cells.partition_point(|c| at(c) < (model, s));
        let hi = self.cells.partition_point(|c| at(c) <= (model, s));
        self.start(lo)..self.start(hi)
    }

    /// Reads the record at position `i` of [`Journals::locations`].
    pub(super) fn read(&mut self, i: usize) -> io::Result<Record> {
        let location = self.locations[i];
        let (journal, offset) = (location >> OFFSET_BITS, location & ((1 << OFFSET_BITS) - 1));
        let reader = self.readers[journal as usize]
            .as_mut()
            .ok_or_else(|| io::Error::other("journal vanished"))?;
        read_line_at(&self.paths[journal as usize], reader, offset)
    }
}

/// The run id of journal `j`: `ctx.run_ids[j]` when the lists match, else its directory name.
pub(crate) fn run_id(ctx: &ReportContext, j: usize) -> String {
    if ctx.run_ids.len() == ctx.journals.len() {
        return ctx.run_ids[j].clone();
    }
    let dir = ctx.journals[j].parent().and_then(Path::file_name);
    dir.map_or_else(
        || format!("run{}", j + 1),
        |d| d.to_string_lossy().into_owned(),
    )
}

/// Names to small indices, so the index keeps one copy of each name.
#[derive(Default)]
struct Interner {
    names: Vec<String>,
    ids: BTreeMap<String, usize>,
}

impl Interner {
    fn get(&self, name: &str) -> Option<usize> {
        self.ids.get(name).copied()
    }

    fn intern(&mut self, name: &str) -> u32 {
        if let Some(i) = self.get(name) {
            return i as u32;
        }
        self.names.push(name.to_owned());
        self.ids.insert(name.to_owned(), self.names.len() - 1);
        (self.names.len() - 1) as u32
    }
}

/// Sorts the records found (models and specs already mapped to their report
/// positions) and keeps the last line of each key, like a map would; returns the
/// cells and the records' locations.
fn locate(mut found: Vec<Found>) -> (Vec<Cell>, Vec<u64>) {
    // A shown model comes from one journal, so equal keys share one: the later line
    // (larger offset) sorts first and stays.
    found.sort_unstable_by_key(|f| (f.key(), Reverse(f.offset)));
    found.dedup_by_key(|f| f.key());
    let mut cells: Vec<Cell> = Vec::new();
    for (i, f) in found.iter().enumerate() {
        if cells
            .last()
            .is_none_or(|c| (c.model, c.spec) != (f.model, f.spec))
        {
            cells.push(Cell {
                model: f.model,
                spec: f.spec,
                start: i,
            });
        }
    }
    let locations = found
        .iter()
        .map(|f| u64::from(f.journal) << OFFSET_BITS | f.offset)
        .collect();
    (cells, locations)
}

/// Appends journal `journal`'s records to `found`, interning their model and spec
/// names; the reader for later seeks, none when the journal is missing.
fn index_journal(
    path: &Path,
    journal: u32,
    (models, specs): (&mut Interner, &mut Interner),
    found: &mut Vec<Found>,
) -> io::Result<Option<BufReader<File>>> {
    let Some(file) = open_existing(path)? else {
        return Ok(None);
    };
    let mut reader = BufReader::new(file);
    // Parse the whole record, not just its key, so exactly the lines read_journal accepts count.
    for_each_line_at(path, &mut reader, |offset, _, r: Record| {
        if offset >> OFFSET_BITS != 0 {
            return Err(io::Error::other("journal too large to index"));
        }
        found.push(Found {
            model: models.intern(&r.model),
            spec: specs.intern(&r.spec),
            instance: r.instance,
            sample: r.sample,
            journal,
            offset,
        });
        Ok(())
    })?;
    Ok(Some(reader))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn listed_models_first_then_the_rest_by_name() {
        let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/journals/two_models.jsonl");
        // Run ids do not match the journals one to one: directory names are used.
        let journals = [fixture.clone(), fixture];
        let models = ["planned".to_owned(), "gpt-4o-mini".to_owned()];
        let ctx = ReportContext {
            timestamp: "t",
            file_stamp: "f",
            ..ReportContext::new(Path::new("."), &models, &[], &journals)
        };
        let mut s = Journals::open(&ctx).unwrap();
        assert_eq!(
            s.models,
            [
                "planned",
                "journals/gpt-4o-mini",
                "journals/gpt-4o-mini#2",
                "journals/qwen3:8b",
                "journals/qwen3:8b#2"
            ]
        );
        let ids: Vec<&str> = s.specs.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["t01_simple_logic", "t04_data_extraction"]);
        assert_eq!(
            (
                s.model_range(0),
                s.model_range(1).len(),
                s.model_range(3).len()
            ),
            (0..0, 7, 9)
        );
        assert_eq!(s.cell_range(3, "t01_simple_logic").len(), 5);
        assert_eq!(s.cell_range(3, "nope"), 0..0);
        let r = s
            .read(s.cell_range(3, "t01_simple_logic").start + 2)
            .unwrap();
        assert_eq!(
            (r.instance, r.scored.response.as_deref()),
            (1, Some("Самый высокий — Борис."))
        );
    }
}
