//! `results/runs/<run-id>/plan.json`: what a run is, so it can be resumed;
//! run ids and finding a run by id or `latest`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::RunError;
use crate::provider::ModelSetup;

/// `results/runs/<run-id>/plan.json`: what a run is, so it can be resumed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Manifest {
    /// The run id.
    pub run_id: String,
    /// UTC creation time, `2026-11-21 22:30:00`.
    pub created: String,
    /// Spec files, in order.
    pub spec_files: Vec<PathBuf>,
    /// Models, in order.
    pub models: Vec<ModelSetup>,
    /// Instances per spec, overriding each spec's `runs`.
    pub runs: Option<u32>,
    /// The golden directory (replay reads transcripts from it).
    pub golden_dir: PathBuf,
    /// Per model, the spec ids it runs (absent: every spec).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only: Option<BTreeMap<String, Vec<String>>>,
    /// Every model runs only the golden subset of specs that declare one
    /// (`--golden-subset`, `--bless`); replays always do.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub golden_subset: bool,
    /// The judge model of `judge` rules, when one is named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<ModelSetup>,
    /// Per spec id, the model playing its simulated user (`[agent.user]`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub users: BTreeMap<String, ModelSetup>,
    /// How model-written code was confined (`--unsandboxed` or not, which
    /// limits bounded each process tree), when the run had any to run or
    /// `--unsandboxed` was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::sandbox::Isolation>,
    /// The currency of the models' prices and of every cost of the run.
    #[serde(default = "usd")]
    pub currency: String,
    /// The plan's hash ([`super::shard::plan_hash`]): shards of one plan share it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_hash: Option<String>,
    /// The slice of the plan this run computes (`--shard`); absent: all of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<super::shard::Shard>,
    /// The git commit checked out where the first spec lives, when that is
    /// a git checkout (not part of the plan's hash: shards may differ).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

fn usd() -> String {
    "USD".to_owned()
}

impl Manifest {
    /// Whether `model` runs only the golden subsets: asked for, or a replay
    /// (its transcripts hold nothing else).
    pub(crate) fn golden_subset_for(&self, model: &str) -> bool {
        self.golden_subset
            || self
                .models
                .iter()
                .any(|m| m.name == model && m.provider == crate::provider::ProviderKind::Replay)
    }

    /// Whether `model` runs `spec` in this plan.
    pub(crate) fn includes(&self, model: &str, spec: &str) -> bool {
        self.only.as_ref().is_none_or(|only| {
            only.get(model)
                .is_some_and(|specs| specs.iter().any(|s| s == spec))
        })
    }
}

/// UTC now as (`2026-11-21 22:30:00`, `20261121_223000`).
pub(crate) fn timestamps() -> (String, String) {
    let now = time::OffsetDateTime::now_utc();
    let human = now
        .format(time::macros::format_description!(
            "[year]-[month]-[day] [hour]:[minute]:[second]"
        ))
        .expect("formats");
    let file = now
        .format(time::macros::format_description!(
            "[year][month][day]_[hour][minute][second]"
        ))
        .expect("formats");
    (human, file)
}

/// A fresh run id under `runs_dir` (the file stamp, suffixed if taken).
pub(crate) fn new_run_id(runs_dir: &Path, file_stamp: &str) -> String {
    let mut id = file_stamp.to_owned();
    let mut n = 1;
    while runs_dir.join(&id).exists() {
        n += 1;
        id = format!("{file_stamp}-{n}");
    }
    id
}

/// Finds a run directory by id or `latest`.
pub(crate) fn find_run(runs_dir: &Path, id: &str) -> Result<PathBuf, RunError> {
    if id != "latest" {
        let dir = runs_dir.join(id);
        return if dir.join("plan.json").exists() {
            Ok(dir)
        } else {
            Err(RunError::NoRun {
                id: id.to_owned(),
                dir: runs_dir.to_path_buf(),
            })
        };
    }
    let mut ids: Vec<PathBuf> = std::fs::read_dir(runs_dir)
        .map_err(|e| {
            RunError::Io(std::io::Error::new(
                e.kind(),
                format!("{}: {e}", runs_dir.display()),
            ))
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("plan.json").exists())
        .collect();
    // Ids are `<stamp>` or `<stamp>-<n>`: order by stamp, then n as a number (`-10` after `-9`).
    ids.sort_by_key(|p| {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match name.split_once('-') {
            Some((stamp, n)) => (stamp.to_owned(), n.parse::<u64>().unwrap_or(0)),
            None => (name, 1),
        }
    });
    ids.pop()
        .ok_or_else(|| RunError::NoRuns(runs_dir.to_path_buf()))
}

/// Loads a run's manifest.
pub(crate) fn read_manifest(run_dir: &Path) -> Result<Manifest, RunError> {
    let plan = run_dir.join("plan.json");
    let text = crate::files::read_text(&plan, crate::files::FileKind::Manifest)
        .map_err(std::io::Error::from)?;
    serde_json::from_str(&text)
        .map_err(|e| RunError::Io(std::io::Error::other(format!("plan.json: {e}"))))
}

/// Writes a run's manifest atomically, its models' URLs without their
/// credentials (a resume takes them from `harness.toml` again).
pub(crate) fn write_manifest(run_dir: &Path, manifest: &Manifest) -> Result<(), RunError> {
    let mut shown = manifest.clone();
    for model in shown.models.iter_mut().chain(shown.judge.as_mut()) {
        *model = model.with_urls_redacted();
    }
    let text = serde_json::to_string_pretty(&shown).expect("manifests serialize");
    // A resume rewrites the plan: a kill then must leave the old plan, not an empty one.
    crate::files::write_atomic(&run_dir.join("plan.json"), (text + "\n").as_bytes())?;
    Ok(())
}
