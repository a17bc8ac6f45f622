//! Reports built from run journals: raw results, Markdown, JSON, CSV, JUnit
//! and the terminal summary table.

use std::io;
use std::path::{Path, PathBuf};

/// A spec as reports name it.
#[derive(Debug, Clone)]
pub struct SpecInfo {
    /// The spec id.
    pub id: String,
    /// Its human title (the id when unset).
    pub title: String,
}

/// Extra report formats besides Markdown and raw JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
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
    /// Specs in display order.
    pub specs: &'a [SpecInfo],
    /// Extra formats.
    pub formats: &'a [Format],
    /// The journals to read.
    pub journals: &'a [PathBuf],
    /// Color the terminal table.
    pub color: bool,
}

/// The files written and the terminal table.
#[derive(Debug, Default)]
pub struct ReportOutput {
    /// `results/reports/report_<stamp>.md`.
    pub markdown: PathBuf,
    /// `results/raw/<model>_<stamp>.json`, one per model.
    pub raw: Vec<PathBuf>,
    /// Extra format files.
    pub extra: Vec<PathBuf>,
    /// The summary table for the terminal.
    pub terminal: String,
}

/// Builds every report for the given journals.
pub fn write_reports(ctx: &ReportContext) -> io::Result<ReportOutput> {
    let _ = ctx;
    Ok(ReportOutput::default())
}
