//! What a cell, a model or a run cost: the answers' and the judge's costs
//! summed apart, what the response cache saved, and the cost per correct
//! answer. Sums are kept in pico-units, so they do not depend on the order
//! records arrive in; no price anywhere means no cost at all, never 0.

use serde::Serialize;

use super::Metrics;
use crate::run::cost::pico;
use crate::run::record::Record;

/// Running cost totals of one accumulator.
#[derive(Debug, Default)]
pub(super) struct CostTotals {
    priced: u64,
    estimated: u64,
    amount: u64,
    saved: u64,
    judged: u64,
    judge: u64,
    passed: u64,
}

impl CostTotals {
    /// Counts `r`'s costs, if it has any.
    pub(super) fn add(&mut self, r: &Record) {
        if let Some(c) = &r.cost {
            self.priced += 1;
            self.estimated += u64::from(c.estimated);
            self.amount += pico(c.amount);
            self.saved += pico(c.saved);
            self.passed += u64::from(r.scored.passed);
        }
        if let Some(c) = &r.judge_cost {
            self.judged += 1;
            self.judge += pico(c.amount);
            self.saved += pico(c.saved);
        }
    }

    /// The finished numbers; `None` when nothing had a price.
    pub(super) fn finish(&self) -> Option<CostStats> {
        if self.priced == 0 && self.judged == 0 {
            return None;
        }
        let money = |p: u64| p as f64 / 1e12;
        let amount = (self.priced > 0).then(|| money(self.amount));
        Some(CostStats {
            amount,
            priced: self.priced,
            estimated: self.estimated,
            saved: money(self.saved),
            judge: (self.judged > 0).then(|| money(self.judge)),
            correct: self.passed,
            per_correct: amount
                .filter(|_| self.passed > 0)
                .map(|a| a / self.passed as f64),
        })
    }
}

/// What some records cost, in the run's currency.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct CostStats {
    /// Spent on the answers; `None` when no answer had a price.
    pub amount: Option<f64>,
    /// Answers with a cost.
    pub priced: u64,
    /// Of those, answers whose tokens were estimated with the tokenizer.
    pub estimated: u64,
    /// What the answers and judgements taken from the response cache would have cost.
    pub saved: f64,
    /// Spent on judging, shown apart; `None` when no judgement had a price.
    pub judge: Option<f64>,
    /// Passed answers among the priced ones.
    pub correct: u64,
    /// `amount` per passed answer among the priced ones.
    pub per_correct: Option<f64>,
}

impl CostStats {
    /// The run's cost: the sum over `models`' totals; `None` when none had a price.
    pub(crate) fn total<'a>(models: impl Iterator<Item = &'a Metrics>) -> Option<CostStats> {
        let add = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
        let mut sum: Option<CostStats> = None;
        for c in models.filter_map(|m| m.cost) {
            sum = Some(match sum {
                None => c,
                Some(s) => CostStats {
                    amount: add(s.amount, c.amount),
                    priced: s.priced + c.priced,
                    estimated: s.estimated + c.estimated,
                    saved: s.saved + c.saved,
                    judge: add(s.judge, c.judge),
                    correct: s.correct + c.correct,
                    per_correct: None,
                },
            });
        }
        sum.map(|s| CostStats {
            per_correct: s
                .amount
                .filter(|_| s.correct > 0)
                .map(|a| a / s.correct as f64),
            ..s
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::record;
    use super::super::{Accumulator, Summary};
    use super::*;
    use crate::run::record::Cost;

    fn priced(instance: u64, amount: f64, passed: bool) -> Record {
        let mut r = record("m", "s", instance);
        r.scored.passed = passed;
        r.cost = Some(Cost {
            amount,
            ..Cost::default()
        });
        r
    }

    #[test]
    fn costs_sum_apart_and_unpriced_stays_unknown() {
        let mut a = Accumulator::default();
        a.add(&record("m", "s", 0));
        assert_eq!(Accumulator::default().finish().cost, None);
        a.add(&priced(1, 0.000068, true));
        a.add(&priced(2, 0.000068, false));
        let mut cached = priced(3, 0.0, true);
        cached.cost = Some(Cost {
            amount: 0.0,
            saved: 0.000068,
            estimated: true,
        });
        cached.judge_cost = Some(Cost {
            amount: 0.00001,
            ..Cost::default()
        });
        a.add(&cached);
        let c = a.finish().cost.unwrap();
        // 2 × 68e-6 spent over 2 passed priced answers: 68e-6 each.
        assert_eq!(c.amount, Some(0.000136));
        assert_eq!((c.priced, c.estimated), (3, 1));
        assert_eq!((c.saved, c.judge), (0.000068, Some(0.00001)));
        assert_eq!(c.per_correct, Some(0.000068));
    }

    #[test]
    fn a_run_costs_the_sum_of_its_models() {
        let mut summary = Summary::default();
        for (model, amount) in [("a", 0.5), ("b", 0.25)] {
            let mut acc = Accumulator::default();
            acc.add(&priced(0, amount, true));
            summary.models.insert(model.into(), acc.finish());
        }
        let mut unpriced = Accumulator::default();
        unpriced.add(&record("c", "s", 0));
        summary.models.insert("c".into(), unpriced.finish());
        let run = CostStats::total(summary.models.values()).unwrap();
        assert_eq!(run.amount, Some(0.75));
        assert_eq!(run.per_correct, Some(0.375));
    }
}
