//! The command line: parses arguments, hands each command to the library,
//! and maps the outcome to one message and a named exit code ([`Exit`]).
//!
//! The top layer: it may import every module; nothing imports it.

mod asking;
mod batch;
mod check;
mod costs;
mod exit;
mod finish;
mod merge;
mod new;
mod render;
mod report;
mod review;
mod roles;
mod run;
mod show;
mod sweep;
mod synth;
mod transcript_view;
mod view;

use crate::output::{errln, out};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub(crate) use exit::Exit;

use clap::{Parser, Subcommand};

use crate::config::Config;
use crate::error::Diagnostic;

/// Test and rank LLMs with test categories written as data.
#[derive(Debug, Parser)]
#[command(name = "harness", version, about)]
pub(crate) struct Cli {
    /// Read hf:// datasets only from the local cache (like HF_HUB_OFFLINE=1).
    #[arg(long, global = true)]
    offline: bool,
    #[command(subcommand)]
    command: Command,
    /// Run model-written code WITHOUT isolation (for kernels that cannot isolate; unsafe).
    #[arg(long, global = true)]
    unsandboxed: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validate specs: compile, generate, render, run examples, compare golden instances.
    Check(check::CheckArgs),
    /// Print the instances a spec generates, for authoring.
    Show {
        /// The spec file.
        spec: PathBuf,
        /// How many instances.
        #[arg(short = 'n', long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
        count: u64,
        /// First instance index.
        #[arg(long, default_value_t = 0)]
        start: u64,
        /// Override the spec's seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Print JSON lines instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Run specs against models: journal, reports, golden transcript diffs.
    Run(Box<run::RunArgs>),
    /// Merge the shards of one plan (`harness run --shard`) into one run with its reports.
    Merge(merge::MergeArgs),
    /// Rebuild reports from the journals of one or more runs, side by side.
    Report(report::ReportArgs),
    /// Turn documents into a rated, filtered QA dataset (JSONL).
    Synth(synth::SynthArgs),
    /// Print the JSON Schema of the spec format.
    Schema,
    /// Write a commented starter spec `<dir>/<ID>.toml` and its golden instances.
    New {
        /// The new spec's id (its file name and golden directory).
        id: String,
        /// Where specs live.
        #[arg(long, default_value = "specs")]
        dir: PathBuf,
        /// The golden directory.
        #[arg(long, default_value = "golden")]
        golden: PathBuf,
    },
    /// Print shell completions: `harness completions bash > ~/.local/share/bash-completion/completions/harness`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Serve a local viewer of a results folder: live runs, history, records, comparisons.
    View(view::ViewArgs),
    /// Walk pending `.new` golden files: accept, reject or skip each.
    Review {
        /// The golden directory.
        #[arg(long, default_value = "golden")]
        golden: PathBuf,
    },
}

/// Whether to color standard output: a terminal, and NO_COLOR unset.
pub(crate) fn stdout_color() -> bool {
    if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
        return false;
    }
    if std::env::var_os("CLICOLOR_FORCE").is_some_and(|v| !v.is_empty() && v != "0") {
        return true;
    }
    std::io::stdout().is_terminal()
}

/// The columns terminal tables fit: `COLUMNS` when it holds a width of at
/// least 40, whether or not stdout is a terminal (`COLUMNS=200 harness
/// report ... | cat`), else 80.
pub(crate) fn columns() -> usize {
    let set = std::env::var("COLUMNS").ok();
    set.and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c >= 40)
        .unwrap_or(crate::report::fit::WIDTH)
}

/// Takes every key out of the environment while the process has one thread
/// and no child: the names that look like keys, and every `api_key_env` of
/// the configuration `run` or `synth` reads. They stay in memory (the
/// secrets module); no program the harness starts can read them, neither
/// from its own environment nor from the harness's `/proc/<pid>/environ`.
fn take_keys(cli: &Cli, config: Option<&Config>) {
    let asks = matches!(cli.command, Command::Run(_) | Command::Synth(_));
    let named: Vec<String> = config
        .filter(|_| asks)
        .map(|c| {
            c.models
                .values()
                .filter_map(|m| m.api_key_env.clone())
                .collect()
        })
        .unwrap_or_default();
    let wanted = |name: &str| crate::secrets::looks_secret(name) || named.iter().any(|n| n == name);
    let (taken, blanked) = crate::environ::take(wanted);
    for (name, value) in &taken {
        crate::secrets::hold(name, value);
    }
    if let Err(e) = blanked {
        errln!(
            "warning: the keys are out of the environment, but /proc/{}/environ may still show them: {e}",
            std::process::id()
        );
    }
    if let Err(e) = crate::environ::forbid_dumps() {
        errln!("warning: cannot make the process non-dumpable: {e}");
    }
}

/// The configuration a command reads: `--config` of `run`, `synth` and
/// `check`, else `./harness.toml` when there is one (as `report` and `merge`
/// read its `[report] language`); none for the commands that read no file
/// a spec or a run names.
fn configuration(cli: &Cli) -> Option<Result<Config, Diagnostic>> {
    let (path, required) = match &cli.command {
        Command::Run(args) => return Some(args.asking.load_config()),
        Command::Synth(args) => return Some(args.asking.load_config()),
        Command::Check(args) => (
            args.config.as_path(),
            args.config != Path::new("harness.toml"),
        ),
        Command::Show { .. } | Command::Merge(_) | Command::Report(_) | Command::Review { .. } => {
            (Path::new("harness.toml"), false)
        }
        Command::Schema | Command::New { .. } | Command::Completions { .. } | Command::View(_) => {
            return None;
        }
    };
    Some(Config::load(path, required))
}

/// Makes the configuration's `[limits]` the size caps of every file read
/// from now on. `run`, `synth` and `check` stop at a configuration that does
/// not load; the other commands say so and read under the default caps.
fn install_file_limits(cli: &Cli, config: Option<&Result<Config, Diagnostic>>) {
    match config {
        Some(Ok(config)) => {
            // The only install: no file under a settable cap has been read yet.
            let _ = config.limits.file_limits().install();
        }
        Some(Err(d))
            if !matches!(
                cli.command,
                Command::Run(_) | Command::Synth(_) | Command::Check(_)
            ) =>
        {
            let shown = crate::secrets::redact_urls(&d.to_string()).into_owned();
            errln!("warning: {shown}; files are read under the default size caps");
        }
        _ => {}
    }
}

/// Shuts `runtime` down once its command is done. After Ctrl-C, work may be
/// left on blocking threads that nobody waits for (a sandboxed program, up to
/// its time limit): the process exits without waiting for it either.
fn leave(runtime: tokio::runtime::Runtime) {
    if crate::interrupt::requested() {
        runtime.shutdown_background();
    }
}

/// Runs the CLI and returns the process exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let config = configuration(&cli);
    take_keys(&cli, config.as_ref().and_then(|c| c.as_ref().ok()));
    install_file_limits(&cli, config.as_ref());
    // Keys the harness may send anywhere: none of them is ever written or printed.
    for name in crate::secrets::KNOWN_KEYS {
        crate::secrets::register_env(name);
    }
    if matches!(cli.command, Command::Run(_) | Command::Synth(_)) {
        if let Err(e) = crate::interrupt::install(crate::sandbox::kill_all_trees) {
            errln!("warning: Ctrl-C will end the process at once: {e}");
        }
    }
    if cli.offline {
        crate::source::dataset::hf::set_offline(true);
    }
    let color = stdout_color();
    if cli.unsandboxed {
        crate::sandbox::allow_unsandboxed();
        errln!("{}", crate::sandbox::UNSANDBOXED_WARNING);
    }
    let exit = match cli.command {
        Command::Check(args) => match &config {
            Some(Err(d)) => exit::diagnostics([d], color),
            Some(Ok(config)) => check::run(&args, Some(config), color),
            None => check::run(&args, None, color),
        },
        Command::Show {
            spec,
            count,
            start,
            seed,
            json,
        } => {
            let servers = match &config {
                Some(Ok(config)) => config.mcp_servers(),
                _ => Vec::new(),
            };
            show::run(&spec, (start, count, seed), (json, &servers), color)
        }
        Command::Run(args) => {
            let config = config.unwrap_or_else(|| args.asking.load_config());
            run::run(&args, config, color)
        }
        Command::Merge(args) => merge::run(&args, color),
        Command::Report(args) => report::run(&args, color),
        Command::Synth(args) => {
            let config = config.unwrap_or_else(|| args.asking.load_config());
            synth::run(&args, config, color)
        }
        Command::Schema => {
            out!("{}", crate::spec::schema_text());
            Exit::Success
        }
        Command::Review { golden } => review::run(&golden, color),
        Command::View(args) => view::run(&args),
        Command::New { id, dir, golden } => new::run(&id, &dir, &golden),
        Command::Completions { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            // Written whole through the output module: a closed pipe ends
            // the printing, not the process.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut command, "harness", &mut script);
            out!("{}", String::from_utf8_lossy(&script));
            Exit::Success
        }
    };
    exit.into()
}
