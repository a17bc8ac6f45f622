//! Flaky instances: for a model with several samples of an instance (a spec's
//! `[sampling] n`, or the same model in several runs of the report), each
//! instance's pass rate; instances that neither always pass nor always fail are
//! listed worst first, with pass@k and pass^k of the spec beside them.

use std::collections::BTreeMap;

use serde::Serialize;

use super::View;
use crate::metrics::{pass_at_k, pass_hat_k};

/// One instance that passed some of its samples but not all.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlakyInstance {
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
pub struct Stability {
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
pub struct Flaky {
    /// Per (model, spec) with repeated samples, in model then spec order.
    pub stability: Vec<Stability>,
    /// Flaky instances, lowest pass rate first (then model, spec, instance).
    pub instances: Vec<FlakyInstance>,
}

/// Instance → (samples passed, samples).
type Counts = BTreeMap<u64, (u32, u32)>;

/// Flaky instances of the report's models, pooled over their runs.
pub(crate) fn build(v: &View) -> Flaky {
    // (model, spec) → instance → (passed, samples), over every run of the model.
    let mut pooled: BTreeMap<(&str, &str), Counts> = BTreeMap::new();
    for (m, shown) in v.models.iter().enumerate() {
        let model = v
            .origins
            .get(m)
            .map_or(shown.as_str(), |o| o.model.as_str());
        for (spec, outcomes) in v.summary.outcomes.get(shown).into_iter().flatten() {
            let cell = pooled.entry((model, spec)).or_default();
            for o in outcomes {
                let e = cell.entry(o.instance).or_default();
                e.0 += o.passed;
                e.1 += o.samples;
            }
        }
    }
    let mut out = Flaky::default();
    for ((model, spec), instances) in pooled {
        let repeated: Vec<(u64, u32, u32)> = instances
            .into_iter()
            .filter(|(_, (_, n))| *n > 1)
            .map(|(i, (c, n))| (i, c, n))
            .collect();
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
