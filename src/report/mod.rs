//! Reports built from run journals: raw results, Markdown, HTML, JSON, CSV,
//! JUnit and the terminal summary: every spec's pass rate and mean score,
//! its headline number with its interval, and every ranking with its
//! significance.
//!
//! Records are indexed first and read back one at a time ([`journals`]), so
//! memory stays bounded by the metrics, not by the journals. Every output is
//! deterministic: ordered maps only, and no clock but `ctx`'s timestamps.
//!
//! Data flow: journals ([`journals`]) → `metrics::Summary` → one renderer per
//! format. Imports go down only: `metrics`, `run` (records, manifests),
//! `spec` (titles and `group_by`), `format`, `provider` (model tags),
//! `golden` (transcripts the HTML report diffs against) and `text`. Reports
//! never ask a model.

mod calls;
mod cell_table;
mod choices;
pub(crate) mod comparison;
mod costs;
mod csv;
mod endpoints;
mod errors;
pub(crate) mod fit;
pub(crate) mod flaky;
mod html;
mod journals;
mod json;
mod judge_stats;
mod junit;
mod lang;
mod markdown;
mod measures;
pub(crate) mod model_tag;
mod pass_k;
mod raw;
mod reasoning;
mod rrr;
pub(crate) mod runs;
mod spec_info;
mod statistics;
mod sweep;
mod terminal;
mod users;

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::files::{AtomicFile, write_atomic};
use crate::metrics::{MetricsBuilder, Summary};
use crate::text::file_stem;
pub(crate) use errors::ErrorCause;
pub(crate) use html::{DOM_JS, DRILL_JS, REPORT_CSS, drill_row};
use journals::Journals;
use raw::RawWriter;
pub use spec_info::SpecInfo;

/// The number the leaderboard ranks by: the specs' common headline, or
/// `None` when they differ (the leaderboard's total is then a mix).
pub(crate) fn common_headline(specs: &[SpecInfo]) -> Option<crate::metrics::Headline> {
    match specs.first().map(|s| s.headline) {
        Some(h) if specs.iter().all(|s| s.headline == h) => Some(h),
        Some(_) => None,
        None => Some(crate::metrics::Headline::PassRate),
    }
}

/// The name of the number the leaderboard ranks by, in `w`'s language: the
/// specs' common headline (`pass rate`, `mean score`), or `total` when they differ.
pub(crate) fn total_label(w: &lang::Words, specs: &[SpecInfo]) -> &'static str {
    common_headline(specs).map_or(w.total, |h| w.headline(h))
}

/// `text` with its first letter in upper case: a column name from a phrase.
pub(crate) fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or(String::new(), |c| {
        c.to_uppercase().chain(chars).collect::<String>()
    })
}

/// An extra report kind besides Markdown and raw JSON (`--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportKind {
    /// `report_<stamp>.json`.
    Json,
    /// `report_<stamp>.csv`.
    Csv,
    /// `report_<stamp>.xml`, JUnit XML.
    Junit,
}

/// What to build reports from and where to put them.
pub struct ReportContext<'a> {
    /// Run ids covered (one for `run`, several for `report`).
    pub run_ids: &'a [String],
    /// Human timestamp for headings, UTC: `2026-11-21 22:30:00`.
    pub timestamp: &'a str,
    /// Timestamp for file names: `20261121_223000`.
    pub file_stamp: &'a str,
    /// `results/`.
    pub results_dir: &'a Path,
    /// Models in display order.
    pub models: &'a [String],
    /// The model id each model sends (`SmolLM2-135M-Instruct.Q4_1`), by display name:
    /// reports that name size and quantization read it when the name does not say.
    pub model_ids: &'a std::collections::BTreeMap<String, String>,
    /// Specs in display order.
    pub specs: &'a [SpecInfo],
    /// Extra formats.
    pub formats: &'a [ReportKind],
    /// The journals to read.
    pub journals: &'a [PathBuf],
    /// Color the terminal table.
    pub color: bool,
    /// The model sampled specs compare every model against (`--baseline`).
    pub baseline: Option<&'a str>,
    /// Golden transcripts the HTML report compares the records with, when given.
    pub golden: Option<&'a Path>,
    /// The currency costs are in.
    pub currency: &'a str,
    /// The language of every human-readable report.
    pub lang: crate::text::Lang,
    /// The terminal summary's line width in characters (`COLUMNS`, else 80).
    pub width: usize,
}

/// No model ids: what [`ReportContext::new`] starts from.
static NO_MODEL_IDS: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();

impl<'a> ReportContext<'a> {
    /// Reports of `models` on `specs` from `journals` into `results_dir`:
    /// no run ids, timestamps or model ids, Markdown and raw JSON only,
    /// uncolored, no baseline or golden transcripts, costs in USD. Callers
    /// set the rest with struct update syntax.
    pub fn new(
        results_dir: &'a Path,
        models: &'a [String],
        specs: &'a [SpecInfo],
        journals: &'a [PathBuf],
    ) -> ReportContext<'a> {
        ReportContext {
            run_ids: &[],
            timestamp: "",
            file_stamp: "",
            results_dir,
            models,
            model_ids: &NO_MODEL_IDS,
            specs,
            formats: &[],
            journals,
            color: false,
            baseline: None,
            golden: None,
            currency: "USD",
            lang: crate::text::Lang::En,
            width: fit::WIDTH,
        }
    }
}

/// The files written and the terminal table.
#[derive(Debug, Default)]
pub struct ReportOutput {
    /// The report files.
    pub files: ReportFiles,
    /// The summary table for the terminal.
    pub terminal: String,
    /// Records reported.
    pub answers: u64,
    /// Of those, answers with a request or generation error (no verdict).
    pub errors: u64,
    /// Why they failed: counts by cause and endpoint, most first.
    pub error_causes: Vec<ErrorCause>,
    /// The language of the reports.
    pub lang: crate::text::Lang,
}

impl ReportOutput {
    /// The line over the error causes: how many answers are errors.
    pub fn errors_heading(&self) -> String {
        let w = lang::words(self.lang);
        lang::fill(w.t.errors, &[&self.errors, &self.answers])
    }

    /// The line under the error causes shown: `more` causes left out.
    pub fn more_causes(&self, more: usize) -> String {
        lang::fill(lang::words(self.lang).t.errors_more, &[&more])
    }
}

/// The files a report writes.
#[derive(Debug, Default)]
pub struct ReportFiles {
    /// `results/reports/report_<stamp>.md`.
    pub markdown: PathBuf,
    /// `results/reports/report_<stamp>.html`.
    pub html: PathBuf,
    /// `results/raw/<model>_<stamp>.json`, one per model.
    pub raw: Vec<PathBuf>,
    /// Extra format files.
    pub extra: Vec<PathBuf>,
}

impl ReportFiles {
    /// Every file: the Markdown and HTML reports, the extra formats, the raw files.
    pub fn all(&self) -> impl Iterator<Item = &PathBuf> {
        [&self.markdown, &self.html]
            .into_iter()
            .chain(&self.extra)
            .chain(&self.raw)
    }
}

/// What the renderers see: names in report order and the finished metrics.
pub(crate) struct View<'a> {
    /// The request.
    pub ctx: &'a ReportContext<'a>,
    /// Shown model names (`<run>/<model>` when a model is in several runs).
    pub models: &'a [String],
    /// Specs: `ctx.specs`, then any other spec found in the journals.
    pub specs: &'a [SpecInfo],
    /// Metrics keyed by shown model name and spec id.
    pub summary: &'a Summary,
    /// Per shown model, its run and its name there.
    pub origins: &'a [journals::Origin],
    /// Later runs against the first, when the report covers several.
    pub runs: Option<runs::RunComparison>,
    /// Instances whose samples disagree.
    pub flaky: &'a flaky::Flaky,
}

impl View<'_> {
    /// The phrases of the report's language.
    pub(crate) fn words(&self) -> &'static lang::Words {
        lang::words(self.ctx.lang)
    }

    /// How the terminal's tables are drawn.
    pub(crate) fn fit(&self) -> fit::Fit {
        fit::Fit {
            color: self.ctx.color,
            width: self.ctx.width,
        }
    }
}

/// Builds every report for the given journals.
///
/// A model present in several journals is shown as `<run-id>/<model>` in
/// each (run ids from `ctx.run_ids` when it matches `ctx.journals` one to
/// one, else each journal's directory name); other models keep their name.
///
/// Every file is named after one stamp, `ctx.file_stamp` or, when another
/// report holds it, `<stamp>_2`, `<stamp>_3`, ...: the Markdown report's name
/// is claimed first (`create_new` of a hidden claim file beside it), so two
/// reports made in the same second never overwrite each other's files.
pub fn write_reports(ctx: &ReportContext) -> io::Result<ReportOutput> {
    let mut journals = Journals::open(ctx)?;
    let raw_dir = ctx.results_dir.join("raw");
    let reports_dir = ctx.results_dir.join("reports");
    fs::create_dir_all(&raw_dir)?;
    fs::create_dir_all(&reports_dir)?;
    let markdown = |stamp: &str| reports_dir.join(format!("report_{stamp}.md"));
    // The claim is a hidden file beside the reports, never a report itself:
    // a run killed while writing leaves no empty `report_` file behind.
    let claim = |stamp: &str| reports_dir.join(format!(".report_{stamp}.claim"));
    // `_2`, not `-2`: `report_X_2.md` sorts after `report_X.md` (`-` sorts before `.`).
    let stamp = crate::files::claim_name(ctx.file_stamp, '_', |stamp| {
        if markdown(stamp).exists() {
            return Err(io::ErrorKind::AlreadyExists.into());
        }
        fs::File::create_new(claim(stamp)).map(drop)
    })?;
    let written = write_claimed(ctx, &mut journals, &stamp, &raw_dir, &reports_dir);
    // Written (or failed), the stamp is held by the report itself, or free again.
    let _ = fs::remove_file(claim(&stamp));
    written
}

/// [`write_reports`] once the stamp is claimed.
fn write_claimed(
    ctx: &ReportContext,
    journals: &mut Journals,
    stamp: &str,
    raw_dir: &Path,
    reports_dir: &Path,
) -> io::Result<ReportOutput> {
    let models = std::mem::take(&mut journals.models);
    let specs = std::mem::take(&mut journals.specs);
    let origins = std::mem::take(&mut journals.origins);
    let mut out = ReportOutput {
        lang: ctx.lang,
        ..ReportOutput::default()
    };

    // One pass over the records feeds both the metrics and the raw files.
    let mut builder = MetricsBuilder::new();
    for s in &specs {
        builder = builder
            .group_by(&s.id, &s.group_by)
            .headline(&s.id, s.headline);
        if let Some(plan) = &s.sampling {
            builder = builder.sampling(&s.id, plan.clone());
        }
    }
    let mut stems = BTreeSet::new();
    let mut causes = errors::ErrorTally::default();
    for (m, name) in models.iter().enumerate() {
        let path = raw_dir.join(format!("{}_{stamp}.json", unique_stem(name, &mut stems)));
        // Atomic: a kill mid-write must not leave half a raw file that looks like results.
        let mut raw = RawWriter::new(AtomicFile::create(&path)?);
        for i in journals.model_range(m) {
            let record = journals.read(i)?;
            builder.add(name, &record);
            out.answers += 1;
            if let Some(error) = &record.scored.error {
                out.errors += 1;
                causes.add(record.failure, error, record.endpoint.as_deref());
            }
            raw.write(name, &record)?;
        }
        raw.finish()?.commit()?;
        out.files.raw.push(path);
    }
    out.error_causes = causes.finish();
    let summary = builder.finish();
    let empty = flaky::Flaky::default();
    let mut view = View {
        ctx,
        models: &models,
        specs: &specs,
        summary: &summary,
        origins: &origins,
        runs: None,
        flaky: &empty,
    };
    view.runs = runs::build(&view);
    let found = flaky::build(&view);
    view.flaky = &found;

    out.files.html = reports_dir.join(format!("report_{stamp}.html"));
    html::write(&out.files.html, &view, journals)?;

    out.files.markdown = reports_dir.join(format!("report_{stamp}.md"));
    write_atomic(&out.files.markdown, markdown::render(&view).as_bytes())?;
    let mut done = Vec::new();
    for &format in ctx.formats {
        if done.contains(&format) {
            continue;
        }
        done.push(format);
        let ext = match format {
            ReportKind::Json => "json",
            ReportKind::Csv => "csv",
            ReportKind::Junit => "xml",
        };
        let path = reports_dir.join(format!("report_{stamp}.{ext}"));
        match format {
            ReportKind::Json => write_atomic(&path, json::render(&view)?.as_bytes())?,
            ReportKind::Csv => write_atomic(&path, csv::render(&view).as_bytes())?,
            ReportKind::Junit => {
                let mut w = AtomicFile::create(&path)?;
                junit::write(&mut w, &view, journals)?;
                w.commit()?;
            }
        }
        out.files.extra.push(path);
    }
    for (model, text) in rrr::render(&view) {
        let path = reports_dir.join(format!("rrr_{}_{stamp}.csv", file_stem(&model)));
        write_atomic(&path, text.as_bytes())?;
        out.files.extra.push(path);
    }
    out.terminal = terminal::render(&view);
    Ok(out)
}

/// How model-written code was confined in the reported runs, one line, from
/// the manifest beside each journal; `None` when none ran any.
pub(crate) fn sandbox_line(ctx: &ReportContext) -> Option<String> {
    let mut lines: Vec<String> = Vec::new();
    for dir in ctx.journals.iter().filter_map(|j| j.parent()) {
        let isolation = crate::run::read_manifest(dir).ok().and_then(|m| m.sandbox);
        if let Some(line) = isolation.map(|i| i.describe())
            && !lines.contains(&line)
        {
            lines.push(line);
        }
    }
    (!lines.is_empty()).then(|| lines.join(" | "))
}

/// `name`'s file stem, suffixed `_2`, `_3`, ... when another model already took it.
fn unique_stem(name: &str, taken: &mut BTreeSet<String>) -> String {
    let base = file_stem(name);
    let mut stem = base.clone();
    let mut n = 1;
    while !taken.insert(stem.clone()) {
        n += 1;
        stem = format!("{base}_{n}");
    }
    stem
}

/// The Markdown sections of reasoning, multiple choice and simulated
/// users, in that order (each empty when no cell has any).
pub(crate) fn markdown_sections(v: &View) -> String {
    let w = v.words();
    let sections = [
        (
            w.md.reasoning,
            w.md.reasoning_note,
            &w.reasoning_header[..],
            reasoning::rows(v),
        ),
        (
            w.md.choices,
            w.md.choices_note,
            &w.choices_header[..],
            choices::rows(v),
        ),
        (
            w.md.users,
            w.md.users_note,
            &w.users_header[..],
            users::rows(v),
        ),
    ];
    sections
        .into_iter()
        .map(|(heading, note, header, rows)| cell_table::markdown(heading, note, header, rows))
        .collect()
}
