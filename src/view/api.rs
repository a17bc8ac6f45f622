//! The viewer's JSON: the run list, one run's cells, a page of its records,
//! one record as the journal holds it, and the comparison of two runs. Every
//! run is named by its id and found in the index, never by a path the
//! request spells, so no request reaches a file outside the results folder.

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::index::{Index, Run, Status};
use super::journal::{Cell, Line, read_line};
use crate::metrics::stats::{compare_passes, wilson};
use crate::verify::FailureKind;

/// Records a page holds at most.
pub(super) const PAGE_MAX: usize = 500;

/// Journal lines a search reads in one request; past them the page ends
/// with `next` to go on from.
const SCAN_MAX: usize = 20_000;

/// Flips a comparison lists at most.
const FLIPS_MAX: usize = 2_000;

/// One run in the list.
#[derive(Serialize)]
pub(super) struct RunSummary {
    id: String,
    created: Option<String>,
    status: Status,
    /// The command that goes on with an interrupted run.
    resume: Option<String>,
    models: Vec<String>,
    specs: Vec<String>,
    records: u64,
    passed: u64,
    errors: u64,
    unreadable: usize,
    cost: Option<f64>,
    currency: Option<String>,
    /// `i/n` of a shard of a plan run on several machines.
    shard: Option<String>,
    /// Shards of one plan share it: the page shows them as one run.
    plan: Option<String>,
    /// The tags of its specs (as their files say now).
    tags: Vec<String>,
}

/// The summary of `run` at `now`.
pub(super) fn summary(run: &Run, now: SystemTime) -> RunSummary {
    let status = run.status(now);
    let cells = &run.journal.cells;
    let sum = |f: fn(&Cell) -> u64| cells.iter().map(f).sum::<u64>();
    let mut models: Vec<String> = Vec::new();
    let mut specs: Vec<String> = Vec::new();
    if let Some(plan) = &run.plan {
        models.extend(plan.models.iter().map(|m| m.name.clone()));
    }
    for c in cells {
        if !models.contains(&c.model) {
            models.push(c.model.clone());
        }
        if !specs.contains(&c.spec) {
            specs.push(c.spec.clone());
        }
    }
    let costs: Vec<f64> = cells.iter().filter_map(|c| c.cost).collect();
    let plan = run.plan.as_ref();
    RunSummary {
        id: run.id.clone(),
        created: plan.map(|p| p.created.clone()),
        status,
        resume: (status == Status::Interrupted).then(|| format!("harness run --resume {}", run.id)),
        models,
        specs,
        records: sum(|c| c.records),
        passed: sum(|c| c.passed),
        errors: sum(|c| c.errors),
        unreadable: run.journal.unreadable(),
        cost: (!costs.is_empty()).then(|| costs.iter().sum()),
        currency: plan.map(|p| p.currency.clone()),
        shard: plan
            .and_then(|p| p.shard)
            .map(|s| format!("{}/{}", s.index + 1, s.count)),
        plan: plan
            .filter(|p| p.shard.is_some())
            .and_then(|p| p.plan_hash.clone()),
        tags: run.tags.clone(),
    }
}

/// Every run, newest first.
pub(super) fn runs(index: &Index) -> Vec<RunSummary> {
    let now = SystemTime::now();
    let mut out: Vec<RunSummary> = index.runs.values().map(|r| summary(r, now)).collect();
    out.sort_by(|a, b| b.id.cmp(&a.id));
    out
}

/// One cell with its pass rate's 95% Wilson interval.
#[derive(Serialize)]
pub(super) struct CellLine {
    #[serde(flatten)]
    cell: Cell,
    rate: Option<f64>,
    low: Option<f64>,
    high: Option<f64>,
}

/// One run: its summary and its cells.
#[derive(Serialize)]
pub(super) struct RunDetail {
    #[serde(flatten)]
    summary: RunSummary,
    cells: Vec<CellLine>,
}

/// The run `id`, `None` when the index has none.
pub(super) fn run(index: &Index, id: &str) -> Option<RunDetail> {
    let run = index.runs.get(id)?;
    Some(RunDetail {
        summary: summary(run, SystemTime::now()),
        cells: run.journal.cells.iter().map(CellLine::of).collect(),
    })
}

impl CellLine {
    /// `c` with its pass rate over every record (an error record fails, as
    /// in every report) and that rate's 95% Wilson interval.
    fn of(c: &Cell) -> CellLine {
        let interval = wilson(c.passed, c.records, 0.95);
        CellLine {
            cell: c.clone(),
            rate: (c.records > 0).then(|| c.passed as f64 / c.records as f64),
            low: interval.map(|i| i.low),
            high: interval.map(|i| i.high),
        }
    }
}

/// One cell of one run, for the trend of a (model, spec) across runs.
#[derive(Serialize)]
pub(super) struct TrendPoint {
    run: String,
    created: Option<String>,
    #[serde(flatten)]
    line: CellLine,
}

/// Every cell of every run, oldest run first: the history the trend chart
/// draws, one (model, spec) at a time.
pub(super) fn trends(index: &Index) -> Vec<TrendPoint> {
    let mut runs: Vec<&Run> = index.runs.values().collect();
    runs.sort_by(|a, b| {
        let created = |r: &Run| r.plan.as_ref().map(|p| p.created.clone());
        (created(a), &a.id).cmp(&(created(b), &b.id))
    });
    runs.iter()
        .flat_map(|run| {
            run.journal.cells.iter().map(|c| TrendPoint {
                run: run.id.clone(),
                created: run.plan.as_ref().map(|p| p.created.clone()),
                line: CellLine::of(c),
            })
        })
        .collect()
}

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
    /// The first line to look at.
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
    /// Its line in the journal (0-based): `/records/{n}` reads it.
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
    /// Where the next page starts; `None` at the journal's end.
    next: Option<usize>,
    /// Lines of the journal so far.
    lines: usize,
}

/// Whether `line` is one `query` keeps, before the text search.
fn keeps(line: &Line, query: &RecordQuery) -> bool {
    let outcome = match (line.cell, line.error, line.passed) {
        (None, _, _) => Outcome::Unreadable,
        (_, true, _) => Outcome::Error,
        (_, _, true) => Outcome::Pass,
        _ => Outcome::Fail,
    };
    query.cell.is_none_or(|c| line.cell == Some(c))
        && query.outcome.is_none_or(|o| o == outcome)
        && query.failure.is_none_or(|f| line.failure == Some(f))
}

/// The page of `run`'s records that `query` asks for.
pub(super) fn records(run: &Run, query: &RecordQuery) -> std::io::Result<RecordPage> {
    let limit = query.limit.unwrap_or(100).clamp(1, PAGE_MAX);
    let needle = query
        .q
        .as_ref()
        .map(|q| q.to_lowercase())
        .filter(|q| !q.is_empty());
    let lines = &run.journal.lines;
    let path = run.journal_path();
    let (mut items, mut scanned, mut at) = (Vec::new(), 0, query.from);
    while at < lines.len() && items.len() < limit {
        let line = &lines[at];
        at += 1;
        if !keeps(line, query) {
            continue;
        }
        if let Some(needle) = &needle {
            scanned += 1;
            let text = read_line(&path, line)?;
            if !String::from_utf8_lossy(&text)
                .to_lowercase()
                .contains(needle)
            {
                if scanned >= SCAN_MAX {
                    break;
                }
                continue;
            }
        }
        let cell = line.cell.map(|c| &run.journal.cells[c as usize]);
        items.push(RecordItem {
            n: at - 1,
            model: cell.map(|c| c.model.clone()),
            spec: cell.map(|c| c.spec.clone()),
            instance: line.instance,
            sample: line.sample,
            passed: line.passed,
            error: line.error,
            failure: line.failure,
            unreadable: line.cell.is_none(),
        });
    }
    Ok(RecordPage {
        items,
        next: (at < lines.len()).then_some(at),
        lines: lines.len(),
    })
}

/// The journal line `n` of `run`, as written (the journal keeps no secret).
pub(super) fn record(run: &Run, n: usize) -> Option<std::io::Result<Vec<u8>>> {
    let line = run.journal.lines.get(n)?;
    Some(read_line(&run.journal_path(), line))
}

/// One instance whose verdict differs between the two runs.
#[derive(Serialize)]
pub(super) struct Flip {
    model: String,
    spec: String,
    instance: u64,
    sample: u32,
    /// Its line in each run's journal.
    a: usize,
    b: usize,
    /// It passed in `b` and failed in `a`.
    fixed: bool,
}

/// One cell of a comparison: McNemar's exact test over the instances both
/// runs have, with Newcombe's interval of the difference (b − a).
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

/// Two runs compared.
#[derive(Serialize)]
pub(super) struct Comparison {
    a: String,
    b: String,
    cells: Vec<CellComparison>,
    flips: Vec<Flip>,
    /// Flips past [`FLIPS_MAX`], not listed.
    more_flips: usize,
}

/// Verdicts of one cell by (instance, sample): passed, and the journal line.
type CellVerdicts = BTreeMap<(u64, u32), (bool, usize)>;

/// The verdicts of `run` by (model, spec).
fn verdicts(run: &Run) -> BTreeMap<(String, String), CellVerdicts> {
    let mut out: BTreeMap<_, BTreeMap<_, _>> = BTreeMap::new();
    for (n, line) in run.journal.lines.iter().enumerate() {
        let Some(c) = line.cell.filter(|_| !line.error) else {
            continue;
        };
        let cell = &run.journal.cells[c as usize];
        out.entry((cell.model.clone(), cell.spec.clone()))
            .or_default()
            .insert((line.instance, line.sample), (line.passed, n));
    }
    out
}

/// Runs `a` and `b` compared cell by cell over the instances both answered.
pub(super) fn compare(a: &Run, b: &Run) -> Comparison {
    let (left, right) = (verdicts(a), verdicts(b));
    let mut cells = Vec::new();
    let mut flips = Vec::new();
    let mut more_flips = 0;
    for ((model, spec), first) in &left {
        let Some(second) = right.get(&(model.clone(), spec.clone())) else {
            continue;
        };
        let (mut x, mut y) = (Vec::new(), Vec::new());
        for (key, &(pa, na)) in first {
            let Some(&(pb, nb)) = second.get(key) else {
                continue;
            };
            x.push(pa);
            y.push(pb);
            if pa != pb {
                if flips.len() < FLIPS_MAX {
                    flips.push(Flip {
                        model: model.clone(),
                        spec: spec.clone(),
                        instance: key.0,
                        sample: key.1,
                        a: na,
                        b: nb,
                        fixed: pb,
                    });
                } else {
                    more_flips += 1;
                }
            }
        }
        if x.is_empty() {
            continue;
        }
        // b − a: McNemar's b and c swapped, so a fix counts up.
        let tested = compare_passes(&y, &x, 0.95).ok();
        cells.push(CellComparison {
            model: model.clone(),
            spec: spec.clone(),
            instances: x.len() as u64,
            a_rate: rate(&x),
            b_rate: rate(&y),
            fixed: tested.as_ref().map_or(0, |t| t.b),
            broke: tested.as_ref().map_or(0, |t| t.c),
            p: tested.as_ref().map(|t| t.p_value),
            low: tested.as_ref().and_then(|t| t.interval).map(|i| i.low),
            high: tested.as_ref().and_then(|t| t.interval).map(|i| i.high),
        });
    }
    Comparison {
        a: a.id.clone(),
        b: b.id.clone(),
        cells,
        flips,
        more_flips,
    }
}

/// The share of `passes` that hold.
fn rate(passes: &[bool]) -> f64 {
    passes.iter().filter(|p| **p).count() as f64 / passes.len().max(1) as f64
}
