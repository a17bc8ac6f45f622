//! Small text helpers shared by every layer: clipping, quoting, padding,
//! tables, Markdown escaping and control-character escaping.
//!
//! A leaf: it imports nothing from the rest of the crate.

use serde_json::Value;

/// Quotes a value for details: strings in «», others as JSON.
pub(crate) fn quote(value: &Value) -> String {
    match value {
        Value::String(s) => format!("«{s}»"),
        other => other.to_string(),
    }
}

/// A JSON value's kind, for messages: `null`, `a boolean`, `a number`,
/// `a string`, `a list`, `an object`.
pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Shortens long text for details: at most `max_chars` characters, then `…`.
pub(crate) fn clip(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// `name` as a file stem: characters outside `[A-Za-z0-9._-]` become `_`.
pub(crate) fn file_stem(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A fraction in [0, 1] as a percentage with one decimal: `0.6667` → `66.7%`.
pub(crate) fn percent(fraction: f64) -> String {
    format!("{:.1}%", fraction * 100.0)
}

/// An optional number with `decimals` decimals, or `none`.
pub(crate) fn num(value: Option<f64>, decimals: usize, none: &str) -> String {
    value.map_or_else(|| none.to_owned(), |v| format!("{v:.decimals$}"))
}

/// A money amount without its currency: 2 decimals from 1 up, else 4
/// significant digits, trailing zeros dropped (`0.000272`, `0.5`, `12.35`, `0`).
pub fn money(amount: f64) -> String {
    if amount.abs() >= 1.0 {
        return format!("{amount:.2}");
    }
    if amount == 0.0 || !amount.is_finite() {
        return "0".to_owned();
    }
    let decimals = (-amount.abs().log10().floor()) as usize + 3;
    let text = format!("{amount:.decimals$}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// Column alignment.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Align {
    /// Pad on the right.
    Left,
    /// Pad on the left.
    Right,
}

/// Pads `s` to `width` characters (not bytes, so Cyrillic lines up).
pub(crate) fn pad(s: &str, width: usize, align: Align) -> String {
    let fill = " ".repeat(width.saturating_sub(s.chars().count()));
    match align {
        Align::Left => format!("{s}{fill}"),
        Align::Right => format!("{fill}{s}"),
    }
}

/// `text` on one line (whitespace runs become one space), cut to `max` characters.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    visible(&clip(&flat, max))
}

/// `text` wrapped at word boundaries to `width` columns, continuation lines
/// indented by two spaces; ends with a newline. A `quoted command` stays on
/// one line, so it can be copied whole.
pub(crate) fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in unbroken_words(text) {
        let word = word.as_str();
        let fits = line.chars().count() + 1 + word.chars().count() <= width;
        if !line.trim().is_empty() && !fits {
            out += line.trim_end();
            out.push('\n');
            line = "  ".to_owned();
        } else if !line.is_empty() && !line.ends_with("  ") {
            line.push(' ');
        }
        line += word;
    }
    out += line.trim_end();
    out.push('\n');
    out
}

/// The words of `text` split at spaces, a backquoted span kept as one word.
fn unbroken_words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut open = false;
    for word in text.split(' ') {
        match words.last_mut() {
            Some(last) if open => {
                last.push(' ');
                last.push_str(word);
            }
            _ => words.push(word.to_owned()),
        }
        open ^= word.matches('`').count() % 2 == 1;
    }
    words
}

/// Control characters other than tab and newline as `\uXXXX` text, so a
/// model's escape sequences cannot garble a terminal showing the report:
/// C0 (ESC, BEL, CR, ...), DEL, C1 (CSI as one character, ...), and the
/// bidirectional overrides that make text read otherwise than it is.
/// Files keep the raw text; this is for what is shown.
pub(crate) fn visible(text: &str) -> String {
    escape_controls(text, false)
}

/// [`visible`], and newlines as `\n` too: model text inside one line of the
/// harness's own output (a verdict's detail, an error) cannot start a line
/// that looks like the harness's.
pub(crate) fn visible_line(text: &str) -> String {
    escape_controls(text, true)
}

fn escape_controls(text: &str, newlines: bool) -> String {
    let bidi = |c: char| matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}');
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' if newlines => out.push_str("\\n"),
            '\n' | '\t' => out.push(c),
            c if c.is_control() || bidi(c) => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Text safe inside a Markdown table cell: pipes escaped, newlines as spaces.
pub(crate) fn md_cell(text: &str) -> String {
    one_line(text, usize::MAX).replace('|', "\\|")
}

/// Inline code that survives backticks in `text`: the delimiter is longer than any run inside.
pub(crate) fn inline_code(text: &str) -> String {
    let ticks = "`".repeat(longest_run(text, '`') + 1);
    // A space keeps a leading or trailing backtick from merging with the delimiter.
    let space = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{ticks}{space}{text}{space}{ticks}")
}

/// A fenced code block whose fence is longer than any backtick run in `text`.
pub(crate) fn code_block(text: &str) -> String {
    let fence = "`".repeat((longest_run(text, '`') + 1).max(3));
    format!(
        "{fence}text\n{}\n{fence}\n",
        visible(text.trim_end_matches('\n'))
    )
}

fn longest_run(text: &str, c: char) -> usize {
    let (mut best, mut run) = (0, 0);
    for ch in text.chars() {
        run = if ch == c { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

/// A table header: `first`, then `rest`.
pub(crate) fn header_row(first: &str, rest: impl IntoIterator<Item = String>) -> Vec<String> {
    std::iter::once(first.to_owned()).chain(rest).collect()
}

/// A Markdown table padded to character widths, so the source reads as a table too.
pub(crate) fn table(header: &[String], center: &[bool], rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            rows.iter()
                .map(|r| r[c].chars().count())
                .chain([header[c].chars().count(), 3])
                .max()
                .unwrap_or(3)
        })
        .collect();
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| pad(c, *w, Align::Left))
            .collect();
        format!("| {} |\n", padded.join(" | "))
    };
    let rule: Vec<String> = widths
        .iter()
        .zip(center)
        .map(|(w, c)| {
            if *c {
                format!(":{}:", "-".repeat(w - 2))
            } else {
                format!(":{}", "-".repeat(w - 1))
            }
        })
        .collect();
    let mut s = line(header);
    s.push_str(&line(&rule));
    rows.iter().for_each(|r| s.push_str(&line(r)));
    s
}

/// The language a report set is written in (`[report] language`, `--lang`):
/// model text is never translated, machine formats (JSON keys, raw files) never change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    /// English.
    #[default]
    En,
    /// Russian.
    Ru,
}

impl Lang {
    /// The locale's language: the first of `LC_ALL`, `LC_MESSAGES`, `LANG`
    /// that `var` finds set and non-empty (POSIX precedence); Russian when it
    /// starts with `ru`, English otherwise or when none is set.
    pub fn from_locale(var: impl Fn(&str) -> Option<String>) -> Lang {
        let locale = ["LC_ALL", "LC_MESSAGES", "LANG"]
            .into_iter()
            .find_map(|name| var(name).filter(|v| !v.is_empty()));
        match locale {
            Some(l) if l.starts_with("ru") => Lang::Ru,
            _ => Lang::En,
        }
    }

    /// The process environment's locale language ([`Lang::from_locale`]).
    pub fn from_env() -> Lang {
        Lang::from_locale(|name| std::env::var(name).ok())
    }

    /// The ISO 639-1 code: `en`, `ru`.
    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Ru => "ru",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_keeps_a_quoted_command_whole() {
        let text = "budget reached: spent 1 USD; continue with `harness run --resume 20261126_140134 --max-cost MORE` please";
        let wrapped = wrap(text, 40);
        assert!(
            wrapped.contains("`harness run --resume 20261126_140134 --max-cost MORE`"),
            "{wrapped}"
        );
        assert_eq!(
            wrapped.split_whitespace().count(),
            text.split_whitespace().count()
        );
        assert!(wrap("a b", 80) == "a b\n");
    }

    #[test]
    fn percentages_and_padding() {
        assert_eq!(percent(2.0 / 3.0), "66.7%");
        assert_eq!(percent(1.0), "100.0%");
        assert_eq!(pad("Логика", 8, Align::Left), "Логика  ");
        assert_eq!(pad("5", 3, Align::Right), "  5");
        assert_eq!(num(None, 1, "—"), "—");
        assert_eq!(num(Some(2.25), 1, "—"), "2.2");
        assert_eq!(money(0.000272), "0.000272");
        assert_eq!(money(0.5), "0.5");
        assert_eq!(money(12.345_6), "12.35");
        assert_eq!(money(0.0), "0");
        assert_eq!(money(0.012_345_6), "0.01235");
    }

    #[test]
    fn markdown_escaping() {
        assert_eq!(md_cell("a|b\nc"), "a\\|b c");
        assert_eq!(inline_code("x"), "`x`");
        assert_eq!(inline_code("a``b"), "```a``b```");
        assert_eq!(inline_code("`a"), "`` `a ``");
        assert_eq!(code_block("x\n"), "```text\nx\n```\n");
        assert_eq!(code_block("```\ny"), "````text\n```\ny\n````\n");
        assert_eq!(one_line(" a \n\t b ", 10), "a b");
        assert_eq!(visible("a\u{1b}[1m\r\n\tb"), "a\\u001B[1m\\u000D\n\tb");
        assert_eq!(visible("\u{9b}2J\u{7}\u{202E}"), "\\u009B2J\\u0007\\u202E");
        assert_eq!(visible_line("a\nb\tc\u{1b}"), "a\\nb\tc\\u001B");
    }

    #[test]
    fn the_locale_picks_the_language_in_posix_order() {
        let cases: [(&[(&str, &str)], Lang); 7] = [
            (&[], Lang::En),
            (&[("LANG", "C")], Lang::En),
            (&[("LANG", "ru_RU.UTF-8")], Lang::Ru),
            (
                &[("LANG", "ru_RU.UTF-8"), ("LC_ALL", "en_US.UTF-8")],
                Lang::En,
            ),
            (&[("LANG", "en_US"), ("LC_MESSAGES", "ru_RU")], Lang::Ru),
            (&[("LANG", "ru_RU"), ("LC_ALL", "")], Lang::Ru),
            (&[("LC_ALL", "ru"), ("LC_MESSAGES", "C")], Lang::Ru),
        ];
        for (env, want) in cases {
            let got = Lang::from_locale(|name| {
                env.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            });
            assert_eq!(got, want, "{env:?}");
        }
    }
}
