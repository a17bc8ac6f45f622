//! The accumulator of one cell (or group): counts, sums, latencies and a
//! bounded number of examples, folded from records one at a time.

use std::collections::BTreeMap;

use super::problems::{Keep, Problem, Problems};
use super::sampling;
use super::stats;
use super::{
    Estimate, Example, FAILING_EXAMPLES, FailureStat, Headline, JudgeKey, JudgeStats, Latency,
    MeanMeasure, Method, Metrics, SamplingPlan, Tokens,
};
use crate::run::record::Record;
use crate::verify::FailureKind;

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
pub(crate) struct Accumulator {
    total: u64,
    passed: u64,
    score_sum: f64,
    valid: u64,
    errors: u64,
    cached: u64,
    time_ms: u64,
    /// What is kept per record beyond the counts.
    keep: Keep,
    /// Which number each sample's kept value is: what intervals and boards see.
    headline: Headline,
    /// Timed records' latencies (not kept for [`Keep::Counts`]).
    latencies: Vec<u64>,
    tokens_in: (u64, u64),
    tokens_out: (u64, u64),
    tokens_reasoning: (u64, u64),
    with_reasoning: u64,
    speed: (u64, u64),
    failures: BTreeMap<FailureKind, FailureStat>,
    failing: Vec<Example>,
    /// Every (spec, instance)'s samples' outcomes.
    problems: Problems,
    /// Report-only rule → every (spec, instance)'s samples' outcomes by that rule.
    side: BTreeMap<String, Problems>,
    /// (rule, judge, rubric) → running totals.
    judges: BTreeMap<JudgeKey, JudgeTotals>,
    /// Measure name → running totals of the rules' measures.
    measures: BTreeMap<String, MeasureTotals>,
    cost: super::cost::CostTotals,
    choices: super::choices::ChoiceTotals,
}

/// Running totals of one measure: how many answers it was taken of, their sum.
#[derive(Debug, Default)]
struct MeasureTotals {
    count: u64,
    sum: f64,
    lower_is_better: bool,
}

impl Accumulator {
    /// An empty accumulator keeping `keep` of each record, each sample valued
    /// by `headline`.
    pub(crate) fn new(keep: Keep, headline: Headline) -> Accumulator {
        Accumulator {
            keep,
            headline,
            problems: Problems::new(keep),
            ..Accumulator::default()
        }
    }

    /// Counts one record.
    pub(crate) fn add(&mut self, r: &Record) {
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
        if timed && self.keep != Keep::Counts {
            self.latencies.push(r.latency_ms);
        }
        if let Some(n) = r.scored.tokens_in {
            self.tokens_in = (self.tokens_in.0 + 1, self.tokens_in.1 + n);
        }
        self.with_reasoning += u64::from(r.scored.reasoning.is_some());
        if let Some(choice) = &r.scored.choice {
            self.choices.add(choice);
        }
        if let Some(n) = r.scored.tokens_reasoning {
            self.tokens_reasoning = (self.tokens_reasoning.0 + 1, self.tokens_reasoning.1 + n);
        }
        if let Some(n) = r.scored.tokens_out {
            self.tokens_out = (self.tokens_out.0 + 1, self.tokens_out.1 + n);
            // Only records with both numbers, or missing counts would lower the speed.
            if timed {
                self.speed = (self.speed.0 + n, self.speed.1 + r.latency_ms);
            }
        }
        if let Some(kind) = r.failure {
            match self.failures.get_mut(&kind) {
                Some(stat) => stat.count += 1,
                None => {
                    let stat = FailureStat {
                        count: 1,
                        example: Example::of(r),
                    };
                    self.failures.insert(kind, stat);
                }
            }
        }
        if !r.scored.passed && self.failing.len() < FAILING_EXAMPLES {
            self.failing.push(Example::of(r));
        }
        // Votes compare answers; a long one is cut so memory stays bounded, and
        // none is kept where nothing votes.
        let votes = self.keep == Keep::Answers;
        let clip = |a: Option<&String>| a.filter(|_| votes).map(|a| crate::text::clip(a, 64));
        let key = (r.spec.as_str(), r.instance);
        let answer = clip(r.scored.answer.as_ref());
        let passed = r.scored.passed;
        let value = self.headline.value(passed, r.scored.score);
        self.problems
            .add(key, r.sample, answer.as_deref(), passed, value);
        for rule in &r.rules {
            let Some(j) = &rule.judge else { continue };
            let stat = self
                .judges
                .entry(JudgeKey {
                    rule: rule.name.clone(),
                    judge: j.judge.clone(),
                    rubric: j.rubric.clone(),
                })
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
        for m in r.rules.iter().filter_map(|o| o.verdict.measure.as_ref()) {
            if !self.measures.contains_key(&m.name) {
                self.measures
                    .insert(m.name.clone(), MeasureTotals::default());
            }
            let t = self.measures.get_mut(&m.name).expect("inserted above");
            t.count += 1;
            t.sum += m.value;
            t.lower_is_better = m.lower_is_better;
        }
        for rule in r.rules.iter().filter(|o| o.report_only) {
            let answer = clip(rule.answer.as_ref());
            let passed = rule.verdict.passed;
            let value = self.headline.value(passed, rule.verdict.score);
            if !self.side.contains_key(&rule.name) {
                let problems = Problems::new(self.keep);
                self.side.insert(rule.name.clone(), problems);
            }
            let side = self.side.get_mut(&rule.name).expect("inserted above");
            side.add(key, r.sample, answer.as_deref(), passed, value);
        }
    }

    /// Each instance's samples; [`Accumulator::settle`] first.
    pub(crate) fn problems(&self) -> &Problems {
        &self.problems
    }

    /// Timed records' latencies, in the order added.
    pub(crate) fn latencies(&self) -> &[u64] {
        &self.latencies
    }

    /// Puts the problems in (spec, instance) order for reading.
    pub(crate) fn settle(&mut self) {
        self.problems.settle();
        self.side.values_mut().for_each(Problems::settle);
    }

    /// The finished metrics, without sampled metrics.
    pub(crate) fn finish(self) -> Metrics {
        self.finish_with(None, false)
    }

    /// The finished metrics, with pass@k and friends when `plan` is given (the spec has
    /// `[sampling]`); `keep_problems` also lists per-problem counts.
    pub(crate) fn finish_with(self, plan: Option<&SamplingPlan>, keep_problems: bool) -> Metrics {
        self.finish_keeping(plan, keep_problems).0
    }

    /// [`Accumulator::finish_with`], handing back the (settled) problems too.
    pub(crate) fn finish_keeping(
        mut self,
        plan: Option<&SamplingPlan>,
        keep_problems: bool,
    ) -> (Metrics, Problems) {
        self.settle();
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
            .map(|(name, p)| (name.clone(), p.passed() as f64 / p.total().max(1) as f64))
            .collect();
        self.latencies.sort_unstable();
        let latency_ms = latency(&self.latencies);
        let judges = std::mem::take(&mut self.judges)
            .into_iter()
            .map(|(key, t)| {
                let n = t.judged as f64;
                JudgeStats {
                    key,
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
        let measures = std::mem::take(&mut self.measures)
            .into_iter()
            .map(|(name, t)| {
                let mean = MeanMeasure {
                    mean: t.sum / t.count.max(1) as f64,
                    count: t.count,
                    lower_is_better: t.lower_is_better,
                };
                (name, mean)
            })
            .collect();
        let share = |sum: f64| sum / self.total.max(1) as f64;
        let metrics = Metrics {
            total: self.total,
            passed: self.passed,
            headline: self.headline,
            pass_rate: share(self.passed as f64),
            mean_score: share(self.score_sum),
            interval: estimate(self.problems.iter()),
            valid: self.valid,
            errors: self.errors,
            cached: self.cached,
            time_ms: self.time_ms,
            latency_ms,
            tokens_in: tokens(self.tokens_in),
            tokens_out: tokens(self.tokens_out),
            tokens_reasoning: tokens(self.tokens_reasoning),
            with_reasoning: self.with_reasoning,
            tokens_per_sec: (self.speed.1 > 0)
                .then(|| self.speed.0 as f64 * 1000.0 / self.speed.1 as f64),
            cost: self.cost.finish(),
            failures: self.failures,
            failing: self.failing,
            report_only,
            measures,
            sampled,
            judges,
            choices: self.choices.finish(),
        };
        (metrics, self.problems)
    }
}

/// Count, mean and percentiles of ascending `sorted` latencies; `None` when empty.
pub(super) fn latency(sorted: &[u64]) -> Option<Latency> {
    (!sorted.is_empty()).then(|| Latency {
        count: sorted.len() as u64,
        mean: sorted.iter().sum::<u64>() as f64 / sorted.len() as f64,
        p50: percentile(sorted, 50.0).unwrap_or(0),
        p95: percentile(sorted, 95.0).unwrap_or(0),
    })
}

/// The 95% interval of a headline number over `problems` (each sample valued by
/// the headline): Wilson when every problem is one pass/fail sample, else the
/// percentile bootstrap clustered by problem (seeded, so the same records give
/// the same bytes). Where every problem scores the same the bootstrap has no
/// width, which would read as certainty: Wilson on the problems' count then
/// says what that many instances can show (0 of 16 × 8 samples: up to 19.4%).
pub(super) fn estimate<'a>(
    problems: impl Iterator<Item = Problem<'a>> + Clone,
) -> Option<Estimate> {
    if problems.clone().all(|p| p.is_pass_fail()) {
        let (mut passed, mut count) = (0u64, 0u64);
        for p in problems {
            passed += u64::from(p.n_correct() == 1);
            count += 1;
        }
        let i = stats::wilson(passed, count, stats::DEFAULT_LEVEL)?;
        return Some(Estimate::new(i, Method::Wilson));
    }
    let scores: Vec<&[f64]> = problems.map(|p| p.scores()).collect();
    let e = stats::bootstrap_mean(&scores, &stats::Bootstrap::default())?;
    if e.interval.high > e.interval.low {
        return Some(Estimate::new(e.interval, Method::Bootstrap));
    }
    let i = stats::wilson_share(e.mean, e.instances as u64, stats::DEFAULT_LEVEL)?;
    Some(Estimate::new(i, Method::Wilson))
}

/// Nearest-rank percentile `p` (0..=100) of ascending `sorted`; `None` when empty.
pub(super) fn percentile(sorted: &[u64], p: f64) -> Option<u64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let rank = ((p / 100.0 * n as f64).ceil() as usize).clamp(1, n);
    Some(sorted[rank - 1])
}
