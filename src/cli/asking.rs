//! The options of the commands that ask models (`run`, `synth`): where the
//! models are defined, where the response cache lives, and whether progress
//! is shown.

use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::error::Diagnostic;

/// Options shared by the commands that ask models.
#[derive(Debug, clap::Args)]
pub(super) struct AskingArgs {
    /// The configuration file.
    #[arg(long, default_value = "harness.toml")]
    pub config: PathBuf,
    /// Ask the models even when the cache has the answer.
    #[arg(long)]
    pub no_cache: bool,
    /// Results directory: runs, reports and the response cache.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// No progress bars or progress lines.
    #[arg(long)]
    pub no_progress: bool,
}

impl AskingArgs {
    /// The configuration; a file named with `--config` must exist, the default may not.
    pub(super) fn load_config(&self) -> Result<Config, Diagnostic> {
        Config::load(&self.config, self.config != Path::new("harness.toml"))
    }

    /// The response cache under the results directory.
    pub(super) fn cache_path(&self) -> PathBuf {
        self.results.join("cache.sqlite")
    }
}

/// A number option's value outside what the option takes; clap prints it.
#[derive(Debug, thiserror::Error)]
pub(super) enum BadNumber {
    /// `--max-cost`: not a finite amount of 0 or more.
    #[error("`{0}` is not an amount of 0 or more")]
    Amount(String),
    /// `synth --threshold`: not a rating from 1 to 10.
    #[error("`{0}` is not a rating from 1 to 10")]
    Rating(String),
}
