//! Which fields of two JSON values differ: the key path of each changed
//! field (`vars.items[2].price`, `messages[1].content`) with its old and new
//! value, and how one change is shown, long strings as an inline word diff.
//!
//! A golden line is one JSON object; when it changes, these changes say what
//! changed instead of replacing the whole line.

use std::time::Duration;

use owo_colors::OwoColorize;
use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use crate::text::{clip, visible_line};

/// A string longer than this (or with a line break) is shown as an inline diff.
const INLINE_FROM: usize = 40;
/// Characters of unchanged text kept on each side of a change in an inline diff.
const CONTEXT: usize = 30;
/// Characters of one removed or added run shown, at most.
const RUN_MAX: usize = 300;
/// How long a word diff may search before it settles for a coarser one.
const DIFF_TIMEOUT: Duration = Duration::from_millis(200);

/// One field that differs between two JSON values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldChange {
    /// The key path: `vars.items[2].price`; empty for the whole value.
    pub path: String,
    /// The old value; `None` when the field is new.
    pub old: Option<Value>,
    /// The new value; `None` when the field is gone.
    pub new: Option<Value>,
}

/// The fields that differ between `old` and `new`, in key order: objects
/// and arrays are walked, anything else that differs is one change.
pub(crate) fn field_changes(old: &Value, new: &Value) -> Vec<FieldChange> {
    let mut changes = Vec::new();
    walk(String::new(), old, new, &mut changes);
    changes
}

fn walk(path: String, old: &Value, new: &Value, out: &mut Vec<FieldChange>) {
    // Both sides' members by key path: objects by key, arrays by index.
    let members: Vec<(String, Option<&Value>, Option<&Value>)> = match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter()
                .map(|k| (join_key(&path, k), a.get(k), b.get(k)))
                .collect()
        }
        (Value::Array(a), Value::Array(b)) => (0..a.len().max(b.len()))
            .map(|i| (format!("{path}[{i}]"), a.get(i), b.get(i)))
            .collect(),
        (a, b) => {
            if a != b {
                out.push(FieldChange {
                    path,
                    old: Some(a.clone()),
                    new: Some(b.clone()),
                });
            }
            return;
        }
    };
    for (path, a, b) in members {
        match (a, b) {
            (Some(x), Some(y)) => walk(path, x, y, out),
            (x, y) => out.push(FieldChange {
                path,
                old: x.cloned(),
                new: y.cloned(),
            }),
        }
    }
}

/// `path.key`, or `path["odd key"]` when the key is not a plain name.
fn join_key(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-');
    match (plain, path.is_empty()) {
        (true, true) => key.to_owned(),
        (true, false) => format!("{path}.{key}"),
        (false, _) => format!("{path}[{}]", json(&Value::String(key.to_owned()))),
    }
}

fn json(value: &Value) -> String {
    serde_json::to_string(value).expect("JSON values serialize")
}

/// A piece of a rendered change, painted when colors are on.
enum Piece {
    Plain(String),
    Old(String),
    New(String),
}

impl Piece {
    fn render(&self, color: bool) -> String {
        // Model text is escaped before any color code is added.
        match self {
            Piece::Plain(s) => visible_line(s),
            Piece::Old(s) if color => visible_line(s).red().to_string(),
            Piece::New(s) if color => visible_line(s).green().to_string(),
            Piece::Old(s) => format!("[-{}-]", visible_line(s)),
            Piece::New(s) => format!("{{+{}+}}", visible_line(s)),
        }
    }
}

impl FieldChange {
    /// The change on one line: `path: old → new`, or for long strings
    /// `path: "same [-old-]{+new+} same"` (without color; with color the
    /// removed text is red and the added green, without brackets).
    pub(crate) fn render(&self, color: bool) -> String {
        let path = if self.path.is_empty() {
            "(value)"
        } else {
            &self.path
        };
        let side = |v: &Option<Value>| v.as_ref().map_or("(absent)".to_owned(), json);
        let body = match (&self.old, &self.new) {
            (Some(Value::String(a)), Some(Value::String(b))) if long(a) || long(b) => {
                inline_diff(a, b)
                    .iter()
                    .map(|p| p.render(color))
                    .collect::<String>()
            }
            _ if color => format!(
                "{} → {}",
                visible_line(&side(&self.old)).red(),
                visible_line(&side(&self.new)).green()
            ),
            _ => visible_line(&format!("{} → {}", side(&self.old), side(&self.new))),
        };
        format!("{}: {body}", visible_line(path))
    }
}

fn long(s: &str) -> bool {
    s.chars().count() > INLINE_FROM || s.contains('\n')
}

/// A string's characters as they appear inside JSON quotes.
fn escaped(s: &str) -> String {
    let quoted = json(&Value::String(s.to_owned()));
    quoted[1..quoted.len() - 1].to_owned()
}

/// The word diff of two strings as pieces, in JSON quotes, with long
/// unchanged runs cut to [`CONTEXT`] characters beside each change.
fn inline_diff(old: &str, new: &str) -> Vec<Piece> {
    let diff = TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_words(old, new);
    let mut runs: Vec<(ChangeTag, String)> = Vec::new();
    for change in diff.iter_all_changes() {
        match runs.last_mut() {
            Some((tag, text)) if *tag == change.tag() => text.push_str(change.value()),
            _ => runs.push((change.tag(), change.value().to_owned())),
        }
    }
    let last = runs.len().saturating_sub(1);
    let mut pieces = vec![Piece::Plain("\"".into())];
    for (i, (tag, text)) in runs.iter().enumerate() {
        pieces.push(match tag {
            ChangeTag::Equal => Piece::Plain(escaped(&shorten(text, i == 0, i == last))),
            ChangeTag::Delete => Piece::Old(escaped(&clip(text, RUN_MAX))),
            ChangeTag::Insert => Piece::New(escaped(&clip(text, RUN_MAX))),
        });
    }
    pieces.push(Piece::Plain("\"".into()));
    pieces
}

/// An unchanged run with only about [`CONTEXT`] characters kept next to
/// each change, cut between words: the start of the string keeps its end,
/// the end its start.
fn shorten(text: &str, first: bool, last: bool) -> String {
    let chars: Vec<char> = text.chars().collect();
    let n = chars.len();
    // The first `CONTEXT` characters, back to the last space among them if there is one late enough.
    let head = || {
        let cut = (CONTEXT / 2..CONTEXT)
            .rev()
            .find(|&i| chars[i].is_whitespace())
            .unwrap_or(CONTEXT);
        chars[..cut].iter().collect::<String>()
    };
    let tail = || {
        let cut = (n - CONTEXT..n - CONTEXT / 2)
            .find(|&i| chars[i].is_whitespace())
            .map_or(n - CONTEXT, |i| i + 1);
        chars[cut..].iter().collect::<String>()
    };
    match (first, last) {
        (true, true) => text.to_owned(),
        (true, false) if n > CONTEXT => format!("…{}", tail()),
        (false, true) if n > CONTEXT => format!("{}…", head()),
        (false, false) if n > 2 * CONTEXT + 1 => format!("{}…{}", head(), tail()),
        _ => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn paths(old: Value, new: Value) -> Vec<String> {
        field_changes(&old, &new)
            .into_iter()
            .map(|c| c.render(false))
            .collect()
    }

    #[test]
    fn changes_are_named_by_key_path() {
        let cases = [
            (
                json!({"vars": {"items": [{"price": 1}, {"price": 2}, {"price": 3.5}]}}),
                json!({"vars": {"items": [{"price": 1}, {"price": 2}, {"price": 4}]}}),
                vec!["vars.items[2].price: 3.5 → 4"],
            ),
            (
                json!({"a": 1, "b": [1]}),
                json!({"a": "1", "b": [1, 2], "c": null}),
                vec!["a: 1 → \"1\"", "b[1]: (absent) → 2", "c: (absent) → null"],
            ),
            (
                json!({"odd key": {"x": true}, "gone": 1}),
                json!({"odd key": {"x": false}}),
                vec!["gone: 1 → (absent)", "[\"odd key\"].x: true → false"],
            ),
            (json!([1]), json!(2), vec!["(value): [1] → 2"]),
            (
                json!({"same": [1, {"k": "v"}]}),
                json!({"same": [1, {"k": "v"}]}),
                vec![],
            ),
        ];
        for (old, new, want) in cases {
            assert_eq!(paths(old.clone(), new.clone()), want, "{old} → {new}");
        }
    }

    #[test]
    fn long_strings_get_a_word_diff_with_short_context() {
        let old = "The shop sells apples for 3.5 each and pears for 2 each, every day of the week.";
        let new = "The shop sells apples for 4 each and pears for 2 each, every day of the week.";
        let change = &field_changes(&json!({"m": old}), &json!({"m": new}))[0];
        assert_eq!(
            change.render(false),
            "m: \"The shop sells apples for [-3.5-]{+4+} each and pears for 2 each,…\""
        );
        let colored = change.render(true);
        assert!(colored.contains("\u{1b}[31m3.5") && colored.contains("\u{1b}[32m4"));
        assert!(!colored.contains("[-"), "{colored}");
    }

    #[test]
    fn hostile_text_is_escaped_before_it_is_painted() {
        let old = json!({"r": "plain answer that is long enough to be diffed inline"});
        let new = json!({"r": "plain answer \u{1b}]0;pwned\u{7}\r\n\u{9b}2J\u{202e} long enough to be diffed inline"});
        for color in [false, true] {
            let line = field_changes(&old, &new)[0].render(color);
            let raw = ['\u{7}', '\r', '\n', '\u{9b}', '\u{202e}'];
            assert!(!line.contains(raw), "{line:?}");
            assert!(line.contains("\\u001b]0;pwned"), "{line:?}");
        }
        let short = field_changes(&json!({"k": "a"}), &json!({"k": "\u{9b}b"}));
        assert_eq!(short[0].render(false), "k: \"a\" → \"\\u009Bb\"");
    }
}
