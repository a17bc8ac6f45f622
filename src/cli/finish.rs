//! The end of a run, shared by `harness run` and `harness merge`: the
//! reports from the journal, then each (model, spec) pair against its golden
//! transcript (or blessed as the new one).

use crate::output::{errln, out, outln};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::exit::{Exit, fail};
use crate::config::Config;
use crate::golden::transcript::{
    TranscriptLine, compare_transcripts, read_transcript, render_transcript, transcript_path,
};
use crate::report::{ReportContext, ReportKind, ReportOutput, SpecInfo, write_reports};
use crate::run::{self, Manifest};
use crate::spec::Spec;
use crate::text::Lang;

/// The options of the commands that end a run (`run`, `merge`): the report
/// formats, the golden comparison, and whether request errors fail the run.
#[derive(Debug, clap::Args)]
pub(super) struct FinishArgs {
    /// Golden directory.
    #[arg(long, default_value = "golden")]
    pub golden: PathBuf,
    /// Extra report formats.
    #[arg(long = "format", value_enum)]
    pub formats: Vec<ReportKind>,
    /// Show response text diffs against golden transcripts.
    #[arg(short, long)]
    pub verbose: bool,
    /// Exit 0 even when some requests failed and their instances have no verdict.
    #[arg(long)]
    pub allow_errors: bool,
    /// The reports' language.
    #[command(flatten)]
    pub lang: LangArg,
}

/// `--lang`: the language of the reports, over `harness.toml`'s `[report] language`.
#[derive(Debug, Clone, Default, clap::Args)]
pub(super) struct LangArg {
    /// Report language (default: `[report] language` in harness.toml, else the locale: `ru*` gives Russian).
    #[arg(long = "lang", value_enum, value_name = "LANG")]
    pub lang: Option<Lang>,
}

impl LangArg {
    /// The flag, else the configuration's `[report] language`, else the locale's.
    pub(super) fn resolve(&self, config: Option<&Config>) -> Lang {
        self.lang
            .or_else(|| config.and_then(|c| c.report.language))
            .unwrap_or_else(Lang::from_env)
    }

    /// [`LangArg::resolve`] with `./harness.toml` when there is one; a
    /// configuration that does not parse is left to the commands that need it.
    pub(super) fn resolve_here(&self) -> Lang {
        let config = self
            .lang
            .is_none()
            .then(|| Config::load(Path::new("harness.toml"), false).ok())
            .flatten();
        self.resolve(config.as_ref())
    }
}

/// Causes of error records shown on the terminal; the report lists every record.
const CAUSES_SHOWN: usize = 5;

/// How many answers are errors and their most common causes, each with its
/// endpoint (`6 × connection refused (http://127.0.0.1:9/v1/...)`), redacted
/// and escaped, wrapped to 80 columns; nothing when there are none.
pub(super) fn print_errors(report: &ReportOutput) {
    if report.errors == 0 {
        return;
    }
    out!("{}", crate::text::wrap(&report.errors_heading(), 80));
    for c in report.error_causes.iter().take(CAUSES_SHOWN) {
        let at = c
            .endpoint
            .as_deref()
            .map_or(String::new(), |e| format!(" ({e})"));
        let line = format!("{} × {}{at}", c.count, c.cause);
        let line = crate::secrets::redact_urls(&line).into_owned();
        let line = crate::text::visible_line(&crate::secrets::redact(&line));
        for part in crate::text::wrap(&line, 78).lines() {
            outln!("  {part}");
        }
    }
    let more = report.error_causes.len().saturating_sub(CAUSES_SHOWN);
    if more > 0 {
        outln!("  {}", report.more_causes(more));
    }
}

/// Where the reports go and how the golden comparison is shown.
pub(super) struct Finish<'a> {
    /// The results directory (reports, raw files).
    pub results: &'a Path,
    /// Formats, golden directory, diffs, errors allowed.
    pub args: &'a FinishArgs,
    /// The model others are compared against on sampled specs.
    pub baseline: Option<&'a str>,
    /// Record the transcripts as golden instead of comparing.
    pub bless: bool,
    /// Color the terminal output.
    pub color: bool,
    /// The reports' language.
    pub lang: Lang,
}

impl Finish<'_> {
    /// The exit code once the reports and the golden comparison are done:
    /// answers without a verdict fail the run unless errors are allowed;
    /// else golden differences do.
    pub(super) fn exit(&self, report: &ReportOutput, differ: bool) -> Exit {
        if report.errors == 0 || self.args.allow_errors {
            return Exit::differences_if(differ);
        }
        errln!(
            "error: {} of {} answers are errors (exit 4); `--allow-errors` accepts them",
            report.errors,
            report.answers
        );
        Exit::RequestErrors
    }

    /// Writes the run's reports from its journal.
    pub(super) fn reports(
        &self,
        manifest: &Manifest,
        specs: &[Arc<Spec>],
        journal_path: &Path,
        created: &str,
        file_stamp: &str,
    ) -> Result<ReportOutput, Exit> {
        let spec_infos: Vec<SpecInfo> = specs.iter().map(|s| SpecInfo::of(s)).collect();
        let model_names: Vec<String> = manifest.models.iter().map(|m| m.name.clone()).collect();
        let model_ids = manifest
            .models
            .iter()
            .map(|m| (m.name.clone(), m.model.clone()))
            .collect();
        let journals = [journal_path.to_path_buf()];
        let ctx = ReportContext {
            run_ids: std::slice::from_ref(&manifest.run_id),
            timestamp: created,
            file_stamp,
            results_dir: self.results,
            models: &model_names,
            model_ids: &model_ids,
            specs: &spec_infos,
            formats: &self.args.formats,
            journals: &journals,
            color: self.color,
            baseline: self.baseline,
            golden: Some(&self.args.golden),
            currency: &manifest.currency,
            lang: self.lang,
            width: super::columns(),
        };
        write_reports(&ctx).map_err(|e| fail(format!("writing reports: {e}")))
    }

    /// Compares each (model, spec) pair with its golden transcript, or records
    /// it when blessing; returns whether anything differs.
    pub(super) fn golden_transcripts(
        &self,
        manifest: &Manifest,
        specs: &[Arc<Spec>],
        journal_path: &Path,
    ) -> Result<bool, Exit> {
        // Only pairs with something to compare (or to bless) are read into
        // memory, so a large run with no golden transcript holds no answers.
        let mut compared: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for model in &manifest.models {
            for spec in specs {
                if self.bless || transcript_path(&self.args.golden, &spec.id, &model.name).exists()
                {
                    compared.entry(&model.name).or_default().insert(&spec.id);
                }
            }
        }
        let wanted =
            |model: &str, spec: &str| compared.get(model).is_some_and(|s| s.contains(spec));
        let transcripts = run::transcripts(journal_path, wanted).map_err(fail)?;
        let mut differ = false;
        for model in &manifest.models {
            for spec in specs {
                if !manifest.includes(&model.name, &spec.id) {
                    continue;
                }
                let lines: Vec<TranscriptLine> = transcripts
                    .get(&(model.name.clone(), spec.id.clone()))
                    .map(|by_key| by_key.values().cloned().collect())
                    .unwrap_or_default();
                let path = transcript_path(&self.args.golden, &spec.id, &model.name);
                if self.bless {
                    crate::files::write_atomic(&path, render_transcript(lines).as_bytes())
                        .map_err(|e| fail(format!("{}: {e}", path.display())))?;
                    continue;
                }
                let golden = read_transcript(&path).ok();
                let diff = compare_transcripts(golden.as_deref(), &lines);
                differ |= super::transcript_view::print(
                    &diff,
                    &model.name,
                    &spec.id,
                    self.args.verbose,
                    self.color,
                );
            }
        }
        if self.bless {
            outln!(
                "golden transcripts written under {}",
                self.args.golden.display()
            );
        }
        Ok(differ)
    }
}
