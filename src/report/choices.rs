//! Multiple choice beside the pass rate: per cell of a `[choices]` spec,
//! accuracy and `acc_norm` (lm-eval's names), calibration (expected
//! calibration error and Brier score) with 95% intervals, and the labels
//! missing from a first token's alternatives. The terminal and the Markdown
//! report show one table when some cell has any; the CSV report then
//! appends five columns and JUnit five properties; JSON carries the numbers
//! in each cell's metrics, and the HTML page draws the reliability diagram.

use super::View;
use crate::metrics::Metrics;
use crate::metrics::choices::{ChoiceMetrics, Valued};

/// Shown where a cell has no such number.
const NONE: &str = "—";

/// Whether any cell of the report is multiple choice.
pub(crate) fn any(v: &View) -> bool {
    cells(v).next().is_some()
}

/// The multiple-choice cells, as (model, spec title, metrics), in report order.
fn cells<'a>(v: &'a View) -> impl Iterator<Item = (&'a str, &'a str, &'a ChoiceMetrics)> {
    super::cell_table::cells(v, |c| c.choices.as_ref())
}

/// `0.420 [0.310, 0.530]`.
fn valued(x: Option<&Valued>, digits: usize) -> String {
    match x {
        None => NONE.to_owned(),
        Some(Valued {
            value,
            interval: Some(i),
        }) => format!("{value:.digits$} [{:.digits$}, {:.digits$}]", i.low, i.high),
        Some(Valued { value, .. }) => format!("{value:.digits$}"),
    }
}

/// A cell's numbers after model and spec.
fn numbers(c: &ChoiceMetrics) -> [String; 6] {
    [
        c.answers.to_string(),
        valued(Some(&c.acc), 3),
        valued(c.acc_norm.as_ref(), 3),
        valued(c.ece.as_ref(), 3),
        valued(c.brier.as_ref(), 3),
        c.missing_labels.to_string(),
    ]
}

/// The CSV cells of a cell, under [`super::lang::Words::csv_choices`]
/// (empty strings where the cell is not multiple choice).
pub(crate) fn csv_cells(c: &Metrics) -> Vec<String> {
    let Some(c) = &c.choices else {
        return vec![String::new(); 5];
    };
    let plain = |x: Option<&Valued>| x.map_or(String::new(), |x| format!("{:.4}", x.value));
    vec![
        plain(Some(&c.acc)),
        plain(c.acc_norm.as_ref()),
        plain(c.ece.as_ref()),
        plain(c.brier.as_ref()),
        c.missing_labels.to_string(),
    ]
}

/// The JUnit properties of a multiple-choice cell, named like the English CSV columns.
pub(crate) fn junit_properties(c: &Metrics) -> Vec<(String, String)> {
    let names = ["acc", "acc_norm", "ece", "brier", "missing_labels"];
    super::cell_table::properties(&names, csv_cells(c))
}

/// The rows of the multiple-choice table.
pub(crate) fn rows<'a>(v: &'a View) -> Vec<super::cell_table::Row<'a>> {
    cells(v)
        .map(|(m, title, c)| (m, title, numbers(c).to_vec()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::stats::Interval;

    #[test]
    fn numbers_show_their_intervals_and_a_dash_where_there_is_none() {
        let with = Valued {
            value: 0.42,
            interval: Some(Interval {
                low: 0.31,
                high: 0.53,
            }),
        };
        assert_eq!(valued(Some(&with), 3), "0.420 [0.310, 0.530]");
        assert_eq!(valued(None, 3), "—");
    }
}
