//! A synth pipeline file as written: the serde types `pipeline` builds a
//! pipeline from and `in_range` checks the numbers of, so neither needs
//! the other's module.

use serde::Deserialize;

use super::chunk::ChunkConfig;

/// One LLM step: its prompts, schema and sampling. Keys that belong to one
/// step only (`num_pairs`, `batch_size`, `threshold`, `enabled`) are refused elsewhere.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StageDef {
    /// System prompt template.
    #[serde(default)]
    pub system: String,
    /// User prompt template.
    pub user: String,
    /// JSON Schema template for the answer (`response_format` json_schema); none: free text.
    pub schema: Option<String>,
    /// Sampling temperature.
    pub temperature: f64,
    /// Nucleus sampling.
    pub top_p: Option<f64>,
    /// Generation limit.
    pub max_tokens: u32,
    /// Asks allowed when the answer is not the JSON asked for (default 3).
    pub attempts: Option<u32>,
    /// Summary only: whether to summarize each document first.
    pub enabled: Option<bool>,
    /// Generation only: pairs asked per chunk.
    pub num_pairs: Option<u32>,
    /// Rating only: pairs rated per request.
    pub batch_size: Option<usize>,
    /// Rating only: the lowest rating kept.
    pub threshold: Option<f64>,
}

/// `[dedup]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DedupDef {
    /// Normalized Levenshtein similarity at which two questions are one.
    pub threshold: f64,
}

/// A pipeline file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PipelineDef {
    /// `[chunking]`.
    #[serde(default)]
    pub chunking: ChunkConfig,
    /// `[summary]`.
    pub summary: StageDef,
    /// `[generation]`.
    pub generation: StageDef,
    /// `[rating]`.
    pub rating: StageDef,
    /// `[dedup]`.
    pub dedup: DedupDef,
}
