//! Printing golden transcript differences: regressions red, fixes green.
//! A regression's detail quotes the model: it stays on its line, escaped.

use owo_colors::OwoColorize;

use crate::golden::transcript::TranscriptDiff;
use crate::text::visible_line;

fn paint(text: String, color: bool, f: fn(&str) -> String) -> String {
    if color { f(&text) } else { text }
}

/// Prints a diff; returns whether it counts as a difference.
pub fn print(diff: &TranscriptDiff, model: &str, spec: &str, verbose: bool, color: bool) -> bool {
    if diff.new {
        println!("{model} × {spec}: no golden transcript (record one with --bless)");
        return false;
    }
    if !diff.differs() {
        return false;
    }
    println!(
        "{model} × {spec}: {} regressions, {} fixes, {} score changes, {} changed responses",
        diff.regressions.len(),
        diff.fixes.len(),
        diff.score_changes.len(),
        diff.response_changes.len()
    );
    for (id, detail) in &diff.regressions {
        println!(
            "  {}",
            paint(
                format!("✗ {id} now fails: {}", visible_line(detail)),
                color,
                |s| s.red().to_string()
            )
        );
    }
    for id in &diff.fixes {
        println!(
            "  {}",
            paint(format!("✓ {id} now passes"), color, |s| s
                .green()
                .to_string())
        );
    }
    for (id, old, new) in &diff.score_changes {
        println!("  ~ {id} score {old:.3} → {new:.3}");
    }
    for (id, in_golden) in &diff.membership {
        println!(
            "  {} {id}",
            if *in_golden {
                "- only in golden:"
            } else {
                "+ not in golden:"
            }
        );
    }
    if verbose {
        for (id, old, new) in &diff.response_changes {
            println!("  response of {id}:");
            let text = crate::golden::unified_diff(
                &(old.clone() + "\n"),
                &(new.clone() + "\n"),
                std::path::Path::new(id),
            );
            for line in crate::golden::colorize_diff(&text, color).lines() {
                println!("    {line}");
            }
        }
    }
    true
}
