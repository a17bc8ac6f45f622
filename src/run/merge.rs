//! `harness merge`: the shards of one plan back into one run.
//!
//! Data flow: every shard's `plan.json` is checked against the first (one
//! plan hash, one shard count, each index once); each journal is indexed by
//! key and byte offset (a torn last line skipped, a line that cannot be
//! read refused with its line number, later lines winning within a
//! journal, a key in two shards refused); the plan's keys are walked to
//! find what is missing, by owning shard; when nothing is, the records are
//! copied byte for byte, in plan order, into one journal beside a manifest
//! without a shard. The reports and the golden comparison are then those of
//! any run, read from that journal.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::record::Record;
use super::shard::{self, Shard};
use super::{Manifest, SpecRuntime};
use crate::files::{AtomicFile, for_each_line_at, open_existing};

/// Why shards could not be merged.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MergeError {
    /// A file could not be read or written.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// A run directory that is not a shard.
    #[error("{}: not a shard (its plan.json has no shard; runs made with --shard are)", .0.display())]
    NotAShard(PathBuf),
    /// Two shards of different plans.
    #[error("{} is a shard of plan {theirs}, {} of plan {ours}: they cannot merge", their_dir.display(), our_dir.display())]
    OtherPlan {
        /// The first shard.
        our_dir: PathBuf,
        /// Its plan hash.
        ours: String,
        /// The shard that differs.
        their_dir: PathBuf,
        /// Its plan hash.
        theirs: String,
    },
    /// Two shard counts.
    #[error("{} is one of {theirs} shards, {} one of {ours}", their_dir.display(), our_dir.display())]
    OtherCount {
        /// The first shard.
        our_dir: PathBuf,
        /// Its count.
        ours: u32,
        /// The shard that differs.
        their_dir: PathBuf,
        /// Its count.
        theirs: u32,
    },
    /// One shard index given twice.
    #[error("{} and {} are both shard {shard}", first.display(), second.display())]
    SameShard {
        /// The shard.
        shard: Shard,
        /// Its first directory.
        first: PathBuf,
        /// The other.
        second: PathBuf,
    },
    /// One key answered in two shards.
    #[error("{key} is answered in both {} and {}: shards must not overlap", first.display(), second.display())]
    Duplicate {
        /// `model spec/instance#sample`.
        key: String,
        /// One journal.
        first: PathBuf,
        /// The other.
        second: PathBuf,
    },
    /// A record of a key its shard does not own (or of no key of the plan).
    #[error("{}: {key} is not a key of shard {shard} of this plan", journal.display())]
    Foreign {
        /// `model spec/instance#sample`.
        key: String,
        /// The shard.
        shard: Shard,
        /// Its journal.
        journal: PathBuf,
    },
}

/// One shard's run: its directory and manifest.
#[derive(Debug, Clone)]
pub(crate) struct ShardRun {
    /// `results/runs/<id>`.
    pub dir: PathBuf,
    /// Its `plan.json`.
    pub manifest: Manifest,
    /// Its shard.
    pub shard: Shard,
}

impl ShardRun {
    /// Reads the shard run in `dir`.
    pub(crate) fn open(dir: &Path) -> Result<ShardRun, MergeError> {
        let manifest = super::read_manifest(dir).map_err(|e| match e {
            super::RunError::Io(e) => {
                MergeError::Io(io::Error::new(e.kind(), format!("{}: {e}", dir.display())))
            }
            other => MergeError::Io(io::Error::other(format!("{}: {other}", dir.display()))),
        })?;
        let shard = manifest
            .shard
            .ok_or_else(|| MergeError::NotAShard(dir.to_path_buf()))?;
        Ok(ShardRun {
            dir: dir.to_path_buf(),
            manifest,
            shard,
        })
    }
}

/// Checks that `shards` are distinct shards of one plan.
pub(crate) fn check_shards(shards: &[ShardRun]) -> Result<(), MergeError> {
    let Some(first) = shards.first() else {
        return Ok(());
    };
    let mut seen: BTreeMap<u32, &Path> = BTreeMap::new();
    for s in shards {
        if s.manifest.plan_hash != first.manifest.plan_hash {
            return Err(MergeError::OtherPlan {
                our_dir: first.dir.clone(),
                ours: first.manifest.plan_hash.clone().unwrap_or_default(),
                their_dir: s.dir.clone(),
                theirs: s.manifest.plan_hash.clone().unwrap_or_default(),
            });
        }
        if s.shard.count != first.shard.count {
            return Err(MergeError::OtherCount {
                our_dir: first.dir.clone(),
                ours: first.shard.count,
                their_dir: s.dir.clone(),
                theirs: s.shard.count,
            });
        }
        if let Some(other) = seen.insert(s.shard.index, &s.dir) {
            return Err(MergeError::SameShard {
                shard: s.shard,
                first: other.to_path_buf(),
                second: s.dir.clone(),
            });
        }
    }
    Ok(())
}

/// Plan position of a key: (model, spec, instance, sample) as indices.
type Position = (usize, usize, u64, u32);

/// Where one record's line lives: (shard, offset, length).
type Line = (usize, u64, usize);

/// The records of every shard, indexed by plan position.
pub(crate) struct Index {
    lines: BTreeMap<Position, Line>,
    journals: Vec<PathBuf>,
}

/// What a merge lacks: per shard index, the count of missing keys and the first few.
#[derive(Debug, Default)]
pub(crate) struct Missing {
    /// Shard index → (keys missing, up to 5 of them as `model spec/instance#sample`).
    pub by_shard: BTreeMap<u32, (u64, Vec<String>)>,
}

impl Missing {
    /// Whether nothing is missing.
    pub(crate) fn is_empty(&self) -> bool {
        self.by_shard.is_empty()
    }
}

fn label(model: &str, spec: &str, instance: u64, sample: u32) -> String {
    format!("{model} {spec}/{instance}#{sample}")
}

/// Indexes every shard's journal against the plan of `shards[0]`, whose specs are `specs`.
pub(crate) fn index(shards: &[ShardRun], specs: &[Arc<SpecRuntime>]) -> Result<Index, MergeError> {
    let plan = &shards[0].manifest;
    let models: HashMap<&str, usize> = plan
        .models
        .iter()
        .enumerate()
        .map(|(i, m)| (m.name.as_str(), i))
        .collect();
    let spec_at: HashMap<&str, usize> = specs
        .iter()
        .enumerate()
        .map(|(i, s)| (s.spec.id.as_str(), i))
        .collect();
    let offsets = shard::spec_offsets(specs);
    let mut lines: BTreeMap<Position, Line> = BTreeMap::new();
    let mut journals: Vec<PathBuf> = Vec::new();
    for (j, s) in shards.iter().enumerate() {
        let path = s.dir.join("journal.jsonl");
        let mut own: HashMap<Position, Line> = HashMap::new();
        for_each_raw(&path, |offset, len, record| {
            let key = label(&record.model, &record.spec, record.instance, record.sample);
            let (Some(&m), Some(&si)) = (
                models.get(record.model.as_str()),
                spec_at.get(record.spec.as_str()),
            ) else {
                return Err(MergeError::Foreign {
                    key,
                    shard: s.shard,
                    journal: path.clone(),
                });
            };
            let spec = &specs[si].spec;
            let ordinal =
                shard::ordinal(offsets[si], spec.samples(), record.instance, record.sample);
            if !s.shard.owns(ordinal) {
                return Err(MergeError::Foreign {
                    key,
                    shard: s.shard,
                    journal: path.clone(),
                });
            }
            own.insert((m, si, record.instance, record.sample), (j, offset, len));
            Ok(())
        })?;
        for (position, line) in own {
            if let Some(&(other, ..)) = lines.get(&position) {
                let (m, si, instance, sample) = position;
                return Err(MergeError::Duplicate {
                    key: label(&plan.models[m].name, &specs[si].spec.id, instance, sample),
                    first: journals[other].clone(),
                    second: path,
                });
            }
            lines.insert(position, line);
        }
        journals.push(path);
    }
    Ok(Index { lines, journals })
}

/// Calls `f` with each complete line's offset, length and record; a torn
/// last line is skipped and a line that cannot be read fails, as every
/// journal reader does.
fn for_each_raw(
    path: &Path,
    mut f: impl FnMut(u64, usize, Record) -> Result<(), MergeError>,
) -> Result<(), MergeError> {
    let file = open_existing(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    let Some(file) = file else { return Ok(()) };
    // A last line the crash left without its newline is not copied: the
    // merged journal's next line would run into it.
    for_each_line_at(path, &mut BufReader::new(file), |offset, line, record| {
        if line.ends_with(b"\n") {
            f(offset, line.len(), record)?;
        }
        Ok(())
    })
}

impl Index {
    /// The plan's keys (as `shards[0]`'s manifest and `specs` give them) with
    /// no record, by owning shard.
    pub(crate) fn missing(
        &self,
        plan: &Manifest,
        count: u32,
        specs: &[Arc<SpecRuntime>],
    ) -> Missing {
        let offsets = shard::spec_offsets(specs);
        let mut missing = Missing::default();
        for (m, model) in plan.models.iter().enumerate() {
            for (si, spec) in specs.iter().enumerate() {
                if !plan.includes(&model.name, &spec.spec.id) {
                    continue;
                }
                let samples = spec.spec.samples();
                for instance in spec.instances(plan.golden_subset_for(&model.name)) {
                    for sample in 0..samples {
                        if self.lines.contains_key(&(m, si, instance, sample)) {
                            continue;
                        }
                        let ordinal = shard::ordinal(offsets[si], samples, instance, sample);
                        let owner = (ordinal % u64::from(count)) as u32;
                        let (n, first) = missing.by_shard.entry(owner).or_default();
                        *n += 1;
                        if first.len() < 5 {
                            first.push(label(&model.name, &spec.spec.id, instance, sample));
                        }
                    }
                }
            }
        }
        missing
    }

    /// Records indexed.
    pub(crate) fn len(&self) -> usize {
        self.lines.len()
    }

    /// Writes every record, in plan order, to the journal at `path` (atomically).
    pub(crate) fn write_journal(&self, path: &Path) -> Result<(), MergeError> {
        let mut readers: Vec<File> = self
            .journals
            .iter()
            .map(|path| crate::files::open_regular(path).map(|(file, _)| file))
            .collect::<Result<_, _>>()
            .map_err(io::Error::from)?;
        let mut out = io::BufWriter::new(AtomicFile::create(path)?);
        let mut buf = Vec::new();
        for &(j, offset, len) in self.lines.values() {
            buf.resize(len, 0);
            readers[j].seek(SeekFrom::Start(offset))?;
            readers[j].read_exact(&mut buf)?;
            out.write_all(&buf)?;
        }
        out.into_inner().map_err(|e| e.into_error())?.commit()?;
        Ok(())
    }
}

/// The merged run's manifest: the plan without a shard, created when its
/// first shard was, keeping the weakest confinement any shard ran under.
pub(crate) fn merged_manifest(shards: &[ShardRun], run_id: &str) -> Manifest {
    let mut manifest = shards[0].manifest.clone();
    manifest.run_id = run_id.to_owned();
    manifest.shard = None;
    manifest.created = shards
        .iter()
        .map(|s| s.manifest.created.clone())
        .min()
        .unwrap_or_default();
    manifest.sandbox = shards
        .iter()
        .filter_map(|s| s.manifest.sandbox.clone())
        .min_by_key(|i| i.isolated);
    manifest
}

/// The run id a shard's id comes from: `<id>-shard-I-of-N` → `<id>`.
pub(crate) fn base_id(shard: &ShardRun) -> String {
    let id = &shard.manifest.run_id;
    let suffix = format!("-{}", shard.shard.suffix());
    match id.find(&suffix) {
        Some(at) => id[..at].to_owned(),
        None => id.clone(),
    }
}
