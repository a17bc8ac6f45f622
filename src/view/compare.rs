//! Two runs compared, or a run against its golden transcripts: per cell,
//! McNemar's exact test over the instances both sides answered (the
//! statistics every report uses), and every flip with where each side's
//! answer is, so the page shows both.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::records::{Drill, drilled};
use super::shown::Shown;
use crate::golden::transcript::{read_transcript, transcript_path};
use crate::metrics::stats::compare_passes;
use crate::run::record::Record;

/// Flips a comparison lists at most.
const FLIPS_MAX: usize = 2_000;

/// Where one side's answer is: a run folder's journal line, or a golden
/// transcript's.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Place {
    /// Line `n` of run folder `run`'s journal.
    Journal { run: String, n: usize },
    /// The golden transcript of the run's record at `run`, line `n`.
    Golden { run: String, n: usize },
}

/// One instance whose verdict differs between the two sides.
#[derive(Serialize)]
pub(super) struct Flip {
    model: String,
    spec: String,
    instance: u64,
    sample: u32,
    a: Place,
    b: Place,
    /// It passed in `b` and failed in `a`.
    fixed: bool,
}

/// One cell of a comparison: McNemar's exact test over the instances both
/// sides have, with Newcombe's interval of the difference (b − a).
#[derive(Serialize)]
pub(super) struct CellComparison {
    model: String,
    spec: String,
    instances: u64,
    a_rate: f64,
    b_rate: f64,
    /// Passed in `b` only.
    fixed: u64,
    /// Passed in `a` only.
    broke: u64,
    p: Option<f64>,
    low: Option<f64>,
    high: Option<f64>,
}

/// Two sides compared.
#[derive(Serialize)]
pub(super) struct Comparison {
    a: String,
    b: String,
    cells: Vec<CellComparison>,
    flips: Vec<Flip>,
    /// Flips past [`FLIPS_MAX`], not listed.
    more_flips: usize,
}

/// Verdicts of one cell by (instance, sample): passed, and where.
type CellVerdicts = BTreeMap<(u64, u32), (bool, Place)>;

/// Verdicts by (model, spec).
type Verdicts = BTreeMap<(String, String), CellVerdicts>;

/// The verdicts of `shown`'s records (errors have none).
fn verdicts(shown: &Shown) -> Verdicts {
    let mut out: Verdicts = BTreeMap::new();
    for run in &shown.members {
        for (n, line) in run.journal.lines.iter().enumerate() {
            let Some(c) = line.cell.filter(|_| !line.error) else {
                continue;
            };
            let cell = &run.journal.cells[c as usize];
            let place = Place::Journal {
                run: run.id.clone(),
                n,
            };
            out.entry((cell.model.clone(), cell.spec.clone()))
                .or_default()
                .insert((line.instance, line.sample), (line.passed, place));
        }
    }
    out
}

/// The verdicts of `shown`'s golden transcripts for the cells of `run`
/// (its own verdicts); a line's place is the run's record of the same
/// instance and sample.
fn golden_verdicts(shown: &Shown, run: &Verdicts, root: &Path) -> Verdicts {
    let mut out: Verdicts = BTreeMap::new();
    let Some(dir) = shown.members.iter().find_map(|r| r.golden_dir(root)) else {
        return out;
    };
    for ((model, spec), cell) in run {
        let lines = read_transcript(&transcript_path(&dir, spec, model)).unwrap_or_default();
        let mine: CellVerdicts = lines
            .into_iter()
            .filter_map(|l| {
                let key = (l.instance, l.sample);
                let (_, place) = cell.get(&key)?;
                let Place::Journal { run, n } = place.clone() else {
                    return None;
                };
                Some((key, (l.scored.passed, Place::Golden { run, n })))
            })
            .collect();
        if !mine.is_empty() {
            out.insert((model.clone(), spec.clone()), mine);
        }
    }
    out
}

/// Runs `a` and `b` compared cell by cell over the instances both answered.
pub(super) fn runs(a: &Shown, b: &Shown) -> Comparison {
    between(a.id.clone(), verdicts(a), b.id.clone(), verdicts(b))
}

/// The golden transcripts (as `a`) against run `b`.
pub(super) fn golden(b: &Shown, root: &Path) -> Comparison {
    let run = verdicts(b);
    let a = golden_verdicts(b, &run, root);
    between("golden".to_owned(), a, b.id.clone(), run)
}

fn between(a_id: String, left: Verdicts, b_id: String, right: Verdicts) -> Comparison {
    let mut cells = Vec::new();
    let mut flips = Vec::new();
    let mut more_flips = 0;
    for ((model, spec), first) in &left {
        let Some(second) = right.get(&(model.clone(), spec.clone())) else {
            continue;
        };
        let (mut x, mut y) = (Vec::new(), Vec::new());
        for (key, (pa, place_a)) in first {
            let Some((pb, place_b)) = second.get(key) else {
                continue;
            };
            x.push(*pa);
            y.push(*pb);
            if pa == pb {
                continue;
            }
            if flips.len() == FLIPS_MAX {
                more_flips += 1;
                continue;
            }
            flips.push(Flip {
                model: model.clone(),
                spec: spec.clone(),
                instance: key.0,
                sample: key.1,
                a: place_a.clone(),
                b: place_b.clone(),
                fixed: *pb,
            });
        }
        if !x.is_empty() {
            cells.push(cell(model, spec, &x, &y));
        }
    }
    Comparison {
        a: a_id,
        b: b_id,
        cells,
        flips,
        more_flips,
    }
}

/// One cell's test over paired verdicts `x` (side a) and `y` (side b).
fn cell(model: &str, spec: &str, x: &[bool], y: &[bool]) -> CellComparison {
    // b − a: McNemar's b and c swapped, so a fix counts up.
    let tested = compare_passes(y, x, 0.95).ok();
    let interval = tested.as_ref().and_then(|t| t.interval);
    CellComparison {
        model: model.to_owned(),
        spec: spec.to_owned(),
        instances: x.len() as u64,
        a_rate: rate(x),
        b_rate: rate(y),
        fixed: tested.as_ref().map_or(0, |t| t.b),
        broke: tested.as_ref().map_or(0, |t| t.c),
        p: tested.as_ref().map(|t| t.p_value),
        low: interval.map(|i| i.low),
        high: interval.map(|i| i.high),
    }
}

/// The share of `passes` that hold.
fn rate(passes: &[bool]) -> f64 {
    passes.iter().filter(|p| **p).count() as f64 / passes.len().max(1) as f64
}

/// The golden transcript's answer for `record` (a run's record), drawn as
/// the drill-down draws a record: the same prompt, the golden response and
/// verdict; `None` when the transcript has no such line.
pub(super) fn golden_drill(
    record: &Record,
    spec: &crate::report::SpecInfo,
    golden_dir: &Path,
) -> Option<serde_json::Result<Drill>> {
    let lines = read_transcript(&transcript_path(golden_dir, &record.spec, &record.model)).ok()?;
    let line = lines
        .into_iter()
        .find(|l| l.instance == record.instance && l.sample == record.sample)?;
    let mut answer = record.clone();
    answer.scored = line.scored;
    answer.rules.clear();
    answer.failure = None;
    Some(drilled(&answer, spec, None))
}
