//! `harness report RUN...`: rebuild reports from run journals, several runs side by
//! side; with two or more runs, the later ones are compared with the first.

use crate::output::{errln, out, outln};
use std::path::PathBuf;

use super::exit::{Exit, fail};
use crate::report::{ReportContext, ReportKind, SpecInfo, write_reports};
use crate::run;

/// Arguments of `harness report`.
#[derive(Debug, clap::Args)]
pub(super) struct ReportArgs {
    /// Run ids (or `latest`), one or more; the first is the baseline the others are compared with.
    #[arg(required = true)]
    pub runs: Vec<String>,
    /// Extra report formats.
    #[arg(long = "format", value_enum)]
    pub formats: Vec<ReportKind>,
    /// Results directory.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// Compare every model against this one on sampled specs (a model name).
    #[arg(long)]
    pub baseline: Option<String>,
    /// The reports' language.
    #[command(flatten)]
    pub lang: super::finish::LangArg,
}

/// Runs `harness report`.
pub(super) fn run(args: &ReportArgs, color: bool) -> Exit {
    let runs_dir = args.results.join("runs");
    let (mut run_ids, mut journals, mut models, mut specs) = (
        Vec::new(),
        Vec::new(),
        Vec::<String>::new(),
        Vec::<SpecInfo>::new(),
    );
    let mut model_ids = std::collections::BTreeMap::new();
    let mut golden = None;
    // The first run's currency names the costs; a run in another one is warned about.
    let mut currency: Option<String> = None;
    for id in &args.runs {
        let dir = match run::find_run(&runs_dir, id) {
            Ok(d) => d,
            Err(e) => return fail(e),
        };
        let manifest = match run::read_manifest(&dir) {
            Ok(m) => m,
            Err(e) => return fail(format!("{}: {e}", dir.display())),
        };
        for m in &manifest.models {
            if !models.contains(&m.name) {
                models.push(m.name.clone());
            }
            model_ids
                .entry(m.name.clone())
                .or_insert_with(|| m.model.clone());
        }
        for file in &manifest.spec_files {
            // Titles and breakdowns come from the spec when it still loads; the file stem otherwise.
            let info = SpecInfo::from_file(file);
            if !specs.iter().any(|s| s.id == info.id) {
                specs.push(info);
            }
        }
        // The first run's golden directory: what the HTML report diffs against.
        golden.get_or_insert_with(|| manifest.golden_dir.clone());
        match &currency {
            Some(c) if *c != manifest.currency => errln!(
                "warning: run {} prices in {}, not {c}: its costs are shown in {c} unconverted",
                manifest.run_id,
                manifest.currency
            ),
            Some(_) => {}
            None => currency = Some(manifest.currency.clone()),
        }
        journals.push(dir.join("journal.jsonl"));
        run_ids.push(manifest.run_id);
    }
    let (timestamp, file_stamp) = run::timestamps();
    let ctx = ReportContext {
        run_ids: &run_ids,
        timestamp: &timestamp,
        file_stamp: &file_stamp,
        results_dir: &args.results,
        models: &models,
        model_ids: &model_ids,
        specs: &specs,
        formats: &args.formats,
        journals: &journals,
        color,
        baseline: args.baseline.as_deref(),
        golden: golden.as_deref(),
        currency: currency.as_deref().unwrap_or("USD"),
        lang: args.lang.resolve_here(),
        width: super::columns(),
    };
    match write_reports(&ctx) {
        Ok(out) => {
            out!("{}", out.terminal);
            outln!("report: {}", out.files.markdown.display());
            for extra in &out.files.extra {
                outln!("        {}", extra.display());
            }
            outln!("html report: {}", out.files.html.display());
            Exit::Success
        }
        Err(e) => fail(format!("writing reports: {e}")),
    }
}
