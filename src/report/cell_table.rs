//! A table of one row per (model, spec) cell, as the terminal and the
//! Markdown report print the sections beside the pass rate (reasoning,
//! multiple choice): model and spec title, then the section's numbers.

use super::View;
use super::fit::{Cell, fitted};
use crate::metrics::Metrics;
use crate::text::{md_cell, table};

/// One row: the model, the spec's title and the numbers after them.
pub(crate) type Row<'a> = (&'a str, &'a str, Vec<String>);

/// The cells a section shows, in report order, as (model, spec title, what
/// `pick` takes from the cell's metrics): those it takes something from.
pub(crate) fn cells<'a, T>(
    v: &'a View,
    pick: impl Fn(&'a Metrics) -> Option<T> + Copy + 'a,
) -> impl Iterator<Item = (&'a str, &'a str, T)> {
    v.models.iter().flat_map(move |m| {
        v.specs.iter().filter_map(move |s| {
            let taken = pick(v.summary.cell(m, &s.id)?)?;
            Some((m.as_str(), s.title.as_str(), taken))
        })
    })
}

/// The terminal table under `heading` (empty when there is no row).
pub(crate) fn terminal(v: &View, heading: &str, header: &[&str], rows: Vec<Row>) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let header: Vec<String> = header.iter().map(|h| (*h).to_owned()).collect();
    let rows: Vec<Vec<Cell>> = rows
        .into_iter()
        .map(|(m, title, numbers)| {
            let mut row: Vec<Cell> = vec![
                (m.to_owned(), None),
                (crate::text::visible_line(title), None),
            ];
            row.extend(numbers.into_iter().map(|n| (n, None)));
            row
        })
        .collect();
    let mut out = String::from("\n");
    out += &super::fit::wrap(heading, v.ctx.width);
    out += &fitted(&header, &rows, v.fit(), None);
    out
}

/// The Markdown section: `heading`, the table, `note` (empty when there is no row).
pub(crate) fn markdown(heading: &str, note: &str, header: &[&str], rows: Vec<Row>) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let header: Vec<String> = header
        .iter()
        .map(|h| md_cell(&super::capitalized(h)))
        .collect();
    let rows: Vec<Vec<String>> = rows
        .into_iter()
        .map(|(m, title, numbers)| {
            let mut row = vec![format!("**{}**", md_cell(m)), md_cell(title)];
            row.extend(numbers);
            row
        })
        .collect();
    let mut center = vec![true; header.len()];
    center[..2].fill(false);
    let mut s = heading.to_owned();
    s.push_str(&table(&header, &center, &rows));
    s.push_str(note);
    s
}

/// JUnit properties `names[i] = values[i]`, leaving out the empty values.
pub(crate) fn properties(names: &[&str], values: Vec<String>) -> Vec<(String, String)> {
    names
        .iter()
        .zip(values)
        .filter(|(_, value)| !value.is_empty())
        .map(|(name, value)| ((*name).to_owned(), value))
        .collect()
}
