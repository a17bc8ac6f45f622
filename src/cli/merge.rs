//! `harness merge RUN_DIR... [--into DIR]`: shards of one plan into one run,
//! with the reports and golden comparison an unsharded run gives; the shards'
//! response caches into one.

use crate::output::{errln, out, outln};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::exit::{Exit, fail};
use super::finish::{Finish, FinishArgs};
use crate::client::cache::Cache;
use crate::run::merge::{self, ShardRun};
use crate::run::{self, SpecRuntime};
use crate::spec::Spec;

/// Arguments of `harness merge`.
#[derive(Debug, clap::Args)]
pub(super) struct MergeArgs {
    /// The shards' run directories (`results/runs/<id>-shard-I-of-N`), every shard once.
    #[arg(required = true)]
    pub runs: Vec<PathBuf>,
    /// The merged run's directory (default: `<results>/runs/<id>`, the shards' id without its shard suffix).
    #[arg(long, value_name = "DIR")]
    pub into: Option<PathBuf>,
    /// Results directory: reports, raw files, and the response cache the shards' caches join.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// Report formats, the golden comparison, errors allowed.
    #[command(flatten)]
    pub finish: FinishArgs,
}

/// Runs `harness merge`.
pub(super) fn run(args: &MergeArgs, color: bool) -> Exit {
    super::exit::either(merge_runs(args, color))
}

fn merge_runs(args: &MergeArgs, color: bool) -> Result<Exit, Exit> {
    let shards: Vec<ShardRun> = args
        .runs
        .iter()
        .map(|dir| ShardRun::open(dir).map_err(fail))
        .collect::<Result<_, _>>()?;
    merge::check_shards(&shards).map_err(fail)?;
    let plan = &shards[0].manifest;
    let specs = load_specs(&plan.spec_files, color)?;
    let runtimes: Vec<Arc<SpecRuntime>> = specs
        .iter()
        .map(|s| {
            run::spec_runtime(s.clone(), plan.runs)
                .map(Arc::new)
                .map_err(|e| fail(format!("{}: {e}", s.file.display())))
        })
        .collect::<Result<_, _>>()?;
    if run::plan_hash(plan).map_err(fail)?.as_str() != plan.plan_hash.as_deref().unwrap_or("") {
        return Err(fail(format!(
            "the spec files of plan {} changed since the shards ran; merge them where they ran",
            plan.plan_hash.as_deref().unwrap_or("?")
        )));
    }
    let count = shards[0].shard.count;
    let index = merge::index(&shards, &runtimes).map_err(fail)?;
    let missing = index.missing(plan, count, &runtimes);
    merge_caches(&shards, &args.results)?;
    if !missing.is_empty() {
        return Ok(incomplete(&shards, &missing, count));
    }
    let into = match &args.into {
        Some(dir) => dir.clone(),
        None => {
            let runs_dir = args.results.join("runs");
            runs_dir.join(run::new_run_id(&runs_dir, &merge::base_id(&shards[0])))
        }
    };
    if into.join("plan.json").exists() || into.join("journal.jsonl").exists() {
        return Err(fail(format!(
            "{} already holds a run; merge into a new directory",
            into.display()
        )));
    }
    std::fs::create_dir_all(&into).map_err(|e| fail(format!("{}: {e}", into.display())))?;
    let run_id = into
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "merged".to_owned());
    let manifest = merge::merged_manifest(&shards, &run_id);
    let journal_path = into.join("journal.jsonl");
    index.write_journal(&journal_path).map_err(fail)?;
    run::write_manifest(&into, &manifest).map_err(fail)?;
    outln!(
        "merged {} shards of plan {} ({} records) → {}",
        shards.len(),
        manifest.plan_hash.as_deref().unwrap_or("?"),
        index.len(),
        into.display()
    );
    let (_, file_stamp) = run::timestamps();
    let finish = Finish {
        results: &args.results,
        args: &args.finish,
        baseline: None,
        bless: false,
        color,
        lang: args.finish.lang.resolve_here(),
    };
    let report = finish.reports(
        &manifest,
        &specs,
        &journal_path,
        &manifest.created,
        &file_stamp,
    )?;
    out!("{}", report.terminal);
    outln!("report: {}", report.files.markdown.display());
    let differ = finish.golden_transcripts(&manifest, &specs, &journal_path)?;
    super::finish::print_errors(&report);
    outln!("html report: {}", report.files.html.display());
    Ok(finish.exit(&report, differ))
}

fn load_specs(files: &[PathBuf], color: bool) -> Result<Vec<Arc<Spec>>, Exit> {
    files
        .iter()
        .map(|file| {
            Spec::load(file)
                .map(Arc::new)
                .map_err(|diags| super::exit::diagnostics(&diags.0, color))
        })
        .collect()
}

/// Adds every shard's response cache (`<its results>/cache.sqlite`) to the
/// one under `results`, so a resume or rerun anywhere finds every answer.
fn merge_caches(shards: &[ShardRun], results: &Path) -> Result<(), Exit> {
    let target = results.join("cache.sqlite");
    let canonical = |p: &Path| std::fs::canonicalize(p).ok();
    let mut absorbed: Vec<PathBuf> = Vec::new();
    let mut cache: Option<Cache> = None;
    for shard in shards {
        let Some(theirs) = shard
            .dir
            .parent()
            .and_then(Path::parent)
            .map(|r| r.join("cache.sqlite"))
            .filter(|p| p.exists())
        else {
            continue;
        };
        let Some(real) = canonical(&theirs) else {
            continue;
        };
        if Some(&real) == canonical(&target).as_ref() || absorbed.contains(&real) {
            continue;
        }
        if cache.is_none() {
            cache =
                Some(Cache::open(&target).map_err(|e| fail(format!("{}: {e}", target.display())))?);
        }
        let added = cache
            .as_ref()
            .expect("opened above")
            .absorb(&real)
            .map_err(|e| fail(format!("{}: {e}", theirs.display())))?;
        outln!(
            "cache: {added} answers from {} → {}",
            theirs.display(),
            target.display()
        );
        absorbed.push(real);
    }
    Ok(())
}

/// Says what each shard lacks and how to finish it; [`Exit::Differences`].
fn incomplete(shards: &[ShardRun], missing: &merge::Missing, count: u32) -> Exit {
    let total: u64 = missing.by_shard.values().map(|(n, _)| n).sum();
    errln!("error: the shards are incomplete: {total} answers missing; nothing was merged");
    for (index, (n, first)) in &missing.by_shard {
        let run = shards.iter().find(|s| s.shard.index == *index);
        let how = match run {
            Some(s) => {
                let results = s
                    .dir
                    .parent()
                    .and_then(Path::parent)
                    .unwrap_or(Path::new("."));
                format!(
                    "finish it with `harness run --results {} --resume {}`",
                    results.display(),
                    s.manifest.run_id
                )
            }
            None => format!("not given; run it with `--shard {index}/{count}`"),
        };
        errln!(
            "  shard {index}/{count}: {n} missing (e.g. {}); {how}",
            first.join(", ")
        );
    }
    Exit::Differences
}
