//! Printing golden transcript differences: regressions red, fixes green, and
//! with `-v` every changed field (a response as an inline word diff).
//! A regression's detail quotes the model: it stays on its line, escaped.

use crate::output::out;
use owo_colors::OwoColorize;

use crate::golden::transcript::TranscriptDiff;
use crate::text::{visible_line, wrap};

/// The columns every line fits.
const WIDTH: usize = 80;

fn paint(text: String, color: bool, f: fn(&str) -> String) -> String {
    if color { f(&text) } else { text }
}

/// Prints a diff; returns whether it counts as a difference.
pub(super) fn print(
    diff: &TranscriptDiff,
    model: &str,
    spec: &str,
    verbose: bool,
    color: bool,
) -> bool {
    if diff.new {
        let text = format!("{model} × {spec}: no golden transcript (record one with --bless)");
        out!("{}", wrap(&text, WIDTH));
        return false;
    }
    if !diff.differs() {
        return false;
    }
    out!("{}", render(diff, model, spec, verbose, color));
    true
}

/// The lines [`print`] shows for a diff that differs.
fn render(diff: &TranscriptDiff, model: &str, spec: &str, verbose: bool, color: bool) -> String {
    let mut out = String::new();
    let mut line = |text: String| {
        out.push_str(&text);
        out.push('\n');
    };
    let head = format!(
        "{model} × {spec}: {} regressions, {} fixes, {} score changes, {} changed responses",
        diff.regressions.len(),
        diff.fixes.len(),
        diff.score_changes.len(),
        diff.response_changes.len()
    );
    line(wrap(&head, WIDTH).trim_end().to_owned());
    for (id, detail) in &diff.regressions {
        let text = format!("✗ {} now fails: {}", visible_line(id), visible_line(detail));
        // Wrapped before it is painted, so escape codes never count as columns.
        for part in wrap(&text, WIDTH - 2).lines() {
            line(format!(
                "  {}",
                paint(part.to_owned(), color, |s| s.red().to_string())
            ));
        }
    }
    for id in &diff.fixes {
        let text = format!("✓ {} now passes", visible_line(id));
        line(format!(
            "  {}",
            paint(text, color, |s| s.green().to_string())
        ));
    }
    for (id, old, new) in &diff.score_changes {
        line(format!(
            "  ~ {} score {old:.3} → {new:.3}",
            visible_line(id)
        ));
    }
    for (id, in_golden) in &diff.membership {
        let side = if *in_golden {
            "- only in golden:"
        } else {
            "+ not in golden:"
        };
        line(format!("  {side} {}", visible_line(id)));
    }
    if verbose {
        for (id, fields) in &diff.fields {
            line(format!("  changed fields of {}:", visible_line(id)));
            for field in fields {
                line(format!("    {}", field.render(color)));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::golden::transcript::{TranscriptLine, compare_transcripts};

    fn line(instance: u64, response: &str, passed: bool) -> TranscriptLine {
        let score = if passed { 1.0 } else { 0.0 };
        let mut line =
            TranscriptLine::sample("shop", instance, response, (passed, score), "expected 12.5");
        line.scored.answer = Some(response.into());
        line.scored.tokens_in = Some(40);
        line.scored.tokens_out = Some(12);
        line
    }

    #[test]
    fn changed_transcript_lines_show_their_fields() {
        let golden = vec![
            line(
                0,
                "The total is 12.5 EUR: five items at 2.5 EUR each, no discount applied.",
                true,
            ),
            line(1, "42", true),
            line(2, "7", false),
        ];
        let mut new = vec![
            line(
                0,
                "The total is 12.6 EUR: five items at 2.5 EUR each, no discount applied.",
                false,
            ),
            line(1, "42", true),
            line(3, "9", true),
        ];
        new[1].scored.tokens_out = Some(13);
        let diff = compare_transcripts(Some(&golden), &new);
        let verbose = render(&diff, "m", "shop", true, false);
        insta::assert_snapshot!(verbose);
        assert!(verbose.starts_with(&render(&diff, "m", "shop", false, false)));
    }
}
