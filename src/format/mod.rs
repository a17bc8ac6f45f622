//! The spec file format: the serde model of one category's TOML file, the
//! source map that locates every key and value in it, and the JSON Schema
//! generated from the model.
//!
//! Every struct rejects unknown keys; `schemas/spec.schema.json` is generated
//! from these types, so the two cannot drift apart.
//!
//! The bottom layer of the spec path: it imports only `error`. Everything that
//! reads a spec (sources, prompts, rules, the compiled spec) imports it.

mod agent;
mod choices;
mod dataset;
pub(crate) mod depth;
mod extract;
pub(crate) mod locate;
mod logprobs;
pub(crate) mod mcp;
pub(crate) use locate::key_path;
pub(crate) mod range;
mod reasoning;
mod rule;
mod schema;
mod spec_file;
mod toml_error;
mod tool_call;
mod tools;

pub(crate) use agent::{AgentUser, EpisodeLimits};
pub(crate) use choices::{ChoiceMethod, ChoiceOutcome, Choices, LabelSet, Labels};
pub(crate) use dataset::{Dataset, DatasetFormat};
pub(crate) use extract::{ExtractDef, ExtractKind, ExtractSource};
pub(crate) use logprobs::{
    Continuation, Logprobs, MAX_TOKENS as MAX_LOGPROB_TOKENS, MAX_TOP, TokenLogprob,
};
pub(crate) use mcp::{McpCall, McpIsolation, McpServer};
pub(crate) use reasoning::{Effort, REASONING_KEYS, ReasoningSetting};
pub(crate) use rule::{RuleTable, field_names};
pub(crate) use schema::{schema_text, spec_schema};
pub(crate) use spec_file::*;
pub(crate) use toml_error::toml_diagnostic;
pub(crate) use tool_call::ToolCall;
pub(crate) use tools::{
    Tool, ToolChoice, ToolDef, ToolMode, ToolProblem, ToolProblems, check_tools, parse_tool_list,
};
