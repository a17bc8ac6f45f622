//! The diff of a golden file, line by line: a line only in the golden file
//! or only in the new content is shown whole (`-` / `+`), and a JSON line
//! that changed is shown as the fields that changed ([`super::fields`]).
//! Lines are paired by their `id` (and `sample`), else by position.

use std::path::Path;

use owo_colors::OwoColorize;
use serde_json::Value;
use similar::{DiffTag, TextDiff};

use super::departure::line_changes;
use super::fields::FieldChange;
use crate::text::{clip, visible_line};

/// One line of a golden diff, before it is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
enum DiffLine {
    /// `--- file` or `+++ file (new)`.
    Header(String),
    /// `@@ -3,2 +3,2 @@`.
    Hunk(String),
    /// A line only in the golden file.
    Removed(String),
    /// A line only in the new content.
    Added(String),
    /// A line whose fields changed: its line numbers (1-based), its id, the changes.
    Changed {
        old_line: usize,
        new_line: usize,
        id: Option<String>,
        fields: Vec<FieldChange>,
    },
}

/// A golden file's differences, shown with [`GoldenDiff::render`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoldenDiff {
    lines: Vec<DiffLine>,
}

impl GoldenDiff {
    /// Every difference from `old` (the golden file at `path`) to `new`.
    pub fn between(old: &str, new: &str, path: &Path) -> GoldenDiff {
        let mut lines = headers(path);
        let diff = TextDiff::from_lines(old, new);
        let (old_lines, new_lines): (Vec<&str>, Vec<&str>) =
            (old.lines().collect(), new.lines().collect());
        for op in diff.ops() {
            let (tag, a, b) = op.as_tag_tuple();
            if tag == DiffTag::Equal {
                continue;
            }
            lines.push(DiffLine::Hunk(format!(
                "@@ -{} +{} @@",
                range(a.start, a.len()),
                range(b.start, b.len())
            )));
            let olds: Vec<(usize, &str)> = a.clone().map(|i| (i + 1, old_lines[i])).collect();
            let news: Vec<(usize, &str)> = b.clone().map(|i| (i + 1, new_lines[i])).collect();
            lines.extend(pair_lines(&olds, &news));
        }
        GoldenDiff { lines }
    }

    /// The first difference only, at 1-based `line`, for files too large to diff whole.
    pub fn first_difference(
        path: &Path,
        line: u64,
        old: Option<&str>,
        new: Option<&str>,
    ) -> GoldenDiff {
        let mut lines = headers(path);
        lines.push(DiffLine::Hunk(format!(
            "@@ first difference at line {line} (too large for a full diff) @@"
        )));
        let at = usize::try_from(line).unwrap_or(usize::MAX);
        let (olds, news): (Vec<_>, Vec<_>) = (
            old.map(|l| (at, l)).into_iter().collect(),
            new.map(|l| (at, l)).into_iter().collect(),
        );
        lines.extend(pair_lines(&olds, &news));
        GoldenDiff { lines }
    }

    /// The diff as text: removed lines red, added green, hunks cyan, and
    /// changed fields with their old value red and new value green when
    /// `color`; model text escaped either way.
    pub fn render(&self, color: bool) -> String {
        let paint = |text: String, f: fn(&str) -> String| if color { f(&text) } else { text };
        let mut out = String::new();
        for line in &self.lines {
            let shown = match line {
                DiffLine::Header(h) => paint(visible_line(h), |s| s.bold().to_string()),
                DiffLine::Hunk(h) => paint(visible_line(h), |s| s.cyan().to_string()),
                DiffLine::Removed(l) => {
                    paint(format!("-{}", visible_line(l)), |s| s.red().to_string())
                }
                DiffLine::Added(l) => {
                    paint(format!("+{}", visible_line(l)), |s| s.green().to_string())
                }
                DiffLine::Changed {
                    old_line,
                    new_line,
                    id,
                    fields,
                } => {
                    let moved = if old_line == new_line {
                        String::new()
                    } else {
                        format!(" → {new_line}")
                    };
                    let id = id
                        .as_ref()
                        .map(|id| format!(": {}", visible_line(id)))
                        .unwrap_or_default();
                    let head = format!("~ line {old_line}{moved}{id}");
                    let mut text = paint(head, |s| s.yellow().to_string());
                    for field in fields {
                        text.push_str("\n    ");
                        text.push_str(&field.render(color));
                    }
                    text
                }
            };
            out.push_str(&shown);
            out.push('\n');
        }
        out
    }
}

impl std::fmt::Display for GoldenDiff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render(false))
    }
}

fn headers(path: &Path) -> Vec<DiffLine> {
    let name = path.display().to_string();
    vec![
        DiffLine::Header(format!("--- {name}")),
        DiffLine::Header(format!("+++ {name} (new)")),
    ]
}

/// A hunk range as unified diffs write it: `3,2`, `3` for one line, `2,0` for none after line 2.
fn range(start: usize, len: usize) -> String {
    match len {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        n => format!("{},{n}", start + 1),
    }
}

/// A golden line's identity: its `id` and `sample`, when it is a JSON object with an id.
fn identity(value: &Value) -> Option<(String, Option<u64>)> {
    let id = value.get("id")?.as_str()?.to_owned();
    Some((id, value.get("sample").and_then(Value::as_u64)))
}

/// The lines of one changed block, numbered: old and new lines that are
/// the same JSON record (the same identity, or for records without one the
/// same place among them) become field changes, the rest whole removed and added lines.
fn pair_lines(olds: &[(usize, &str)], news: &[(usize, &str)]) -> Vec<DiffLine> {
    let parse = |l: &str| {
        serde_json::from_str::<Value>(l)
            .ok()
            .filter(|v| v.is_object() || v.is_array())
    };
    let old_values: Vec<Option<Value>> = olds.iter().map(|(_, l)| parse(l)).collect();
    let new_values: Vec<Option<Value>> = news.iter().map(|(_, l)| parse(l)).collect();
    let mut partner: Vec<Option<usize>> = vec![None; news.len()];
    let mut taken = vec![false; olds.len()];
    // Records with an identity pair with the same identity; the others in order.
    let anonymous = |values: &[Option<Value>]| -> Vec<usize> {
        (0..values.len())
            .filter(|&i| values[i].as_ref().is_some_and(|v| identity(v).is_none()))
            .collect()
    };
    for (i, j) in anonymous(&old_values)
        .into_iter()
        .zip(anonymous(&new_values))
    {
        taken[i] = true;
        partner[j] = Some(i);
    }
    for (j, new) in new_values.iter().enumerate() {
        let Some(key) = new.as_ref().and_then(identity) else {
            continue;
        };
        let found = (0..olds.len()).find(|&i| {
            !taken[i] && old_values[i].as_ref().and_then(identity).as_ref() == Some(&key)
        });
        if let Some(i) = found {
            taken[i] = true;
            partner[j] = Some(i);
        }
    }
    let mut out: Vec<DiffLine> = olds
        .iter()
        .zip(&taken)
        .filter(|(_, t)| !**t)
        .map(|((_, l), _)| DiffLine::Removed(clip(l, 2000)))
        .collect();
    for (j, (new_line, text)) in news.iter().enumerate() {
        let Some(i) = partner[j] else {
            out.push(DiffLine::Added(clip(text, 2000)));
            continue;
        };
        let (old, new) = (
            old_values[i].as_ref().expect("paired"),
            new_values[j].as_ref().expect("paired"),
        );
        let fields = line_changes(old, new);
        if fields.is_empty() {
            // Same record, other spelling (key order, spaces): the text is the difference.
            out.push(DiffLine::Removed(clip(olds[i].1, 2000)));
            out.push(DiffLine::Added(clip(text, 2000)));
            continue;
        }
        out.push(DiffLine::Changed {
            old_line: olds[i].0,
            new_line: *new_line,
            id: identity(new).map(|(id, sample)| match sample {
                Some(s) if s > 0 => format!("{id}#{s}"),
                _ => id,
            }),
            fields,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_records_show_fields_and_others_whole_lines() {
        let old = concat!(
            r#"{"id":"s/0","vars":{"a":3}}"#,
            "\n",
            r#"{"id":"s/1","vars":{"a":4}}"#,
            "\n",
            r#"{"id":"s/2","vars":{"a":5}}"#,
            "\n",
        );
        let new = concat!(
            r#"{"id":"s/0","vars":{"a":3}}"#,
            "\n",
            r#"{"id":"s/1","vars":{"a":9,"b":1}}"#,
            "\n",
            r#"{"id":"s/3","vars":{"a":5}}"#,
            "\n",
            "not json\n",
        );
        let diff = GoldenDiff::between(old, new, Path::new("g/s/instances.jsonl"));
        assert_eq!(
            diff.render(false),
            concat!(
                "--- g/s/instances.jsonl\n",
                "+++ g/s/instances.jsonl (new)\n",
                "@@ -2,2 +2,3 @@\n",
                "-{\"id\":\"s/2\",\"vars\":{\"a\":5}}\n",
                "~ line 2: s/1\n",
                "    vars.a: 4 → 9\n",
                "    vars.b: (absent) → 1\n",
                "+{\"id\":\"s/3\",\"vars\":{\"a\":5}}\n",
                "+not json\n",
            )
        );
    }

    #[test]
    fn a_first_difference_alone_is_paired_too() {
        let old = r#"{"id":"s/9","sample":2,"score":1.0}"#;
        let new = r#"{"id":"s/9","sample":2,"score":0.5}"#;
        let path = Path::new("big.jsonl");
        let diff = GoldenDiff::first_difference(path, 10, Some(old), Some(new));
        assert!(
            diff.to_string().ends_with(
                "@@ first difference at line 10 (too large for a full diff) @@\n~ line 10: s/9#2\n    score: 1.0 → 0.5\n"
            ),
            "{diff}"
        );
        let gone = GoldenDiff::first_difference(path, 11, Some(old), None);
        assert!(
            gone.to_string().ends_with(&format!("@@\n-{old}\n")),
            "{gone}"
        );
    }

    #[test]
    fn records_without_ids_pair_by_position() {
        let diff = GoldenDiff::between("[1]\n{\"x\":1}\n", "[2]\n{\"x\":1}\n", Path::new("f"));
        assert!(
            diff.render(false)
                .ends_with("@@ -1 +1 @@\n~ line 1\n    [0]: 1 → 2\n"),
            "{diff}"
        );
    }
}
