//! Test-time compute curves: the cells of a `--sweep` (models named
//! `MODEL [KEY=VALUE]`), per spec, each setting's headline number against its
//! mean reasoning tokens per answer and its cost. Markdown shows a table, JSON
//! the numbers and the HTML page a chart; the paired tests between settings
//! are the spec boards' own, which compare every two models.
//!
//! A cell is known by its name alone, so a report rebuilt from journals
//! (`harness report`) finds the same sweeps as the run's.

use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use crate::metrics::{Estimate, Headline, Metrics, Summary};
use crate::text::{inline_code, md_cell};

use super::SpecInfo;

/// A sweep cell's name: `MODEL [KEY=VALUE]`, the key one of reasoning's.
static CELL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(.+) \[(effort|budget_tokens|enabled)=([^\]=]+)\]$").expect("valid regex")
});

/// One setting of a sweep on one spec.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct SweepPoint {
    /// The cell's model name, as every other report names it.
    pub model: String,
    /// The swept key's value.
    pub value: String,
    /// Records.
    pub answers: u64,
    /// The spec's headline number.
    pub score: f64,
    /// Its 95% interval.
    pub interval: Option<Estimate>,
    /// Mean reasoning tokens per answer, when the answers report tokens.
    pub reasoning_tokens: Option<f64>,
    /// What the cell's answers cost, when they had a price.
    pub cost: Option<f64>,
}

/// One model swept over one key on one spec.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Sweep {
    /// The spec id.
    pub spec: String,
    /// The swept model's own name.
    pub model: String,
    /// The key swept: `effort`, `budget_tokens`, `enabled`.
    pub key: String,
    /// What `score` is.
    pub headline: Headline,
    /// The settings in the report's model order (the order `--sweep` gave).
    pub points: Vec<SweepPoint>,
}

/// `(model, key, value)` of a sweep cell's name.
pub(crate) fn cell_of(name: &str) -> Option<(&str, &str, &str)> {
    let caps = CELL.captures(name)?;
    let part = |i| caps.get(i).map_or("", |m| m.as_str());
    Some((part(1), part(2), part(3)))
}

/// Mean reasoning tokens per answer of a cell: the server's count of
/// them where its wire reports one; else every generated token (Ollama
/// counts reasoning among its output only), what an effort or a budget changes.
pub(crate) fn mean_reasoning_tokens(cell: &Metrics) -> Option<f64> {
    cell.tokens_reasoning.mean.or(cell.tokens_out.mean)
}

/// Every sweep among `models` with records on `specs`: per spec, per swept
/// model and key, its cells in `models`' order. A model with one cell is no curve.
pub(crate) fn sweeps(models: &[String], specs: &[SpecInfo], summary: &Summary) -> Vec<Sweep> {
    let mut found: Vec<Sweep> = Vec::new();
    for spec in specs {
        for name in models {
            let (Some((model, key, value)), Some(cell)) =
                (cell_of(name), summary.cell(name, &spec.id))
            else {
                continue;
            };
            let point = SweepPoint {
                model: name.clone(),
                value: value.to_owned(),
                answers: cell.total,
                score: cell.score(),
                interval: cell.interval,
                reasoning_tokens: mean_reasoning_tokens(cell),
                cost: cell.cost.and_then(|c| c.amount),
            };
            let same = |s: &&mut Sweep| s.spec == spec.id && s.model == model && s.key == key;
            match found.iter_mut().find(same) {
                Some(sweep) => sweep.points.push(point),
                None => found.push(Sweep {
                    spec: spec.id.clone(),
                    model: model.to_owned(),
                    key: key.to_owned(),
                    headline: cell.headline,
                    points: vec![point],
                }),
            }
        }
    }
    found.retain(|s| s.points.len() > 1);
    found
}

/// The Markdown section: per sweep, a table of setting, headline, interval,
/// mean reasoning tokens and cost. Empty without sweeps.
pub(crate) fn markdown(v: &super::View) -> String {
    use std::fmt::Write;
    let found = sweeps(v.models, v.specs, v.summary);
    if found.is_empty() {
        return String::new();
    }
    let w = &v.words().md;
    let mut out = String::from(w.sweeps);
    out.push_str(&super::lang::fill(w.sweeps_note, &[&v.ctx.currency]));
    let dash = || "—".to_owned();
    for s in &found {
        let title = (v.specs.iter().find(|i| i.id == s.spec)).map_or(s.spec.as_str(), |i| &i.title);
        let (model, title) = (inline_code(&s.model), md_cell(title));
        let line = super::lang::fill(w.sweep, &[&model, &title, &s.key]);
        let [interval, tokens, cost] = w.sweep_header;
        let headline = super::capitalized(v.words().headline(s.headline));
        let _ = writeln!(out, "{line}\n");
        let _ = writeln!(
            out,
            "| `{}` | {headline} | {interval} | {tokens} | {cost} |",
            s.key
        );
        out.push_str("|---|---:|---|---:|---:|\n");
        for p in &s.points {
            let interval = p.interval.map_or_else(dash, |i| {
                format!("{:.1}–{:.1}%", i.low * 100.0, i.high * 100.0)
            });
            let tokens = p.reasoning_tokens.map_or_else(dash, |t| format!("{t:.1}"));
            let cost = p.cost.map_or_else(dash, |c| format!("{c:.6}"));
            let value = md_cell(&p.value);
            let score = p.score * 100.0;
            let _ = writeln!(
                out,
                "| {value} | {score:.1}% | {interval} | {tokens} | {cost} |"
            );
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_known_by_their_names() {
        let cases = [
            ("m [effort=low]", Some(("m", "effort", "low"))),
            (
                "openai:x@http://h/v1 [budget_tokens=1024]",
                Some(("openai:x@http://h/v1", "budget_tokens", "1024")),
            ),
            ("m [enabled=false]", Some(("m", "enabled", "false"))),
            ("m [temperature=1]", None),
            ("m", None),
            ("[effort=low]", None),
        ];
        for (name, want) in cases {
            assert_eq!(cell_of(name), want, "{name}");
        }
    }
}
