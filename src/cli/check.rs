//! `harness check`: one line per spec, details for failures, diffs for
//! changed golden files, and a summary.

use crate::output::{out, outln};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use owo_colors::OwoColorize;

use super::exit::{Exit, fail};
use super::render;
use crate::check::{CheckOptions, ExampleVerdict, ExecModel, SpecCheck, check_file};
use crate::config::Config;
use crate::golden::{GoldenMode, GoldenStatus, is_ci};
use crate::provider::ModelSetup;
use crate::spec::{duplicate_id, spec_files};

/// `harness check`'s arguments.
#[derive(Debug, clap::Args)]
pub(super) struct CheckArgs {
    /// Spec files or directories of specs.
    #[arg(default_value = "specs")]
    pub paths: Vec<PathBuf>,
    /// Accept the new golden state: write it over the golden files.
    #[arg(long)]
    pub bless: bool,
    /// The golden directory.
    #[arg(long, default_value = "golden")]
    pub golden: PathBuf,
    /// The configuration file: its `[limits]` table caps the files specs
    /// name, and its `exec` models' commands are rendered for every instance.
    #[arg(long, default_value = "harness.toml")]
    pub config: PathBuf,
    /// A model the specs are checked against (repeatable; default: `[run]
    /// models`): an `exec` model's command is rendered for every instance,
    /// and every model's wire must carry the specs' reasoning settings.
    #[arg(short = 'm', long = "model")]
    pub models: Vec<String>,
    /// Print each example's actual verdict, score and failure detail.
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// Start every MCP server, instead of using the tools an earlier check
    /// listed (kept for an hour, and only while the server's command,
    /// environment and files are unchanged).
    #[arg(long)]
    pub fresh: bool,
}

/// The models `names` (else the configuration's `[run] models`) and, of
/// them, the `exec` models with where their arguments stand in the configuration.
fn exec_models(
    names: &[String],
    config: Option<&Config>,
) -> Result<(Vec<ExecModel>, Vec<ModelSetup>), Exit> {
    let default = Config::default();
    let config = config.unwrap_or(&default);
    let names = if names.is_empty() {
        &config.run.models
    } else {
        names
    };
    let (mut out, mut models) = (Vec::new(), Vec::new());
    for name in names {
        let setup = config
            .resolve_model(name)
            .map_err(|e| fail(format!("model `{name}`: {e}")))?;
        if let Some(options) = setup.exec.clone() {
            let (arguments, source) = config.command_locations(&setup.name);
            out.push(ExecModel {
                name: setup.name.clone(),
                options,
                arguments,
                source,
            });
        }
        models.push(setup);
    }
    Ok((out, models))
}

/// `example 2 (name): failed, score 0.5: detail`, one line per example.
fn print_verdicts(verdicts: &[ExampleVerdict]) {
    for v in verdicts {
        let verdict = if v.passed { "passed" } else { "failed" };
        let detail = match v.detail.is_empty() {
            true => String::new(),
            false => format!(": {}", crate::text::visible_line(&v.detail)),
        };
        let line = format!("{}: {verdict}, score {}{detail}", v.label, v.score);
        for part in crate::text::wrap(&line, 74).lines() {
            println!("      {part}");
        }
    }
}

fn label(text: &str, color: bool, paint: fn(&str) -> String) -> String {
    let padded = format!("{text:<5}");
    if color { paint(&padded) } else { padded }
}

fn print_report(r: &SpecCheck, verbose: bool, color: bool) {
    let name = r.id.clone().unwrap_or_else(|| r.file.display().to_string());
    let ms = r.elapsed.as_secs_f64() * 1000.0;
    if !r.errors.is_empty() {
        outln!(
            "{} {name}  ({} problem{})",
            label("FAIL", color, |s| s.red().bold().to_string()),
            r.errors.len(),
            if r.errors.len() == 1 { "" } else { "s" }
        );
        for d in &r.errors {
            for line in render::diagnostic(d, color).lines() {
                outln!("      {line}");
            }
        }
        print_warnings(r, color);
        if verbose {
            print_verdicts(&r.verdicts);
        }
        return;
    }
    let summary = format!("{} instances, {} examples", r.instances, r.examples);
    match &r.golden {
        Some(GoldenStatus::Unchanged) | None => outln!(
            "{} {name}  {summary}, golden unchanged  {ms:.1}ms",
            label("ok", color, |s| s.green().bold().to_string())
        ),
        Some(GoldenStatus::Blessed) => outln!(
            "{} {name}  {summary}, golden written  {ms:.1}ms",
            label("bless", color, |s| s.yellow().bold().to_string())
        ),
        Some(GoldenStatus::New { pending }) => {
            outln!(
                "{} {name}  {summary}, no golden file yet{}",
                label("NEW", color, |s| s.yellow().bold().to_string()),
                pending_note(pending.as_deref())
            );
        }
        Some(GoldenStatus::Changed { diff, pending }) => {
            outln!(
                "{} {name}  {summary}, golden instances changed{}",
                label("DIFF", color, |s| s.yellow().bold().to_string()),
                pending_note(pending.as_deref())
            );
            out!("{}", diff.render(color));
        }
    }
    print_warnings(r, color);
    if !r.servers_remembered.is_empty() {
        outln!(
            "      MCP servers {}: tools as an earlier check listed them (`--fresh` starts them)",
            r.servers_remembered.join(", ")
        );
    }
    if verbose {
        print_verdicts(&r.verdicts);
    }
}

fn print_warnings(r: &SpecCheck, color: bool) {
    for d in &r.warnings {
        for line in render::warning(d, color).lines() {
            outln!("      {line}");
        }
    }
}

fn pending_note(pending: Option<&Path>) -> String {
    match pending {
        Some(p) => format!(
            " (review {}: `harness review`, or `harness check --bless`)",
            p.display()
        ),
        None => " (run `harness check --bless` to accept)".to_owned(),
    }
}

/// Checks `files` on one thread per core and hands each report to `take`
/// in the files' order, as soon as it and those before it are done: a spec
/// mostly waits for its examples' programs, so specs overlap, while the
/// output reads as if they ran one after another.
fn each_checked(files: &[PathBuf], options: &CheckOptions, mut take: impl FnMut(&Path, SpecCheck)) {
    // Twice the cores: a spec whose examples wait for a sandbox seat (one per
    // core) leaves its core to a spec that computes.
    let workers = std::thread::available_parallelism()
        .map_or(2, usize::from)
        .saturating_mul(2)
        .clamp(4, 16)
        .min(files.len());
    let next = AtomicUsize::new(0);
    let (done, reports) = mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let done = done.clone();
            let next = &next;
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(file) = files.get(i) else { break };
                    if done.send((i, check_file(file, options))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(done);
        let mut waiting = BTreeMap::new();
        let mut shown = 0;
        for (i, report) in reports {
            waiting.insert(i, report);
            while let Some(report) = waiting.remove(&shown) {
                take(&files[shown], report);
                shown += 1;
            }
        }
    });
}

/// Runs `harness check`.
pub(super) fn run(args: &CheckArgs, config: Option<&Config>, color: bool) -> Exit {
    let CheckArgs {
        paths,
        bless,
        golden,
        verbose,
        ..
    } = args;
    let (bless, verbose) = (*bless, *verbose);
    let (exec_models, models) = match exec_models(&args.models, config) {
        Ok(models) => models,
        Err(exit) => return exit,
    };
    let files = match spec_files(paths) {
        Ok(files) => files,
        Err(d) => return super::exit::diagnostics([&d], color),
    };
    if files.is_empty() {
        let paths: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        return fail(format!("no spec files (*.toml) under {}", paths.join(", ")));
    }
    let options = CheckOptions {
        golden_dir: golden.to_path_buf(),
        mode: GoldenMode {
            bless,
            write_pending: !bless && !is_ci(),
        },
        exec_models,
        asked: if args.models.is_empty() {
            Vec::new()
        } else {
            models.clone()
        },
        models,
        mcp_servers: config.map(Config::mcp_servers).unwrap_or_default(),
        fresh_servers: args.fresh,
    };
    let (mut failed, mut differ) = (0, 0);
    let mut ids: BTreeMap<String, PathBuf> = Default::default();
    each_checked(&files, &options, |file, mut report| {
        if let Some(id) = &report.id {
            match ids.get(id) {
                Some(first) => report.errors.push(duplicate_id(file, id, first)),
                None => {
                    ids.insert(id.clone(), file.to_path_buf());
                }
            }
        }
        print_report(&report, verbose, color);
        if !report.errors.is_empty() {
            failed += 1;
        } else if report.golden.as_ref().is_some_and(GoldenStatus::differs) {
            differ += 1;
        }
    });
    let ok = files.len() - failed - differ;
    outln!(
        "\n{} spec{}: {ok} ok, {differ} with golden differences, {failed} failed",
        files.len(),
        if files.len() == 1 { "" } else { "s" }
    );
    if failed > 0 {
        Exit::BadInput
    } else {
        Exit::differences_if(differ > 0)
    }
}
