//! Model comparison on sampled specs: mean accuracy and pass@k per model and
//! group, the best model, each model's change against a baseline, and a tier.
//!
//! Built from the finished [`Summary`](crate::metrics::Summary) only, so the
//! terminal, Markdown and JSON show the same numbers.

use std::collections::BTreeMap;

use serde::Serialize;

use super::View;
use super::fit::{Cell, fitted};
use crate::text::{header_row, percent};

/// Shown where a number is missing.
const NONE: &str = "—";

/// Tier thresholds on mean accuracy, highest first (the labels AIME leaderboards use).
const TIERS: &[(f64, &str)] = &[
    (0.50, "exceptional"),
    (0.30, "excellent"),
    (0.20, "very good"),
    (0.10, "good"),
    (0.05, "fair"),
];

/// The tier label of a mean accuracy in [0, 1].
pub fn tier(accuracy: f64) -> &'static str {
    TIERS
        .iter()
        .find(|(min, _)| accuracy >= *min)
        .map_or("needs improvement", |(_, label)| label)
}

/// One model's line of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelLine {
    /// The shown model name.
    pub model: String,
    /// Mean accuracy over samples (the expected pass@1).
    pub accuracy: f64,
    /// k → pass@k.
    pub pass_at_k: BTreeMap<u32, f64>,
    /// k → pass^k: all k samples pass (how reliably, where pass@k says how possibly).
    pub pass_hat_k: BTreeMap<u32, f64>,
    /// maj@n, when the spec asks for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maj: Option<f64>,
    /// [`tier`] of `accuracy`.
    pub tier: &'static str,
    /// `accuracy` minus the baseline's, when a baseline is set and found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vs_baseline: Option<f64>,
    /// Report-only rule (a flexible extraction beside the strict one) → its numbers.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub alongside: BTreeMap<String, GroupLine>,
    /// Group variable → value → (mean accuracy, pass@k).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub groups: BTreeMap<String, BTreeMap<String, GroupLine>>,
}

/// One group's numbers for one model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupLine {
    /// Mean accuracy over samples.
    pub accuracy: f64,
    /// k → pass@k.
    pub pass_at_k: BTreeMap<u32, f64>,
}

impl GroupLine {
    /// Mean accuracy, then pass@`top` after a slash when the group has it.
    pub fn with_pass_at(&self, top: Option<u32>) -> String {
        match top.and_then(|k| self.pass_at_k.get(&k)) {
            Some(p) => format!("{} / {}", percent(self.accuracy), percent(*p)),
            None => percent(self.accuracy),
        }
    }
}

/// The comparison of every model on one sampled spec.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The spec id.
    pub spec: String,
    /// Its title.
    pub title: String,
    /// The k values shown.
    pub ks: Vec<u32>,
    /// Models in report order.
    pub models: Vec<ModelLine>,
    /// The model with the highest mean accuracy (the first on ties).
    pub best: Option<String>,
    /// The baseline model's shown name, when set and found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
}

impl Comparison {
    /// Each grouping variable with every value any model has for it, in order:
    /// the columns of the per-group tables.
    pub fn group_columns(&self) -> Vec<(&String, Vec<&String>)> {
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
            let mut groups: BTreeMap<String, BTreeMap<String, GroupLine>> = BTreeMap::new();
            for (var, values) in v.summary.groups(m, &spec.id).into_iter().flatten() {
                for (value, metrics) in values {
                    if let Some(s) = &metrics.sampled {
                        groups.entry(var.clone()).or_default().insert(
                            value.clone(),
                            GroupLine {
                                accuracy: s.mean_accuracy,
                                pass_at_k: s.pass_at_k.clone(),
                            },
                        );
                    }
                }
            }
            models.push(ModelLine {
                model: m.clone(),
                accuracy: sampled.mean_accuracy,
                pass_at_k: sampled.pass_at_k.clone(),
                pass_hat_k: sampled.pass_hat_k.clone(),
                maj: sampled.maj,
                tier: tier(sampled.mean_accuracy),
                vs_baseline: None,
                alongside: sampled
                    .alongside
                    .iter()
                    .map(|(name, s)| {
                        let line = GroupLine {
                            accuracy: s.mean_accuracy,
                            pass_at_k: s.pass_at_k.clone(),
                        };
                        (name.clone(), line)
                    })
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
            .map(|l| (l.model.clone(), l.accuracy));
        if let Some((_, base)) = &baseline {
            for line in &mut models {
                line.vs_baseline = Some(line.accuracy - base);
            }
        }
        let mut best: Option<&ModelLine> = None;
        for line in &models {
            if best.is_none_or(|b| line.accuracy > b.accuracy) {
                best = Some(line);
            }
        }
        let mut ks: Vec<u32> = models
            .iter()
            .flat_map(|l| l.pass_at_k.keys().copied())
            .collect();
        ks.sort_unstable();
        ks.dedup();
        out.push(Comparison {
            spec: spec.id.clone(),
            title: spec.title.clone(),
            ks,
            best: best.map(|b| b.model.clone()),
            baseline: baseline.map(|(name, _)| name),
            models,
        });
    }
    out
}

/// Report-only rule names of a comparison, each with (model, its numbers) in model order.
pub(crate) fn alongside(c: &Comparison) -> BTreeMap<&str, Vec<(&str, &GroupLine)>> {
    let mut out: BTreeMap<&str, Vec<(&str, &GroupLine)>> = BTreeMap::new();
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

/// A sampled spec's comparison for the terminal: mean accuracy, pass@k, maj@n,
/// tier and change against the baseline per model (pass^k, which needs the room,
/// is in the Markdown and HTML reports), then the report-only rules and mean
/// accuracy / pass@(largest k) per group.
pub(crate) fn terminal(c: &Comparison, color: bool) -> String {
    let has_maj = c.models.iter().any(|l| l.maj.is_some());
    let mut header = vec!["model".to_owned(), "mean acc".to_owned()];
    header.extend(c.ks.iter().map(|k| format!("pass@{k}")));
    if has_maj {
        header.push("maj".to_owned());
    }
    header.push("tier".to_owned());
    if c.baseline.is_some() {
        header.push("vs baseline".to_owned());
    }
    let rate = |p: Option<f64>| -> Cell { (p.map_or(NONE.into(), percent), p) };
    let rows: Vec<Vec<Cell>> = c
        .models
        .iter()
        .map(|l| {
            let mut row = vec![(l.model.clone(), None), rate(Some(l.accuracy))];
            row.extend(c.ks.iter().map(|k| rate(l.pass_at_k.get(k).copied())));
            if has_maj {
                row.push(rate(l.maj));
            }
            row.push((l.tier.to_owned(), None));
            if c.baseline.is_some() {
                row.push((l.vs_baseline.map_or(NONE.into(), points), None));
            }
            row
        })
        .collect();
    let heading = super::fit::wrap(&format!("{} (sampled):", c.title), super::fit::WIDTH);
    let mut out = format!(
        "\n{heading}{}",
        fitted(&header, &rows, color, Some("metric"))
    );
    if let Some(best) = &c.best {
        out += &format!("best: {best}");
        if let Some(base) = &c.baseline {
            out += &format!(" (baseline: {base})");
        }
        out.push('\n');
    }
    for (rule, lines) in alongside(c) {
        let heading = format!("{}: {rule} (report only):", c.title);
        let mut header = vec!["model".to_owned(), "mean acc".to_owned()];
        header.extend(c.ks.iter().map(|k| format!("pass@{k}")));
        let rows: Vec<Vec<Cell>> = lines
            .iter()
            .map(|(model, g)| {
                let mut row = vec![((*model).to_owned(), None), rate(Some(g.accuracy))];
                row.extend(c.ks.iter().map(|k| rate(g.pass_at_k.get(k).copied())));
                row
            })
            .collect();
        let heading = super::fit::wrap(&heading, super::fit::WIDTH);
        out += &format!(
            "\n{heading}{}",
            fitted(&header, &rows, color, Some("metric"))
        );
    }
    let top = c.ks.last().copied();
    for (var, values) in c.group_columns() {
        let label = top.map_or("mean acc".to_owned(), |k| format!("mean acc / pass@{k}"));
        let heading =
            super::fit::wrap(&format!("{} by {var}: {label}", c.title), super::fit::WIDTH);
        let header = header_row("model", values.iter().map(|v| (*v).clone()));
        let rows: Vec<Vec<Cell>> = c
            .models
            .iter()
            .map(|l| {
                let mut row = vec![(l.model.clone(), None)];
                for value in &values {
                    let g = l.groups.get(var).and_then(|g| g.get(*value));
                    let text = g.map_or(NONE.into(), |g| g.with_pass_at(top));
                    row.push((text, g.map(|g| g.accuracy)));
                }
                row
            })
            .collect();
        out += &format!("\n{heading}{}", fitted(&header, &rows, color, Some(var)));
    }
    out
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
