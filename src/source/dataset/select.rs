//! Which rows become instances: `filter`, then a seeded `sample`, then `limit`,
//! each per split; then the splits interleaved row by row.

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng as _, SeedableRng};
use serde_json::{Map, Value};

use super::error::DatasetError;
use super::map::RowScript;
use super::row::Row;

/// Row selection settings.
pub(super) struct Selection<'a> {
    /// Rows must satisfy it.
    pub filter: Option<&'a RowScript>,
    /// Seeded random sample size.
    pub sample: Option<u64>,
    /// Maximum rows kept.
    pub limit: Option<u64>,
    /// The spec's seed, for `sample`.
    pub seed: u64,
}

/// Indices into `rows` kept by `sel`, in file order.
pub(super) fn select(rows: &[Row], sel: &Selection, split: u64) -> Result<Vec<u32>, DatasetError> {
    let mut kept: Vec<u32> = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        let keep = match sel.filter {
            Some(f) => f.eval_bool(&row.value(), &row.origin)?,
            None => true,
        };
        if keep {
            kept.push(i as u32);
        }
    }
    if let Some(n) = sel.sample {
        kept = sample(kept, n as usize, sel.seed, split);
    }
    if let Some(n) = sel.limit {
        kept.truncate(n as usize);
    }
    Ok(kept)
}

/// `n` of `items` chosen by a partial Fisher–Yates shuffle on ChaCha8 keyed by
/// (seed, split), returned in their original order.
pub(crate) fn sample(mut items: Vec<u32>, n: usize, seed: u64, split: u64) -> Vec<u32> {
    if n >= items.len() {
        return items;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // A stream no instance RNG uses (those are keyed by instance index).
    rng.set_stream(u64::MAX - split);
    for i in 0..n {
        let span = (items.len() - i) as u64;
        let zone = u64::MAX - (u64::MAX % span);
        let j = loop {
            let x = rng.next_u64();
            if x < zone {
                break i + (x % span) as usize;
            }
        };
        items.swap(i, j);
    }
    items.truncate(n);
    items.sort_unstable();
    items
}

/// `(split, row)` pairs taking one row of each split in turn.
pub(super) fn interleave(splits: &[Vec<u32>]) -> Vec<(u32, u32)> {
    let longest = splits.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::with_capacity(splits.iter().map(Vec::len).sum());
    for i in 0..longest {
        for (s, rows) in splits.iter().enumerate() {
            if let Some(r) = rows.get(i) {
                out.push((s as u32, *r));
            }
        }
    }
    out
}

/// The value at a dotted path (`a.b.0`) of a row.
pub(super) fn lookup<'a>(row: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    crate::verify::lookup(row, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_seeded_sorted_and_distinct() {
        let items: Vec<u32> = (0..100).collect();
        let a = sample(items.clone(), 10, 7, 0);
        assert_eq!(a, sample(items.clone(), 10, 7, 0));
        assert_ne!(a, sample(items.clone(), 10, 8, 0));
        assert_ne!(a, sample(items.clone(), 10, 7, 1));
        assert!(a.windows(2).all(|w| w[0] < w[1]), "{a:?}");
        assert_eq!(sample(items.clone(), 200, 7, 0).len(), 100);
        // Pinned: a change here changes every sampled benchmark.
        assert_eq!(sample((0..10).collect(), 3, 0, 0), vec![4, 8, 9]);
    }

    #[test]
    fn interleaving_takes_turns() {
        let splits = vec![vec![0, 1, 2], vec![5], vec![7, 8]];
        assert_eq!(
            interleave(&splits),
            vec![(0, 0), (1, 5), (2, 7), (0, 1), (2, 8), (0, 2)]
        );
    }
}
