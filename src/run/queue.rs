//! One model's tasks in plan order, made as they are taken: a run of 100,000
//! instances would otherwise hold a queue entry for each before the first
//! request. Samples already in the journal are skipped; the rest of each
//! instance go out as requests of up to `per_request` samples.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use super::record::TaskKey;
use super::shard::{self, Shard};
use super::{Manifest, SpecRuntime};

/// One request's task: (spec, instance, samples).
pub(super) type QueueItem = (usize, u64, Samples);

/// The samples one request asks for: a run of consecutive ones (the usual
/// case, kept inline) or a list (a resumed task whose done samples are skipped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Samples {
    /// `start..end`.
    Run(std::ops::Range<u32>),
    /// Anything else, in order.
    List(Box<[u32]>),
}

impl Samples {
    /// The samples of `chunk` (ascending, as the queue makes them).
    fn of(chunk: &[u32]) -> Samples {
        match (chunk.first(), chunk.last()) {
            (Some(&first), Some(&last)) if (last - first) as usize + 1 == chunk.len() => {
                Samples::Run(first..last + 1)
            }
            _ => Samples::List(chunk.into()),
        }
    }

    /// How many samples.
    pub(super) fn len(&self) -> usize {
        match self {
            Samples::Run(run) => run.len(),
            Samples::List(list) => list.len(),
        }
    }

    /// The samples, in order.
    pub(super) fn to_vec(&self) -> Vec<u32> {
        match self {
            Samples::Run(run) => run.clone().collect(),
            Samples::List(list) => list.to_vec(),
        }
    }
}

impl IntoIterator for Samples {
    type Item = u32;
    type IntoIter = std::vec::IntoIter<u32>;

    fn into_iter(self) -> Self::IntoIter {
        self.to_vec().into_iter()
    }
}

/// A spec the model runs, with what its keys need.
struct Planned {
    /// Index into the run's specs.
    index: usize,
    spec: Arc<SpecRuntime>,
    /// The golden subset when the model runs only that, else every instance up to `runs`.
    subset: Option<Vec<u64>>,
    /// Its first key's ordinal ([`shard::spec_offsets`]).
    offset: u64,
}

impl Planned {
    fn instance_count(&self) -> usize {
        self.subset
            .as_ref()
            .map_or(self.spec.runs as usize, Vec::len)
    }

    fn instance(&self, i: usize) -> u64 {
        self.subset.as_ref().map_or(i as u64, |s| s[i])
    }
}

/// One model's tasks not yet in the journal, in plan order (an iterator of requests).
pub(super) struct Tasks {
    model: String,
    specs: Vec<Planned>,
    shard: Option<Shard>,
    per_request: usize,
    done: Arc<HashSet<TaskKey>>,
    /// The next (position in `specs`, instance position) to look at.
    at: (usize, usize),
    /// Requests of the instance looked at last, not yet taken.
    ready: VecDeque<QueueItem>,
}

impl Tasks {
    /// The tasks of `model` over `specs` (those the manifest gives it), skipping `done` keys.
    pub(super) fn new(
        manifest: &Manifest,
        model: &str,
        per_request: usize,
        specs: &[Arc<SpecRuntime>],
        done: Arc<HashSet<TaskKey>>,
    ) -> Tasks {
        let offsets = shard::spec_offsets(specs);
        let golden = manifest.golden_subset_for(model);
        let planned = specs
            .iter()
            .enumerate()
            .filter(|(_, s)| manifest.includes(model, &s.spec.id))
            .map(|(index, spec)| Planned {
                index,
                subset: spec
                    .golden
                    .as_ref()
                    .filter(|_| golden)
                    .map(|_| spec.instances(true)),
                spec: spec.clone(),
                offset: offsets[index],
            })
            .collect();
        Tasks {
            model: model.to_owned(),
            specs: planned,
            shard: manifest.shard,
            per_request: per_request.max(1),
            done,
            at: (0, 0),
            ready: VecDeque::new(),
        }
    }

    /// The samples this run owns of one instance, and those of them not done.
    fn samples(&self, planned: &Planned, instance: u64) -> (u64, Vec<u32>) {
        let samples = planned.spec.spec.samples();
        let owned = |sample: &u32| {
            let ordinal = shard::ordinal(planned.offset, samples, instance, *sample);
            self.shard.is_none_or(|s| s.owns(ordinal))
        };
        let total = (0..samples).filter(owned).count() as u64;
        let missing = (0..samples)
            .filter(owned)
            .filter(|&sample| {
                !self.done.contains(&TaskKey {
                    model: self.model.clone(),
                    spec: planned.spec.spec.id.clone(),
                    instance,
                    sample,
                })
            })
            .collect();
        (total, missing)
    }

    /// The samples the model runs in this plan and those still pending, over all its tasks.
    pub(super) fn counts(&self) -> (u64, u64) {
        let (mut total, mut pending) = (0, 0);
        for planned in &self.specs {
            for i in 0..planned.instance_count() {
                let (owned, missing) = self.samples(planned, planned.instance(i));
                total += owned;
                pending += missing.len() as u64;
            }
        }
        (total, pending)
    }
}

impl Iterator for Tasks {
    type Item = QueueItem;

    fn next(&mut self) -> Option<QueueItem> {
        while self.ready.is_empty() {
            let planned = self.specs.get(self.at.0)?;
            if self.at.1 >= planned.instance_count() {
                self.at = (self.at.0 + 1, 0);
                continue;
            }
            let instance = planned.instance(self.at.1);
            self.at.1 += 1;
            let (_, missing) = self.samples(planned, instance);
            let index = planned.index;
            let items = missing.chunks(self.per_request);
            let items = items.map(|chunk| (index, instance, Samples::of(chunk)));
            self.ready.extend(items);
        }
        self.ready.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::Samples;

    #[test]
    fn consecutive_samples_are_a_run_and_others_a_list() {
        assert_eq!(Samples::of(&[2, 3, 4]), Samples::Run(2..5));
        assert_eq!(Samples::of(&[0, 2]), Samples::List(vec![0, 2].into()));
        assert_eq!(Samples::of(&[0, 2]).to_vec(), [0, 2]);
        assert_eq!((Samples::of(&[7]).len(), Samples::of(&[]).len()), (1, 0));
    }
}
