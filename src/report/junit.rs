//! `results/reports/report_<stamp>.xml`: JUnit XML for CI dashboards.
//!
//! A `<testsuite>` per model × spec and a `<testcase>` per instance and
//! sample, named by its test id. Failing answers get `<failure>`, request
//! errors `<error>`. The classname is `<model>.<spec>` with the model's dots
//! replaced by `_`, because Jenkins splits classnames into packages at dots.
//! Judged suites list each judge rule's judge and rubric hash as properties.
//! Times are seconds. Testcases are streamed, one record read at a time.

use std::fmt::Write as _;
use std::io::{self, Write};

use crate::metrics::{EXCERPT_CHARS, expected_output, test_id};
use crate::run::record::Record;
use crate::verify::FailureKind;

use super::View;
use super::calls::answer_text;
use super::journals::Journals;
use crate::text::{clip, one_line};

/// Characters of a detail or error kept in a `message` attribute.
const MESSAGE_CHARS: usize = 300;

/// XML-escapes `s`. Characters XML 1.0 cannot hold at all (controls other
/// than tab, LF and CR; U+FFFE; U+FFFF) become visible `\uXXXX` text. In
/// attributes, tab, LF and CR become references so parsers keep them.
pub(crate) fn escape(s: &str, attribute: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if attribute => out.push_str("&quot;"),
            '\t' | '\n' if attribute => {
                let _ = write!(out, "&#{};", c as u32);
            }
            '\r' => out.push_str("&#13;"),
            '\t' | '\n' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

fn secs(ms: u64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

/// Writes the JUnit report, reading each record from `journals`.
pub(crate) fn write(w: &mut impl Write, v: &View, journals: &mut Journals) -> io::Result<()> {
    let totals = v.models.iter().filter_map(|m| v.summary.model(m));
    let (mut tests, mut failures, mut errors, mut time) = (0, 0, 0, 0);
    for t in totals {
        (tests, errors, time) = (tests + t.total, errors + t.errors, time + t.time_ms);
        failures += (t.total - t.passed).saturating_sub(t.errors);
    }
    writeln!(w, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
    if let Some(line) = super::sandbox_line(v.ctx) {
        // A comment may not hold "--".
        writeln!(
            w,
            "<!-- sandbox: {} -->",
            escape(&line, false).replace("--", "- -")
        )?;
    }
    writeln!(
        w,
        r#"<testsuites name="harness" tests="{tests}" failures="{failures}" errors="{errors}" time="{}">"#,
        secs(time)
    )?;
    let stamp = escape(&v.ctx.timestamp.replace(' ', "T"), true);
    for (mi, model) in v.models.iter().enumerate() {
        for spec in v.specs {
            let Some(c) = v.summary.cell(model, &spec.id) else {
                continue;
            };
            let failures = (c.total - c.passed).saturating_sub(c.errors);
            writeln!(
                w,
                r#"  <testsuite name="{}" tests="{}" failures="{failures}" errors="{}" skipped="0" time="{}" timestamp="{stamp}">"#,
                escape(&format!("{model} / {}", spec.id), true),
                c.total,
                c.errors,
                secs(c.time_ms),
            )?;
            // Who judged, under which rubric (scores of different judges are
            // different measurements), and what the answers reasoned.
            let mut properties: Vec<(String, String)> = (c.judges.iter())
                .map(|j| {
                    let judge = format!("{} rubric {}", j.key.judge, j.key.rubric);
                    (format!("judge:{}", j.key.rule), judge)
                })
                .collect();
            if c.reasons() {
                properties.extend(super::reasoning::junit_properties(c));
            }
            properties.extend(super::choices::junit_properties(c));
            properties.extend(super::pass_k::junit_properties(c));
            if !properties.is_empty() {
                writeln!(w, "    <properties>")?;
                for (name, value) in properties {
                    let (name, value) = (escape(&name, true), escape(&value, true));
                    writeln!(w, r#"      <property name="{name}" value="{value}"/>"#)?;
                }
                writeln!(w, "    </properties>")?;
            }
            let classname = escape(&format!("{}.{}", model.replace('.', "_"), spec.id), true);
            for i in journals.cell_range(mi, &spec.id) {
                testcase(w, &classname, &journals.read(i)?)?;
            }
            writeln!(w, "  </testsuite>")?;
        }
    }
    writeln!(w, "</testsuites>")
}

fn testcase(w: &mut impl Write, classname: &str, r: &Record) -> io::Result<()> {
    let head = format!(
        r#"    <testcase name="{}" classname="{classname}" time="{}""#,
        escape(&test_id(r), true),
        secs(r.latency_ms)
    );
    let label = escape(r.failure.map_or("failed", FailureKind::name), true);
    if let Some(err) = &r.scored.error {
        let message = escape(&one_line(err, MESSAGE_CHARS), true);
        writeln!(w, "{head}>")?;
        writeln!(
            w,
            r#"      <error message="{message}" type="{label}">{}</error>"#,
            escape(err, false)
        )?;
    } else if !r.scored.passed {
        let message = if r.scored.detail.is_empty() {
            format!("failed (score {:.2})", r.scored.score)
        } else {
            one_line(&r.scored.detail, MESSAGE_CHARS)
        };
        let mut body = String::new();
        if !r.scored.detail.is_empty() {
            let _ = writeln!(body, "{}\n", r.scored.detail.trim_end());
        }
        let _ = writeln!(body, "expected: {}", expected_output(r));
        let answer = r.scored.answer.as_deref().filter(|a| !a.trim().is_empty());
        let _ = writeln!(body, "answer: {}", answer.unwrap_or("(none)"));
        let _ = write!(
            body,
            "response:\n{}",
            clip(
                &answer_text(r.scored.response.as_deref(), &r.scored.trajectory)
                    .unwrap_or_default(),
                EXCERPT_CHARS
            )
        );
        writeln!(w, "{head}>")?;
        writeln!(
            w,
            r#"      <failure message="{}" type="{label}">{}</failure>"#,
            escape(&message, true),
            escape(&body, false)
        )?;
    } else {
        return writeln!(w, "{head}/>");
    }
    writeln!(w, "    </testcase>")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_control_characters() {
        assert_eq!(
            escape(r#"<a href="x">&'</a>"#, false),
            r#"&lt;a href="x"&gt;&amp;'&lt;/a&gt;"#
        );
        assert_eq!(escape("\"q\"\n\t", true), "&quot;q&quot;&#10;&#9;");
        assert_eq!(escape("line\r\nnext\ttab", false), "line&#13;\nnext\ttab");
        assert_eq!(
            escape("\u{1b}[31mred\u{0}\u{FFFF}", false),
            "\\u001B[31mred\\u0000\\uFFFF"
        );
        assert_eq!(escape("Вера ✓", true), "Вера ✓");
        assert_eq!(secs(1540), "1.540");
        assert_eq!(secs(7), "0.007");
    }
}
