//! `results/reports/report_<stamp>.json`: every metric, machine-readable.
//! Key order is fixed by the struct fields and the ordered maps inside.

use std::io;

use serde::Serialize;

use crate::metrics::{Groups, Metrics};

use super::View;

#[derive(Serialize)]
struct Report<'a> {
    timestamp: &'a str,
    runs: &'a [String],
    /// How model-written code was confined, when the runs had any.
    #[serde(skip_serializing_if = "Option::is_none")]
    sandbox: Option<String>,
    specs: Vec<Spec<'a>>,
    models: Vec<Model<'a>>,
    /// Sampled specs: models compared on mean accuracy and pass@k.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    comparisons: Vec<super::comparison::Comparison>,
    /// What the run cost, when anything had a price.
    #[serde(skip_serializing_if = "Option::is_none")]
    cost: Option<super::costs::RunCost<'a>>,
    /// The overall leaderboard: tie groups on the mean of category accuracies.
    leaderboard: Option<&'a crate::metrics::Board>,
    /// Later runs against the first, when the report covers several.
    #[serde(skip_serializing_if = "Option::is_none")]
    run_comparison: Option<&'a super::runs::RunComparison>,
    /// Instances whose samples disagree (specs with several samples or runs).
    #[serde(skip_serializing_if = "is_stable")]
    flaky: &'a super::flaky::Flaky,
    /// `--sweep` cells per spec: each setting's headline against its mean
    /// reasoning tokens and cost.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    sweeps: Vec<super::sweep::Sweep>,
}

fn is_stable(f: &&super::flaky::Flaky) -> bool {
    f.stability.is_empty()
}

/// A spec as the JSON report gives it (the HTML page adds its groups).
#[derive(Serialize)]
pub(crate) struct Spec<'a> {
    id: &'a str,
    title: &'a str,
    /// The number its cells show and its board ranks: `pass_rate` or `mean_score`.
    headline: crate::metrics::Headline,
    /// The spec's leaderboard: tie groups, each model against the best, detectable gap.
    board: Option<&'a crate::metrics::Board>,
}

impl<'a> Spec<'a> {
    /// Spec `s` of the report, with its leaderboard.
    pub(crate) fn of(v: &View<'a>, s: &'a super::SpecInfo) -> Spec<'a> {
        Spec {
            id: &s.id,
            title: &s.title,
            headline: s.headline,
            board: v.summary.boards.get(&s.id),
        }
    }
}

#[derive(Serialize)]
struct Model<'a> {
    name: &'a str,
    /// Mean of the categories' headline numbers: the total the leaderboard ranks.
    category_mean: Option<f64>,
    /// Over all the model's records.
    total: Option<&'a Metrics>,
    /// Only specs with records, in report order.
    specs: Vec<Cell<'a>>,
    /// A pool's endpoints: requests, errors and latency of each.
    #[serde(skip_serializing_if = "Option::is_none")]
    endpoints: Option<&'a std::collections::BTreeMap<String, crate::metrics::EndpointStats>>,
}

#[derive(Serialize)]
struct Cell<'a> {
    spec: &'a str,
    metrics: &'a Metrics,
    /// `group_by` breakdowns: variable → value → metrics.
    #[serde(skip_serializing_if = "Option::is_none")]
    groups: Option<&'a Groups<Metrics>>,
}

/// The JSON report, pretty-printed with a trailing newline.
pub(crate) fn render(v: &View) -> io::Result<String> {
    let report = Report {
        timestamp: v.ctx.timestamp,
        runs: v.ctx.run_ids,
        sandbox: super::sandbox_line(v.ctx),
        specs: v.specs.iter().map(|s| Spec::of(v, s)).collect(),
        comparisons: super::comparison::build(v),
        leaderboard: v.summary.leaderboard.as_ref(),
        run_comparison: v.runs.as_ref(),
        flaky: v.flaky,
        sweeps: super::sweep::sweeps(v.models, v.specs, v.summary),
        cost: super::costs::json(v),
        models: v
            .models
            .iter()
            .map(|m| Model {
                name: m,
                category_mean: v.summary.category_mean(m),
                total: v.summary.model(m),
                endpoints: v.summary.endpoints.get(m.as_str()),
                specs: v
                    .specs
                    .iter()
                    .filter_map(|s| {
                        Some(Cell {
                            spec: &s.id,
                            metrics: v.summary.cell(m, &s.id)?,
                            groups: v.summary.groups(m, &s.id),
                        })
                    })
                    .collect(),
            })
            .collect(),
    };
    let mut text = serde_json::to_string_pretty(&report).map_err(io::Error::other)?;
    text.push('\n');
    Ok(text)
}
