//! Small text helpers shared by the renderers.

/// A fraction in [0, 1] as a percentage with one decimal: `0.6667` → `66.7%`.
pub(crate) fn percent(fraction: f64) -> String {
    format!("{:.1}%", fraction * 100.0)
}

/// An optional number with `decimals` decimals, or `none`.
pub(crate) fn num(value: Option<f64>, decimals: usize, none: &str) -> String {
    value.map_or_else(|| none.to_owned(), |v| format!("{v:.decimals$}"))
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
    visible(&crate::metrics::excerpt(&flat, max))
}

/// Control characters other than tab and newline as `\uXXXX` text, so a
/// model's escape sequences cannot garble a terminal showing the report.
pub(crate) fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() && c != '\n' && c != '\t' {
            out.push_str(&format!("\\u{:04X}", c as u32));
        } else {
            out.push(c);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_and_padding() {
        assert_eq!(percent(2.0 / 3.0), "66.7%");
        assert_eq!(percent(1.0), "100.0%");
        assert_eq!(pad("Логика", 8, Align::Left), "Логика  ");
        assert_eq!(pad("5", 3, Align::Right), "  5");
        assert_eq!(num(None, 1, "—"), "—");
        assert_eq!(num(Some(2.25), 1, "—"), "2.2");
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
    }
}
