//! Folding a journal's records into a [`Summary`]: one accumulator per
//! (model, spec) cell, per `group_by` group and per model.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::accumulate::{Accumulator, estimate, latency};
use super::problems::{Keep, Problems};
use super::significance::{self, Board, Entry, Scores};
use super::{Headline, Metrics, Outcome, SamplingPlan, Summary};
use crate::run::record::Record;

/// Per variable, per value: the breakdown of one cell by `group_by`.
pub(crate) type Groups<T> = BTreeMap<String, BTreeMap<String, T>>;

/// The group a record falls in for `var`: strings as is, other values as JSON, `-` when unset.
pub(crate) fn group_value(r: &Record, var: &str) -> String {
    match crate::verify::lookup(&r.vars, var) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "-".to_owned(),
    }
}

/// Accumulators for every (model, spec) cell and every model, keyed by shown model name.
#[derive(Debug, Default)]
pub(crate) struct MetricsBuilder {
    cells: BTreeMap<String, BTreeMap<String, Accumulator>>,
    models: BTreeMap<String, Accumulator>,
    /// Spec id → the variables its cells are broken down by.
    group_by: BTreeMap<String, Vec<String>>,
    /// Model → spec → breakdown.
    groups: BTreeMap<String, BTreeMap<String, Groups<Accumulator>>>,
    /// Spec id → what its `[sampling]` asks to report.
    sampling: BTreeMap<String, SamplingPlan>,
    /// Spec id → its headline, when not the pass rate.
    headlines: BTreeMap<String, Headline>,
    /// Per model, its pool's endpoints.
    endpoints: super::endpoints::EndpointTally,
}

impl MetricsBuilder {
    /// An empty builder.
    pub(crate) fn new() -> MetricsBuilder {
        MetricsBuilder::default()
    }

    /// Also breaks the cells of spec `spec` down by each of the variables `vars`.
    pub(crate) fn group_by(mut self, spec: &str, vars: &[String]) -> MetricsBuilder {
        if !vars.is_empty() {
            self.group_by.insert(spec.to_owned(), vars.to_vec());
        }
        self
    }

    /// Reports pass@k for `plan.ks` (and maj@n when asked) on spec `spec`.
    pub(crate) fn sampling(mut self, spec: &str, plan: SamplingPlan) -> MetricsBuilder {
        self.sampling.insert(spec.to_owned(), plan);
        self
    }

    /// Ranks and shows spec `spec` by `headline` (the pass rate unless set).
    pub(crate) fn headline(mut self, spec: &str, headline: Headline) -> MetricsBuilder {
        self.headlines.insert(spec.to_owned(), headline);
        self
    }

    /// The headline of `spec`.
    fn headline_of(&self, spec: &str) -> Headline {
        self.headlines.get(spec).copied().unwrap_or_default()
    }

    /// What a cell or group of `spec` keeps per record: answers only when its plan may vote.
    fn keep(&self, spec: &str) -> Keep {
        if self.sampling.contains_key(spec) {
            Keep::Answers
        } else {
            Keep::Outcomes
        }
    }

    /// Counts `r` under the model name `model` (which may differ from `r.model`) and `r.spec`.
    pub(crate) fn add(&mut self, model: &str, r: &Record) {
        self.endpoints.add(model, r);
        let keep = self.keep(&r.spec);
        let headline = self.headline_of(&r.spec);
        if let Some(vars) = self.group_by.get(&r.spec) {
            let groups = self
                .groups
                .entry(model.to_owned())
                .or_default()
                .entry(r.spec.clone())
                .or_default();
            for var in vars {
                groups
                    .entry(var.clone())
                    .or_default()
                    .entry(group_value(r, var))
                    .or_insert_with(|| Accumulator::new(keep, headline))
                    .add(r);
            }
        }
        // Look up by &str first so the common case allocates nothing. A model keeps
        // only totals: its problems and latencies are its cells', read at finish.
        if !self.models.contains_key(model) {
            let totals = Accumulator::new(Keep::Counts, self.model_headline());
            self.models.insert(model.to_owned(), totals);
            self.cells.insert(model.to_owned(), BTreeMap::new());
        }
        self.models.get_mut(model).expect("inserted above").add(r);
        let specs = self.cells.get_mut(model).expect("inserted above");
        if !specs.contains_key(&r.spec) {
            specs.insert(r.spec.clone(), Accumulator::new(keep, headline));
        }
        specs.get_mut(&r.spec).expect("inserted above").add(r);
    }

    /// The headline of a model's totals: the pass rate when every spec's is,
    /// else the mean score.
    fn model_headline(&self) -> Headline {
        if self.headlines.values().all(|h| *h == Headline::PassRate) {
            Headline::PassRate
        } else {
            Headline::MeanScore
        }
    }

    /// The finished metrics of every cell and model, with the leaderboards.
    pub(crate) fn finish(mut self) -> Summary {
        let plans = self.sampling;
        for specs in self.cells.values_mut() {
            specs.values_mut().for_each(Accumulator::settle);
        }
        let models = self
            .models
            .into_iter()
            .map(|(m, a)| {
                let metrics = model_metrics(a, &self.cells[&m]);
                (m, metrics)
            })
            .collect();
        // Each cell's problems become its instances' scores and outcomes once it is finished.
        let mut scores: BTreeMap<String, BTreeMap<String, Scores>> = BTreeMap::new();
        let mut outcomes: BTreeMap<String, BTreeMap<String, Vec<Outcome>>> = BTreeMap::new();
        let mut cells: BTreeMap<String, BTreeMap<String, Metrics>> = BTreeMap::new();
        for (m, specs) in self.cells {
            let finished = cells.entry(m.clone()).or_default();
            for (s, acc) in specs {
                let (metrics, problems) = acc.finish_keeping(plans.get(&s), true);
                outcomes
                    .entry(m.clone())
                    .or_default()
                    .insert(s.clone(), instance_outcomes(&problems));
                scores
                    .entry(s.clone())
                    .or_default()
                    .insert(m.clone(), Scores::new(problems));
                finished.insert(s, metrics);
            }
        }
        let mut summary = Summary {
            endpoints: self.endpoints.finish(),
            cells,
            models,
            groups: self
                .groups
                .into_iter()
                .map(|(m, specs)| {
                    let specs = specs
                        .into_iter()
                        .map(|(s, vars)| {
                            let groups = finish_groups(vars, plans.get(&s));
                            (s, groups)
                        })
                        .collect();
                    (m, specs)
                })
                .collect(),
            boards: BTreeMap::new(),
            leaderboard: None,
            outcomes,
        };
        summary.boards = scores
            .iter()
            .map(|(spec, models)| {
                let entries = models
                    .iter()
                    .filter_map(|(m, s)| {
                        let cell = summary.cell(m, spec)?;
                        let entry = Entry {
                            score: cell.score(),
                            interval: cell.interval.map(|e| e.interval()),
                            scores: s,
                        };
                        Some((m.as_str(), entry))
                    })
                    .collect();
                (spec.clone(), significance::spec_board(&entries))
            })
            .collect();
        summary.leaderboard = leaderboard(&summary, &scores);
        summary
    }
}

/// The overall board: the spec's own when there is one spec, else the stratified one.
fn leaderboard(
    summary: &Summary,
    scores: &BTreeMap<String, BTreeMap<String, Scores>>,
) -> Option<Board> {
    if scores.len() == 1 {
        return summary.boards.values().next().cloned();
    }
    let ranked = comparable(summary, scores);
    let means: BTreeMap<&str, f64> = ranked
        .iter()
        .filter_map(|m| Some((*m, summary.category_mean(m)?)))
        .collect();
    if means.is_empty() {
        return None;
    }
    let data = scores
        .iter()
        .filter(|(_, models)| models.keys().any(|m| ranked.contains(m.as_str())))
        .map(|(spec, models)| {
            let models = models
                .iter()
                .filter(|(m, _)| ranked.contains(m.as_str()))
                .map(|(m, s)| (m.as_str(), s))
                .collect();
            (spec.as_str(), models)
        })
        .collect();
    Some(significance::overall_board(&means, &data))
}

/// The models the overall board ranks: a mean over other categories is
/// another number, so only models that ran the same categories are ranked
/// together. Of the groups that did, the one with the most models (then the
/// most categories) is ranked; the others stand apart, unranked.
fn comparable<'a>(
    summary: &Summary,
    scores: &'a BTreeMap<String, BTreeMap<String, Scores>>,
) -> BTreeSet<&'a str> {
    let mut ran: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (spec, models) in scores {
        for model in models.keys() {
            if summary.cell(model, spec).is_some() {
                ran.entry(model.as_str()).or_default().insert(spec.as_str());
            }
        }
    }
    let mut groups: BTreeMap<&BTreeSet<&str>, BTreeSet<&str>> = BTreeMap::new();
    for (model, specs) in &ran {
        groups.entry(specs).or_default().insert(model);
    }
    groups
        .into_iter()
        .max_by_key(|(specs, models)| (models.len(), specs.len()))
        .map(|(_, models)| models)
        .unwrap_or_default()
}

/// A model's metrics: its totals, with the interval and latencies of its
/// (settled) cells' records. Totals span specs with and without samples:
/// pass@k is per spec only.
fn model_metrics(totals: Accumulator, cells: &BTreeMap<String, Accumulator>) -> Metrics {
    let mut metrics = totals.finish();
    // Cells in spec order, each in instance order: the order of (spec, instance) keys.
    metrics.interval = estimate(cells.values().flat_map(|c| c.problems().iter()));
    let mut times: Vec<u64> = cells
        .values()
        .flat_map(|c| c.latencies())
        .copied()
        .collect();
    times.sort_unstable();
    metrics.latency_ms = latency(&times);
    metrics
}

/// One cell's instances' outcomes, from its settled problems.
fn instance_outcomes(problems: &Problems) -> Vec<Outcome> {
    let outcome = |p: super::problems::Problem| {
        let s = p.scores();
        Outcome {
            instance: p.instance,
            passed: p.n_correct() as u32,
            samples: p.n_total() as u32,
            score: s.iter().sum::<f64>() / s.len().max(1) as f64,
        }
    };
    // Sized up front: grown by doubling, a large cell's list would leave its old copies behind.
    let mut outcomes = Vec::with_capacity(problems.iter().count());
    outcomes.extend(problems.iter().map(outcome));
    outcomes
}

fn finish_groups(vars: Groups<Accumulator>, plan: Option<&SamplingPlan>) -> Groups<Metrics> {
    vars.into_iter()
        .map(|(var, values)| {
            let values = values
                .into_iter()
                .map(|(v, a)| (v, a.finish_with(plan, false)))
                .collect();
            (var, values)
        })
        .collect()
}
