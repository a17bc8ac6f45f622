//! Pools in the reports: per model with several endpoints, each endpoint's
//! requests, errors and latency. Shown only when some record came from a
//! pool, so runs of single-endpoint models read as before.

use std::fmt::Write as _;

use super::View;
use crate::metrics::EndpointStats;
use crate::text::{md_cell, table};

/// The rows: model, endpoint, requests, errors, mean / p50 / p95 latency.
fn rows(v: &View) -> Vec<Vec<String>> {
    let ms = |x: Option<f64>| x.map_or("—".to_owned(), |x| format!("{x:.0}"));
    let mut out = Vec::new();
    for (model, urls) in &v.summary.endpoints {
        for (
            url,
            EndpointStats {
                requests,
                errors,
                latency_ms,
            },
        ) in urls
        {
            out.push(vec![
                model.clone(),
                url.clone(),
                requests.to_string(),
                errors.to_string(),
                ms(latency_ms.as_ref().map(|l| l.mean)),
                ms(latency_ms.as_ref().map(|l| l.p50 as f64)),
                ms(latency_ms.as_ref().map(|l| l.p95 as f64)),
            ]);
        }
    }
    out
}

/// The terminal's pool table (empty without pools).
pub(super) fn terminal(v: &View) -> String {
    let rows = rows(v);
    if rows.is_empty() {
        return String::new();
    }
    let header = v.words().t.pools_header.map(str::to_owned);
    let rows: Vec<Vec<super::fit::Cell>> = rows
        .into_iter()
        .map(|r| r.iter().map(|c| (crate::text::visible(c), None)).collect())
        .collect();
    format!(
        "\n{}",
        super::fit::fitted(&header, &rows, super::fit::Fit::plain(v.ctx.width), None)
    )
}

/// The Markdown section «Эндпоинты пулов» (empty without pools).
pub(super) fn markdown(v: &View) -> String {
    let rows = rows(v);
    if rows.is_empty() {
        return String::new();
    }
    let w = &v.words().md;
    let mut s = String::from(w.pools);
    let _ = writeln!(s, "{}", w.pools_note);
    let header = w.pools_header.map(str::to_owned);
    let rows: Vec<Vec<String>> = rows
        .into_iter()
        .map(|r| r.iter().map(|c| md_cell(c)).collect())
        .collect();
    s.push_str(&table(
        &header,
        &[false, false, true, true, true, true, true],
        &rows,
    ));
    s
}
