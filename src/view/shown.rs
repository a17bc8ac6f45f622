//! What the viewer shows as one run: a run folder, or the shards of one
//! plan (`harness run --shard I/N` on several machines writing into one
//! results folder) taken together, before or without `harness merge`.
//!
//! Shards belong together when their plans hash alike. The same plan run
//! sharded twice hashes alike too, so each shard index joins the earliest
//! set that lacks it: a repeated index starts the next set.

use std::collections::BTreeMap;

use super::index::{Index, Run};

/// One run as shown: its id and its run folders (one, or the shards of a
/// set in shard order).
pub(super) struct Shown<'a> {
    /// A run folder's id, or a set's: `shards-<hash>-<n>`.
    pub id: String,
    /// Its run folders.
    pub members: Vec<&'a Run>,
}

impl Shown<'_> {
    /// Whether it stands for the shards of a plan.
    pub(super) fn is_set(&self) -> bool {
        self.id.starts_with(SET_PREFIX)
    }
}

/// How a set's id starts; a run folder's id never does (`harness run` names
/// them by time).
const SET_PREFIX: &str = "shards-";

/// Characters of the plan hash a set's id keeps.
const HASH_CHARS: usize = 12;

impl Index {
    /// Every run as shown: the runs that are not shards, and each set of shards.
    pub(super) fn shown(&self) -> Vec<Shown<'_>> {
        let mut out = Vec::new();
        let mut by_plan: BTreeMap<&str, Vec<&Run>> = BTreeMap::new();
        for run in self.runs.values() {
            match shard_plan(run) {
                Some(hash) => by_plan.entry(hash).or_default().push(run),
                None => out.push(Shown {
                    id: run.id.clone(),
                    members: vec![run],
                }),
            }
        }
        for (hash, mut runs) in by_plan {
            runs.sort_by(|a, b| (created(a), &a.id).cmp(&(created(b), &b.id)));
            let mut sets: Vec<Vec<&Run>> = Vec::new();
            for run in runs {
                let index = shard_index(run);
                match sets
                    .iter_mut()
                    .find(|set| set.iter().all(|r| shard_index(r) != index))
                {
                    Some(set) => set.push(run),
                    None => sets.push(vec![run]),
                }
            }
            for (n, mut members) in sets.into_iter().enumerate() {
                members.sort_by_key(|r| shard_index(r));
                let short: String = hash.chars().take(HASH_CHARS).collect();
                out.push(Shown {
                    id: format!("{SET_PREFIX}{short}-{}", n + 1),
                    members,
                });
            }
        }
        out
    }

    /// The run shown as `id`: a set of shards, or one run folder (a shard's
    /// own id finds that shard alone).
    pub(super) fn find(&self, id: &str) -> Option<Shown<'_>> {
        if id.starts_with(SET_PREFIX) {
            return self.shown().into_iter().find(|s| s.id == id);
        }
        let run = self.runs.get(id)?;
        Some(Shown {
            id: run.id.clone(),
            members: vec![run],
        })
    }
}

/// The plan hash of a shard run.
fn shard_plan(run: &Run) -> Option<&str> {
    let plan = run.plan.as_ref()?;
    plan.shard?;
    plan.plan_hash.as_deref()
}

fn shard_index(run: &Run) -> Option<u32> {
    run.plan.as_ref()?.shard.map(|s| s.index)
}

fn created(run: &Run) -> Option<&str> {
    run.plan.as_ref().map(|p| p.created.as_str())
}
