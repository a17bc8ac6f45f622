//! The spec file format: the serde model of one category's TOML file.
//!
//! Every struct rejects unknown keys; `schemas/spec.schema.json` is generated
//! from these types, so the two cannot drift apart.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::extract::ExtractDef;

/// One test category, as written in `specs/<id>.toml`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpecFile {
    /// Unique id; defaults to the file stem.
    pub id: Option<String>,
    /// Human-readable title, shown in reports.
    pub title: Option<String>,
    /// What the category measures.
    pub description: Option<String>,
    /// Free-form labels for selecting specs.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Instances per model (default 10); `--runs` and `harness.toml` override.
    pub runs: Option<u32>,
    /// Seed of the instance generator (default 0). Instance i is a pure function of (seed, i).
    pub seed: Option<u64>,
    /// What `golden/<id>/instances.jsonl` holds: `full` instances (default) or
    /// a `digest` of each, for datasets that must not be copied into the repository.
    pub golden_instances: Option<GoldenInstances>,
    /// Plain tables readable from scripts (`data.x`) and templates (`{{ data.x }}`).
    #[serde(default)]
    pub data: BTreeMap<String, Value>,
    /// Instances read from a dataset file or the Hugging Face hub, one per row.
    pub dataset: Option<Dataset>,
    /// How instances are made: a Rhai script (with `[dataset]`: run on each row, as `row`).
    pub generate: Option<Generate>,
    /// The chat messages sent to the model, as minijinja templates.
    pub prompt: Prompt,
    /// Request options sent with every prompt.
    #[serde(default)]
    pub request: RequestOptions,
    /// Several answers per instance, and the pass@k family of metrics over them.
    pub sampling: Option<Sampling>,
    /// Verification rules; an instance passes when all pass.
    #[serde(default)]
    pub verify: Vec<RuleDef>,
    /// Self-checks run by `harness check` without a model.
    #[serde(default, rename = "example")]
    pub examples: Vec<Example>,
    /// How reports break the results down.
    #[serde(default)]
    pub report: ReportOptions,
}

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

/// The `[report]` table: breakdowns and extra outputs of a spec's results.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportOptions {
    /// Instance variables to break accuracy down by (`"split"` or `["split", "topic"]`).
    pub group_by: Option<OneOrMany>,
    /// An extra per-model CSV in a published benchmark's format: `rrr`.
    pub csv: Option<CsvKind>,
    /// The dataset name written in that CSV (default: the hub id or the data directory's name).
    pub dataset_name: Option<String>,
}

impl ReportOptions {
    /// The `group_by` variables, in order.
    pub fn group_by(&self) -> Vec<String> {
        match &self.group_by {
            None => Vec::new(),
            Some(OneOrMany::One(s)) => vec![s.clone()],
            Some(OneOrMany::Many(v)) => v.clone(),
        }
    }
}

/// A string or a list of strings.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum OneOrMany {
    /// One.
    One(String),
    /// Several.
    Many(Vec<String>),
}

/// Benchmark-specific CSV layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CsvKind {
    /// Russian Router Ranking: one file per model, one row per split.
    Rrr,
}

/// What golden instance files hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GoldenInstances {
    /// Variables, messages and expected values.
    Full,
    /// A SHA-256 of each instance: changes show, content stays out.
    Digest,
}

/// The `[generate]` table: a Rhai script returning a map of instance variables.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Generate {
    /// Inline Rhai source. Sees `rng`, `data`, `index`; returns a map.
    pub script: Option<String>,
    /// A `.rhai` file, relative to the spec file.
    pub file: Option<String>,
    /// Operation budget per instance (default 1,000,000).
    pub max_operations: Option<u64>,
}

/// The `[prompt]` table.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Prompt {
    /// System message template.
    pub system: Option<String>,
    /// User message template.
    pub user: Option<String>,
    /// Explicit message list, instead of `system`/`user`.
    pub messages: Option<Vec<MessageTemplate>>,
    /// A variable holding chat turns (`[{role, content}]`, user/assistant) sent after the system messages.
    pub history: Option<String>,
}

/// One message template in `prompt.messages`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MessageTemplate {
    /// `system`, `user` or `assistant`.
    pub role: Role,
    /// The minijinja template of the message text.
    pub content: String,
}

/// The author of a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions to the model.
    System,
    /// The user's turn.
    User,
    /// A model turn (few-shot examples, history).
    Assistant,
}

/// The `[request]` table: options sent with each request.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestOptions {
    /// Sampling temperature (default 0: deterministic).
    pub temperature: Option<f64>,
    /// Maximum tokens to generate; every request carries one.
    pub max_tokens: Option<u32>,
    /// Nucleus sampling.
    pub top_p: Option<f64>,
    /// Sampling seed.
    pub seed: Option<u64>,
    /// Stop sequences.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// `text` (default), `json`, or `json_schema` (with `schema`).
    pub response_format: Option<ResponseFormat>,
    /// JSON Schema file for `response_format = "json_schema"`, relative to the spec.
    pub schema: Option<String>,
    /// Asks allowed when a structured (JSON) answer does not parse (default 3).
    pub attempts: Option<u32>,
    /// Context window, for servers that take one per request (Ollama's `num_ctx`).
    pub num_ctx: Option<u32>,
}

/// The `[sampling]` table: `n` answers per instance, each its own record.
///
/// Its request options override `[request]`'s; a model's options override both.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Sampling {
    /// Samples per instance (default 1).
    pub n: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    pub top_p: Option<f64>,
    /// Base seed: sample `s` is asked with `seed + s`, so samples differ yet reproduce.
    pub seed: Option<u64>,
    /// Maximum tokens to generate per sample.
    pub max_tokens: Option<u32>,
    /// The k of pass@k and pass^k, each at most `n` (default `[1, n]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub k: Vec<u32>,
    /// Also report maj@n: the majority extracted answer per instance is scored.
    #[serde(default)]
    pub maj: bool,
}

impl Sampling {
    /// Samples per instance.
    pub fn n(&self) -> u32 {
        self.n.unwrap_or(1).max(1)
    }

    /// The k values reported, ascending and distinct (default `[1, n]`).
    pub fn ks(&self) -> Vec<u32> {
        let mut ks = if self.k.is_empty() {
            vec![1, self.n()]
        } else {
            self.k.clone()
        };
        ks.sort_unstable();
        ks.dedup();
        ks
    }
}

/// What shape of answer the model is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResponseFormat {
    /// Free text.
    Text,
    /// Any JSON object.
    Json,
    /// JSON constrained by `request.schema`.
    JsonSchema,
}

/// One `[[verify]]` rule. Which keys apply depends on `rule`; `harness check`
/// rejects keys the chosen rule does not read.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuleDef {
    /// The rule: exact, contains, not_contains, exclusive, regex, set_equal,
    /// numeric, json_field, similarity, script, code.
    pub rule: String,
    /// A name for reports (defaults to the rule).
    pub name: Option<String>,
    /// Weight in the instance score (default 1).
    pub weight: Option<f64>,
    /// A gate adds nothing to the score, but when it fails the instance scores 0.
    pub gate: Option<bool>,
    /// Judged and reported beside the other rules (a flexible extraction beside a strict
    /// one), but not part of the instance's pass or score.
    pub report_only: Option<bool>,
    /// How the answer is taken from the response.
    pub extract: Option<ExtractDef>,
    /// The instance variable holding the expected value (dotted path); the judge's reference answer.
    pub expected: Option<String>,
    /// A literal expected value, instead of `expected`.
    pub value: Option<Value>,
    /// Compare case-sensitively (default false).
    pub case_sensitive: Option<bool>,
    /// Match whole words only (contains family; default true).
    pub whole_word: Option<bool>,
    /// `all` (default) or `any` of the expected strings (contains).
    pub mode: Option<String>,
    /// Variable with every candidate answer (exclusive).
    pub candidates: Option<String>,
    /// Regular expression the answer must match (regex).
    pub pattern: Option<String>,
    /// Absolute tolerance (numeric).
    pub tolerance: Option<f64>,
    /// Relative tolerance (numeric).
    pub relative_tolerance: Option<f64>,
    /// Entity groups (set_equal).
    pub entities: Option<Vec<EntityDef>>,
    /// Score by F1 instead of all-or-nothing (set_equal).
    pub partial: Option<bool>,
    /// JSON Schema file the answer must satisfy (json_field), relative to the spec.
    pub schema: Option<String>,
    /// JSON pointer -> instance variable to compare (json_field).
    pub fields: Option<BTreeMap<String, String>>,
    /// `chrf` (default) or `levenshtein` (similarity).
    pub metric: Option<String>,
    /// Minimum score to pass (similarity, script, judge; default 0.5).
    pub threshold: Option<f64>,
    /// Rhai expression returning a bool, a score or `#{passed, score, detail}` (script).
    pub script: Option<String>,
    /// The instance variable holding the tests: a list of snippets or one snippet (code).
    pub tests: Option<String>,
    /// minijinja template making each test's source from `test` (code); `| py` writes Python literals.
    pub test_template: Option<String>,
    /// Instance variable with code put before the answer: the task's imports and helpers (code).
    pub prelude: Option<String>,
    /// The solution's language: fence to extract and runtime (code; default python);
    /// the built-in judge prompt's language, `ru` or `en` (judge; default ru).
    pub language: Option<String>,
    /// `all` (default: every test must pass) or `fraction` of tests passed (code).
    pub score: Option<String>,
    /// Wall-clock and CPU limit in seconds (code; default 10).
    pub timeout_secs: Option<f64>,
    /// Address-space limit in MiB (code; default 512).
    pub memory_mb: Option<u64>,
    /// Command line of a custom runtime, run in the working directory (code).
    pub command: Option<Vec<String>>,
    /// A custom runtime's runner file, relative to the spec (code).
    pub runner: Option<String>,
    /// File name the solution is written to (code; default `solution.py`).
    pub solution_file: Option<String>,
    /// The rubric's levels (judge).
    pub rubric: Option<Vec<crate::judge::Level>>,
    /// A rubric file of `[[level]]` tables, relative to the spec (judge).
    pub rubric_file: Option<String>,
    /// The judge's prompt, a minijinja template over `task`, `reference`, `answer`, `levels`,
    /// `min_level`, `max_level` and `vars` (judge; default: a built-in prompt in `language`).
    pub template: Option<String>,
    /// Judge samples per answer; the median level counts and the spread is reported (judge; default 1).
    pub samples: Option<u32>,
    /// The judge's temperature (judge; default 0, or 0.7 with several samples).
    pub temperature: Option<f64>,
    /// The judge's generation limit (judge; default 512).
    pub max_tokens: Option<u32>,
    /// Asks per judge sample when its answer does not parse (judge; default 3).
    pub attempts: Option<u32>,
}

/// One entity group of a `set_equal` rule.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntityDef {
    /// The group's name, shown in details (`email`, `phone`, ...).
    pub name: String,
    /// Regex finding the entities in the answer; group 1 if present, else the whole match.
    pub pattern: String,
    /// Normalizers applied to found and expected values, in order.
    #[serde(default)]
    pub normalize: Vec<Normalizer>,
    /// The instance variable holding the expected list.
    pub expected: String,
}

/// A normalization applied to entities before comparing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Normalizer {
    /// Lower-case.
    Lowercase,
    /// Keep digits only.
    Digits,
    /// Digits only, and a Russian trunk prefix 8 read as country code 7.
    Phone,
    /// Trim surrounding whitespace and punctuation.
    Trim,
    /// Dates in common formats to YYYY-MM-DD.
    Date,
}

/// A self-check: a response and what the rules must conclude about it.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Example {
    /// A label shown when the example fails.
    pub name: Option<String>,
    /// Take the variables of this generated instance.
    pub instance: Option<u32>,
    /// Variables given explicitly (merged over `instance`'s, if both).
    pub vars: Option<serde_json::Map<String, Value>>,
    /// The model response to verify.
    pub response: String,
    /// Whether the instance must pass.
    pub passes: bool,
    /// The exact score expected, if given.
    pub score: Option<f64>,
    /// Text the failure detail must contain.
    pub detail: Option<String>,
    /// Fixed judge responses, one per judge sample, for specs with a `judge` rule.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judge: Vec<String>,
}
