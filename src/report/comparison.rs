//! Model comparison on sampled specs: pass rate and pass@k per model and
//! group, the best model (only when the spec's board says it is significantly
//! better than every other), each model's change against a baseline, and a tier.
//!
//! Built from the finished [`Summary`](crate::metrics::Summary) only, so the
//! terminal, Markdown and JSON show the same numbers.

use std::collections::BTreeMap;

use serde::Serialize;

use super::View;
use super::fit::{Cell, fitted};
use crate::metrics::{PassRates, stats};
use crate::text::{header_row, percent};

/// Shown where a number is missing.
const NONE: &str = "—";

/// Tier thresholds on the pass rate, highest first (the labels AIME leaderboards use).
const TIERS: &[(f64, &str)] = &[
    (0.50, "exceptional"),
    (0.30, "excellent"),
    (0.20, "very good"),
    (0.10, "good"),
    (0.05, "fair"),
];

/// The tier label of a pass rate in [0, 1].
pub(crate) fn tier(pass_rate: f64) -> &'static str {
    TIERS
        .iter()
        .find(|(min, _)| pass_rate >= *min)
        .map_or("needs improvement", |(_, label)| label)
}

/// One model's line of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ModelLine {
    /// The shown model name.
    pub model: String,
    /// The model's sampled numbers on the spec.
    #[serde(flatten)]
    pub rates: PassRates,
    /// [`tier`] of `pass_rate`.
    pub tier: &'static str,
    /// `pass_rate` minus the baseline's, when a baseline is set and found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vs_baseline: Option<f64>,
    /// Whether `vs_baseline` is significant (paired test on the instances both
    /// answered, α = 0.05); a difference that is not is no improvement.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vs_baseline_significant: Option<bool>,
    /// Report-only rule (a flexible extraction beside the strict one) → its numbers.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub alongside: BTreeMap<String, PassRates>,
    /// Group variable → value → its pass rate, pass@k and pass^k.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub groups: BTreeMap<String, BTreeMap<String, PassRates>>,
}

/// A group's pass rate, then pass@`top` and pass^`top` (when `top` > 1)
/// after slashes, where the group has them: `52.0% / 80.0% / 25.0%`.
pub(crate) fn group_cell(g: &PassRates, top: Option<u32>) -> String {
    let mut out = percent(g.pass_rate);
    if let Some((k, p)) = top.and_then(|k| Some((k, g.pass_at_k.get(&k)?))) {
        out += &format!(" / {}", percent(*p));
        if let Some(hat) = g.pass_hat_k.get(&k).filter(|_| k > 1) {
            out += &format!(" / {}", percent(*hat));
        }
    }
    out
}

/// The label of [`group_cell`]'s numbers: `pass rate / pass@4 / pass^4`.
pub(crate) fn group_label(pass_rate: &str, top: Option<u32>) -> String {
    match top {
        Some(1) => format!("{pass_rate} / pass@1"),
        Some(k) => format!("{pass_rate} / pass@{k} / pass^{k}"),
        None => pass_rate.to_owned(),
    }
}

/// The comparison of every model on one sampled spec.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Comparison {
    /// The spec id.
    pub spec: String,
    /// Its title.
    pub title: String,
    /// The k values shown.
    pub ks: Vec<u32>,
    /// Models in report order.
    pub models: Vec<ModelLine>,
    /// The model the spec's board ranks alone at the top: significantly better
    /// than every other (paired tests, Holm-adjusted); none when models tie.
    pub best: Option<String>,
    /// The baseline model's shown name, when set and found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
}

impl Comparison {
    /// Each grouping variable with every value any model has for it, in order:
    /// the columns of the per-group tables.
    pub(crate) fn group_columns(&self) -> Vec<(&String, Vec<&String>)> {
        let vars: std::collections::BTreeSet<&String> =
            self.models.iter().flat_map(|l| l.groups.keys()).collect();
        vars.into_iter()
            .map(|var| {
                let values: std::collections::BTreeSet<&String> = self
                    .models
                    .iter()
                    .filter_map(|l| l.groups.get(var))
                    .flat_map(|g| g.keys())
                    .collect();
                (var, values.into_iter().collect())
            })
            .collect()
    }
}

/// Whether shown name `shown` is the model `wanted` (also `<run>/<wanted>`).
fn names(shown: &str, wanted: &str) -> bool {
    shown == wanted || shown.rsplit_once('/').is_some_and(|(_, m)| m == wanted)
}

/// Comparisons of every spec whose cells have sampled metrics.
pub(crate) fn build(v: &View) -> Vec<Comparison> {
    let mut out = Vec::new();
    for spec in v.specs {
        let mut models = Vec::new();
        for m in v.models {
            let Some(sampled) = v.summary.cell(m, &spec.id).and_then(|c| c.sampled.as_ref()) else {
                continue;
            };
            let mut groups: BTreeMap<String, BTreeMap<String, PassRates>> = BTreeMap::new();
            for (var, values) in v.summary.groups(m, &spec.id).into_iter().flatten() {
                for (value, metrics) in values {
                    if let Some(s) = &metrics.sampled {
                        (groups.entry(var.clone()).or_default())
                            .insert(value.clone(), s.rates.clone());
                    }
                }
            }
            models.push(ModelLine {
                model: m.clone(),
                rates: sampled.rates.clone(),
                tier: tier(sampled.rates.pass_rate),
                vs_baseline: None,
                vs_baseline_significant: None,
                alongside: (sampled.alongside.iter())
                    .map(|(name, s)| (name.clone(), s.rates.clone()))
                    .collect(),
                groups,
            });
        }
        if models.is_empty() {
            continue;
        }
        let baseline = v
            .ctx
            .baseline
            .and_then(|b| models.iter().find(|l| names(&l.model, b)))
            .map(|l| (l.model.clone(), l.rates.pass_rate));
        if let Some((base_name, base)) = &baseline {
            for line in &mut models {
                line.vs_baseline = Some(line.rates.pass_rate - base);
                line.vs_baseline_significant = (line.model != *base_name)
                    .then(|| significant(v, &spec.id, &line.model, base_name));
            }
        }
        // The board ranks alone at the top only a model significantly better
        // than each other one; a higher number alone names no best model.
        let best = v.summary.boards.get(&spec.id).and_then(|board| {
            let top: Vec<_> = board.standings.iter().filter(|s| s.rank == 1).collect();
            (board.standings.len() > 1 && top.len() == 1).then(|| top[0].model.clone())
        });
        let mut ks: Vec<u32> = models
            .iter()
            .flat_map(|l| l.rates.pass_at_k.keys().copied())
            .collect();
        ks.sort_unstable();
        ks.dedup();
        out.push(Comparison {
            spec: spec.id.clone(),
            title: spec.title.clone(),
            ks,
            best,
            baseline: baseline.map(|(name, _)| name),
            models,
        });
    }
    out
}

/// Whether `model`'s pass rate on `spec` differs significantly from
/// `baseline`'s: a paired bootstrap over the instances both answered, α = 0.05.
fn significant(v: &View, spec: &str, model: &str, baseline: &str) -> bool {
    let outcomes = |m: &str| v.summary.outcomes.get(m).and_then(|s| s.get(spec));
    let (Some(x), Some(y)) = (outcomes(model), outcomes(baseline)) else {
        return false;
    };
    let samples = |o: &crate::metrics::Outcome| -> Vec<f64> {
        let mut s = vec![1.0; o.passed as usize];
        s.resize(o.samples as usize, 0.0);
        s
    };
    let (mut first, mut second) = (Vec::new(), Vec::new());
    for o in x {
        if let Ok(at) = y.binary_search_by_key(&o.instance, |b| b.instance) {
            first.push(samples(o));
            second.push(samples(&y[at]));
        }
    }
    let cfg = stats::Bootstrap::default();
    stats::compare_scores(&first, &second, &cfg).is_ok_and(|c| c.p_value < stats::DEFAULT_ALPHA)
}

/// Report-only rule names of a comparison, each with (model, its numbers) in model order.
pub(crate) fn alongside(c: &Comparison) -> BTreeMap<&str, Vec<(&str, &PassRates)>> {
    let mut out: BTreeMap<&str, Vec<(&str, &PassRates)>> = BTreeMap::new();
    for line in &c.models {
        for (rule, numbers) in &line.alongside {
            out.entry(rule).or_default().push((&line.model, numbers));
        }
    }
    out
}

/// The k values of pass^k worth a column: pass^1 is the mean accuracy again.
pub(crate) fn hat_ks(c: &Comparison) -> Vec<u32> {
    c.ks.iter().copied().filter(|k| *k > 1).collect()
}

/// A sampled spec's comparison for the terminal: mean accuracy, pass@k,
/// pass^k at the largest k, maj@n, tier and change against the baseline per
/// model (every pass^k, with intervals, is in the Markdown and HTML
/// reports), then the report-only rules and mean accuracy / pass@(largest k)
/// / pass^(largest k) per group.
pub(crate) fn terminal(w: &super::lang::Words, c: &Comparison, fit: super::fit::Fit) -> String {
    use super::lang::fill;
    let has_maj = c.models.iter().any(|l| l.rates.maj.is_some());
    let hat = c.ks.last().copied().filter(|k| *k > 1);
    let mut header = vec![w.model.to_owned(), w.pass_rate.to_owned()];
    header.extend(c.ks.iter().map(|k| format!("pass@{k}")));
    header.extend(hat.map(|k| format!("pass^{k}")));
    if has_maj {
        header.push("maj".to_owned());
    }
    header.push(w.t.tier.to_owned());
    if c.baseline.is_some() {
        header.push(w.t.vs_baseline.to_owned());
    }
    let rate = |p: Option<f64>| -> Cell { (p.map_or(NONE.into(), percent), p) };
    let rows: Vec<Vec<Cell>> = c
        .models
        .iter()
        .map(|l| {
            let mut row = vec![(l.model.clone(), None), rate(Some(l.rates.pass_rate))];
            row.extend(c.ks.iter().map(|k| rate(l.rates.pass_at_k.get(k).copied())));
            row.extend(hat.map(|k| rate(l.rates.pass_hat_k.get(&k).copied())));
            if has_maj {
                row.push(rate(l.rates.maj));
            }
            row.push((l.tier.to_owned(), None));
            if c.baseline.is_some() {
                row.push((baseline_change(l), None));
            }
            row
        })
        .collect();
    let heading = super::fit::wrap(&fill(w.t.sampled, &[&c.title]), fit.width);
    let mut out = format!(
        "\n{heading}{}",
        fitted(&header, &rows, fit, Some(w.t.metric))
    );
    let best = best_line(w, c);
    if !best.is_empty() {
        out += &super::fit::wrap(&best, fit.width);
    }
    for (rule, lines) in alongside(c) {
        let heading = fill(w.t.report_only, &[&c.title, &rule]);
        let mut header = vec![w.model.to_owned(), w.pass_rate.to_owned()];
        header.extend(c.ks.iter().map(|k| format!("pass@{k}")));
        let rows: Vec<Vec<Cell>> = lines
            .iter()
            .map(|(model, g)| {
                let mut row = vec![((*model).to_owned(), None), rate(Some(g.pass_rate))];
                row.extend(c.ks.iter().map(|k| rate(g.pass_at_k.get(k).copied())));
                row
            })
            .collect();
        let heading = super::fit::wrap(&heading, fit.width);
        out += &format!(
            "\n{heading}{}",
            fitted(&header, &rows, fit, Some(w.t.metric))
        );
    }
    let top = c.ks.last().copied();
    for (var, values) in c.group_columns() {
        let label = group_label(w.pass_rate, top);
        let heading = fill(w.t.sampled_by, &[&c.title, &var, &label]);
        let heading = super::fit::wrap(&heading, fit.width);
        let header = header_row(w.model, values.iter().map(|v| (*v).clone()));
        let rows: Vec<Vec<Cell>> = c
            .models
            .iter()
            .map(|l| {
                let mut row = vec![(l.model.clone(), None)];
                for value in &values {
                    let g = l.groups.get(var).and_then(|g| g.get(*value));
                    let text = g.map_or(NONE.into(), |g| group_cell(g, top));
                    row.push((text, g.map(|g| g.pass_rate)));
                }
                row
            })
            .collect();
        out += &format!("\n{heading}{}", fitted(&header, &rows, fit, Some(var)));
    }
    out
}

/// The best-model line: the model ranked alone at the top, or that none is
/// significantly better; the baseline after it when one is set.
pub(crate) fn best_line(w: &super::lang::Words, c: &Comparison) -> String {
    let mut out = match &c.best {
        Some(best) => super::lang::fill(w.t.best, &[best]),
        None if c.models.len() > 1 => w.t.best_none.to_owned(),
        None => return String::new(),
    };
    if let Some(base) = &c.baseline {
        out += &super::lang::fill(w.t.baseline, &[base]);
    }
    out
}

/// A model's change against the baseline: `+12.5 pp`, with `n.s.` when the
/// paired test finds no significant difference.
pub(crate) fn baseline_change(l: &ModelLine) -> String {
    match (l.vs_baseline, l.vs_baseline_significant) {
        (None, _) => NONE.to_owned(),
        (Some(d), Some(false)) => format!("{} n.s.", points(d)),
        (Some(d), _) => points(d),
    }
}

/// A signed difference of fractions in percentage points: `+12.5 pp`.
pub(crate) fn points(delta: f64) -> String {
    format!("{:+.1} pp", delta * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_follow_the_seed_thresholds() {
        let cases = [
            (0.75, "exceptional"),
            (0.50, "exceptional"),
            (0.4999, "excellent"),
            (0.30, "excellent"),
            (0.20, "very good"),
            (0.10, "good"),
            (0.05, "fair"),
            (0.0499, "needs improvement"),
            (0.0, "needs improvement"),
        ];
        for (accuracy, label) in cases {
            assert_eq!(tier(accuracy), label, "accuracy {accuracy}");
        }
        assert_eq!(points(0.125), "+12.5 pp");
        assert_eq!(points(-0.05), "-5.0 pp");
        assert!(names("run1/m", "m") && names("m", "m") && !names("mm", "m"));
    }
}
