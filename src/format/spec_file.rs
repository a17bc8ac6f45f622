//! The top-level tables of a spec file: `[generate]`, `[prompt]`, `[request]`,
//! `[sampling]`, `[report]` and `[[example]]`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::agent::Agent;
use super::dataset::Dataset;
use super::rule::RuleTable;
use super::tool_call::ToolCall;
use super::tools::{ToolChoice, ToolDef};

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
    /// Lets the spec make more than 10,000 instances (`runs`, or a dataset's rows):
    /// above that, `harness check` and every run take minutes, so it must be meant.
    pub allow_large_runs: Option<bool>,
    /// Seed of the instance generator (default 0). Instance i is a pure function of (seed, i).
    pub seed: Option<u64>,
    /// What `golden/<id>/instances.jsonl` holds: `full` instances (default) or
    /// a `digest` of each, for datasets that must not be copied into the repository.
    pub golden_instances: Option<GoldenInstances>,
    /// What the golden transcripts cover, when not every instance.
    pub golden: Option<GoldenOptions>,
    /// Plain tables readable from scripts (`data.x`) and templates (`{{ data.x }}`).
    #[serde(default)]
    pub data: BTreeMap<String, Value>,
    /// Files (relative to the spec) read into `[data]`: `{ db = "db.json" }`
    /// makes the JSON file's value `data.db`; a file not ending in `.json` is
    /// read as text. For data too large, or too shared, to write as TOML.
    #[serde(default)]
    pub data_files: BTreeMap<String, String>,
    /// Instances read from a dataset file or the Hugging Face hub, one per row.
    pub dataset: Option<Dataset>,
    /// How instances are made: a Rhai script (with `[dataset]`: run on each row, as `row`).
    pub generate: Option<Generate>,
    /// The chat messages sent to the model, as minijinja templates.
    pub prompt: Prompt,
    /// Request options sent with every prompt.
    #[serde(default)]
    pub request: RequestOptions,
    /// Tools (functions) the model may call, sent with every request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDef>,
    /// A JSON list of tools, relative to the spec: OpenAI's
    /// `{"type": "function", "function": {...}}` form or bare `{name, description, parameters}`.
    pub tools_file: Option<String>,
    /// An instance variable holding a JSON list of tools (as `tools_file`'s),
    /// sent with that instance's request after the spec's own.
    pub tools_var: Option<String>,
    /// A multi-turn episode: the model calls the tools (each run by its
    /// `script`) until a final answer, the `end` tool or `max_turns`.
    pub agent: Option<Agent>,
    /// MCP servers whose tools join the episode's (needs `[agent]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp: Vec<super::McpServer>,
    /// Several answers per instance, and the pass@k family of metrics over them.
    pub sampling: Option<Sampling>,
    /// A multiple-choice question: its choices, the right one, and how a
    /// choice is picked (instead of `[[verify]]` rules).
    pub choices: Option<super::Choices>,
    /// Verification rules; an instance passes when all pass.
    #[serde(default)]
    pub verify: Vec<RuleTable>,
    /// Self-checks run by `harness check` without a model.
    #[serde(default, rename = "example")]
    pub examples: Vec<Example>,
    /// How reports break the results down.
    #[serde(default)]
    pub report: ReportOptions,
}

/// The `[report]` table: breakdowns and extra outputs of a spec's results.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportOptions {
    /// The number cells, ranks and totals show: `pass_rate` (default) or `mean_score`.
    pub headline: Option<Headline>,
    /// Instance variables to break results down by (`"split"` or `["split", "topic"]`).
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

/// Which of a spec's two numbers is its headline: the one its cells show and
/// its models are ranked and compared by. Reports give both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Headline {
    /// The share of instances (samples) that passed every rule, gates included.
    #[default]
    PassRate,
    /// The mean weighted score: partial credit, as the rules' weights say.
    MeanScore,
}

impl Headline {
    /// One sample's value under this headline.
    pub fn value(self, passed: bool, score: f64) -> f64 {
        match self {
            Headline::PassRate => f64::from(u8::from(passed)),
            Headline::MeanScore => score,
        }
    }

    /// The name reports use: `pass rate`, `mean score`.
    pub fn label(self) -> &'static str {
        match self {
            Headline::PassRate => "pass rate",
            Headline::MeanScore => "mean score",
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

/// The `[golden]` table: the seeded subset of instances the golden
/// transcripts record, for specs too large to record (and check live) whole.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoldenOptions {
    /// Instances recorded: a stratified sample across splits and `group_by`
    /// groups, chosen from the spec's seed (default: every instance).
    pub instances: Option<u32>,
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
    /// Images sent with the `user` message: path templates, relative to the
    /// local dataset file's folder when there is one, else to the spec's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<String>,
    /// The size limit of each image in bytes (default 20 MiB, at most 100 MiB).
    pub max_image_bytes: Option<u64>,
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
    /// Images sent with this message, as in `[prompt] images`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<String>,
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
    /// A tool's result in an episode's trajectory; never written in a spec.
    #[schemars(skip)]
    Tool,
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
    /// Whether the model must call a tool: `auto`, `required`, `none`, or
    /// `{ function = "name" }` for that one; needs tools.
    pub tool_choice: Option<ToolChoice>,
    /// Whether the model may call several tools in one turn; needs tools.
    pub parallel_tool_calls: Option<bool>,
    /// How much the model thinks: `{ effort, budget_tokens, enabled }`; per
    /// key over the model's own `reasoning` (see docs/reasoning.md).
    #[serde(default, skip_serializing_if = "super::ReasoningSetting::is_empty")]
    pub reasoning: super::ReasoningSetting,
    /// Ask for the generated tokens' log-probabilities (kept with each answer).
    pub logprobs: Option<bool>,
    /// With `logprobs`: how many alternatives per token (0 to 20).
    pub top_logprobs: Option<u32>,
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
    /// The model response to verify: its text (with `tool_calls`, the
    /// text beside the calls; empty by default).
    #[serde(default)]
    pub response: String,
    /// The calls the response makes, one assistant turn: `[{ name, arguments }]`
    /// (`arguments` an object, or JSON text as a wire carries it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// A whole episode instead: the messages after the prompt, assistant
    /// turns (`content`, `tool_calls`) and tool results (`role = "tool"`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trajectory: Vec<ExampleMessage>,
    /// The tools' state when an `[agent]` episode ended, as `final_state` rules read it.
    pub state: Option<Value>,
    /// Whether the instance must pass.
    pub passes: bool,
    /// The exact score expected, if given.
    pub score: Option<f64>,
    /// Text the failure detail must contain.
    pub detail: Option<String>,
    /// The `code` rules' CPU limit for this example alone, in seconds (may be
    /// fractional): an example that proves the limit stops an endless loop
    /// need not wait out the spec's own.
    pub timeout_secs: Option<f64>,
    /// Fixed judge responses, one per judge sample, for specs with a `judge` rule.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judge: Vec<String>,
    /// `[choices] method = "first_token"`: the first token's alternatives
    /// as a server lists them, `[[text, logprob], ...]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top_logprobs: Vec<(String, f64)>,
    /// `[choices] method = "loglikelihood"`: each choice's log-likelihood.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loglikelihoods: Vec<f64>,
    /// With `[choices]`: the index of the choice the example must pick.
    pub picked: Option<usize>,
}

/// The roles an example's episode message may have (the schema's view of
/// [`ExampleMessage::role`]; `tool` is no prompt role; `user` only with
/// `[agent.user]`).
#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code, reason = "only its schema is used")]
enum ExampleRole {
    /// A model turn.
    Assistant,
    /// A tool's result.
    Tool,
    /// A simulated user's turn.
    User,
}

/// One message of an example's episode.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExampleMessage {
    /// `assistant`, `tool`, or with `[agent.user]` `user`.
    #[schemars(with = "ExampleRole")]
    pub role: Role,
    /// The text (an assistant's words, a tool's result).
    #[serde(default)]
    pub content: String,
    /// An assistant turn's calls, `[{ name, arguments, id }]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// A tool result's call id.
    pub tool_call_id: Option<String>,
    /// A tool result's tool.
    pub tool_name: Option<String>,
}
