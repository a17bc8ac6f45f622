//! `[golden] instances = N`: the seeded, stratified subset of a spec's
//! instances that its golden transcripts record, so a large spec (a whole
//! benchmark) still has transcripts small enough to replay and to reproduce
//! live in CI.

use std::collections::BTreeMap;

use serde_json::Value;

use super::Spec;
use crate::error::Diagnostic;
use crate::source::dataset::sample;

/// Offset of the RNG streams of golden strata, apart from the dataset's
/// per-split `sample` streams (small split numbers) and instance streams.
const STRATUM_STREAMS: u64 = 1 << 32;

impl Spec {
    /// The instances the golden transcripts record, ascending: `None` when the
    /// spec records every instance. Strata are the instances' `split` and
    /// `group_by` values; each stratum in turn (in key order) gives one more
    /// instance until N are taken, so small groups are not crowded out, and
    /// which ones a stratum gives is a seeded sample.
    pub fn golden_subset(&self) -> Result<Option<Vec<u64>>, Diagnostic> {
        let Some(n) = self.def.golden.as_ref().and_then(|g| g.instances) else {
            return Ok(None);
        };
        let runs = self.runs_for(None);
        if n >= runs {
            return Ok(None);
        }
        let mut keys: Vec<String> = self.def.report.group_by();
        if !keys.iter().any(|k| k == "split") {
            keys.insert(0, "split".to_owned());
        }
        let mut strata: BTreeMap<Vec<String>, Vec<u32>> = BTreeMap::new();
        for index in 0..runs {
            let vars = self.vars(u64::from(index))?;
            let key = keys
                .iter()
                .map(|k| vars.get(k).map_or_else(String::new, value_text))
                .collect();
            strata.entry(key).or_default().push(index);
        }
        let sizes: Vec<usize> = strata.values().map(Vec::len).collect();
        let counts = round_robin(&sizes, n as usize);
        let mut chosen: Vec<u64> = Vec::with_capacity(n as usize);
        for (s, (items, count)) in strata.into_values().zip(counts).enumerate() {
            let stream = STRATUM_STREAMS + s as u64;
            chosen.extend(
                sample(items, count, self.seed, stream)
                    .into_iter()
                    .map(u64::from),
            );
        }
        chosen.sort_unstable();
        Ok(Some(chosen))
    }
}

/// A variable as a stratum key: strings bare, anything else as JSON.
fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// How many of `n` each stratum of `sizes` gives: one each in turn until `n`
/// are taken or every stratum is spent.
fn round_robin(sizes: &[usize], n: usize) -> Vec<usize> {
    let mut counts = vec![0; sizes.len()];
    let mut taken = 0;
    while taken < n {
        let before = taken;
        for (count, size) in counts.iter_mut().zip(sizes) {
            if taken < n && *count < *size {
                *count += 1;
                taken += 1;
            }
        }
        if taken == before {
            break;
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::round_robin;

    #[test]
    fn strata_give_one_each_in_turn_and_small_ones_run_out() {
        assert_eq!(round_robin(&[10, 10, 10, 10], 6), vec![2, 2, 1, 1]);
        assert_eq!(round_robin(&[1, 10, 10], 7), vec![1, 3, 3]);
        assert_eq!(round_robin(&[2, 2], 9), vec![2, 2]);
    }
}
