//! `harness synth`: documents → rated, filtered QA pairs as JSONL.

use crate::output::{errln, outln};
use std::path::PathBuf;

use super::asking::AskingArgs;
use super::exit::{Exit, fail};
use crate::config::Config;
use crate::error::Diagnostic;
use crate::synth::{Overrides, SynthError, SynthOptions, SynthReport};

/// Arguments of `harness synth`.
#[derive(Debug, clap::Args)]
pub(super) struct SynthArgs {
    /// Documents: files or folders, read recursively (txt, md, html, pdf, docx).
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// The model that writes and rates the pairs: a reference or a name from harness.toml.
    #[arg(short = 'm', long)]
    pub model: String,
    /// The final JSONL file.
    #[arg(short = 'o', long)]
    pub out: PathBuf,
    /// The work folder (output/ generated/ cleaned/ final/, journal); default `<out stem>.synth/` beside --out.
    #[arg(long)]
    pub work: Option<PathBuf>,
    /// A pipeline file (prompts, schemas, settings) replacing the shipped pipelines/synth_qa.toml.
    #[arg(long)]
    pub pipeline: Option<PathBuf>,
    /// Add metadata to each line: model, pipeline hash, chunk offsets.
    #[arg(long)]
    pub metadata: bool,
    /// Pairs asked per chunk (overrides the pipeline).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub num_pairs: Option<u32>,
    /// Lowest rating kept, 1-10 (overrides the pipeline).
    #[arg(long, value_parser = threshold)]
    pub threshold: Option<f64>,
    /// Summarize each document first and give the summary to QA generation.
    #[arg(long)]
    pub summary: bool,
    /// The configuration, the response cache, progress.
    #[command(flatten)]
    pub asking: AskingArgs,
}

/// A `--threshold`: a rating from 1 to 10.
fn threshold(text: &str) -> Result<f64, super::asking::BadNumber> {
    match text.parse::<f64>() {
        Ok(v) if (1.0..=10.0).contains(&v) => Ok(v),
        _ => Err(super::asking::BadNumber::Rating(text.to_owned())),
    }
}

/// Runs `harness synth`.
pub(super) fn run(args: &SynthArgs, config: Result<Config, Diagnostic>, color: bool) -> Exit {
    let config = match config {
        Ok(c) => c,
        Err(d) => return fail(d),
    };
    let model = match config.resolve_model(&args.model) {
        Ok(m) => m,
        Err(e) => return fail(e),
    };
    let opts = SynthOptions {
        inputs: args.inputs.clone(),
        model,
        out: args.out.clone(),
        work: args.work.clone(),
        pipeline: args.pipeline.clone(),
        metadata: args.metadata,
        cache: (!args.asking.no_cache).then(|| args.asking.cache_path()),
        progress: !args.asking.no_progress,
        overrides: Overrides {
            num_pairs: args.num_pairs,
            threshold: args.threshold,
            summary: args.summary,
        },
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(format!("cannot start the async runtime: {e}")),
    };
    let exit = match runtime.block_on(crate::synth::run(&opts)) {
        Ok(report) => summarize(&report),
        // With its line, as a config's or a spec's error.
        Err(SynthError::Pipeline(e)) => super::exit::diagnostics([e.diagnostic()], color),
        Err(e) => fail(e.to_string()),
    };
    super::leave(runtime);
    exit
}

fn summarize(r: &SynthReport) -> Exit {
    for e in r.errors.iter().take(10) {
        errln!(
            "error: {}",
            crate::text::visible(&crate::secrets::redact(&e.to_string()))
        );
    }
    if r.errors.len() > 10 {
        errln!(
            "... {} more errors in {}",
            r.errors.len() - 10,
            r.work.join("report.json").display()
        );
    }
    let requests: Vec<String> = r
        .stages
        .iter()
        .map(|(name, s)| {
            format!(
                "{name} {} ({} cached, {} from the journal)",
                s.finished, s.cached, s.resumed
            )
        })
        .collect();
    outln!("requests: {}", requests.join(", "));
    if r.interrupted {
        errln!(
            "interrupted: finished requests are in {}; run the same command again to resume",
            r.work.join("journal.jsonl").display()
        );
        return Exit::Interrupted;
    }
    outln!(
        "synth: {} documents ({} skipped), {} chunks, {} pairs generated, {} errors, {} unrated, {} below {}, {} duplicates → {} pairs in {}",
        r.documents,
        r.skipped.len(),
        r.chunks,
        r.generated,
        r.errors.len(),
        r.unrated,
        r.below_threshold,
        r.threshold,
        r.duplicates,
        r.kept,
        r.out.display()
    );
    outln!("work folder: {}", r.work.display());
    Exit::Success
}
