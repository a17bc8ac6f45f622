//! Metrics over journal records, per (model, spec) cell and per model.
//!
//! An [`Accumulator`] keeps numbers and a bounded number of examples, never
//! whole records, so 100,000 records cost a few megabytes: the only per-record
//! state is one `u64` latency, kept so percentiles are exact.
//!
//! Percentiles use the nearest-rank method: the p-th percentile of `n` sorted
//! values is the value at 1-based rank `ceil(p / 100 * n)` (rank 1 for p = 0),
//! so it is always one of the observed latencies.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::run::record::Record;
pub use sampling::{ProblemStat, SampledMetrics, SamplingPlan, pass_at_k, pass_hat_k};

mod sampling;
pub mod stats;

/// Characters of a response, detail or expected value kept in an example.
pub const EXCERPT_CHARS: usize = 400;
/// Failing records kept as examples per accumulator: the first ones added.
pub const FAILING_EXAMPLES: usize = 10;

/// The id reports show for a record: `instance_id`, plus `#<sample>` when sample > 0.
pub fn test_id(r: &Record) -> String {
    if r.sample > 0 {
        format!("{}#{}", r.instance_id, r.sample)
    } else {
        r.instance_id.clone()
    }
}

/// The expected output: the single rule's value, else the map rule → value (null when empty).
pub fn expected_output(r: &Record) -> Value {
    match r.expected.len() {
        0 => Value::Null,
        1 => r.expected.values().next().cloned().unwrap_or(Value::Null),
        _ => Value::Object(r.expected.clone()),
    }
}

/// `text` cut to at most `max` characters, with `…` appended when something was cut.
pub fn excerpt(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// A record kept as an example, its long texts excerpted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Example {
    /// [`test_id`] of the record.
    pub id: String,
    /// Failure label, if any.
    pub failure: Option<String>,
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
}

impl Example {
    /// An example of `r`, long texts cut to [`EXCERPT_CHARS`].
    pub fn of(r: &Record) -> Example {
        let cut = |s: &str| excerpt(s, EXCERPT_CHARS);
        Example {
            id: test_id(r),
            failure: r.failure.clone(),
            expected: cut(&expected_output(r).to_string()),
            answer: r.answer.as_deref().map(cut),
            response: r.response.as_deref().map(cut),
            detail: cut(&r.detail),
            error: r.error.as_deref().map(cut),
        }
    }
}

/// How often one failure kind occurred, with the first record showing it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailureStat {
    /// Occurrences.
    pub count: u64,
    /// The first record added with this failure.
    pub example: Example,
}

/// Latency statistics in milliseconds over answered, non-cached records.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Latency {
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
pub struct Tokens {
    /// Records reporting the count.
    pub count: u64,
    /// Sum.
    pub sum: u64,
    /// Mean over reporting records.
    pub mean: Option<f64>,
}

/// Finished metrics of one cell or model; field order is the JSON key order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metrics {
    /// Records.
    pub total: u64,
    /// Records whose every rule passed.
    pub passed: u64,
    /// Mean score in [0, 1]; request errors score 0 (0 when there are no records).
    pub accuracy: f64,
    /// Records with a valid response ([`Record::is_valid`]).
    pub valid: u64,
    /// Records with a request error.
    pub errors: u64,
    /// Records answered from the cache (excluded from latency and speed).
    pub cached: u64,
    /// Sum of every record's `latency_ms` (errors included, cached ones are 0): time spent waiting.
    pub time_ms: u64,
    /// Latency, when any answered non-cached record exists.
    pub latency_ms: Option<Latency>,
    /// Prompt tokens.
    pub tokens_in: Tokens,
    /// Generated tokens.
    pub tokens_out: Tokens,
    /// Generated tokens per second of latency over answered, non-cached records reporting tokens.
    pub tokens_per_sec: Option<f64>,
    /// Failure label → count and example.
    pub failures: BTreeMap<String, FailureStat>,
    /// The first [`FAILING_EXAMPLES`] records that did not pass.
    pub failing: Vec<Example>,
    /// Rule name → its accuracy, for rules with `report_only = true`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub report_only: BTreeMap<String, f64>,
    /// pass@k and friends, for cells and groups of specs with `[sampling]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampled: Option<SampledMetrics>,
    /// Judge rules' statistics, one entry per (rule, judge model, rubric hash): judgements
    /// under different judges or rubrics are never pooled.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub judges: Vec<JudgeStats>,
}

/// What one judge said about one rule's answers, over a cell or model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JudgeStats {
    /// The judge rule's name.
    pub rule: String,
    /// The judge model.
    pub judge: String,
    /// The rubric hash.
    pub rubric: String,
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

/// Running totals of one (rule, judge, rubric).
#[derive(Debug, Default)]
struct JudgeTotals {
    judged: u64,
    errors: u64,
    score_sum: f64,
    spread_sum: u64,
    disagreements: u64,
    attempts: u64,
}

/// Running totals for one cell or model.
#[derive(Debug, Default)]
pub struct Accumulator {
    total: u64,
    passed: u64,
    score_sum: f64,
    valid: u64,
    errors: u64,
    cached: u64,
    time_ms: u64,
    latencies: Vec<u64>,
    tokens_in: (u64, u64),
    tokens_out: (u64, u64),
    speed: (u64, u64),
    failures: BTreeMap<String, FailureStat>,
    failing: Vec<Example>,
    /// (spec, instance) → its samples' outcomes.
    problems: BTreeMap<(String, u64), sampling::Problem>,
    /// Report-only rule → (spec, instance) → its samples' outcomes by that rule.
    side: BTreeMap<String, BTreeMap<(String, u64), sampling::Problem>>,
    /// (rule, judge, rubric) → running totals.
    judges: BTreeMap<(String, String, String), JudgeTotals>,
}

impl Accumulator {
    /// Counts one record.
    pub fn add(&mut self, r: &Record) {
        self.total += 1;
        self.passed += u64::from(r.passed);
        self.score_sum += r.score;
        self.valid += u64::from(r.is_valid());
        self.errors += u64::from(r.error.is_some());
        self.cached += u64::from(r.cached);
        self.time_ms += r.latency_ms;
        // A cached answer took no time; counting its 0 ms would flatter the model.
        let timed = r.has_response() && !r.cached;
        if timed {
            self.latencies.push(r.latency_ms);
        }
        if let Some(n) = r.tokens_in {
            self.tokens_in = (self.tokens_in.0 + 1, self.tokens_in.1 + n);
        }
        if let Some(n) = r.tokens_out {
            self.tokens_out = (self.tokens_out.0 + 1, self.tokens_out.1 + n);
            // Only records with both numbers, or missing counts would lower the speed.
            if timed {
                self.speed = (self.speed.0 + n, self.speed.1 + r.latency_ms);
            }
        }
        if let Some(label) = &r.failure {
            match self.failures.get_mut(label) {
                Some(stat) => stat.count += 1,
                None => {
                    let stat = FailureStat {
                        count: 1,
                        example: Example::of(r),
                    };
                    self.failures.insert(label.clone(), stat);
                }
            }
        }
        if !r.passed && self.failing.len() < FAILING_EXAMPLES {
            self.failing.push(Example::of(r));
        }
        // Votes compare answers; a long one is cut so memory stays bounded.
        let answer = r.answer.as_deref().map(|a| excerpt(a, 64));
        self.problems
            .entry((r.spec.clone(), r.instance))
            .or_default()
            .add(r.sample, answer, r.passed);
        for rule in &r.rules {
            let Some(j) = &rule.judge else { continue };
            let stat = self
                .judges
                .entry((rule.name.clone(), j.judge.clone(), j.rubric.clone()))
                .or_default();
            stat.attempts += u64::from(j.attempts);
            match (j.level, j.spread) {
                (Some(_), Some(spread)) => {
                    stat.judged += 1;
                    stat.score_sum += rule.verdict.score;
                    stat.spread_sum += spread.unsigned_abs();
                    stat.disagreements += u64::from(spread > 0);
                }
                _ => stat.errors += 1,
            }
        }
        for rule in r.rules.iter().filter(|o| o.report_only) {
            let answer = rule.answer.as_deref().map(|a| excerpt(a, 64));
            self.side
                .entry(rule.name.clone())
                .or_default()
                .entry((r.spec.clone(), r.instance))
                .or_default()
                .add(r.sample, answer, rule.verdict.passed);
        }
    }

    /// The finished metrics, without sampled metrics.
    pub fn finish(self) -> Metrics {
        self.finish_with(None, false)
    }

    /// The finished metrics, with pass@k and friends when `plan` is given (the spec has
    /// `[sampling]`); `keep_problems` also lists per-problem counts.
    pub fn finish_with(mut self, plan: Option<&SamplingPlan>, keep_problems: bool) -> Metrics {
        let sampled = plan.map(|plan| {
            let mut metrics = sampling::sampled(&self.problems, plan, keep_problems);
            metrics.alongside = self
                .side
                .iter()
                .map(|(name, problems)| (name.clone(), sampling::sampled(problems, plan, false)))
                .collect();
            metrics
        });
        let report_only = self
            .side
            .iter()
            .map(|(name, problems)| {
                let (passed, total) = problems
                    .values()
                    .fold((0, 0), |(p, t), pr| (p + pr.n_correct(), t + pr.n_total()));
                (name.clone(), passed as f64 / total.max(1) as f64)
            })
            .collect();
        self.latencies.sort_unstable();
        let v = &self.latencies;
        let latency_ms = (!v.is_empty()).then(|| Latency {
            count: v.len() as u64,
            mean: v.iter().sum::<u64>() as f64 / v.len() as f64,
            p50: percentile(v, 50.0).unwrap_or(0),
            p95: percentile(v, 95.0).unwrap_or(0),
        });
        let judges = std::mem::take(&mut self.judges)
            .into_iter()
            .map(|((rule, judge, rubric), t)| {
                let n = t.judged as f64;
                JudgeStats {
                    rule,
                    judge,
                    rubric,
                    judged: t.judged,
                    errors: t.errors,
                    mean_score: (t.judged > 0).then(|| t.score_sum / n),
                    mean_spread: (t.judged > 0).then(|| t.spread_sum as f64 / n),
                    disagreements: t.disagreements,
                    attempts: t.attempts,
                }
            })
            .collect();
        let tokens = |(count, sum): (u64, u64)| Tokens {
            count,
            sum,
            mean: (count > 0).then(|| sum as f64 / count as f64),
        };
        Metrics {
            total: self.total,
            passed: self.passed,
            accuracy: if self.total == 0 {
                0.0
            } else {
                self.score_sum / self.total as f64
            },
            valid: self.valid,
            errors: self.errors,
            cached: self.cached,
            time_ms: self.time_ms,
            latency_ms,
            tokens_in: tokens(self.tokens_in),
            tokens_out: tokens(self.tokens_out),
            tokens_per_sec: (self.speed.1 > 0)
                .then(|| self.speed.0 as f64 * 1000.0 / self.speed.1 as f64),
            failures: self.failures,
            failing: self.failing,
            report_only,
            sampled,
            judges,
        }
    }
}

/// Nearest-rank percentile `p` (0..=100) of ascending `sorted`; `None` when empty.
pub fn percentile(sorted: &[u64], p: f64) -> Option<u64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let rank = ((p / 100.0 * n as f64).ceil() as usize).clamp(1, n);
    Some(sorted[rank - 1])
}

/// Per variable, per value: the breakdown of one cell by `group_by`.
pub type Groups<T> = BTreeMap<String, BTreeMap<String, T>>;

/// The group a record falls in for `var`: strings as is, other values as JSON, `-` when unset.
pub fn group_value(r: &Record, var: &str) -> String {
    match crate::verify::lookup(&r.vars, var) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "-".to_owned(),
    }
}

/// Accumulators for every (model, spec) cell and every model, keyed by shown model name.
#[derive(Debug, Default)]
pub struct MetricsBuilder {
    cells: BTreeMap<String, BTreeMap<String, Accumulator>>,
    models: BTreeMap<String, Accumulator>,
    /// Spec id → the variables its cells are broken down by.
    group_by: BTreeMap<String, Vec<String>>,
    /// Model → spec → breakdown.
    groups: BTreeMap<String, BTreeMap<String, Groups<Accumulator>>>,
    /// Spec id → what its `[sampling]` asks to report.
    sampling: BTreeMap<String, SamplingPlan>,
}

impl MetricsBuilder {
    /// An empty builder.
    pub fn new() -> MetricsBuilder {
        MetricsBuilder::default()
    }

    /// Also breaks the cells of spec `spec` down by each of the variables `vars`.
    pub fn group_by(mut self, spec: &str, vars: &[String]) -> MetricsBuilder {
        if !vars.is_empty() {
            self.group_by.insert(spec.to_owned(), vars.to_vec());
        }
        self
    }

    /// Reports pass@k for `plan.ks` (and maj@n when asked) on spec `spec`.
    pub fn sampling(mut self, spec: &str, plan: SamplingPlan) -> MetricsBuilder {
        self.sampling.insert(spec.to_owned(), plan);
        self
    }

    /// Counts `r` under the model name `model` (which may differ from `r.model`) and `r.spec`.
    pub fn add(&mut self, model: &str, r: &Record) {
        if let Some(vars) = self.group_by.get(&r.spec) {
            let groups = self
                .groups
                .entry(model.to_owned())
                .or_default()
                .entry(r.spec.clone())
                .or_default();
            for var in vars {
                groups
                    .entry(var.clone())
                    .or_default()
                    .entry(group_value(r, var))
                    .or_default()
                    .add(r);
            }
        }
        // Look up by &str first so the common case allocates nothing.
        if !self.models.contains_key(model) {
            self.models.insert(model.to_owned(), Accumulator::default());
            self.cells.insert(model.to_owned(), BTreeMap::new());
        }
        self.models.get_mut(model).expect("inserted above").add(r);
        let specs = self.cells.get_mut(model).expect("inserted above");
        if !specs.contains_key(&r.spec) {
            specs.insert(r.spec.clone(), Accumulator::default());
        }
        specs.get_mut(&r.spec).expect("inserted above").add(r);
    }

    /// The finished metrics of every cell and model.
    pub fn finish(self) -> Summary {
        let plans = self.sampling;
        Summary {
            cells: self
                .cells
                .into_iter()
                .map(|(m, specs)| {
                    let specs = specs
                        .into_iter()
                        .map(|(s, a)| {
                            let metrics = a.finish_with(plans.get(&s), true);
                            (s, metrics)
                        })
                        .collect();
                    (m, specs)
                })
                .collect(),
            models: self
                .models
                .into_iter()
                // Totals span specs with and without samples: pass@k is per spec only.
                .map(|(m, a)| (m, a.finish()))
                .collect(),
            groups: self
                .groups
                .into_iter()
                .map(|(m, specs)| {
                    let specs = specs
                        .into_iter()
                        .map(|(s, vars)| {
                            let groups = finish_groups(vars, plans.get(&s));
                            (s, groups)
                        })
                        .collect();
                    (m, specs)
                })
                .collect(),
        }
    }
}

fn finish_groups(vars: Groups<Accumulator>, plan: Option<&SamplingPlan>) -> Groups<Metrics> {
    vars.into_iter()
        .map(|(var, values)| {
            let values = values
                .into_iter()
                .map(|(v, a)| (v, a.finish_with(plan, false)))
                .collect();
            (var, values)
        })
        .collect()
}

/// Finished metrics: model → spec → cell, and model → totals.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Per (model, spec).
    pub cells: BTreeMap<String, BTreeMap<String, Metrics>>,
    /// Per model, over all its records.
    pub models: BTreeMap<String, Metrics>,
    /// Per (model, spec), the `group_by` breakdowns: variable → value → metrics.
    pub groups: BTreeMap<String, BTreeMap<String, Groups<Metrics>>>,
}

impl Summary {
    /// The metrics of one cell, when it has records.
    pub fn cell(&self, model: &str, spec: &str) -> Option<&Metrics> {
        self.cells.get(model)?.get(spec)
    }

    /// The `group_by` breakdowns of one cell, when the spec asks for them and has records.
    pub fn groups(&self, model: &str, spec: &str) -> Option<&Groups<Metrics>> {
        self.groups.get(model)?.get(spec)
    }

    /// The model's totals, when it has records.
    pub fn model(&self, model: &str) -> Option<&Metrics> {
        self.models.get(model)
    }

    /// Mean of the model's category accuracies (each spec counts once, whatever its size).
    pub fn category_mean(&self, model: &str) -> Option<f64> {
        let specs = self.cells.get(model)?;
        (!specs.is_empty())
            .then(|| specs.values().map(|m| m.accuracy).sum::<f64>() / specs.len() as f64)
    }
}

#[cfg(test)]
pub(crate) mod tests;
