//! Verification: declarative rules, one file each, that turn a response into
//! a [`Verdict`].
//!
//! Data flow: a rule's extractor takes the answer out of the response; the
//! rule compares it with the instance variables and returns a [`Verdict`];
//! [`RuleSet`] combines the verdicts of every `[[verify]]` entry (weights,
//! gates, report-only rules) into an [`InstanceVerdict`]. Each rule's file
//! holds the typed table of the keys it reads (a `kind::RuleKind`) beside
//! its builder and tests; the [`RULES`] table below registers it, and a key
//! the chosen rule does not read is an error, not a silent no-op. A rule says
//! once what it reads ([`Rule::reads`]): the extracted answer, the whole reply
//! (tool calls, the episode, the tools' state) or an LLM judge's verdict.
//! Helpers several rules share live in `shared.rs`.
//!
//! The `judge` rule's verdict comes from an LLM: the rule owns the rubric, the
//! judge's prompt and the reading of its answers ([`judge`]); whoever asks the
//! judge model (the run layer, or `harness check` with fixed answers) hands the
//! judgements back through [`Judged`].
//!
//! A `[choices]` spec has no rules: `choices.rs` scores which choice an
//! answer picked, by its label, its first token or its log-likelihoods.
//!
//! Imports go down only: `format`, `extract`, `scripting`, `sandbox`, `prompt`,
//! `error` and `text`. `verdict.rs` is the leaf the other files share.

#[cfg(test)]
mod bfcl_conformance;
mod call_check;
mod call_types;
mod cer;
pub(crate) mod choices;
mod code;
mod code_input;
mod communicated;
mod contains;
mod exact;
mod expected;
mod final_state;
mod gold_state;
mod json_field;
pub(crate) mod judge;
mod kind;
mod no_tool_call;
mod numeric;
mod regex;
mod registry;
mod reply;
mod rule_set;
mod script;
mod set_equal;
mod shared;
mod similarity;
mod step_count;
mod tool_args;
mod tool_call;
mod tool_sequence;
mod tool_used;
mod verdict;

use kind::{EXPECTED_VALUE, entry, text_entry};

/// Every rule, in the order hints and the schema list them: adding a rule
/// is its file, its `mod` line and one row here (see `docs/architecture.md`).
const RULES: &[kind::Entry] = &[
    text_entry::<exact::ExactKeys>("exact"),
    text_entry::<contains::ContainsKeys>("contains"),
    text_entry::<contains::NotContainsKeys>("not_contains"),
    entry::<contains::ExclusiveKeys>("exclusive").compares(EXPECTED_VALUE),
    entry::<regex::RegexKeys>("regex"),
    entry::<set_equal::SetEqualKeys>("set_equal"),
    entry::<numeric::NumericKeys>("numeric")
        .compares(EXPECTED_VALUE)
        .extracts(ExtractKind::LastNumber),
    entry::<json_field::JsonFieldKeys>("json_field").extracts(ExtractKind::Json),
    entry::<similarity::SimilarityKeys>("similarity").compares(EXPECTED_VALUE),
    entry::<code::CodeKeys>("code").extracts(ExtractKind::CodeBlock),
    entry::<judge::JudgeKeys>("judge").compares(judge::REFERENCE),
    entry::<script::ScriptKeys>("script"),
    entry::<cer::CerKeys>("cer").compares(cer::REFERENCE),
    entry::<final_state::FinalStateKeys>("final_state"),
    entry::<gold_state::GoldStateKeys>("gold_state"),
    entry::<communicated::CommunicatedKeys>("communicated"),
    entry::<tool_call::ToolCallKeys>("tool_call").compares(tool_call::REFERENCE),
    entry::<no_tool_call::NoToolCallKeys>("no_tool_call"),
    entry::<tool_used::ToolUsedKeys>("tool_used"),
    entry::<tool_sequence::ToolSequenceKeys>("tool_sequence"),
    entry::<tool_args::ToolArgsKeys>("tool_args"),
    entry::<step_count::StepCountKeys>("step_count"),
];

use std::path::Path;

use serde_json::{Map, Value};

use crate::error::{Diagnostic, ErrorKind};
use crate::format::locate::SourceMap;
use crate::format::{ExtractKind, key_path};

pub(crate) use expected::{Expected, lookup};
pub(crate) use judge::JudgeRule;
pub(crate) use registry::value_key;
pub(crate) use reply::{Replay, ReplayError, Replayer, Reply};

pub(crate) use rule_set::RuleSet;
pub(crate) use verdict::{
    FailureKind, InstanceVerdict, JudgeOutcome, Judged, Measure, RuleOutcome, Verdict,
};

/// The JSON Schema of one `[[verify]]` table, derived from every rule's
/// keys, and the definitions it refers to.
pub(crate) fn rule_schema() -> (Value, Map<String, Value>) {
    kind::rule_schema(RULES)
}

/// Every rule's name with the keys it reads besides the common ones, in
/// declaration order (the docs are checked against these).
#[cfg(test)]
pub(crate) fn rule_keys() -> Vec<(&'static str, Vec<&'static str>)> {
    RULES.iter().map(|k| (k.name, k.keys())).collect()
}

/// The behavior every rule implements.
pub(crate) trait Rule: Send + Sync {
    /// Where the expected value comes from, for rules that compare with one.
    fn reference(&self) -> Option<&Expected> {
        None
    }
    /// Instance variables the rule reads; `harness check` makes sure each instance sets them.
    fn variables(&self) -> Vec<(&'static str, &str)> {
        self.reference()
            .map(Expected::as_variables)
            .unwrap_or_default()
    }
    /// The expected value for golden files, if the rule has one.
    fn expected(&self, vars: &Map<String, Value>) -> Option<Value> {
        self.reference()?.resolve(vars).cloned()
    }
    /// Why the values this rule reads from `vars` cannot be used whatever the
    /// answer (an empty list, an empty needle, a map where text is needed), as
    /// `(key, why)`. `harness check` reports each at the key; at run time the
    /// rule fails with the same words instead of passing or panicking.
    fn value_problems(&self, vars: &Map<String, Value>) -> Vec<(&'static str, String)> {
        let _ = vars;
        Vec::new()
    }
    /// A verdict on an empty answer, for rules running a spec's own code that
    /// could stall whatever the answer (`script`); `None` for the others.
    fn probe(&self, vars: &Map<String, Value>) -> Option<Verdict> {
        let _ = vars;
        None
    }
    /// What the rule reads, with its one entry point.
    fn reads(&self) -> Reads<'_>;
    /// Whether verifying runs model-written code (and so needs the sandbox).
    fn needs_sandbox(&self) -> bool {
        false
    }
}

/// What a rule reads, and so how it is verified.
pub(crate) enum Reads<'r> {
    /// The answer `extract` takes out of the final text.
    Text(&'r dyn ReadsText),
    /// The reply itself: tool calls, the episode or the tools' state;
    /// `extract` does not apply.
    Reply(&'r dyn ReadsReply),
    /// The extracted answer, verified by an LLM judge outside this layer
    /// (its verdict comes back through [`Judged`]).
    Judge(&'r JudgeRule),
}

/// A rule over the answer extracted from the final text.
pub(crate) trait ReadsText {
    /// The verdict on `answer` (extracted from `response`) for an instance with `vars`.
    fn verify(&self, answer: &str, response: &str, vars: &Map<String, Value>) -> Verdict;
}

/// A rule over the whole reply: tool calls, the episode or the tools' state.
pub(crate) trait ReadsReply {
    /// The answer to show (the calls, the state read) and the verdict.
    fn verify(&self, reply: &Reply, vars: &Map<String, Value>) -> (String, Verdict);
}

/// What a rule builder may look at.
#[derive(Clone, Copy)]
pub(crate) struct BuildContext<'a> {
    /// The rule's name (empty until its `rule` key is read).
    pub rule: &'a str,
    /// A CPU limit replacing every `code` rule's own (an example's `timeout_secs`).
    pub code_timeout: Option<f64>,
    /// Source positions of the spec.
    pub map: &'a SourceMap,
    /// The directory relative paths in the spec start from.
    pub spec_dir: &'a Path,
    /// The index of the `[[verify]]` entry.
    pub index: usize,
}

impl BuildContext<'_> {
    /// A diagnostic pointing at key `key` of this rule.
    pub(crate) fn error(
        &self,
        kind: ErrorKind,
        key: &str,
        message: impl Into<String>,
    ) -> Diagnostic {
        Diagnostic::new(
            kind,
            self.map.locate(key_path!["verify", self.index, key]),
            message,
        )
    }

    /// A diagnostic for a key this rule needs but does not have.
    pub(crate) fn missing(&self, rule: &str, key: &str, example: &str) -> Diagnostic {
        Diagnostic::new(
            ErrorKind::Invalid,
            self.map.locate(key_path!["verify", self.index]),
            format!("rule `{rule}` needs `{key}`"),
        )
        .with_help(format!("add, for example: {key} = {example}"))
    }

    /// `value`, or the [`missing`](Self::missing) diagnostic when the rule lacks it.
    pub(crate) fn required<'v, T: ?Sized>(
        &self,
        value: Option<&'v T>,
        rule: &str,
        key: &str,
        example: &str,
    ) -> Result<&'v T, Diagnostic> {
        value.ok_or_else(|| self.missing(rule, key, example))
    }

    /// The rule's `threshold` (or `default`), which must lie within 0..1.
    pub(crate) fn threshold(
        &self,
        threshold: Option<f64>,
        default: f64,
    ) -> Result<f64, Diagnostic> {
        let threshold = threshold.unwrap_or(default);
        if (0.0..=1.0).contains(&threshold) {
            Ok(threshold)
        } else {
            Err(self.error(
                ErrorKind::Invalid,
                "threshold",
                "threshold must be within 0..1",
            ))
        }
    }

    /// The location of a position inside the string value of `key`.
    pub(crate) fn locate_in(
        &self,
        key: &str,
        line: usize,
        column: usize,
    ) -> crate::error::Location {
        self.map
            .locate_in_string(key_path!["verify", self.index, key], line, column)
    }
}

/// Why a JSON Schema file cannot be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SchemaError {
    /// The file could not be read.
    #[error("cannot read schema file {}: {source}", path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error("{}:{}:{}: not valid JSON: {source}", path.display(), source.line(), source.column())]
    Json {
        /// The file.
        path: std::path::PathBuf,
        /// The parse error, with its line and column.
        source: serde_json::Error,
    },
    /// The JSON is not a JSON Schema.
    #[error("{} is not a valid JSON Schema: {message}", path.display())]
    Invalid {
        /// The file.
        path: std::path::PathBuf,
        /// What the schema compiler said.
        message: String,
    },
}

/// Reads and compiles the JSON Schema file at `path` (relative to `spec_dir`):
/// the schema as JSON, and its validator.
pub(crate) fn read_schema(
    spec_dir: &Path,
    path: &str,
) -> Result<(Value, jsonschema::Validator), SchemaError> {
    let path = spec_dir.join(path);
    let text = match crate::files::read_text(&path, crate::files::FileKind::Schema) {
        Ok(text) => text,
        Err(e) => {
            let source = std::io::Error::from(e);
            return Err(SchemaError::Read { path, source });
        }
    };
    let schema: Value = match serde_json::from_str(&text) {
        Ok(schema) => schema,
        Err(source) => return Err(SchemaError::Json { path, source }),
    };
    match jsonschema::validator_for(&schema) {
        Ok(validator) => Ok((schema, validator)),
        // Where, not what: the validator's message quotes the file's values,
        // and `schema` may name any JSON file on the machine.
        Err(e) => Err(SchemaError::Invalid {
            path,
            message: format!(
                "the value at `{}` is not what a schema allows there",
                e.instance_path()
            ),
        }),
    }
}
