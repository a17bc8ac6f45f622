//! The accumulator of one cell (or group): counts, sums, latencies and a
//! bounded number of examples, folded from records one at a time.

use std::collections::BTreeMap;

use super::sampling;
use super::stats;
use super::{
    Estimate, Example, FAILING_EXAMPLES, FailureStat, JudgeStats, Latency, Method, Metrics,
    SamplingPlan, Tokens,
};
use crate::run::record::Record;

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
    cost: super::cost::CostTotals,
}

impl Accumulator {
    /// Counts one record.
    pub fn add(&mut self, r: &Record) {
        self.total += 1;
        self.passed += u64::from(r.scored.passed);
        self.score_sum += r.scored.score;
        self.valid += u64::from(r.is_valid());
        self.errors += u64::from(r.scored.error.is_some());
        self.cached += u64::from(r.cached);
        self.time_ms += r.latency_ms;
        self.cost.add(r);
        // Only a request made now was timed: a cached or replayed answer (no HTTP
        // attempt) took no time, and its 0 ms would flatter the model and make the
        // speed absurd.
        let timed = super::timed(r);
        if timed {
            self.latencies.push(r.latency_ms);
        }
        if let Some(n) = r.scored.tokens_in {
            self.tokens_in = (self.tokens_in.0 + 1, self.tokens_in.1 + n);
        }
        if let Some(n) = r.scored.tokens_out {
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
        if !r.scored.passed && self.failing.len() < FAILING_EXAMPLES {
            self.failing.push(Example::of(r));
        }
        // Votes compare answers; a long one is cut so memory stays bounded.
        let answer = r.scored.answer.as_deref().map(|a| crate::text::clip(a, 64));
        self.problems
            .entry((r.spec.clone(), r.instance))
            .or_default()
            .add(r.sample, answer, r.scored.passed, r.scored.score);
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
            let answer = rule.answer.as_deref().map(|a| crate::text::clip(a, 64));
            self.side
                .entry(rule.name.clone())
                .or_default()
                .entry((r.spec.clone(), r.instance))
                .or_default()
                .add(r.sample, answer, rule.verdict.passed, rule.verdict.score);
        }
    }

    /// Each instance's sample scores, keyed by (spec, instance).
    pub fn problems(&self) -> &BTreeMap<(String, u64), sampling::Problem> {
        &self.problems
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
            interval: estimate(&self.problems),
            valid: self.valid,
            errors: self.errors,
            cached: self.cached,
            time_ms: self.time_ms,
            latency_ms,
            tokens_in: tokens(self.tokens_in),
            tokens_out: tokens(self.tokens_out),
            tokens_per_sec: (self.speed.1 > 0)
                .then(|| self.speed.0 as f64 * 1000.0 / self.speed.1 as f64),
            cost: self.cost.finish(),
            failures: self.failures,
            failing: self.failing,
            report_only,
            sampled,
            judges,
        }
    }
}

/// The 95% interval of an accuracy over `problems`: Wilson when every problem is one
/// pass/fail sample, else the percentile bootstrap clustered by problem (seeded, so
/// the same records give the same bytes).
fn estimate(problems: &BTreeMap<(String, u64), sampling::Problem>) -> Option<Estimate> {
    if problems.values().all(sampling::Problem::is_pass_fail) {
        let passed = problems.values().filter(|p| p.n_correct() == 1).count() as u64;
        let i = stats::wilson(passed, problems.len() as u64, stats::DEFAULT_LEVEL)?;
        return Some(Estimate::new(i, Method::Wilson));
    }
    let scores: Vec<&[f64]> = problems.values().map(sampling::Problem::scores).collect();
    let e = stats::bootstrap_mean(&scores, &stats::Bootstrap::default())?;
    Some(Estimate::new(e.interval, Method::Bootstrap))
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
