//! Answer extraction: how a rule takes its answer out of a model's response.
//!
//! A pipeline declared per rule: strip `<think>` blocks, strip a wrapping code
//! fence, narrow with ordered regex patterns, apply a kind (number, JSON, code
//! block, line; JSON optionally narrowed to one field by a JSON pointer), trim.

use std::sync::LazyLock;

use regex::Regex;

use crate::format::{ExtractDef, ExtractKind};

/// A compiled extraction pipeline.
#[derive(Debug, Clone)]
pub struct Extractor {
    def: ExtractDef,
    patterns: Vec<Regex>,
}

/// Why an `extract` table cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    /// A pattern did not compile.
    #[error("pattern {} does not compile: {source}", index + 1)]
    Pattern {
        /// Which pattern (0-based).
        index: usize,
        /// The regex error.
        source: regex::Error,
    },
    /// The pointer is not a JSON pointer.
    #[error("`{0}` is not a JSON pointer: it starts with `/` (`/total`, `/items/0/price`)")]
    Pointer(String),
    /// A pointer with a kind that finds no JSON.
    #[error("`pointer` reads the JSON object the `json` kind finds, but this `kind` is `{0}`")]
    PointerKind(String),
}

impl ExtractError {
    /// The `extract` table's key at fault, and the pattern's index for a pattern.
    pub fn key(&self) -> (&'static str, Option<usize>) {
        match self {
            ExtractError::Pattern { index, .. } => ("patterns", Some(*index)),
            ExtractError::Pointer(_) | ExtractError::PointerKind(_) => ("pointer", None),
        }
    }
}

impl Extractor {
    /// Compiles the pipeline's patterns and checks its pointer.
    pub fn new(def: ExtractDef) -> Result<Extractor, ExtractError> {
        if let Some(pointer) = &def.pointer {
            if !pointer.starts_with('/') {
                return Err(ExtractError::Pointer(pointer.clone()));
            }
            if def.kind != ExtractKind::Json {
                let kind = serde_json::to_value(def.kind).expect("kinds serialize");
                return Err(ExtractError::PointerKind(
                    kind.as_str().unwrap_or_default().to_owned(),
                ));
            }
        }
        let patterns = def
            .patterns
            .iter()
            .enumerate()
            .map(|(index, p)| {
                Regex::new(p).map_err(|source| ExtractError::Pattern { index, source })
            })
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
            ExtractKind::Json => match &self.def.pointer {
                Some(pointer) => json_at(first_json_object(text)?, pointer)?,
                None => first_json_object(text)?.to_owned(),
            },
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
pub(crate) fn strip_think(text: &str) -> &str {
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
pub(crate) fn strip_fences(text: &str) -> &str {
    let trimmed = text.trim();
    match FENCE.captures(trimmed) {
        Some(c) if c.get(0).unwrap().as_str().len() == trimmed.len() => c.get(2).unwrap().as_str(),
        _ => text,
    }
}

/// The first fenced block in `language` (or any fenced block), else the whole text.
pub(crate) fn code_block<'t>(text: &'t str, language: Option<&str>) -> &'t str {
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
pub(crate) fn numbers(text: &str) -> impl Iterator<Item = String> + '_ {
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
pub(crate) fn last_number(text: &str) -> Option<String> {
    numbers(text).last()
}

/// The first number in `text`.
pub(crate) fn first_number(text: &str) -> Option<String> {
    numbers(text).next()
}

/// The value at `pointer` in the JSON `object`: a string as its text,
/// anything else as compact JSON; `None` when nothing is there.
fn json_at(object: &str, pointer: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(object).ok()?;
    match value.pointer(pointer)? {
        serde_json::Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// The first complete JSON object in `text`, wherever it starts.
pub(crate) fn first_json_object(text: &str) -> Option<&str> {
    first_json_where(text, &['{'])
}

/// The first complete JSON object or array in the text (a bare `[...]` answer, or one inside prose).
pub(crate) fn first_json_value(text: &str) -> Option<&str> {
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
    fn a_pointer_takes_one_field_of_the_json() {
        let def = |pointer: &str| ExtractDef {
            pointer: Some(pointer.into()),
            ..ExtractDef::of(ExtractKind::Json)
        };
        let text = r#"Итого: ```json
{"total": 12.50, "items": [{"price": 4}, {"price": "8.5"}], "ok": true}
```"#;
        let cases = [
            ("/total", Some("12.5")),
            ("/items/0/price", Some("4")),
            ("/items/1/price", Some("8.5")),
            ("/items/0", Some(r#"{"price":4}"#)),
            ("/ok", Some("true")),
            ("/missing", None),
            ("/items/7/price", None),
        ];
        for (pointer, want) in cases {
            assert_eq!(run(def(pointer), text).as_deref(), want, "{pointer}");
        }
        assert_eq!(run(def("/total"), "no json here"), None);
        let bad = Extractor::new(def("total")).unwrap_err();
        assert_eq!(bad.key(), ("pointer", None));
        assert!(bad.to_string().contains("`total` is not a JSON pointer"));
        let wrong_kind = ExtractDef {
            kind: ExtractKind::LastNumber,
            ..def("/total")
        };
        let e = Extractor::new(wrong_kind).unwrap_err().to_string();
        assert!(e.contains("`kind` is `last_number`"), "{e}");
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
