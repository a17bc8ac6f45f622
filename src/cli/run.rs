//! `harness run`: specs × models → journal, reports, golden transcript diffs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::render;
use crate::config::Config;
use crate::provider::{ModelSpec, ProviderKind};
use crate::report::{Format, ReportContext, SpecInfo, write_reports};
use crate::run::transcript::{
    TranscriptLine, compare_transcripts, read_transcript, recorded_models, render_transcript,
    transcript_path,
};
use crate::run::{self, Manifest, RunError, RunSettings};
use crate::spec::{Spec, spec_files};

/// Arguments of `harness run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Spec files or directories (default: harness.toml's run.specs, else `specs/`).
    pub paths: Vec<PathBuf>,
    /// Models: `ollama:NAME`, `openai:NAME[@URL]`, `llamacpp:FILE.gguf`, `vllm:MODEL`, `replay:NAME`, or names from harness.toml.
    #[arg(short = 'm', long = "model")]
    pub models: Vec<String>,
    /// The configuration file.
    #[arg(long, default_value = "harness.toml")]
    pub config: PathBuf,
    /// Instances per spec (overrides the specs and harness.toml).
    #[arg(long, conflicts_with = "resume")]
    pub runs: Option<u32>,
    /// Complete an interrupted run: its id or `latest`.
    #[arg(long)]
    pub resume: Option<String>,
    /// Ask the models even when the cache has the answer.
    #[arg(long)]
    pub no_cache: bool,
    /// Record the new transcripts as golden.
    #[arg(long)]
    pub bless: bool,
    /// Show response text diffs against golden transcripts.
    #[arg(short, long)]
    pub verbose: bool,
    /// Extra report formats.
    #[arg(long = "format", value_enum)]
    pub formats: Vec<Format>,
    /// Results directory.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// Golden directory.
    #[arg(long, default_value = "golden")]
    pub golden: PathBuf,
    /// No progress bars or progress lines.
    #[arg(long)]
    pub no_progress: bool,
    /// Compare every model against this one on sampled specs.
    #[arg(long)]
    pub baseline: Option<String>,
    /// The judge model for `judge` rules (default: harness.toml's [judge]).
    #[arg(long, conflicts_with = "resume")]
    pub judge: Option<String>,
}

fn fail(message: impl std::fmt::Display) -> u8 {
    eprintln!("error: {message}");
    2
}

/// Runs `harness run`; returns the exit code.
pub fn run(args: &RunArgs, color: bool) -> u8 {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(format!("cannot start the async runtime: {e}")),
    };
    runtime.block_on(run_async(args, color))
}

fn plan_new(
    args: &RunArgs,
    config: &Config,
    specs: &[Arc<Spec>],
    file_stamp: &str,
    created: &str,
) -> Result<Manifest, String> {
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
            for model in recorded_models(&args.golden, &spec.id) {
                by_model.entry(model).or_default().push(spec.id.clone());
            }
        }
        if by_model.is_empty() {
            return Err(
                "no model given (-m), none in harness.toml, and no golden transcripts to replay"
                    .into(),
            );
        }
        for name in by_model.keys() {
            let mut m = ModelSpec::new(ProviderKind::Replay, name);
            m.concurrency = 64;
            models.push(m);
        }
        only = Some(by_model);
    } else {
        for name in &names {
            let mut m = config.resolve_model(name)?;
            if m.provider == ProviderKind::Replay {
                m.concurrency = 64;
            }
            if models.iter().any(|p: &ModelSpec| p.name == m.name) {
                return Err(format!("model `{}` is given twice", m.name));
            }
            models.push(m);
        }
    }
    let judge = match args
        .judge
        .as_ref()
        .or(config.judge.as_ref().map(|j| &j.model))
    {
        Some(name) => Some(config.resolve_model(name)?),
        None => None,
    };
    if judge.is_none()
        && let Some(spec) = specs.iter().find(|s| s.rules.needs_judge())
        && models.iter().any(|m| m.provider != ProviderKind::Replay)
    {
        return Err(format!(
            "spec `{}` has a `judge` rule: name the judge model with --judge MODEL or [judge] model = \"...\" in harness.toml",
            spec.id
        ));
    }
    let runs_dir = args.results.join("runs");
    Ok(Manifest {
        run_id: run::new_run_id(&runs_dir, file_stamp),
        created: created.to_owned(),
        spec_files: specs.iter().map(|s| s.file.clone()).collect(),
        models,
        runs: args.runs.or(config.run.runs),
        golden_dir: args.golden.clone(),
        only,
        judge,
    })
}

fn load_specs(files: &[PathBuf], color: bool) -> Option<Vec<Arc<Spec>>> {
    let mut specs = Vec::new();
    let mut ok = true;
    for file in files {
        match Spec::load(file) {
            Ok(s) => specs.push(Arc::new(s)),
            Err(diags) => {
                ok = false;
                for d in &diags.0 {
                    eprint!("{}", render::diagnostic(d, color));
                }
            }
        }
    }
    ok.then_some(specs)
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

async fn run_async(args: &RunArgs, color: bool) -> u8 {
    let config = match Config::load(&args.config, args.config != Path::new("harness.toml")) {
        Ok(c) => c,
        Err(d) => {
            eprint!("{}", render::diagnostic(&d, color));
            return 2;
        }
    };
    let (created, file_stamp) = run::timestamps();
    let runs_dir = args.results.join("runs");
    let (manifest, specs) = if let Some(id) = &args.resume {
        let dir = match run::find_run(&runs_dir, id) {
            Ok(d) => d,
            Err(e) => return fail(e),
        };
        let manifest = match run::read_manifest(&dir) {
            Ok(m) => m,
            Err(e) => return fail(e),
        };
        let Some(specs) = load_specs(&manifest.spec_files, color) else {
            return 2;
        };
        (manifest, specs)
    } else {
        let files = match spec_files(&spec_paths(args, &config)) {
            Ok(f) => f,
            Err(d) => {
                eprint!("{}", render::diagnostic(&d, color));
                return 2;
            }
        };
        let Some(specs) = load_specs(&files, color) else {
            return 2;
        };
        match plan_new(args, &config, &specs, &file_stamp, &created) {
            Ok(m) => (m, specs),
            Err(e) => return fail(e),
        }
    };
    if specs.iter().any(|s| s.rules.needs_sandbox())
        && let Err(e) = crate::sandbox::shared()
    {
        return fail(e);
    }
    let run_dir = runs_dir.join(&manifest.run_id);
    if let Err(e) = run::write_manifest(&run_dir, &manifest) {
        return fail(e);
    }
    let mut runtimes = Vec::new();
    for spec in &specs {
        match run::spec_runtime(spec.clone(), manifest.runs) {
            Ok(r) => runtimes.push(Arc::new(r)),
            Err(e) => return fail(format!("{}: {e}", spec.file.display())),
        }
    }
    let journal_path = run_dir.join("journal.jsonl");
    let settings = RunSettings {
        use_cache: !args.no_cache,
        cache_path: args.results.join("cache.sqlite"),
        progress: !args.no_progress,
    };
    eprintln!("run {} → {}", manifest.run_id, run_dir.display());
    let outcome = match run::execute_plan(&manifest, &runtimes, &run_dir, &settings).await {
        Ok(o) => o,
        Err(e @ RunError::ServerStart(_)) => {
            eprintln!("error: {e}");
            return 3;
        }
        Err(e @ RunError::ServerDied(_)) => {
            eprintln!("error: {e}");
            eprintln!(
                "finished answers are saved in {}; continue with `harness run --resume {}` (it restarts the server)",
                journal_path.display(),
                manifest.run_id
            );
            return 3;
        }
        Err(e) => return fail(e),
    };
    let transcripts = match run::transcripts(&journal_path) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    let spec_infos: Vec<SpecInfo> = specs.iter().map(|s| SpecInfo::of(s)).collect();
    let model_names: Vec<String> = manifest.models.iter().map(|m| m.name.clone()).collect();
    let model_ids = manifest
        .models
        .iter()
        .map(|m| (m.name.clone(), m.model.clone()))
        .collect();
    let ctx = ReportContext {
        run_ids: std::slice::from_ref(&manifest.run_id),
        timestamp: &created,
        file_stamp: &file_stamp,
        results_dir: &args.results,
        models: &model_names,
        model_ids: &model_ids,
        specs: &spec_infos,
        formats: &args.formats,
        journals: std::slice::from_ref(&journal_path),
        color,
        baseline: args.baseline.as_deref(),
    };
    let report = match write_reports(&ctx) {
        Ok(r) => r,
        Err(e) => return fail(format!("writing reports: {e}")),
    };
    print!("{}", report.terminal);
    println!(
        "{} records written ({} from cache, {} HTTP attempts); report: {}",
        outcome.written,
        outcome.cached,
        outcome.attempts,
        report.markdown.display()
    );
    if outcome.interrupted {
        eprintln!(
            "interrupted: finished answers are saved; continue with `harness run --resume {}`",
            manifest.run_id
        );
        return 130;
    }
    // Golden transcripts: compare each (model, spec) pair, or record them with --bless.
    let mut differ = false;
    for model in &manifest.models {
        for spec in &specs {
            if !manifest.includes(&model.name, &spec.id) {
                continue;
            }
            let lines: Vec<TranscriptLine> = transcripts
                .get(&(model.name.clone(), spec.id.clone()))
                .map(|by_key| by_key.values().cloned().collect())
                .unwrap_or_default();
            let path = transcript_path(&args.golden, &spec.id, &model.name);
            if args.bless {
                if let Some(dir) = path.parent()
                    && let Err(e) = std::fs::create_dir_all(dir)
                {
                    return fail(e);
                }
                if let Err(e) = std::fs::write(&path, render_transcript(lines)) {
                    return fail(format!("{}: {e}", path.display()));
                }
                continue;
            }
            let golden = read_transcript(&path).ok();
            let diff = compare_transcripts(golden.as_deref(), &lines);
            differ |=
                super::transcript_view::print(&diff, &model.name, &spec.id, args.verbose, color);
        }
    }
    if args.bless {
        println!("golden transcripts written under {}", args.golden.display());
    }
    u8::from(differ)
}
