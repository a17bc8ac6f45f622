//! pass@k and pass^k of a sampled cell at its largest k, each with its
//! bootstrap interval, as the CSV and JUnit reports give them: the columns
//! are the same whatever the spec's k, so a sheet of several specs lines up.

use super::View;
use crate::metrics::Metrics;
use crate::metrics::stats::Interval;
use crate::text::num;

/// The CSV columns and JUnit property names, in order.
pub(crate) const NAMES: [&str; 7] = [
    "k",
    "pass@k",
    "pass@k_low",
    "pass@k_high",
    "pass^k",
    "pass^k_low",
    "pass^k_high",
];

/// Whether any cell of the report has sampled metrics.
pub(crate) fn any(v: &View) -> bool {
    (v.models.iter())
        .flat_map(|m| v.specs.iter().map(move |s| (m, s)))
        .any(|(m, s)| {
            v.summary
                .cell(m, &s.id)
                .is_some_and(|c| c.sampled.is_some())
        })
}

/// A cell's (or group's) values under [`NAMES`]; empty without samples.
pub(crate) fn cells(c: &Metrics) -> Vec<String> {
    let Some(rates) = c.sampled.as_ref().map(|s| &s.rates) else {
        return vec![String::new(); NAMES.len()];
    };
    let Some(k) = rates.pass_at_k.keys().last() else {
        return vec![String::new(); NAMES.len()];
    };
    let with = |value: Option<&f64>, interval: Option<&Interval>| {
        [
            num(value.copied(), 4, ""),
            num(interval.map(|i| i.low), 4, ""),
            num(interval.map(|i| i.high), 4, ""),
        ]
    };
    let mut out = vec![k.to_string()];
    out.extend(with(
        rates.pass_at_k.get(k),
        rates.pass_at_k_interval.get(k),
    ));
    out.extend(with(
        rates.pass_hat_k.get(k),
        rates.pass_hat_k_interval.get(k),
    ));
    out
}

/// The JUnit properties of a sampled cell.
pub(crate) fn junit_properties(c: &Metrics) -> Vec<(String, String)> {
    super::cell_table::properties(&NAMES, cells(c))
}
