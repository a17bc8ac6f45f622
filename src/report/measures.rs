//! Measures beside the pass rate: for every spec whose rules measure a number
//! of each answer (the `cer` rule's CER or WER), its mean per model and per
//! `group_by` group, next to the spec's headline number. The terminal and the
//! Markdown report show one table per such spec; the CSV report appends one
//! column per measure (only when some cell has one, so other reports keep
//! their columns); JSON and HTML carry the means in each cell's metrics.

use std::collections::{BTreeMap, BTreeSet};

use super::View;
use super::fit::{Cell, fitted};
use super::lang::fill;
use crate::metrics::{MeanMeasure, Metrics};
use crate::text::{md_cell, percent, table};

/// Shown where a model or group has no value of a measure.
const NONE: &str = "—";

/// A measure's mean as reports print it: three decimals, like the `cer` rule's detail.
pub(crate) fn value(m: &MeanMeasure) -> String {
    format!("{:.3}", m.mean)
}

/// A measure's column name: `CER ↓` where smaller is better.
fn column(name: &str, lower_is_better: bool) -> String {
    if lower_is_better {
        format!("{name} ↓")
    } else {
        name.to_owned()
    }
}

/// Every measure any cell of `spec` has, by name, with its direction.
fn names(v: &View, spec: &str) -> BTreeMap<String, bool> {
    v.models
        .iter()
        .filter_map(|m| v.summary.cell(m, spec))
        .flat_map(|c| &c.measures)
        .map(|(name, m)| (name.clone(), m.lower_is_better))
        .collect()
}

/// Every measure of the report, by name: the CSV report's extra columns.
pub(crate) fn all_names(v: &View) -> Vec<String> {
    let names: BTreeSet<String> = v
        .specs
        .iter()
        .flat_map(|s| names(v, &s.id).into_keys())
        .collect();
    names.into_iter().collect()
}

/// The CSV cells of `c` under `names`: each mean with four decimals, empty when absent.
pub(crate) fn csv_cells(names: &[String], c: &Metrics) -> Vec<String> {
    names
        .iter()
        .map(|n| {
            c.measures
                .get(n)
                .map_or(String::new(), |m| format!("{:.4}", m.mean))
        })
        .collect()
}

/// The rows of `spec`'s table, each a model, a group and its metrics: every
/// model's cell, then its `group_by` groups in variable and value order.
fn rows<'a>(v: &'a View, spec: &str) -> Vec<(&'a str, String, &'a Metrics)> {
    let mut out = Vec::new();
    for m in v.models {
        let Some(cell) = v.summary.cell(m, spec) else {
            continue;
        };
        out.push((m.as_str(), String::new(), cell));
        for (var, values) in v.summary.groups(m, spec).into_iter().flatten() {
            for (value, g) in values {
                out.push((m.as_str(), format!("{var}={value}"), g));
            }
        }
    }
    out
}

/// The cells after model and group: the headline number, then each measure.
fn numbers(c: &Metrics, names: &BTreeMap<String, bool>) -> Vec<String> {
    let mut out = vec![percent(c.score())];
    out.extend(
        names
            .keys()
            .map(|n| c.measures.get(n).map_or(NONE.into(), value)),
    );
    out
}

/// The header: model, group, the headline's name and each measure's column.
fn header(v: &View, spec: &super::SpecInfo, names: &BTreeMap<String, bool>) -> Vec<String> {
    let w = v.words();
    let mut header = vec![
        w.model.to_owned(),
        w.t.measures_group.to_owned(),
        w.headline(spec.headline).to_owned(),
    ];
    header.extend(names.iter().map(|(n, lower)| column(n, *lower)));
    header
}

/// The terminal tables, one per spec with measures (empty when none has).
pub(crate) fn terminal(v: &View) -> String {
    let mut out = String::new();
    let w = v.words();
    for spec in v.specs {
        let names = names(v, &spec.id);
        if names.is_empty() {
            continue;
        }
        let rows: Vec<Vec<Cell>> = rows(v, &spec.id)
            .into_iter()
            .map(|(m, group, c)| {
                // Group values come from instance variables: shown with controls visible, clipped.
                let group = super::fit::label(&group);
                let mut row: Vec<Cell> = vec![(m.to_owned(), None), (group, None)];
                let numbers = numbers(c, &names);
                let score = Some(c.score());
                row.extend(
                    numbers
                        .into_iter()
                        .enumerate()
                        .map(|(i, n)| (n, score.filter(|_| i == 0))),
                );
                row
            })
            .collect();
        let heading = fill(w.t.measures, &[&crate::text::visible_line(&spec.title)]);
        out += "\n";
        out += &super::fit::wrap(&heading, v.ctx.width);
        out += &fitted(&header(v, spec, &names), &rows, v.fit(), None);
    }
    out
}

/// The Markdown section (empty when no spec has measures).
pub(crate) fn markdown(v: &View) -> String {
    let w = &v.words().md;
    let mut s = String::new();
    for spec in v.specs {
        let names = names(v, &spec.id);
        if names.is_empty() {
            continue;
        }
        if s.is_empty() {
            s.push_str(w.measures);
        }
        s.push_str(&fill(w.measures_spec, &[&md_cell(&spec.title)]));
        let header: Vec<String> = header(v, spec, &names)
            .iter()
            .map(|h| md_cell(&super::capitalized(h)))
            .collect();
        let rows: Vec<Vec<String>> = rows(v, &spec.id)
            .into_iter()
            .map(|(m, group, c)| {
                let mut row = vec![format!("**{}**", md_cell(m)), md_cell(&group)];
                row.extend(numbers(c, &names));
                row
            })
            .collect();
        let mut center = vec![true; header.len()];
        center[..2].fill(false);
        s.push_str(&table(&header, &center, &rows));
    }
    if !s.is_empty() {
        s.push_str(w.measures_note);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_mark_lower_is_better() {
        assert_eq!(column("CER", true), "CER ↓");
        assert_eq!(column("BLEU", false), "BLEU");
        let m = MeanMeasure {
            mean: 0.25,
            count: 3,
            lower_is_better: true,
        };
        assert_eq!(value(&m), "0.250");
    }
}
