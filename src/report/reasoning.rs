//! Reasoning beside the answers: per cell, the answers that kept reasoning,
//! the mean reasoning tokens per answer the server counted, and the answers
//! cut off while still reasoning (`unfinished_reasoning`) counted apart from
//! the other failures. The terminal and the Markdown report show one table
//! when some cell has any of it; the CSV report then appends three columns
//! (so other reports keep their columns); JSON and HTML carry the numbers in
//! each cell's metrics. The reasoning's text is never shown here.

use super::View;
use crate::metrics::Metrics;
use crate::text::num;

/// Shown where no answer's server counted reasoning tokens.
const NONE: &str = "—";

/// Whether any cell of the report has reasoning to show.
pub(crate) fn any(v: &View) -> bool {
    cells(v).next().is_some()
}

/// The cells with reasoning, as (model, spec title, metrics), in report order.
fn cells<'a>(v: &'a View) -> impl Iterator<Item = (&'a str, &'a str, &'a Metrics)> {
    super::cell_table::cells(v, |c| c.reasons().then_some(c))
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
    super::cell_table::properties(&names, csv_cells(c))
}

/// The rows of the reasoning table.
pub(crate) fn rows<'a>(v: &'a View) -> Vec<super::cell_table::Row<'a>> {
    cells(v)
        .map(|(m, title, c)| (m, title, numbers(c).to_vec()))
        .collect()
}
