//! The `[dataset]` table: where a spec's instances come from when they are read, not generated.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The `[dataset]` table: one instance per row of a file or a hub dataset.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Dataset {
    /// A file relative to the spec (`{split}` is replaced by each split), or `hf://owner/name`.
    pub path: String,
    /// `jsonl`, `json`, `csv` or `parquet`; default from the extension (`.gz` is unpacked).
    pub format: Option<DatasetFormat>,
    /// JSON only: the key of the row list when the file is an object.
    pub key: Option<String>,
    /// One split: the hub split, or the `{split}` of `path`; instances get a `split` variable.
    pub split: Option<String>,
    /// Several splits, interleaved row by row so any `runs` cap keeps them balanced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub splits: Vec<String>,
    /// The hub dataset's configuration (default `default`).
    pub config: Option<String>,
    /// Rhai expression over `row`; rows for which it is false are dropped.
    pub filter: Option<String>,
    /// Keep a seeded random sample of this many rows per split (after `filter`).
    pub sample: Option<u64>,
    /// Keep at most this many rows per split (after `filter` and `sample`).
    pub limit: Option<u64>,
    /// Instance variables taken from the row: name -> dotted path, or a list of paths (first present wins).
    pub fields: Option<BTreeMap<String, FieldSource>>,
    /// Rhai script over `row` (after `fields`) returning the instance variables as a map.
    pub map: Option<String>,
    /// Operation budget of `filter` and `map` per row (default 1,000,000).
    pub max_operations: Option<u64>,
}

/// Where a dataset field comes from.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum FieldSource {
    /// A dotted path into the row (`a.b.0`).
    Path(String),
    /// Paths tried in order; the first present is used (`["answer_id", "rightStepId"]`).
    FirstOf(Vec<String>),
}

impl FieldSource {
    /// The paths to try, in order.
    pub fn paths(&self) -> &[String] {
        match self {
            FieldSource::Path(p) => std::slice::from_ref(p),
            FieldSource::FirstOf(ps) => ps,
        }
    }
}

/// A dataset file format.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum DatasetFormat {
    /// One JSON object per line.
    Jsonl,
    /// A JSON array of objects, or an object holding one (see `key`).
    Json,
    /// Comma-separated values with a header row.
    Csv,
    /// Apache Parquet, the format the Hugging Face hub serves.
    Parquet,
}
