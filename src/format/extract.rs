//! The `extract` key: a kind name, or a table with ordered patterns, a kind
//! and, for JSON, a pointer to the field that is the answer.

use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

/// The final step of extraction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExtractKind {
    /// The cleaned text as is.
    #[default]
    Text,
    /// The last number (negatives, decimals, decimal comma, thousands separators).
    LastNumber,
    /// The first number.
    FirstNumber,
    /// The first valid JSON object, also inside fences or prose; with a
    /// `pointer`, the value it points at.
    Json,
    /// The first fenced code block (preferring `language`), else the whole text.
    CodeBlock,
    /// The first non-empty line.
    FirstLine,
    /// The last non-empty line.
    LastLine,
}

impl ExtractKind {
    /// Every kind's name, for did-you-mean hints.
    pub const NAMES: &[&str] = &[
        "text",
        "last_number",
        "first_number",
        "json",
        "code_block",
        "first_line",
        "last_line",
    ];
}

/// What a rule extracts its answer from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExtractSource {
    /// The model's answer: its text without the reasoning.
    #[default]
    Answer,
    /// What the model reasoned before answering (empty when it kept none).
    Reasoning,
}

/// `extract = "last_number"` or `extract = { patterns = [...], kind = "..." }`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ExtractDef {
    /// Where the text comes from: the answer (default) or the reasoning.
    pub from: ExtractSource,
    /// The final step.
    pub kind: ExtractKind,
    /// Regexes tried in order; the first that matches narrows the text to its
    /// `answer` group, else group 1, else the whole match.
    pub patterns: Vec<String>,
    /// Take the last match of the winning pattern instead of the first.
    pub last_match: bool,
    /// Remove `<think>...</think>` reasoning (default true).
    pub strip_think: bool,
    /// Unwrap a response that is one fenced code block (default false).
    pub strip_fences: bool,
    /// Trim whitespace from the result (default true).
    pub trim: bool,
    /// Preferred fence language for `code_block`.
    pub language: Option<String>,
    /// A JSON pointer (`/total`, `/items/0/price`) into the object the
    /// `json` kind found: the answer is the value there (a string as its
    /// text, anything else as JSON).
    pub pointer: Option<String>,
}

impl ExtractDef {
    /// The default pipeline: strip think blocks, trim, whole text.
    pub fn text() -> ExtractDef {
        ExtractDef::of(ExtractKind::Text)
    }

    /// The default pipeline ending in `kind`.
    pub fn of(kind: ExtractKind) -> ExtractDef {
        ExtractDef {
            kind,
            strip_think: true,
            trim: true,
            ..ExtractDef::default()
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExtractTable {
    #[serde(default)]
    from: ExtractSource,
    kind: Option<ExtractKind>,
    #[serde(default)]
    patterns: Vec<String>,
    #[serde(default)]
    last_match: bool,
    #[serde(default = "yes")]
    strip_think: bool,
    #[serde(default)]
    strip_fences: bool,
    #[serde(default = "yes")]
    trim: bool,
    language: Option<String>,
    pointer: Option<String>,
}

fn yes() -> bool {
    true
}

impl<'de> Deserialize<'de> for ExtractDef {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ExtractVisitor;
        impl<'de> Visitor<'de> for ExtractVisitor {
            type Value = ExtractDef;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an extraction kind name or a table with `kind` and `patterns`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ExtractDef, E> {
                let kind = ExtractKind::deserialize(de::value::StrDeserializer::<E>::new(v))?;
                Ok(ExtractDef::of(kind))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ExtractDef, A::Error> {
                let t = ExtractTable::deserialize(de::value::MapAccessDeserializer::new(map))?;
                // A pointer reads JSON: it implies the `json` kind.
                let implied = if t.pointer.is_some() {
                    ExtractKind::Json
                } else {
                    ExtractKind::Text
                };
                Ok(ExtractDef {
                    from: t.from,
                    kind: t.kind.unwrap_or(implied),
                    patterns: t.patterns,
                    last_match: t.last_match,
                    strip_think: t.strip_think,
                    strip_fences: t.strip_fences,
                    trim: t.trim,
                    language: t.language,
                    pointer: t.pointer,
                })
            }
        }
        deserializer.deserialize_any(ExtractVisitor)
    }
}

impl JsonSchema for ExtractDef {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ExtractDef".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let kind = generator.subschema_for::<ExtractKind>();
        let from = generator.subschema_for::<ExtractSource>();
        json_schema!({
            "description": "How the answer is taken from the response: a kind name, or a pipeline table.",
            "anyOf": [
                kind,
                {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": {
                        "from": from,
                        "kind": kind,
                        "patterns": {"type": "array", "items": {"type": "string"},
                            "description": "Regexes tried in order; the first that matches wins."},
                        "last_match": {"type": "boolean", "description": "Take the last match of the winning pattern."},
                        "strip_think": {"type": "boolean", "description": "Remove <think> blocks (default true)."},
                        "strip_fences": {"type": "boolean", "description": "Unwrap a fenced response (default false)."},
                        "trim": {"type": "boolean", "description": "Trim the result (default true)."},
                        "language": {"type": "string", "description": "Preferred fence language for code_block."},
                        "pointer": {"type": "string", "description": "A JSON pointer (/total, /items/0/price) into the JSON object found: the answer is the value there. Implies kind = \"json\"."}
                    }
                }
            ]
        })
    }
}
