//! Requests and latency per endpoint of a pool: which replica answered how
//! much, how fast, and how often it failed.

use std::collections::BTreeMap;

use serde::Serialize;

use super::Latency;
use crate::run::record::Record;

/// One endpoint's requests, errors and latency.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct EndpointStats {
    /// Records it gave (an answer or the error that ended the request).
    pub requests: u64,
    /// Of those, errors.
    pub errors: u64,
    /// Latency of its timed answers.
    pub latency_ms: Option<Latency>,
}

/// One endpoint's running totals: requests, errors, timed latencies.
type Totals = (u64, u64, Vec<u64>);

/// Per model, per endpoint: what each record of a pool said about where it went.
#[derive(Debug, Default)]
pub(crate) struct EndpointTally {
    by_model: BTreeMap<String, BTreeMap<String, Totals>>,
}

impl EndpointTally {
    /// Counts `r` when a pool's endpoint answered it.
    pub(super) fn add(&mut self, model: &str, r: &Record) {
        let Some(url) = &r.endpoint else { return };
        let (requests, errors, latencies) = self
            .by_model
            .entry(model.to_owned())
            .or_default()
            .entry(url.clone())
            .or_default();
        *requests += 1;
        *errors += u64::from(r.scored.error.is_some());
        if super::timed(r) {
            latencies.push(r.latency_ms);
        }
    }

    /// The finished table: model → endpoint → stats.
    pub(super) fn finish(self) -> BTreeMap<String, BTreeMap<String, EndpointStats>> {
        self.by_model
            .into_iter()
            .map(|(model, urls)| {
                let urls = urls
                    .into_iter()
                    .map(|(url, (requests, errors, mut latencies))| {
                        let stats = EndpointStats {
                            requests,
                            errors,
                            latency_ms: latency(&mut latencies),
                        };
                        (url, stats)
                    })
                    .collect();
                (model, urls)
            })
            .collect()
    }
}

/// Count, mean, median and 95th percentile of `latencies` (sorted here).
fn latency(latencies: &mut [u64]) -> Option<Latency> {
    latencies.sort_unstable();
    let v = &*latencies;
    let at = |p| super::accumulate::percentile(v, p).unwrap_or(0);
    (!v.is_empty()).then(|| Latency {
        count: v.len() as u64,
        mean: v.iter().sum::<u64>() as f64 / v.len() as f64,
        p50: at(50.0),
        p95: at(95.0),
    })
}
