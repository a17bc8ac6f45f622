//! What `harness view` knows of a results folder: every run under
//! `runs/`, its plan, its journal's index ([`super::journal`]) and whether it
//! wrote its report, read again on every refresh.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use serde::Serialize;

use super::journal::{CHUNK_BYTES, Chunk, JournalIndex, read_chunk};
use crate::report::SpecInfo;
use crate::run::Manifest;

/// How long after its journal last grew an unfinished run still counts as running.
pub(super) const LIVE_FOR: Duration = Duration::from_secs(5);

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Status {
    /// Its journal grew within [`LIVE_FOR`] and it wrote no report yet.
    Running,
    /// It wrote its reports.
    Finished,
    /// It stopped without its reports: killed, or its machine went away.
    Interrupted,
}

/// One run folder.
#[derive(Debug)]
pub(super) struct Run {
    /// Its id: the folder's name.
    pub id: String,
    /// Its folder.
    pub dir: PathBuf,
    /// Its plan, once `plan.json` reads.
    pub plan: Option<Manifest>,
    /// Its plan's specs as reports show them (title, tags, folder), read
    /// with the plan from the files as they are now.
    pub specs: Vec<SpecInfo>,
    /// Its journal so far.
    pub journal: JournalIndex,
    /// When its journal (else its plan) last changed.
    pub modified: Option<SystemTime>,
    /// A report of it exists under `reports/`.
    pub reported: bool,
}

impl Run {
    /// Its journal's path.
    pub(super) fn journal_path(&self) -> PathBuf {
        self.dir.join("journal.jsonl")
    }

    /// The spec `id` of its plan, as reports show it.
    pub(super) fn spec(&self, id: &str) -> SpecInfo {
        let found = self.specs.iter().find(|s| s.id == id);
        found.cloned().unwrap_or_else(|| SpecInfo::plain(id))
    }

    /// Its golden directory, when it has a plan.
    pub(super) fn golden_dir(&self, root: &Path) -> Option<PathBuf> {
        Some(resolve(root, &self.plan.as_ref()?.golden_dir))
    }

    /// Where it stands at `now`.
    pub(super) fn status(&self, now: SystemTime) -> Status {
        if self.reported {
            return Status::Finished;
        }
        let fresh = self
            .modified
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|age| age < LIVE_FOR);
        if fresh {
            Status::Running
        } else {
            Status::Interrupted
        }
    }
}

/// Every run of a results folder.
#[derive(Debug)]
pub(super) struct Index {
    /// The results folder.
    pub root: PathBuf,
    /// Runs by id.
    pub runs: BTreeMap<String, Run>,
    /// Bumped whenever a refresh finds anything new.
    pub version: u64,
    /// Specs read so far, by file: runs of one plan share them.
    specs: HashMap<PathBuf, SpecInfo>,
}

impl Index {
    /// An empty index of `root`; [`refresh`] fills it.
    pub(super) fn new(root: &Path) -> Index {
        Index {
            root: root.to_path_buf(),
            runs: BTreeMap::new(),
            version: 0,
            specs: HashMap::new(),
        }
    }

    /// Takes in the run folders `found`: new ones added (empty), gone ones
    /// dropped; whether anything changed.
    fn sync(&mut self, found: &[(String, PathBuf)]) -> bool {
        let before = self.runs.len();
        self.runs.retain(|id, _| found.iter().any(|(f, _)| f == id));
        let mut changed = self.runs.len() != before;
        for (id, dir) in found {
            self.runs.entry(id.clone()).or_insert_with(|| {
                changed = true;
                Run {
                    id: id.clone(),
                    dir: dir.clone(),
                    plan: None,
                    specs: Vec::new(),
                    journal: JournalIndex::default(),
                    modified: None,
                    reported: false,
                }
            });
        }
        changed
    }
}

/// The run folders under `root/runs`: those with a `plan.json`.
fn scan(root: &Path) -> Vec<(String, PathBuf)> {
    let entries = std::fs::read_dir(root.join("runs")).into_iter().flatten();
    entries
        .flatten()
        .filter_map(|entry| {
            let dir = entry.path();
            let id = dir.file_name()?.to_str()?.to_owned();
            dir.join("plan.json").is_file().then_some((id, dir))
        })
        .collect()
}

/// What a refresh reads of one run outside the lock.
struct Pending {
    id: String,
    dir: PathBuf,
    offset: u64,
    planned: bool,
    reported: bool,
}

/// Reads the results folder again into `index`: new runs, their plans, new
/// journal lines, reports. The files are read outside the lock, a chunk at
/// a time, so pages are answered while a large journal is indexed;
/// `notify` hears each new version as soon as a run is read (a first read
/// of a large folder shows its runs one by one).
pub(super) fn refresh(index: &Mutex<Index>, notify: &dyn Fn(u64)) {
    let lock = || index.lock().unwrap_or_else(|e| e.into_inner());
    let root = lock().root.clone();
    let found = scan(&root);
    let (mut changed, pending) = {
        let mut ix = lock();
        let changed = ix.sync(&found);
        let pending: Vec<Pending> = ix
            .runs
            .values()
            .map(|r| Pending {
                id: r.id.clone(),
                dir: r.dir.clone(),
                offset: r.journal.offset,
                planned: r.plan.is_some(),
                reported: r.reported,
            })
            .collect();
        (changed, pending)
    };
    for p in pending {
        changed |= refresh_run(index, &root, p);
        if changed {
            let version = {
                let mut ix = lock();
                ix.version += 1;
                ix.version
            };
            notify(version);
            changed = false;
        }
    }
    if changed {
        let mut ix = lock();
        ix.version += 1;
        notify(ix.version);
    }
}

/// Reads what the run `p` gained into `index`: its plan once, its journal
/// a chunk at a time, when it last changed, its report.
fn refresh_run(index: &Mutex<Index>, root: &Path, p: Pending) -> bool {
    let lock = || index.lock().unwrap_or_else(|e| e.into_inner());
    let mut changed = false;
    let plan = (!p.planned)
        .then(|| crate::run::read_manifest(&p.dir).ok())
        .flatten();
    // The plan and its specs go in before any record: a record shown
    // without its spec's folder would find none of its images.
    if let Some(plan) = plan {
        let specs = spec_infos(index, root, &plan);
        let mut ix = lock();
        let Some(run) = ix.runs.get_mut(&p.id) else {
            return true; // its folder went away meanwhile
        };
        run.specs = specs;
        run.plan = Some(plan);
        changed = true;
    }
    let journal = p.dir.join("journal.jsonl");
    let mut offset = p.offset;
    loop {
        let chunk = read_chunk(&journal, offset, CHUNK_BYTES)
            .unwrap_or_else(|_| Some(Chunk::empty(offset)));
        let mut ix = lock();
        let Some(run) = ix.runs.get_mut(&p.id) else {
            return true; // its folder went away meanwhile
        };
        let Some(chunk) = chunk else {
            run.journal = JournalIndex::default();
            offset = 0;
            changed = true;
            continue;
        };
        if chunk.is_empty() {
            break;
        }
        changed |= run.journal.apply(chunk);
        offset = run.journal.offset;
    }
    let modified = std::fs::metadata(&journal)
        .or_else(|_| std::fs::metadata(p.dir.join("plan.json")))
        .and_then(|m| m.modified())
        .ok();
    let reports = root.join("reports");
    let reported = p.reported
        || ["md", "html", "json"]
            .iter()
            .any(|ext| reports.join(format!("report_{}.{ext}", p.id)).is_file());
    let mut ix = lock();
    if let Some(run) = ix.runs.get_mut(&p.id) {
        changed |= modified != run.modified || reported != run.reported;
        run.modified = modified;
        run.reported = reported;
    }
    changed
}

/// A path a plan names: as it is when absolute; else beside the results
/// folder `root` (where `harness run` ran from) when there, else from the
/// viewer's working directory.
fn resolve(root: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        return path.to_path_buf();
    }
    let beside = root.parent().map(|p| p.join(path));
    beside
        .filter(|p| p.exists())
        .unwrap_or_else(|| path.to_path_buf())
}

/// `plan`'s specs as reports show them: each file read once for the
/// viewer's life (outside the lock: a spec with a dataset takes a while).
fn spec_infos(index: &Mutex<Index>, root: &Path, plan: &Manifest) -> Vec<SpecInfo> {
    let lock = || index.lock().unwrap_or_else(|e| e.into_inner());
    let mut out = Vec::new();
    for file in &plan.spec_files {
        let known = lock().specs.get(file).cloned();
        let info = known.unwrap_or_else(|| {
            let info = SpecInfo::from_file(&resolve(root, file));
            lock().specs.insert(file.clone(), info.clone());
            info
        });
        out.push(info);
    }
    out
}
