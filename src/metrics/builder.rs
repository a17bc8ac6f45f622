//! Folding a journal's records into a [`Summary`]: one accumulator per
//! (model, spec) cell, per `group_by` group and per model.

use std::collections::BTreeMap;

use serde_json::Value;

use super::accumulate::Accumulator;
use super::{Metrics, SamplingPlan, Summary};
use crate::run::record::Record;

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
