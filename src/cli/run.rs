//! `harness run`: specs × models → journal, reports, golden transcript diffs.

use crate::output::{err, errln, out, outln};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::asking::AskingArgs;
use super::exit::{Exit, diagnostics, either, fail, fail_with};
use super::finish::{Finish, FinishArgs};
use crate::config::Config;
use crate::error::Diagnostic;
use crate::golden::transcript::recorded_models;
use crate::provider::{ModelSetup, ProviderKind};
use crate::run::{self, Manifest, RunError, RunSettings};
use crate::spec::{Spec, spec_files};

/// The most instances per spec `--runs` takes: more is a typo, not a plan.
const MAX_RUNS: i64 = 1_000_000;

/// Arguments of `harness run`.
#[derive(Debug, clap::Args)]
pub(super) struct RunArgs {
    /// Spec files or directories (default: harness.toml's run.specs, else `specs/`).
    pub paths: Vec<PathBuf>,
    /// Models: `ollama:NAME`, `openai:NAME[@URL]`, `llamacpp:FILE.gguf`, `vllm:MODEL`, `replay:NAME`, or names from harness.toml.
    #[arg(short = 'm', long = "model")]
    pub models: Vec<String>,
    /// The configuration, the response cache, progress.
    #[command(flatten)]
    pub asking: AskingArgs,
    /// Instances per spec, 1 to 1,000,000 (overrides the specs and harness.toml).
    #[arg(long, conflicts_with = "resume", value_parser = clap::value_parser!(u32).range(1..=MAX_RUNS))]
    pub runs: Option<u32>,
    /// Complete an interrupted run: its id or `latest`.
    #[arg(long)]
    pub resume: Option<String>,
    /// Record the new transcripts as golden.
    #[arg(long)]
    pub bless: bool,
    /// Report formats, the golden comparison, errors allowed.
    #[command(flatten)]
    pub finish: FinishArgs,
    /// Compare every model against this one on sampled specs.
    #[arg(long)]
    pub baseline: Option<String>,
    /// The judge and the simulated users' model.
    #[command(flatten)]
    pub roles: super::roles::RoleArgs,
    /// Run only the golden subset of specs that declare `[golden] instances` (as `--bless` and replays do).
    #[arg(long, conflicts_with = "resume")]
    pub golden_subset: bool,
    /// Start no request once the run's cost plus the worst case of the requests in flight would pass AMOUNT (default: harness.toml's run.max_cost).
    #[arg(long, value_name = "AMOUNT", value_parser = super::costs::amount)]
    pub max_cost: Option<f64>,
    /// The same budget in tokens, prompts and answers together (default: harness.toml's run.max_tokens_total).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tokens_total: Option<u64>,
    /// Token prices for models without a `price`: LiteLLM's model_prices_and_context_window.json.
    #[arg(long, value_name = "FILE")]
    pub prices: Option<PathBuf>,
    /// Print the plan's request count and cost estimate, and send nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Run one slice of the plan: `I/N` (shard I of N, from 0), or `auto` /
    /// `auto/N` from a Slurm array task or a Kubernetes Indexed Job; merge the
    /// shards with `harness merge`.
    #[arg(long, value_name = "I/N|auto[/N]", conflicts_with_all = ["resume", "bless"])]
    pub shard: Option<String>,
    /// The run's id (its directory under results/runs); a shard's gets `-shard-I-of-N` after it.
    #[arg(long, value_name = "ID", conflicts_with = "resume")]
    pub run_id: Option<String>,
    /// Run each model once per value of one reasoning key, each a cell `MODEL [KEY=V]`:
    /// `reasoning.effort=low,medium,high`, `reasoning.budget_tokens=1024,4096`.
    #[arg(long, value_name = "KEY=V1,V2,...", conflicts_with = "resume", value_parser = super::sweep::parse)]
    pub sweep: Option<super::sweep::Sweep>,
    /// Ask every model through its provider's batch API, at the batch price (openai, anthropic).
    #[arg(long, conflicts_with = "resume")]
    pub batch: bool,
}

/// Runs `harness run` with the configuration `main` loaded (once, before
/// anything else: its keys and file caps apply from the start).
pub(super) fn run(args: &RunArgs, config: Result<Config, Diagnostic>, color: bool) -> Exit {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(format!("cannot start the async runtime: {e}")),
    };
    let exit = either(runtime.block_on(run_async(args, config, color)));
    super::leave(runtime);
    exit
}

fn plan_new(
    args: &RunArgs,
    config: &Config,
    specs: &[Arc<Spec>],
    file_stamp: &str,
    created: &str,
) -> Result<Manifest, Exit> {
    let names: Vec<String> = if args.models.is_empty() {
        config.run.models.clone()
    } else {
        args.models.clone()
    };
    let mut models = Vec::new();
    let mut only = None;
    if names.is_empty() {
        // Offline default: replay every recorded transcript, each model on the specs it recorded.
        let mut by_model: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for spec in specs {
            for model in recorded_models(&args.finish.golden, &spec.id) {
                by_model.entry(model).or_default().push(spec.id.clone());
            }
        }
        if by_model.is_empty() {
            return Err(fail(
                "no model given (-m), none in harness.toml, and no golden transcripts to replay",
            ));
        }
        for name in by_model.keys() {
            let mut m = ModelSetup::new(ProviderKind::Replay, name);
            m.concurrency = 64;
            models.push(m);
        }
        only = Some(by_model);
    } else {
        for name in &names {
            let mut m = config.resolve_model(name).map_err(fail)?;
            if m.provider == ProviderKind::Replay {
                m.concurrency = 64;
            }
            if models.iter().any(|p: &ModelSetup| p.name == m.name) {
                return Err(fail(format!("model `{}` is given twice", m.name)));
            }
            models.push(m);
        }
    }
    super::batch::apply(&mut models, args.batch)?;
    if let Some(sweep) = &args.sweep {
        models = sweep.expand(models);
    }
    let (judge, users) = super::roles::resolve(&args.roles, config, specs, &models)?;
    let runs_dir = args.asking.results.join("runs");
    let shard = match &args.shard {
        Some(text) => Some(run::Shard::parse(text, |name| std::env::var(name).ok()).map_err(fail)?),
        None => None,
    };
    let run_id = match (&args.run_id, shard) {
        (Some(id), shard) => {
            let id = shard.map_or_else(|| id.clone(), |s| format!("{id}-{}", s.suffix()));
            if id.is_empty() || id.contains(['/', '\\']) || id.starts_with('.') {
                return Err(fail(format!("--run-id `{id}`: not a directory name")));
            }
            if runs_dir.join(&id).exists() {
                return Err(fail(format!(
                    "run `{id}` exists under {}; resume it with --resume {id}",
                    runs_dir.display()
                )));
            }
            id
        }
        (None, Some(s)) => run::new_run_id(&runs_dir, &format!("{file_stamp}-{}", s.suffix())),
        (None, None) => run::new_run_id(&runs_dir, file_stamp),
    };
    let mut manifest = Manifest {
        run_id,
        created: created.to_owned(),
        spec_files: specs.iter().map(|s| s.file.clone()).collect(),
        models,
        runs: args.runs.or(config.run.runs),
        golden_dir: args.finish.golden.clone(),
        only,
        golden_subset: args.golden_subset || args.bless,
        judge,
        users,
        sandbox: None,
        currency: config.currency.clone(),
        plan_hash: None,
        shard,
        commit: specs
            .first()
            .and_then(|s| run::head_commit(s.file.parent()?)),
    };
    manifest.plan_hash = Some(run::plan_hash(&manifest).map_err(fail)?);
    Ok(manifest)
}

/// Every spec of `files`, their `[[mcp]]` servers completed from
/// `config`'s; every problem in any of them printed before the run stops.
fn load_specs(files: &[PathBuf], config: &Config, color: bool) -> Result<Vec<Arc<Spec>>, Exit> {
    let mut specs: Vec<Arc<Spec>> = Vec::new();
    let mut failed = None;
    let servers = config.mcp_servers();
    for file in files {
        let loaded = Spec::load(file).and_then(|mut spec| {
            spec.complete_mcp(&servers)?;
            Ok(spec)
        });
        match loaded {
            Ok(s) => {
                if let Some(first) = specs.iter().find(|f| f.id == s.id) {
                    let d = crate::spec::duplicate_id(file, &s.id, &first.file);
                    failed = Some(diagnostics([&d], color));
                }
                specs.push(Arc::new(s));
            }
            Err(diags) => failed = Some(diagnostics(&diags.0, color)),
        }
    }
    failed.map_or(Ok(specs), Err)
}

fn spec_paths(args: &RunArgs, config: &Config) -> Vec<PathBuf> {
    if !args.paths.is_empty() {
        return args.paths.clone();
    }
    if config.run.specs.is_empty() {
        return vec![PathBuf::from("specs")];
    }
    config
        .run
        .specs
        .iter()
        .map(|s| {
            let p = PathBuf::from(s);
            if p.exists() {
                p
            } else {
                Path::new("specs").join(format!("{s}.toml"))
            }
        })
        .collect()
}

/// A plan ready to run: its manifest, its loaded specs and when it was made.
struct Prepared {
    manifest: Manifest,
    specs: Vec<Arc<Spec>>,
    /// UTC creation time for reports.
    created: String,
    /// The same time for file names.
    file_stamp: String,
    /// The budget: the flags, else harness.toml's `[run]`.
    limits: run::Limits,
    /// The reports' language: `--lang`, else harness.toml's `[report]`, else the locale's.
    lang: crate::text::Lang,
}

/// Loads the configuration, then the plan: a new one, or the resumed run's.
fn prepare(
    args: &RunArgs,
    config: Result<Config, Diagnostic>,
    color: bool,
) -> Result<Prepared, Exit> {
    let config = config.map_err(|d| diagnostics([&d], color))?;
    let (created, file_stamp) = run::timestamps();
    let runs_dir = args.asking.results.join("runs");
    let (mut manifest, specs) = if let Some(id) = &args.resume {
        let dir = run::find_run(&runs_dir, id).map_err(fail)?;
        let mut manifest = run::read_manifest(&dir).map_err(fail)?;
        restore_credentials(&mut manifest, &config)?;
        let specs = load_specs(&manifest.spec_files, &config, color)?;
        (manifest, specs)
    } else {
        let files = spec_files(&spec_paths(args, &config)).map_err(|d| diagnostics([&d], color))?;
        let specs = load_specs(&files, &config, color)?;
        let manifest = plan_new(args, &config, &specs, &file_stamp, &created)?;
        (manifest, specs)
    };
    if let Some(file) = &args.prices {
        super::costs::apply_prices(file, &mut manifest, color)?;
    }
    let limits = run::Limits {
        max_cost: args.max_cost.or(config.run.max_cost),
        max_tokens: args.max_tokens_total.or(config.run.max_tokens_total),
    };
    super::costs::check_priced(&mut manifest, limits)?;
    Ok(Prepared {
        manifest,
        specs,
        created,
        file_stamp,
        limits,
        lang: args.finish.lang.resolve(Some(&config)),
    })
}

/// Gives the resumed plan's models the URL credentials `plan.json` does not
/// keep, from the same models in `harness.toml`; fails when a model had
/// some and the configuration no longer gives them.
fn restore_credentials(manifest: &mut Manifest, config: &Config) -> Result<(), Exit> {
    let roles = manifest.judge.iter_mut().chain(manifest.users.values_mut());
    for model in manifest.models.iter_mut().chain(roles) {
        if !model.lost_credentials() {
            continue;
        }
        let configured = config.resolve_model(&model.name).ok();
        if !configured.is_some_and(|c| model.restore_urls(&c)) {
            return Err(fail(format!(
                "model `{}`: plan.json keeps its URL without the credentials it had ({}); to resume, define the model in harness.toml with that base_url",
                model.name,
                model.endpoints().join(", ")
            )));
        }
    }
    Ok(())
}

/// Fails when a model's golden subset of a spec holds no instance below the
/// spec's `runs`: such a plan would ask nothing and report nothing for it.
fn check_selection(manifest: &Manifest, runtimes: &[Arc<run::SpecRuntime>]) -> Result<(), Exit> {
    let mut empty = Vec::new();
    for model in &manifest.models {
        let golden = manifest.golden_subset_for(&model.name);
        for rt in runtimes {
            let id = &rt.spec.id;
            let (Some(subset), true) = (&rt.golden, golden) else {
                continue;
            };
            if !manifest.includes(&model.name, id) || !rt.instances(true).is_empty() {
                continue;
            }
            let held: Vec<String> = subset.iter().map(u64::to_string).collect();
            empty.push(format!(
                "`{}` on spec `{id}` runs only its golden subset (instances {}), and none is below runs = {}: use --runs {} or more",
                model.name,
                held.join(", "),
                rt.runs,
                subset.iter().max().map_or(1, |m| m + 1),
            ));
        }
    }
    if empty.is_empty() {
        return Ok(());
    }
    Err(fail(format!(
        "the plan selects no instance for {} model × spec pair(s):\n  {}",
        empty.len(),
        empty.join("\n  ")
    )))
}

async fn run_async(
    args: &RunArgs,
    config: Result<Config, Diagnostic>,
    color: bool,
) -> Result<Exit, Exit> {
    let Prepared {
        mut manifest,
        specs,
        created,
        file_stamp,
        limits,
        lang,
    } = prepare(args, config, color)?;
    preflight(&specs, manifest.runs, color)?;
    super::sweep::check_reasoning(&specs, &manifest.models, color)?;
    if specs.iter().any(|s| s.rules.needs_sandbox()) || crate::sandbox::is_unsandboxed() {
        let now = crate::sandbox::shared().map_err(fail)?.isolation();
        // A resumed run keeps the weaker of its two confinements on record.
        manifest.sandbox = match manifest.sandbox.take() {
            Some(before) if !before.isolated => Some(before),
            _ => Some(now),
        };
    }
    let runs_dir = args.asking.results.join("runs");
    let mut runtimes = Vec::new();
    for spec in &specs {
        let runtime = run::spec_runtime(spec.clone(), manifest.runs)
            .map_err(|e| fail(format!("{}: {e}", spec.file.display())))?;
        runtimes.push(Arc::new(runtime));
    }
    check_selection(&manifest, &runtimes)?;
    if args.dry_run {
        let journal_path = runs_dir.join(&manifest.run_id).join("journal.jsonl");
        return super::costs::dry_run(&manifest, &runtimes, &journal_path);
    }
    if specs.iter().any(|s| s.rules.needs_sandbox()) {
        crate::sandbox::shared().map_err(fail)?;
    }
    if args.resume.is_none() {
        manifest.run_id = claim_run_dir(&runs_dir, &manifest.run_id, args.run_id.is_none())?;
    }
    let run_dir = runs_dir.join(&manifest.run_id);
    let journal_path = run_dir.join("journal.jsonl");
    run::write_manifest(&run_dir, &manifest).map_err(fail)?;
    let settings = RunSettings {
        use_cache: !args.asking.no_cache,
        cache_path: args.asking.cache_path(),
        progress: !args.asking.no_progress,
        limits,
    };
    errln!("run {} → {}", manifest.run_id, run_dir.display());
    let outcome = match run::run_plan(&manifest, &runtimes, &run_dir, &settings).await {
        Ok(o) => o,
        Err(e) => {
            let exit = fail_with(&e);
            if let RunError::ServerDied(_) = e {
                let line = format!(
                    "finished answers are saved in {}; continue with `harness run --resume {}` (it restarts the server)",
                    journal_path.display(),
                    manifest.run_id
                );
                err!("{}", crate::text::wrap(&line, 80));
            }
            return Err(exit);
        }
    };
    let finish = Finish {
        results: &args.asking.results,
        args: &args.finish,
        baseline: args.baseline.as_deref(),
        bless: args.bless,
        color,
        lang,
    };
    let report = finish.reports(&manifest, &specs, &journal_path, &created, &file_stamp)?;
    out!("{}", report.terminal);
    outln!(
        "{} records written ({} from cache, {} attempts)",
        outcome.written,
        outcome.cached,
        outcome.attempts,
    );
    outln!("report: {}", report.files.markdown.display());
    for change in outcome.identity_changes.iter().chain(&outcome.adaptive) {
        out!("{}", crate::text::wrap(change, 80));
    }
    if outcome.interrupted {
        outln!("html report: {}", report.files.html.display());
        errln!(
            "interrupted: finished answers are saved; continue with `harness run --resume {}`",
            manifest.run_id
        );
        return Ok(Exit::Interrupted);
    }
    if outcome.budget_stopped {
        super::costs::budget_stopped(&outcome, limits, &manifest.currency, &manifest.run_id);
        return Ok(Exit::Budget);
    }
    super::costs::within_budget(&outcome, limits, &manifest.currency);
    if let Some(shard) = manifest.shard {
        // One shard holds a slice of every spec: its golden comparison is the merge's.
        outln!(
            "shard {shard} of plan {} done; merge the shards with `harness merge`",
            manifest.plan_hash.as_deref().unwrap_or("?")
        );
    }
    let differ =
        manifest.shard.is_none() && finish.golden_transcripts(&manifest, &specs, &journal_path)?;
    super::finish::print_errors(&report);
    // Last, so it stays on screen: the page with every statistic and instance.
    outln!("html report: {}", report.files.html.display());
    Ok(finish.exit(&report, differ))
}

/// Creates a new run's folder under `runs_dir`, named `id` or, when `id` was
/// made from the clock and another run took it meanwhile, `id-2`, `id-3`, ...:
/// created, not just looked for, so two runs started in one second never
/// share a folder.
fn claim_run_dir(runs_dir: &Path, id: &str, generated: bool) -> Result<String, Exit> {
    let io_fail = |e: std::io::Error| fail(format!("{}: {e}", runs_dir.display()));
    std::fs::create_dir_all(runs_dir).map_err(io_fail)?;
    let create = |id: &str| std::fs::create_dir(runs_dir.join(id));
    if generated {
        return crate::files::claim_name(id, '-', create).map_err(io_fail);
    }
    match create(id) {
        Ok(()) => Ok(id.to_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(fail(format!(
            "run `{id}` exists under {}; resume it with --resume {id}",
            runs_dir.display()
        ))),
        Err(e) => Err(io_fail(e)),
    }
}

/// Before any model is asked: every spec's instance 0 generates, renders and
/// suits the rules, no `script` rule stalls, and no spec runs more instances
/// than it allows. A broken spec fails the run at once (exit 2), not per instance.
fn preflight(specs: &[Arc<Spec>], runs: Option<u32>, color: bool) -> Result<(), Exit> {
    let mut failed = None;
    for spec in specs {
        if let Some(problem) = spec.runs_problem(spec.runs_for(runs)) {
            failed = Some(fail(problem));
        } else if let Err(d) = spec.preflight() {
            failed = Some(diagnostics([&d], color));
        }
    }
    failed.map_or(Ok(()), Err)
}
