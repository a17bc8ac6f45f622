//! Answer extraction: how a rule takes its answer out of a model's response.
//!
//! A pipeline declared per rule: strip `<think>` blocks, strip a wrapping code
//! fence, narrow with ordered regex patterns, apply a kind (number, JSON, code
//! block, line), trim.

use std::fmt;
use std::sync::LazyLock;

use regex::Regex;
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
    /// The first valid JSON object, also inside fences or prose.
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

/// `extract = "last_number"` or `extract = { patterns = [...], kind = "..." }`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ExtractDef {
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
    kind: ExtractKind,
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
                Ok(ExtractDef {
                    kind: t.kind,
                    patterns: t.patterns,
                    last_match: t.last_match,
                    strip_think: t.strip_think,
                    strip_fences: t.strip_fences,
                    trim: t.trim,
                    language: t.language,
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
        json_schema!({
            "description": "How the answer is taken from the response: a kind name, or a pipeline table.",
            "anyOf": [
                kind,
                {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": {
                        "kind": kind,
                        "patterns": {"type": "array", "items": {"type": "string"},
                            "description": "Regexes tried in order; the first that matches wins."},
                        "last_match": {"type": "boolean", "description": "Take the last match of the winning pattern."},
                        "strip_think": {"type": "boolean", "description": "Remove <think> blocks (default true)."},
                        "strip_fences": {"type": "boolean", "description": "Unwrap a fenced response (default false)."},
                        "trim": {"type": "boolean", "description": "Trim the result (default true)."},
                        "language": {"type": "string", "description": "Preferred fence language for code_block."}
                    }
                }
            ]
        })
    }
}

/// A compiled extraction pipeline.
#[derive(Debug, Clone)]
pub struct Extractor {
    def: ExtractDef,
    patterns: Vec<Regex>,
}

/// A pattern in an `extract` table that did not compile.
#[derive(Debug, thiserror::Error)]
#[error("pattern {} does not compile: {source}", index + 1)]
pub struct PatternError {
    /// Which pattern (0-based).
    pub index: usize,
    /// The regex error.
    pub source: regex::Error,
}

impl Extractor {
    /// Compiles the pipeline's patterns.
    pub fn new(def: ExtractDef) -> Result<Extractor, PatternError> {
        let patterns = def
            .patterns
            .iter()
            .enumerate()
            .map(|(index, p)| Regex::new(p).map_err(|source| PatternError { index, source }))
            .collect::<Result<_, _>>()?;
        Ok(Extractor { def, patterns })
    }

    /// The declared pipeline.
    pub fn def(&self) -> &ExtractDef {
        &self.def
    }

    /// The answer in `response`, or `None` when nothing could be extracted.
    pub fn apply(&self, response: &str) -> Option<String> {
        let mut text = if self.def.strip_think {
            strip_think(response)
        } else {
            response
        };
        if self.def.strip_fences {
            text = strip_fences(text);
        }
        if !self.patterns.is_empty() {
            text = self.narrow(text)?;
        }
        let answer = match self.def.kind {
            ExtractKind::Text => text.to_owned(),
            ExtractKind::LastNumber => last_number(text)?,
            ExtractKind::FirstNumber => first_number(text)?,
            ExtractKind::Json => first_json_object(text)?.to_owned(),
            ExtractKind::CodeBlock => code_block(text, self.def.language.as_deref()).to_owned(),
            ExtractKind::FirstLine => text.lines().find(|l| !l.trim().is_empty())?.to_owned(),
            ExtractKind::LastLine => text.lines().rfind(|l| !l.trim().is_empty())?.to_owned(),
        };
        Some(if self.def.trim {
            answer.trim().to_owned()
        } else {
            answer
        })
    }

    fn narrow<'t>(&self, text: &'t str) -> Option<&'t str> {
        self.patterns.iter().find_map(|re| {
            let caps = if self.def.last_match {
                re.captures_iter(text).last()
            } else {
                re.captures(text)
            }?;
            caps.name("answer")
                .or_else(|| caps.get(1))
                .or_else(|| caps.get(0))
                .map(|m| m.as_str())
        })
    }
}

/// Removes `<think>...</think>` blocks; an unclosed block runs to the end,
/// and a stray `</think>` (template ate the opening tag) drops what precedes it.
pub fn strip_think(text: &str) -> &str {
    if let Some(end) = text.rfind("</think>") {
        return &text[end + "</think>".len()..];
    }
    match text.find("<think>") {
        Some(start) => &text[..start],
        None => text,
    }
}

static FENCE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?s)```[ \t]*([\w+#.-]*)[^\n]*\n(.*?)```").unwrap());

/// The inside of a response that consists of one fenced block, else the text.
pub fn strip_fences(text: &str) -> &str {
    let trimmed = text.trim();
    match FENCE.captures(trimmed) {
        Some(c) if c.get(0).unwrap().as_str().len() == trimmed.len() => c.get(2).unwrap().as_str(),
        _ => text,
    }
}

/// The first fenced block in `language` (or any fenced block), else the whole text.
pub fn code_block<'t>(text: &'t str, language: Option<&str>) -> &'t str {
    let blocks: Vec<_> = FENCE.captures_iter(text).collect();
    let wanted = language.and_then(|lang| {
        blocks
            .iter()
            .find(|c| c.get(1).unwrap().as_str().eq_ignore_ascii_case(lang))
    });
    match wanted.or(blocks.first()) {
        Some(c) => c.get(2).unwrap().as_str(),
        None => text,
    }
}

static NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[-−]?(?:\d{1,3}(?:[ \u{a0}\u{202f},]\d{3})+|\d+)(?:[.,]\d+)?").unwrap()
});

/// All numbers in `text`, normalized to `-1234.5` form.
pub fn numbers(text: &str) -> impl Iterator<Item = String> + '_ {
    NUMBER.find_iter(text).map(move |m| {
        let raw = m.as_str();
        let preceded_by_word = text[..m.start()]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric());
        normalize_number(raw, preceded_by_word)
    })
}

fn normalize_number(raw: &str, minus_is_hyphen: bool) -> String {
    let negative = raw.starts_with('-') || raw.starts_with('−');
    let digits = raw.trim_start_matches(['-', '−']);
    let spaced = digits.contains([' ', '\u{a0}', '\u{202f}']);
    let commas = digits.matches(',').count();
    let after_last_comma = digits.rsplit_once(',').map_or(0, |(_, tail)| tail.len());
    // A comma groups thousands in "1,234.5", "1,234,567" and "1,234"; it is a
    // decimal comma in "3,5" and in "12 345,25" (spaces already group there).
    let comma_is_decimal =
        !digits.contains('.') && commas == 1 && (spaced || after_last_comma != 3);
    let body: String = digits
        .chars()
        .filter_map(|c| match c {
            ',' if comma_is_decimal => Some('.'),
            ',' | ' ' | '\u{a0}' | '\u{202f}' => None,
            c => Some(c),
        })
        .collect();
    if negative && !minus_is_hyphen {
        format!("-{body}")
    } else {
        body
    }
}

/// The last number in `text`.
pub fn last_number(text: &str) -> Option<String> {
    numbers(text).last()
}

/// The first number in `text`.
pub fn first_number(text: &str) -> Option<String> {
    numbers(text).next()
}

/// The first complete JSON object in `text`, wherever it starts.
pub fn first_json_object(text: &str) -> Option<&str> {
    first_json_where(text, &['{'])
}

/// The first complete JSON object or array in the text (a bare `[...]` answer, or one inside prose).
pub fn first_json_value(text: &str) -> Option<&str> {
    first_json_where(text, &['{', '['])
}

fn first_json_where<'t>(text: &'t str, openers: &[char]) -> Option<&'t str> {
    text.match_indices(openers).find_map(|(start, _)| {
        let mut stream =
            serde_json::Deserializer::from_str(&text[start..]).into_iter::<serde_json::Value>();
        match stream.next() {
            Some(Ok(serde_json::Value::Object(_) | serde_json::Value::Array(_))) => {
                Some(&text[start..start + stream.byte_offset()])
            }
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(def: ExtractDef, response: &str) -> Option<String> {
        Extractor::new(def).unwrap().apply(response)
    }

    #[test]
    fn numbers_in_many_spellings() {
        let cases = [
            ("Ответ: 14", "14"),
            ("Ответ: 14.0", "14.0"),
            ("получаем -7", "-7"),
            ("итого −12", "-12"),
            ("3,5 кг", "3.5"),
            ("1 234 567 рублей", "1234567"),
            ("1,234,567", "1234567"),
            ("1,234.5", "1234.5"),
            ("12\u{a0}345,25", "12345.25"),
            ("x-5", "5"),
            ("(5 - 3) * 2 = 4.", "4"),
        ];
        for (text, want) in cases {
            assert_eq!(last_number(text).as_deref(), Some(want), "{text}");
        }
        assert_eq!(first_number("между 3 и 9").as_deref(), Some("3"));
        assert_eq!(last_number("нет чисел"), None);
    }

    #[test]
    fn think_blocks_are_removed() {
        assert_eq!(strip_think("<think>42?</think> 7").trim(), "7");
        assert_eq!(strip_think("reasoning 42</think>7"), "7");
        assert_eq!(strip_think("ok <think>unfinished 42"), "ok ");
        assert_eq!(
            run(ExtractDef::of(ExtractKind::LastNumber), "<think>5</think>"),
            None
        );
    }

    #[test]
    fn patterns_apply_in_order_and_narrow_the_text() {
        let def = ExtractDef {
            patterns: vec![r"(?i)answer is (\d+)".into(), r"\\boxed\{(\d+)\}".into()],
            last_match: true,
            ..ExtractDef::of(ExtractKind::Text)
        };
        assert_eq!(
            run(def.clone(), r"so \boxed{12} and \boxed{13}").as_deref(),
            Some("13")
        );
        assert_eq!(
            run(def.clone(), r"the answer is 5, \boxed{12}").as_deref(),
            Some("5")
        );
        assert_eq!(run(def, "nothing"), None);
    }

    #[test]
    fn json_objects_are_found_in_prose_and_fences() {
        let text = "Вот ответ:\n```json\n{\"route_id\": 3, \"r\": \"{x}\"}\n```";
        assert_eq!(
            first_json_object(text),
            Some("{\"route_id\": 3, \"r\": \"{x}\"}")
        );
        assert_eq!(first_json_object("{broken {\"a\":1}"), Some("{\"a\":1}"));
        assert_eq!(first_json_object("no json"), None);
    }

    #[test]
    fn code_blocks_prefer_the_language() {
        let text = "```text\nhi\n```\n```python\ndef f(): pass\n```";
        assert_eq!(code_block(text, Some("python")), "def f(): pass\n");
        assert_eq!(code_block(text, None), "hi\n");
        assert_eq!(code_block("def f(): pass", Some("python")), "def f(): pass");
        assert_eq!(strip_fences("```\nabc\n```"), "abc\n");
        assert_eq!(strip_fences("say ```\nabc\n```"), "say ```\nabc\n```");
    }
}
