//! The HTML report's data besides the instance rows: runs, specs with their
//! leaderboards, models with their totals (and a pool's endpoints), cells,
//! comparisons, flaky instances.
//!
//! Every model and cell has a `cost` in the report's currency (none when no
//! answer had a price), which the page plots as its third scatter axis.

use std::collections::BTreeMap;

use serde::Serialize;

use super::super::View;
use super::super::comparison::Comparison;
use super::super::flaky::Flaky;
use super::super::runs::RunComparison;
use super::rows::GoldenCell;
use crate::metrics::stats::{DEFAULT_ALPHA, DEFAULT_LEVEL};
use crate::metrics::{
    Board, EndpointStats, Estimate, Headline, MeanMeasure, Metrics, SampledMetrics,
};

/// Everything but the rows.
#[derive(Serialize)]
pub(super) struct Head<'a> {
    /// Report-wide facts.
    pub meta: Meta<'a>,
    /// Specs in report order.
    pub specs: Vec<Spec<'a>>,
    /// Models in report order.
    pub models: Vec<Model<'a>>,
    /// Model × spec cells with records.
    pub cells: Vec<Cell<'a>>,
    /// The overall leaderboard.
    pub leaderboard: Option<&'a Board>,
    /// Sampled specs: pass@k and friends per model.
    pub sampled: &'a [Comparison],
    /// Two or more runs: the later ones against the first.
    pub runs: Option<&'a RunComparison>,
    /// Flaky instances.
    pub flaky: &'a Flaky,
    /// Golden transcripts compared, per (model, spec); none when no golden directory was given.
    pub golden: Option<&'a [GoldenCell]>,
    /// `--sweep` curves: per spec and swept model, each setting's headline
    /// against its mean reasoning tokens and cost.
    pub sweeps: Vec<super::super::sweep::Sweep>,
}

/// Report-wide facts.
#[derive(Serialize)]
pub(super) struct Meta<'a> {
    /// When the report's runs were made (UTC).
    pub timestamp: &'a str,
    /// Run ids.
    pub runs: &'a [String],
    /// The harness that wrote the page.
    pub version: &'static str,
    /// Significance level of every test.
    pub alpha: f64,
    /// Confidence level of every interval.
    pub level: f64,
    /// Characters of a text kept in the page (longer ones are clipped).
    pub text_chars: usize,
    /// The currency costs are in.
    pub currency: &'a str,
    /// The page's language: `en`, `ru`.
    pub lang: &'static str,
    /// `[English, translation]` pairs of the page's text (none for English).
    pub words: &'static [(&'static str, &'static str)],
}

/// A spec: the JSON report's, and its groups.
#[derive(Serialize)]
pub(super) struct Spec<'a> {
    /// Id, title and leaderboard.
    #[serde(flatten)]
    pub spec: super::super::json::Spec<'a>,
    /// `[report] group_by`.
    pub group_by: &'a [String],
}

/// A model and its totals.
#[derive(Serialize)]
pub(super) struct Model<'a> {
    /// Shown name.
    pub name: &'a str,
    /// Its name in its run.
    pub model: &'a str,
    /// Its run id (none for a planned model without records).
    pub run: Option<String>,
    /// Mean of category accuracies.
    pub total: Option<f64>,
    /// Records.
    pub records: u64,
    /// Errors, latency, tokens and cost of its records.
    #[serde(flatten)]
    pub load: Load,
    /// Output tokens per second of timed records.
    pub tokens_per_sec: Option<f64>,
    /// Its cost divided by its correct answers, none without a price or a correct answer.
    pub cost_per_correct: Option<f64>,
    /// A pool's endpoints by base URL: requests, errors and latency of each.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoints: Option<&'a BTreeMap<String, EndpointStats>>,
}

/// What a model's or a cell's records took: errors, latency, tokens, cost.
#[derive(Serialize, Default)]
pub(super) struct Load {
    /// Request errors.
    pub errors: u64,
    /// Median latency of timed records, ms.
    pub p50_ms: Option<u64>,
    /// Mean output tokens.
    pub tokens_out: Option<f64>,
    /// Mean reasoning tokens per answer that counted them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_reasoning: Option<f64>,
    /// Answers cut off while still reasoning, apart from the other failures.
    #[serde(skip_serializing_if = "is_zero")]
    pub unfinished_reasoning: u64,
    /// What the answers cost, none when no answer had a price.
    pub cost: Option<f64>,
}

impl Load {
    /// The load of the records `m` sums up.
    fn of(m: &Metrics) -> Load {
        Load {
            errors: m.errors,
            p50_ms: m.latency_ms.map(|l| l.p50),
            tokens_out: m.tokens_out.mean,
            tokens_reasoning: m.tokens_reasoning.mean,
            unfinished_reasoning: m.unfinished_reasoning(),
            cost: m.cost.and_then(|c| c.amount),
        }
    }
}

/// One model × spec cell.
#[derive(Serialize)]
pub(super) struct Cell<'a> {
    /// Model index.
    pub m: usize,
    /// Spec index.
    pub s: usize,
    /// Both numbers, the headline's interval and counts.
    #[serde(flatten)]
    pub numbers: Numbers,
    /// Errors, latency, tokens and cost.
    #[serde(flatten)]
    pub load: Load,
    /// pass@k, pass^k, maj@n (per-problem lists left out).
    pub sampled: Option<SampledMetrics>,
    /// `group_by`: variable → value → the group's numbers.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub groups: BTreeMap<&'a str, BTreeMap<&'a str, Numbers>>,
    /// With `[choices]`: accuracy, `acc_norm`, calibration and the
    /// reliability diagram's bins.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub choices: Option<&'a crate::metrics::choices::ChoiceMetrics>,
}

/// The numbers of a cell or of one `group_by` group of it.
#[derive(Serialize)]
pub(super) struct Numbers {
    /// Which number is the headline (`pass_rate`, `mean_score`).
    pub headline: Headline,
    /// The headline number.
    pub score: f64,
    /// The share of records that passed every rule.
    pub pass_rate: f64,
    /// The mean weighted score (partial credit).
    pub mean_score: f64,
    /// The headline's 95% interval.
    pub interval: Option<Estimate>,
    /// Passed records.
    pub passed: u64,
    /// Records.
    pub total: u64,
    /// Measure name (`CER`, `WER`) → its mean over the measured answers.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub measures: BTreeMap<String, MeanMeasure>,
}

impl Numbers {
    /// The numbers of the records `m` sums up.
    fn of(m: &Metrics) -> Numbers {
        Numbers {
            headline: m.headline,
            score: m.score(),
            pass_rate: m.pass_rate,
            mean_score: m.mean_score,
            interval: m.interval,
            passed: m.passed,
            total: m.total,
            measures: m.measures.clone(),
        }
    }
}

/// The head of `v`'s page.
pub(super) fn head<'a>(
    v: &'a View,
    sampled: &'a [Comparison],
    golden: Option<&'a [GoldenCell]>,
) -> Head<'a> {
    let models = v
        .models
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let origin = v.origins.get(i);
            let total = v.summary.model(name);
            Model {
                name,
                model: origin.map_or(name.as_str(), |o| o.model.as_str()),
                run: origin
                    .and_then(|o| o.run)
                    .map(|j| super::super::journals::run_id(v.ctx, j)),
                total: v.summary.category_mean(name),
                records: total.map_or(0, |t| t.total),
                load: total.map(Load::of).unwrap_or_default(),
                tokens_per_sec: total.and_then(|t| t.tokens_per_sec),
                cost_per_correct: total.and_then(|t| t.cost).and_then(|c| c.per_correct),
                endpoints: v.summary.endpoints.get(name.as_str()),
            }
        })
        .collect();
    let mut cells = Vec::new();
    for (m, name) in v.models.iter().enumerate() {
        for (s, spec) in v.specs.iter().enumerate() {
            if let Some(c) = v.summary.cell(name, &spec.id) {
                cells.push(cell(v, (m, s), c));
            }
        }
    }
    Head {
        meta: Meta {
            timestamp: v.ctx.timestamp,
            runs: v.ctx.run_ids,
            version: env!("CARGO_PKG_VERSION"),
            alpha: DEFAULT_ALPHA,
            level: DEFAULT_LEVEL,
            text_chars: super::episode::TEXT_CHARS,
            currency: v.ctx.currency,
            lang: v.ctx.lang.code(),
            words: v.words().html,
        },
        specs: v
            .specs
            .iter()
            .map(|s| Spec {
                spec: super::super::json::Spec::of(v, s),
                group_by: &s.group_by,
            })
            .collect(),
        models,
        cells,
        leaderboard: v.summary.leaderboard.as_ref(),
        sampled,
        runs: v.runs.as_ref(),
        flaky: v.flaky,
        golden,
        sweeps: super::super::sweep::sweeps(v.models, v.specs, v.summary),
    }
}

fn cell<'a>(v: &'a View, (m, s): (usize, usize), c: &'a Metrics) -> Cell<'a> {
    let groups = v
        .summary
        .groups(&v.models[m], &v.specs[s].id)
        .into_iter()
        .flatten()
        .map(|(var, values)| {
            let values = values
                .iter()
                .map(|(value, g)| (value.as_str(), Numbers::of(g)))
                .collect();
            (var.as_str(), values)
        })
        .collect();
    Cell {
        m,
        s,
        numbers: Numbers::of(c),
        load: Load::of(c),
        sampled: c.sampled.as_ref().map(|s| SampledMetrics {
            per_problem: Vec::new(),
            ..s.clone()
        }),
        groups,
        choices: c.choices.as_ref(),
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
