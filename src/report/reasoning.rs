//! Reasoning beside the answers: per cell, the answers that kept reasoning,
//! the mean reasoning tokens per answer the server counted, and the answers
//! cut off while still reasoning (`unfinished_reasoning`) counted apart from
//! the other failures. The terminal and the Markdown report show one table
//! when some cell has any of it; the CSV report then appends three columns
//! (so other reports keep their columns); JSON and HTML carry the numbers in
//! each cell's metrics. The reasoning's text is never shown here.

use super::View;
use super::fit::{Cell, fitted};
use crate::metrics::Metrics;
use crate::text::{md_cell, num, table};

/// Shown where no answer's server counted reasoning tokens.
const NONE: &str = "—";

/// Whether any cell of the report has reasoning to show.
pub(crate) fn any(v: &View) -> bool {
    cells(v).next().is_some()
}

/// The cells with reasoning, as (model, spec title, metrics), in report order.
fn cells<'a>(v: &'a View) -> impl Iterator<Item = (&'a str, &'a str, &'a Metrics)> {
    v.models.iter().flat_map(move |m| {
        v.specs.iter().filter_map(move |s| {
            let c = v.summary.cell(m, &s.id)?;
            c.reasons().then_some((m.as_str(), s.title.as_str(), c))
        })
    })
}

/// A cell's numbers: answers with reasoning, mean reasoning tokens, unfinished, other failures.
fn numbers(c: &Metrics) -> [String; 4] {
    let unfinished = c.unfinished_reasoning();
    let failed = c.total - c.passed;
    let other = failed.saturating_sub(c.errors + unfinished);
    [
        c.with_reasoning.to_string(),
        num(c.tokens_reasoning.mean, 1, NONE),
        unfinished.to_string(),
        other.to_string(),
    ]
}

/// The CSV cells of `c`, under [`super::lang::Words::csv_reasoning`].
pub(crate) fn csv_cells(c: &Metrics) -> Vec<String> {
    let [with, tokens, unfinished, _] = numbers(c);
    let tokens = if c.tokens_reasoning.unknown() {
        String::new()
    } else {
        tokens
    };
    vec![with, tokens, unfinished]
}

/// The JUnit properties of a cell with reasoning, named like the CSV columns.
pub(crate) fn junit_properties(c: &Metrics) -> Vec<(String, String)> {
    let names = [
        "with_reasoning",
        "tokens_reasoning_mean",
        "unfinished_reasoning",
    ];
    names
        .into_iter()
        .zip(csv_cells(c))
        .filter(|(_, value)| !value.is_empty())
        .map(|(name, value)| (name.to_owned(), value))
        .collect()
}

/// The terminal table (empty when no cell has reasoning).
pub(crate) fn terminal(v: &View) -> String {
    if !any(v) {
        return String::new();
    }
    let w = v.words();
    let header = w.reasoning_header.map(str::to_owned);
    let rows: Vec<Vec<Cell>> = cells(v)
        .map(|(m, title, c)| {
            let mut row: Vec<Cell> = vec![
                (m.to_owned(), None),
                (crate::text::visible_line(title), None),
            ];
            row.extend(numbers(c).into_iter().map(|n| (n, None)));
            row
        })
        .collect();
    let mut out = String::from("\n");
    out += &super::fit::wrap(w.t.reasoning, v.ctx.width);
    out += &fitted(&header, &rows, v.fit(), None);
    out
}

/// The Markdown section (empty when no cell has reasoning).
pub(crate) fn markdown(v: &View) -> String {
    if !any(v) {
        return String::new();
    }
    let w = v.words();
    let header: Vec<String> = w
        .reasoning_header
        .iter()
        .map(|h| md_cell(&super::capitalized(h)))
        .collect();
    let rows: Vec<Vec<String>> = cells(v)
        .map(|(m, title, c)| {
            let mut row = vec![format!("**{}**", md_cell(m)), md_cell(title)];
            row.extend(numbers(c));
            row
        })
        .collect();
    let mut center = vec![true; header.len()];
    center[..2].fill(false);
    let mut s = w.md.reasoning.to_owned();
    s.push_str(&table(&header, &center, &rows));
    s.push_str(w.md.reasoning_note);
    s
}
