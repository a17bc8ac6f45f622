//! Flaky instances: for a model with several samples of an instance (a spec's
//! `[sampling] n`, or the same model in several runs of the report), each
//! instance's pass rate; instances that neither always pass nor always fail are
//! listed worst first, with pass@k and pass^k of the spec beside them.

use std::collections::BTreeMap;

use serde::Serialize;

use super::View;
use crate::metrics::{Outcome, pass_at_k, pass_hat_k};

/// One instance that passed some of its samples but not all.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct FlakyInstance {
    /// The model (its name in the runs, not the shown `<run>/<model>`).
    pub model: String,
    /// Spec id.
    pub spec: String,
    /// Instance index.
    pub instance: u64,
    /// Samples that passed, over every run.
    pub passed: u32,
    /// Samples, over every run.
    pub samples: u32,
}

/// A (model, spec) with repeated samples: how stable its verdicts are.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Stability {
    /// The model.
    pub model: String,
    /// Spec id.
    pub spec: String,
    /// Instances with more than one sample.
    pub instances: usize,
    /// The fewest samples of those instances: the k of `pass_at_k` and `pass_hat_k`.
    pub k: u32,
    /// Mean over instances of pass@k: some of k samples pass.
    pub pass_at_k: f64,
    /// Mean over instances of pass^k: all of k samples pass.
    pub pass_hat_k: f64,
    /// Instances with 0 < pass rate < 1.
    pub flaky: usize,
}

/// Flaky instances and the stability of every repeated (model, spec).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct Flaky {
    /// Per (model, spec) with repeated samples, in model then spec order.
    pub stability: Vec<Stability>,
    /// Flaky instances, lowest pass rate first (then model, spec, instance).
    pub instances: Vec<FlakyInstance>,
}

/// The instances with more than one sample in `lists` (each one run's outcomes of a
/// cell), pooled: (instance, samples passed, samples), in instance order.
fn repeated(lists: &[&[Outcome]]) -> Vec<(u64, u32, u32)> {
    let of = |o: &Outcome| (o.instance, o.passed, o.samples);
    let many = |r: &(u64, u32, u32)| r.2 > 1;
    // One run, in instance order (as the metrics list it): nothing to pool, so no
    // copy of a large cell whose instances have one sample each.
    if let [list] = lists
        && list.is_sorted_by(|a, b| a.instance < b.instance)
    {
        return list.iter().map(of).filter(many).collect();
    }
    let mut all: Vec<(u64, u32, u32)> = lists.iter().flat_map(|l| l.iter().map(of)).collect();
    all.sort_unstable_by_key(|r| r.0);
    let mut pooled: Vec<(u64, u32, u32)> = Vec::new();
    for (i, c, n) in all {
        match pooled.last_mut() {
            Some(last) if last.0 == i => (last.1, last.2) = (last.1 + c, last.2 + n),
            _ => pooled.push((i, c, n)),
        }
    }
    pooled.retain(many);
    pooled
}

/// Flaky instances of the report's models, pooled over their runs.
pub(crate) fn build(v: &View) -> Flaky {
    // (model, spec) → its outcomes in every run of the model.
    let mut pooled: BTreeMap<(&str, &str), Vec<&[Outcome]>> = BTreeMap::new();
    for (m, shown) in v.models.iter().enumerate() {
        let model = v
            .origins
            .get(m)
            .map_or(shown.as_str(), |o| o.model.as_str());
        for (spec, outcomes) in v.summary.outcomes.get(shown).into_iter().flatten() {
            pooled.entry((model, spec)).or_default().push(outcomes);
        }
    }
    let mut out = Flaky::default();
    for ((model, spec), lists) in pooled {
        let repeated = repeated(&lists);
        let Some(k) = repeated.iter().map(|r| r.2).min() else {
            continue;
        };
        let mean = |f: fn(u64, u64, u64) -> f64| {
            let sum: f64 = repeated
                .iter()
                .map(|&(_, c, n)| f(n.into(), c.into(), k.into()))
                .sum();
            sum / repeated.len() as f64
        };
        let flaky: Vec<FlakyInstance> = repeated
            .iter()
            .filter(|&&(_, c, n)| c > 0 && c < n)
            .map(|&(instance, passed, samples)| FlakyInstance {
                model: model.to_owned(),
                spec: spec.to_owned(),
                instance,
                passed,
                samples,
            })
            .collect();
        out.stability.push(Stability {
            model: model.to_owned(),
            spec: spec.to_owned(),
            instances: repeated.len(),
            k,
            pass_at_k: mean(pass_at_k),
            pass_hat_k: mean(pass_hat_k),
            flaky: flaky.len(),
        });
        out.instances.extend(flaky);
    }
    let rate = |f: &FlakyInstance| f64::from(f.passed) / f64::from(f.samples);
    out.instances.sort_by(|a, b| {
        rate(a)
            .total_cmp(&rate(b))
            .then_with(|| (&a.model, &a.spec, a.instance).cmp(&(&b.model, &b.spec, b.instance)))
    });
    out
}
