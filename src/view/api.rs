//! The viewer's JSON about runs: the run list, one run's cells, and the
//! history of every cell across runs. Pages of records are in
//! [`super::records`], comparisons in [`super::compare`]. Every run is named
//! by its id and found in the index, never by a path the request spells, so
//! no request reaches a file outside the results folder.

use std::time::SystemTime;

use serde::Serialize;

use super::index::{Index, Status};
use super::journal::Cell;
use super::shown::Shown;
use crate::metrics::stats::wilson;

/// One run in the list.
#[derive(Serialize)]
pub(super) struct RunSummary {
    id: String,
    created: Option<String>,
    status: Status,
    /// The commands that go on with its interrupted run folders.
    resume: Vec<String>,
    models: Vec<String>,
    specs: Vec<String>,
    records: u64,
    passed: u64,
    errors: u64,
    unreadable: usize,
    cost: Option<f64>,
    currency: Option<String>,
    /// A shard's `i/n` (as `--shard` spells it), or a set's `k of n shards`.
    shard: Option<String>,
    /// The run folders of a set of shards, in shard order.
    shards: Vec<String>,
    /// The tags of its specs (as their files say now).
    tags: Vec<String>,
    /// The git commits its specs were at, when known (shards may differ).
    commits: Vec<String>,
}

/// Pushes `item` onto `list` unless it is there.
fn push_new(list: &mut Vec<String>, item: &str) {
    if !list.iter().any(|x| x == item) {
        list.push(item.to_owned());
    }
}

/// The summary of `shown` at `now`: its run folders' counts added up.
pub(super) fn summary(shown: &Shown, now: SystemTime) -> RunSummary {
    let statuses: Vec<Status> = shown.members.iter().map(|r| r.status(now)).collect();
    let cells = cells(shown);
    let sum = |f: fn(&Cell) -> u64| cells.iter().map(f).sum::<u64>();
    let (mut models, mut specs, mut tags) = (Vec::new(), Vec::new(), Vec::new());
    let mut commits = Vec::new();
    for run in &shown.members {
        let commit = run.plan.as_ref().and_then(|p| p.commit.as_deref());
        commit.into_iter().for_each(|c| push_new(&mut commits, c));
        let plan_models = run.plan.iter().flat_map(|p| &p.models);
        plan_models.for_each(|m| push_new(&mut models, &m.name));
        let spec_tags = run.specs.iter().flat_map(|s| &s.tags);
        spec_tags.for_each(|t| push_new(&mut tags, t));
    }
    for c in &cells {
        push_new(&mut models, &c.model);
        push_new(&mut specs, &c.spec);
    }
    let costs: Vec<f64> = cells.iter().filter_map(|c| c.cost).collect();
    let plans = || shown.members.iter().filter_map(|r| r.plan.as_ref());
    let shard = plans().find_map(|p| p.shard).map(|s| {
        if shown.is_set() {
            format!("{} of {} shards", shown.members.len(), s.count)
        } else {
            format!("{}/{}", s.index, s.count) // as `--shard` spells it
        }
    });
    let interrupted = shown.members.iter().zip(&statuses);
    let resume = interrupted
        .filter(|(_, s)| **s == Status::Interrupted)
        .map(|(r, _)| format!("harness run --resume {}", r.id))
        .collect();
    RunSummary {
        id: shown.id.clone(),
        created: plans().map(|p| p.created.clone()).min(),
        status: combined(&statuses),
        resume,
        models,
        specs,
        records: sum(|c| c.records),
        passed: sum(|c| c.passed),
        errors: sum(|c| c.errors),
        unreadable: shown.members.iter().map(|r| r.journal.unreadable()).sum(),
        cost: (!costs.is_empty()).then(|| costs.iter().sum()),
        currency: plans().next().map(|p| p.currency.clone()),
        shard,
        shards: if shown.is_set() {
            shown.members.iter().map(|r| r.id.clone()).collect()
        } else {
            Vec::new()
        },
        tags,
        commits,
    }
}

/// Where run folders stand together: running while any runs, else
/// interrupted when any stopped short, else finished.
fn combined(statuses: &[Status]) -> Status {
    [Status::Running, Status::Interrupted]
        .into_iter()
        .find(|s| statuses.contains(s))
        .unwrap_or(Status::Finished)
}

/// The cells of `shown`: each (model, spec) once, its run folders' counts added.
fn cells(shown: &Shown) -> Vec<Cell> {
    let mut out: Vec<Cell> = Vec::new();
    for c in shown.members.iter().flat_map(|r| &r.journal.cells) {
        let Some(same) = out
            .iter_mut()
            .find(|o| o.model == c.model && o.spec == c.spec)
        else {
            out.push(c.clone());
            continue;
        };
        same.records += c.records;
        same.passed += c.passed;
        same.errors += c.errors;
        if let Some(cost) = c.cost {
            *same.cost.get_or_insert(0.0) += cost;
        }
    }
    out
}

/// The (model, spec) of each of `shown`'s cells, in the order the run page
/// lists them: what a page of records' `cell` counts.
pub(super) fn cell_names(shown: &Shown) -> Vec<(String, String)> {
    cells(shown)
        .into_iter()
        .map(|c| (c.model, c.spec))
        .collect()
}

/// Every run, newest first.
pub(super) fn runs(index: &Index) -> Vec<RunSummary> {
    let now = SystemTime::now();
    let mut out: Vec<RunSummary> = index.shown().iter().map(|r| summary(r, now)).collect();
    out.sort_by(|a, b| (&b.created, &b.id).cmp(&(&a.created, &a.id)));
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

/// The run shown as `id`, `None` when the index has none.
pub(super) fn run(index: &Index, id: &str) -> Option<RunDetail> {
    let shown = index.find(id)?;
    Some(RunDetail {
        summary: summary(&shown, SystemTime::now()),
        cells: cells(&shown).iter().map(CellLine::of).collect(),
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
    let now = SystemTime::now();
    let mut shown: Vec<(RunSummary, Vec<Cell>)> = index
        .shown()
        .iter()
        .map(|s| (summary(s, now), cells(s)))
        .collect();
    shown.sort_by(|(a, _), (b, _)| (&a.created, &a.id).cmp(&(&b.created, &b.id)));
    shown
        .iter()
        .flat_map(|(run, cells)| {
            cells.iter().map(|c| TrendPoint {
                run: run.id.clone(),
                created: run.created.clone(),
                line: CellLine::of(c),
            })
        })
        .collect()
}
