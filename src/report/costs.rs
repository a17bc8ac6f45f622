//! Costs in the reports: per model × spec cell, per model with the judge
//! apart, what the response cache saved and the cost per correct answer,
//! then the run's total. Shown only when some record has a price, so runs of
//! unpriced models read as before; an unpriced cell shows "—", never 0.

use std::fmt::Write as _;

use super::View;
use crate::metrics::CostStats;
use crate::text::{md_cell, money, table};

/// Shown for an unknown cost.
const NONE: &str = "—";

/// `amount`, marked `≈` when some of it was estimated with the tokenizer.
fn amount(c: Option<&CostStats>) -> String {
    match c.and_then(|c| Some((c.amount?, c.estimated > 0))) {
        Some((a, true)) => format!("≈{}", money(a)),
        Some((a, false)) => money(a),
        None => NONE.to_owned(),
    }
}

fn optional(value: Option<f64>) -> String {
    value.map_or(NONE.to_owned(), money)
}

/// The table rows: model, each spec's cost, then total, judge, saved and per correct.
fn rows(v: &View) -> Vec<Vec<String>> {
    v.models
        .iter()
        .map(|m| {
            let mut row = vec![m.clone()];
            for s in v.specs {
                row.push(amount(
                    v.summary.cell(m, &s.id).and_then(|c| c.cost.as_ref()),
                ));
            }
            let total = v.summary.model(m).and_then(|t| t.cost.as_ref());
            row.push(amount(total));
            row.push(optional(total.and_then(|c| c.judge)));
            row.push(optional(total.map(|c| c.saved)));
            row.push(optional(total.and_then(|c| c.per_correct)));
            row
        })
        .collect()
}

/// One sentence on the whole run: spent, the judge apart, saved, estimated.
fn run_line(run: &CostStats, currency: &str, words: [&str; 4]) -> String {
    let [spent, judge, saved, estimated] = words;
    let mut out = format!("{spent}: {} {currency}", optional(run.amount));
    if let Some(j) = run.judge {
        let _ = write!(out, "; {judge} {} {currency}", money(j));
    }
    let _ = write!(out, "; {saved} {} {currency}", money(run.saved));
    if run.estimated > 0 {
        let _ = write!(out, "; {estimated}: {}", run.estimated);
    }
    out
}

/// The terminal's cost table and run line (empty when nothing had a price).
pub(super) fn terminal(v: &View) -> String {
    let Some(run) = v.summary.cost() else {
        return String::new();
    };
    let currency = v.ctx.currency;
    let w = &v.words().t;
    let mut header = vec![super::lang::fill(w.cost, &[&currency])];
    header.extend(v.specs.iter().map(|s| s.title.clone()));
    header.extend(w.cost_header.map(str::to_owned));
    let rows: Vec<Vec<(String, Option<f64>)>> = rows(v)
        .into_iter()
        .map(|r| r.into_iter().map(|c| (c, None)).collect())
        .collect();
    let words = w.cost_run;
    format!(
        "\n{}{}\n",
        // Categories across do not fit 80 columns: fitted pivots or splits them.
        super::fit::fitted(
            &header,
            &rows,
            super::fit::Fit::plain(v.ctx.width),
            Some(&header[0])
        ),
        run_line(&run, currency, words)
    )
}

/// The Markdown section «Стоимость» (empty when nothing had a price).
pub(super) fn markdown(v: &View) -> String {
    let Some(run) = v.summary.cost() else {
        return String::new();
    };
    let currency = v.ctx.currency;
    let words = v.words();
    let w = &words.md;
    let mut s = String::from(w.cost);
    let _ = writeln!(s, "{}", super::lang::fill(w.cost_note, &[&currency]));
    let mut header = vec![super::capitalized(words.model)];
    header.extend(v.specs.iter().map(|s| md_cell(&s.title)));
    header.extend(w.cost_header.map(str::to_owned));
    let rows: Vec<Vec<String>> = rows(v)
        .into_iter()
        .map(|mut r| {
            r[0] = format!("**{}**", md_cell(&r[0]));
            r
        })
        .collect();
    let mut center = vec![true; header.len()];
    center[0] = false;
    s.push_str(&table(&header, &center, &rows));
    let _ = writeln!(s, "\n{}.", run_line(&run, currency, w.cost_run));
    s
}

/// The JSON report's run cost: the currency and the run's totals.
#[derive(serde::Serialize)]
pub(super) struct RunCost<'a> {
    currency: &'a str,
    #[serde(flatten)]
    total: CostStats,
}

/// The run cost for the JSON report, when anything had a price.
pub(super) fn json<'a>(v: &View<'a>) -> Option<RunCost<'a>> {
    Some(RunCost {
        currency: v.ctx.currency,
        total: v.summary.cost()?,
    })
}
