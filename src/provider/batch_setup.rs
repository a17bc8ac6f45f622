//! A model's batch setting: `batch = true` or `batch = { poll_secs, discount }`
//! in `harness.toml`, `--batch` on the command line, and what the plan keeps.

use serde::{Deserialize, Serialize};

/// How often a batch is polled when `poll_secs` is not set: a batch takes
/// minutes to hours, and every poll is a request.
const DEFAULT_POLL_SECS: f64 = 30.0;

/// The share of the price a batch saves when `discount` is not set: OpenAI
/// and Anthropic both bill batched tokens at half their price.
const DEFAULT_DISCOUNT: f64 = 0.5;

/// `batch = true`, or `batch = { poll_secs = N, discount = D }`, of a `[models.X]` table.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum BatchConfig {
    /// On or off, with the defaults.
    On(bool),
    /// On, with these settings.
    Table(BatchTable),
}

/// The table form of [`BatchConfig`].
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchTable {
    /// Seconds between polls (default 30; 0.01 to 3600).
    pub poll_secs: Option<f64>,
    /// The share of the price saved, 0 to 1 (default 0.5: half price).
    pub discount: Option<f64>,
}

impl BatchConfig {
    /// The model's batch setting: `None` when off.
    pub fn setup(self) -> Option<BatchSetup> {
        match self {
            BatchConfig::On(false) => None,
            BatchConfig::On(true) => Some(BatchSetup::default()),
            BatchConfig::Table(t) => Some(BatchSetup {
                poll_secs: t
                    .poll_secs
                    .map_or(DEFAULT_POLL_SECS, |s| s.clamp(0.01, 3600.0)),
                discount: t.discount.map_or(DEFAULT_DISCOUNT, |d| d.clamp(0.0, 1.0)),
            }),
        }
    }
}

/// A model asked through its provider's batch API, as the plan keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BatchSetup {
    /// Seconds between polls of a batch.
    pub poll_secs: f64,
    /// The share of the model's price a batched answer saves.
    pub discount: f64,
}

impl Default for BatchSetup {
    fn default() -> BatchSetup {
        BatchSetup {
            poll_secs: DEFAULT_POLL_SECS,
            discount: DEFAULT_DISCOUNT,
        }
    }
}
