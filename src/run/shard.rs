//! Shards: one deterministic, balanced slice of a plan per machine, and the
//! plan hash that proves shards belong together.
//!
//! The unit is the (spec, instance, sample) key. Every key of a plan has an
//! ordinal, its position in the plan's full key list (specs in plan order,
//! then instances, then samples), and shard `i` of `n` owns the keys whose
//! ordinal is `i` modulo `n`. The ordinal needs nothing but the plan, so every
//! machine computes the same partition, every model's answers for one key are
//! in the same shard, and each shard gets an equal share of every spec
//! (a spec of slow programs is not all in one shard).

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{Manifest, SpecRuntime};

/// Shard `index` of `count`, counted from 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Shard {
    /// This shard, `0..count`.
    pub index: u32,
    /// Shards of the plan.
    pub count: u32,
}

/// Why `--shard` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ShardError {
    /// Not `I/N`, `auto` or `auto/N`.
    #[error("--shard `{0}`: expected I/N (0 ≤ I < N), auto or auto/N")]
    Syntax(String),
    /// `auto` outside an array job or an Indexed Job.
    #[error(
        "--shard auto: neither SLURM_ARRAY_TASK_ID nor JOB_COMPLETION_INDEX is set (run it as a Slurm array task or a Kubernetes Indexed Job pod, or give --shard I/N)"
    )]
    NoScheduler,
    /// A scheduler variable that is not a number.
    #[error("--shard auto: {name}=`{value}` is not a number")]
    NotANumber {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
    },
    /// The count is unknown (a Kubernetes pod does not see `completions`).
    #[error(
        "--shard auto: the shard count is unknown; give it as --shard auto/N (N = the Job's completions)"
    )]
    NoCount,
    /// The index read is not below the count.
    #[error("--shard auto: shard index {index} is not below the count {count}")]
    OutOfRange {
        /// The index.
        index: u32,
        /// The count.
        count: u32,
    },
}

impl Shard {
    /// Parses `I/N`, or `auto` / `auto/N` with the scheduler's variables read
    /// through `env`: Slurm's `SLURM_ARRAY_TASK_ID` (less
    /// `SLURM_ARRAY_TASK_MIN`, so `--array=1-4` gives shards 0..3) with
    /// `SLURM_ARRAY_TASK_COUNT` or `MAX - MIN + 1`; a Kubernetes Indexed Job's
    /// `JOB_COMPLETION_INDEX` with the `N` given. An `N` given wins.
    pub(crate) fn parse(
        text: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Shard, ShardError> {
        let syntax = || ShardError::Syntax(text.to_owned());
        let (head, count) = match text.split_once('/') {
            Some((head, n)) => (head, Some(n.parse::<u32>().map_err(|_| syntax())?)),
            None => (text, None),
        };
        let shard = if head == "auto" {
            from_scheduler(&env, count)?
        } else {
            let index = head.parse::<u32>().map_err(|_| syntax())?;
            Shard {
                index,
                count: count.ok_or_else(syntax)?,
            }
        };
        if shard.count == 0 {
            return Err(syntax());
        }
        if shard.index >= shard.count {
            return if head == "auto" {
                Err(ShardError::OutOfRange {
                    index: shard.index,
                    count: shard.count,
                })
            } else {
                Err(syntax())
            };
        }
        Ok(shard)
    }

    /// Whether this shard owns the key at `ordinal`.
    pub(crate) fn owns(self, ordinal: u64) -> bool {
        ordinal % u64::from(self.count) == u64::from(self.index)
    }

    /// The suffix of a shard's run id: `shard-2-of-4`.
    pub(crate) fn suffix(self) -> String {
        format!("shard-{}-of-{}", self.index, self.count)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

fn from_scheduler(
    env: &impl Fn(&str) -> Option<String>,
    count: Option<u32>,
) -> Result<Shard, ShardError> {
    let number = |name: &'static str| -> Result<Option<u32>, ShardError> {
        env(name)
            .filter(|v| !v.is_empty())
            .map(|value| {
                value
                    .trim()
                    .parse::<u32>()
                    .map_err(|_| ShardError::NotANumber { name, value })
            })
            .transpose()
    };
    if let Some(task) = number("SLURM_ARRAY_TASK_ID")? {
        let min = number("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
        let slurm_count = match number("SLURM_ARRAY_TASK_COUNT")? {
            Some(n) => Some(n),
            None => number("SLURM_ARRAY_TASK_MAX")?.map(|max| max.saturating_sub(min) + 1),
        };
        return Ok(Shard {
            index: task.saturating_sub(min),
            count: count.or(slurm_count).ok_or(ShardError::NoCount)?,
        });
    }
    if let Some(index) = number("JOB_COMPLETION_INDEX")? {
        return Ok(Shard {
            index,
            count: count.ok_or(ShardError::NoCount)?,
        });
    }
    Err(ShardError::NoScheduler)
}

/// Each spec's first ordinal: the keys of the specs before it.
pub(crate) fn spec_offsets(specs: &[std::sync::Arc<SpecRuntime>]) -> Vec<u64> {
    let mut offsets = Vec::with_capacity(specs.len());
    let mut next = 0u64;
    for spec in specs {
        offsets.push(next);
        next += u64::from(spec.runs) * u64::from(spec.spec.samples());
    }
    offsets
}

/// The ordinal of (instance, sample) of a spec starting at `offset` with `samples` per instance.
pub(crate) fn ordinal(offset: u64, samples: u32, instance: u64, sample: u32) -> u64 {
    offset + instance * u64::from(samples) + u64::from(sample)
}

/// The plan's hash: what decides its keys and their answers (each spec file's
/// bytes, the models and the judge without their endpoints, concurrency or
/// prices, the instance count, who runs what), not when or where it ran.
/// Shards of one plan have one hash; `harness merge` refuses any other.
pub(crate) fn plan_hash(manifest: &Manifest) -> std::io::Result<String> {
    let mut hash = Sha256::new();
    for file in &manifest.spec_files {
        let bytes = crate::files::read_bounded(file, crate::files::FileKind::Spec)
            .map_err(std::io::Error::from)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", file.display())))?;
        hash.update(Sha256::digest(&bytes));
    }
    let model = |m: &crate::provider::ModelSetup| {
        serde_json::json!({
            "name": m.name,
            "provider": m.provider,
            "model": m.model,
            "options": m.options,
            "max_n": m.max_n,
        })
    };
    let mut plan = serde_json::json!({
        "models": manifest.models.iter().map(model).collect::<Vec<_>>(),
        "judge": manifest.judge.as_ref().map(model),
        "runs": manifest.runs,
        "only": manifest.only,
        "golden_subset": manifest.golden_subset,
    });
    // Only a plan with simulated users names them, so older plans keep their hash.
    if !manifest.users.is_empty() {
        let users: std::collections::BTreeMap<&String, serde_json::Value> = manifest
            .users
            .iter()
            .map(|(spec, m)| (spec, model(m)))
            .collect();
        plan["users"] = serde_json::json!(users);
    }
    hash.update(plan.to_string().as_bytes());
    Ok(format!("{:x}", hash.finalize())[..16].to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scheduler's variables from `NAME=value` words.
    fn env(vars: &str) -> impl Fn(&str) -> Option<String> {
        let vars: Vec<(String, String)> = vars
            .split_whitespace()
            .filter_map(|w| w.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    /// `--shard` text, the scheduler's variables, and (index, count) or a part of the error.
    type Case<'a> = (&'a str, &'a str, Result<(u32, u32), &'a str>);

    #[test]
    fn shards_parse_from_text_and_schedulers() {
        let cases: &[Case] = &[
            ("0/4", "", Ok((0, 4))),
            ("3/4", "", Ok((3, 4))),
            ("4/4", "", Err("expected I/N")),
            ("1/0", "", Err("expected I/N")),
            ("2", "", Err("expected I/N")),
            ("x/2", "", Err("expected I/N")),
            (
                "auto",
                "SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_COUNT=4",
                Ok((2, 4)),
            ),
            (
                "auto",
                "SLURM_ARRAY_TASK_ID=3 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_MAX=4",
                Ok((2, 4)),
            ),
            (
                "auto/8",
                "SLURM_ARRAY_TASK_ID=5 SLURM_ARRAY_TASK_COUNT=4",
                Ok((5, 8)),
            ),
            ("auto/3", "JOB_COMPLETION_INDEX=1", Ok((1, 3))),
            (
                "auto",
                "JOB_COMPLETION_INDEX=1",
                Err("shard count is unknown"),
            ),
            ("auto", "", Err("neither SLURM_ARRAY_TASK_ID")),
            (
                "auto/2",
                "JOB_COMPLETION_INDEX=2",
                Err("not below the count"),
            ),
            ("auto/2", "JOB_COMPLETION_INDEX=one", Err("is not a number")),
        ];
        for (text, vars, want) in cases {
            let got = Shard::parse(text, env(vars));
            match (got, want) {
                (Ok(s), Ok((i, n))) => assert_eq!((s.index, s.count), (*i, *n), "{text} {vars:?}"),
                (Err(e), Err(part)) => {
                    assert!(e.to_string().contains(part), "{text}: {e}")
                }
                (got, want) => panic!("{text} {vars:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn every_ordinal_has_exactly_one_shard_and_shares_are_equal() {
        for count in 1..=7u32 {
            let mut sizes = vec![0u64; count as usize];
            for ordinal in 0..1000u64 {
                let owners: Vec<u32> = (0..count)
                    .filter(|&index| Shard { index, count }.owns(ordinal))
                    .collect();
                assert_eq!(owners.len(), 1);
                sizes[owners[0] as usize] += 1;
            }
            let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            assert!(max - min <= 1, "{count}: {sizes:?}");
        }
    }
}
