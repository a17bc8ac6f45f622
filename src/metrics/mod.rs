//! Metrics over journal records, per (model, spec) cell and per model.
//!
//! An [`Accumulator`] keeps numbers and a bounded number of examples, never
//! whole records, so 100,000 records cost a few megabytes: the per-record
//! state of a cell is one `u64` latency, kept so percentiles are exact, and
//! one compact row per sample (`problems`: instance, sample, pass, score;
//! the clipped answer only where a `[sampling]` plan votes). A model keeps
//! only totals and reads its cells' rows and latencies when it is finished.
//!
//! Percentiles use the nearest-rank method: the p-th percentile of `n` sorted
//! values is the value at 1-based rank `ceil(p / 100 * n)` (rank 1 for p = 0),
//! so it is always one of the observed latencies.
//!
//! Data flow: records from a journal → [`MetricsBuilder`] (one
//! [`Accumulator`] per cell, group and model) → [`Summary`], which the
//! reports render. Imports go down only: `run::record`, `verify` (variable
//! lookup for `group_by`) and `text`; it never asks a model.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

pub(crate) use crate::format::Headline;
use crate::run::record::Record;
use crate::verify::FailureKind;
#[cfg(test)]
pub(crate) use accumulate::Accumulator;
pub(crate) use builder::{Groups, MetricsBuilder, group_value};
pub(crate) use cost::CostStats;
pub(crate) use endpoints::EndpointStats;
pub(crate) use sampling::{PassRates, SampledMetrics, SamplingPlan, pass_at_k, pass_hat_k};
pub(crate) use significance::{Board, Standing, Test, Versus};

mod accumulate;
mod builder;
pub(crate) mod choices;
mod cost;
mod endpoints;
mod problems;
mod sampling;
mod significance;
pub(crate) mod stats;

/// Characters of a response, detail or expected value kept in an example.
pub(crate) const EXCERPT_CHARS: usize = 400;
/// Failing records kept as examples per accumulator: the first ones added.
pub(crate) const FAILING_EXAMPLES: usize = 10;

/// The id reports show for a record: `instance_id`, plus `#<sample>` when sample > 0.
pub(crate) fn test_id(r: &Record) -> String {
    if r.sample > 0 {
        format!("{}#{}", r.instance_id, r.sample)
    } else {
        r.instance_id.clone()
    }
}

/// Whether `r`'s latency was measured now: answered by a request made in this run,
/// not from the cache and not replayed (no HTTP attempt took any time).
pub(crate) fn timed(r: &Record) -> bool {
    r.has_response() && !r.cached && r.attempts > 0
}

/// The expected output: the single rule's value, else the map rule → value (null when empty).
pub(crate) fn expected_output(r: &Record) -> Value {
    match r.expected.len() {
        0 => Value::Null,
        1 => r.expected.values().next().cloned().unwrap_or(Value::Null),
        _ => Value::Object(r.expected.clone()),
    }
}

/// A record kept as an example, its long texts excerpted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Example {
    /// [`test_id`] of the record.
    pub id: String,
    /// What failed it, if anything.
    pub failure: Option<FailureKind>,
    /// [`expected_output`] as compact JSON.
    pub expected: String,
    /// The extracted answer.
    pub answer: Option<String>,
    /// The response.
    pub response: Option<String>,
    /// The failure details.
    pub detail: String,
    /// The request error.
    pub error: Option<String>,
    /// The length in characters of what the model reasoned, when it kept any
    /// (the text itself stays in the journal and the HTML drill-down).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_chars: Option<usize>,
    /// With tools: the answer's steps, each text cut like the response.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub trajectory: Vec<crate::prompt::Message>,
}

impl Example {
    /// An example of `r`, long texts cut to [`EXCERPT_CHARS`].
    pub(crate) fn of(r: &Record) -> Example {
        let cut = |s: &str| crate::text::clip(s, EXCERPT_CHARS);
        Example {
            id: test_id(r),
            failure: r.failure,
            expected: cut(&expected_output(r).to_string()),
            answer: r.scored.answer.as_deref().map(cut),
            response: r.scored.response.as_deref().map(cut),
            detail: cut(&r.scored.detail),
            error: r.scored.error.as_deref().map(cut),
            reasoning_chars: r
                .scored
                .reasoning
                .as_ref()
                .map(crate::prompt::Reasoning::chars),
            trajectory: (r.scored.trajectory.iter())
                .map(|m| crate::prompt::Message {
                    content: cut(&m.content),
                    // A failure's example shows what the rules read, never the reasoning.
                    reasoning: None,
                    ..m.clone()
                })
                .collect(),
        }
    }
}

/// How often one failure kind occurred, with the first record showing it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct FailureStat {
    /// Occurrences.
    pub count: u64,
    /// The first record added with this failure.
    pub example: Example,
}

/// How a headline number's interval was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Method {
    /// Wilson score interval on instances: one pass/fail sample per instance,
    /// or every instance scoring the same (where a bootstrap has no width).
    Wilson,
    /// Percentile bootstrap clustered by instance: partial credit or several samples.
    Bootstrap,
}

/// A 95% interval of a headline number, and its method.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Estimate {
    /// Lower limit.
    pub low: f64,
    /// Upper limit.
    pub high: f64,
    /// How it was computed.
    pub method: Method,
}

impl Estimate {
    /// An interval computed by `method`.
    pub(crate) fn new(interval: stats::Interval, method: Method) -> Estimate {
        Estimate {
            low: interval.low,
            high: interval.high,
            method,
        }
    }

    /// The interval without its method.
    pub(crate) fn interval(&self) -> stats::Interval {
        stats::Interval {
            low: self.low,
            high: self.high,
        }
    }
}

/// Latency statistics in milliseconds over answered records timed now (not cached or replayed).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Latency {
    /// Records measured.
    pub count: u64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median, nearest rank.
    pub p50: u64,
    /// 95th percentile, nearest rank.
    pub p95: u64,
}

/// A token count over the records that report it.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub(crate) struct Tokens {
    /// Records reporting the count.
    pub count: u64,
    /// Sum.
    pub sum: u64,
    /// Mean over reporting records.
    pub mean: Option<f64>,
}

impl Tokens {
    /// No record reported the count (JSON then leaves it out).
    pub(crate) fn unknown(&self) -> bool {
        self.count == 0
    }
}

/// Finished metrics of one cell or model; field order is the JSON key order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Metrics {
    /// Records.
    pub total: u64,
    /// Records whose every rule passed.
    pub passed: u64,
    /// Which number is the headline: what cells show and models are ranked by.
    pub headline: Headline,
    /// The share of records that passed every rule, gates included (0 without records).
    pub pass_rate: f64,
    /// Mean weighted score in [0, 1], partial credit included; request errors
    /// score 0 (0 without records).
    pub mean_score: f64,
    /// 95% interval of the headline number (none without records).
    pub interval: Option<Estimate>,
    /// Records with a valid response ([`Record::is_valid`]).
    pub valid: u64,
    /// Records with a request error.
    pub errors: u64,
    /// Records answered from the cache (excluded from latency and speed).
    pub cached: u64,
    /// Sum of every record's `latency_ms` (errors included, cached ones are 0): time spent waiting.
    pub time_ms: u64,
    /// Latency, when any answered record was timed (not cached, not replayed).
    pub latency_ms: Option<Latency>,
    /// Prompt tokens.
    pub tokens_in: Tokens,
    /// Generated tokens.
    pub tokens_out: Tokens,
    /// Of the output tokens, those the server counted as reasoning: the mean
    /// is per answer that reported a count (left out when none did).
    #[serde(skip_serializing_if = "Tokens::unknown")]
    pub tokens_reasoning: Tokens,
    /// Answers that kept reasoning apart from their text.
    #[serde(skip_serializing_if = "is_zero")]
    pub with_reasoning: u64,
    /// Generated tokens per second of latency over timed records reporting tokens.
    pub tokens_per_sec: Option<f64>,
    /// What the records cost, when any of them (or their judging) had a price.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostStats>,
    /// Failure kind → count and example.
    pub failures: BTreeMap<FailureKind, FailureStat>,
    /// The first [`FAILING_EXAMPLES`] records that did not pass.
    pub failing: Vec<Example>,
    /// Rule name → its accuracy, for rules with `report_only = true`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub report_only: BTreeMap<String, f64>,
    /// Measure name (`CER`, `WER`) → its mean over the answers its rules measured.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub measures: BTreeMap<String, MeanMeasure>,
    /// pass@k and friends, for cells and groups of specs with `[sampling]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampled: Option<SampledMetrics>,
    /// Judge rules' statistics, one entry per (rule, judge model, rubric hash): judgements
    /// under different judges or rubrics are never pooled.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub judges: Vec<JudgeStats>,
    /// With `[choices]`: accuracy, `acc_norm` and calibration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub choices: Option<choices::ChoiceMetrics>,
}

/// The mean of one measure (a rule's number such as `CER`) over a cell or group.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct MeanMeasure {
    /// Arithmetic mean over the measured answers.
    pub mean: f64,
    /// Answers measured: those that reached a measuring rule (a request
    /// error or an answer the extractor could not find is not measured).
    pub count: u64,
    /// Smaller is better (error rates).
    pub lower_is_better: bool,
}

/// What judge statistics are kept apart by: judgements under different
/// judges or rubrics are never pooled.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub(crate) struct JudgeKey {
    /// The judge rule's name.
    pub rule: String,
    /// The judge model.
    pub judge: String,
    /// The rubric hash.
    pub rubric: String,
}

/// What one judge said about one rule's answers, over a cell or model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct JudgeStats {
    /// Which rule, judge and rubric.
    #[serde(flatten)]
    pub key: JudgeKey,
    /// Answers the judge gave a level to.
    pub judged: u64,
    /// Answers left without a level (judge errors); they score 0 in `accuracy`.
    pub errors: u64,
    /// Mean normalized score over judged answers only.
    pub mean_score: Option<f64>,
    /// Mean spread (highest minus lowest sampled level) over judged answers.
    pub mean_spread: Option<f64>,
    /// Judged answers whose judge samples disagreed (spread > 0).
    pub disagreements: u64,
    /// HTTP attempts the judge made.
    pub attempts: u64,
}

impl Metrics {
    /// The headline number: [`Metrics::pass_rate`] or [`Metrics::mean_score`].
    pub(crate) fn score(&self) -> f64 {
        match self.headline {
            Headline::PassRate => self.pass_rate,
            Headline::MeanScore => self.mean_score,
        }
    }

    /// Answers cut off while the model was still reasoning.
    pub(crate) fn unfinished_reasoning(&self) -> u64 {
        self.failures
            .get(&FailureKind::UnfinishedReasoning)
            .map_or(0, |f| f.count)
    }

    /// Whether the cell has anything about reasoning to show.
    pub(crate) fn reasons(&self) -> bool {
        self.with_reasoning > 0
            || !self.tokens_reasoning.unknown()
            || self.unfinished_reasoning() > 0
    }
}

/// Finished metrics: model → spec → cell, and model → totals.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct Summary {
    /// Per (model, spec).
    pub cells: BTreeMap<String, BTreeMap<String, Metrics>>,
    /// Per model, over all its records.
    pub models: BTreeMap<String, Metrics>,
    /// Per (model, spec), the `group_by` breakdowns: variable → value → metrics.
    pub groups: BTreeMap<String, BTreeMap<String, Groups<Metrics>>>,
    /// Per spec with records, its leaderboard: tie groups and paired comparisons.
    pub boards: BTreeMap<String, Board>,
    /// The overall leaderboard on the mean of category accuracies (none without records).
    pub leaderboard: Option<Board>,
    /// Per model with a pool of endpoints, each endpoint's requests and latency.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub endpoints: BTreeMap<String, BTreeMap<String, EndpointStats>>,
    /// Per (model, spec), each instance's outcome in instance order: what flaky
    /// instances and run comparisons line up.
    #[serde(skip)]
    pub outcomes: BTreeMap<String, BTreeMap<String, Vec<Outcome>>>,
}

/// One instance's samples for one model: how many passed, and the mean score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Outcome {
    /// Instance index.
    pub instance: u64,
    /// Samples that passed.
    pub passed: u32,
    /// Samples.
    pub samples: u32,
    /// Mean sample score.
    pub score: f64,
}

impl Outcome {
    /// The share of samples that passed.
    pub(crate) fn rate(&self) -> f64 {
        f64::from(self.passed) / f64::from(self.samples.max(1))
    }
}

impl Summary {
    /// The metrics of one cell, when it has records.
    pub(crate) fn cell(&self, model: &str, spec: &str) -> Option<&Metrics> {
        self.cells.get(model)?.get(spec)
    }

    /// The `group_by` breakdowns of one cell, when the spec asks for them and has records.
    pub(crate) fn groups(&self, model: &str, spec: &str) -> Option<&Groups<Metrics>> {
        self.groups.get(model)?.get(spec)
    }

    /// The model's totals, when it has records.
    pub(crate) fn model(&self, model: &str) -> Option<&Metrics> {
        self.models.get(model)
    }

    /// What the whole run cost: every model's total; `None` when nothing had a price.
    pub(crate) fn cost(&self) -> Option<CostStats> {
        CostStats::total(self.models.values())
    }

    /// Mean of the model's category headline numbers (each spec counts once,
    /// whatever its size): the total reports show and rank by.
    pub(crate) fn category_mean(&self, model: &str) -> Option<f64> {
        let specs = self.cells.get(model)?;
        (!specs.is_empty())
            .then(|| specs.values().map(Metrics::score).sum::<f64>() / specs.len() as f64)
    }
}

#[cfg(test)]
pub(crate) mod tests;

/// Serde's test for a count left out of JSON when nothing was counted.
fn is_zero(n: &u64) -> bool {
    *n == 0
}
