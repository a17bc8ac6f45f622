//! `results/reports/report_<stamp>.html`: one self-contained page that opens from
//! `file://` with no network: inline CSS and JavaScript, charts drawn as inline SVG,
//! and the data embedded as JSON in a `<script type="application/json">` element.
//!
//! Records are read from the journals one at a time and written straight into the
//! page, so memory stays bounded however many instances a run has; the page then
//! renders rows on demand. Model output is hostile: the JSON is escaped so no
//! string can close its element, the script only ever sets text (never markup),
//! and a Content-Security-Policy lets nothing run but the page's own script (by
//! its hash) and nothing load at all.

mod data;
mod episode;
mod rows;
mod thumbs;

use std::collections::BTreeSet;
use std::io::{self, Write};
use std::path::Path;

use base64::Engine as _;
use sha2::{Digest, Sha256};

use super::journals::Journals;
use super::{SpecInfo, View};
use crate::files::AtomicFile;
use crate::run::record::Record;
pub(super) use rows::GoldenCell;

const CSS: &str = include_str!("report.css");
const BODY: &str = include_str!("body.html");
/// Text, numbers and elements, every page's first script ([`DRILL_JS`] and
/// the page's own follow, in one function so the parts share its scope).
pub(crate) const DOM_JS: &str = include_str!("dom.js");
/// One record drawn in full, from its [`rows::Row`]: the report's
/// drill-down and `harness view`'s.
pub(crate) const DRILL_JS: &str = include_str!("record.js");
/// The stylesheet of both.
pub(crate) const REPORT_CSS: &str = CSS;
/// The page's script, in order: one function, so the parts share its scope.
const SCRIPT: [&str; 8] = [
    "(function () {\n'use strict';\n",
    DOM_JS,
    include_str!("lib.js"),
    include_str!("overview.js"),
    DRILL_JS,
    include_str!("instances.js"),
    include_str!("views.js"),
    "})();\n",
];

/// Writes the page for `v` to `path`, reading the records from `journals`.
pub(crate) fn write(path: &Path, v: &View, journals: &mut Journals) -> io::Result<()> {
    // Atomic like every report: a reader, or a kill mid-write, sees the old
    // page or the new one, never half of one.
    let mut out = AtomicFile::create(path)?;
    let js = SCRIPT.concat();
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(js.as_bytes()));
    write!(
        out,
        "<!doctype html>\n<html lang=\"{}\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         script-src 'sha256-{hash}'; style-src 'unsafe-inline'; img-src data:; \
         base-uri 'none'; form-action 'none'\">\n\
         <meta name=\"color-scheme\" content=\"light dark\">\n\
         <title>{} {}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n{}",
        v.ctx.lang.code(),
        escape(translated(v, "harness report")),
        escape(v.ctx.timestamp),
        // The script translates the rest of the page's fixed text; this shows without it.
        BODY.replace(NOSCRIPT, translated(v, NOSCRIPT))
    )?;
    out.write_all(b"<script type=\"application/json\" id=\"report-data\">")?;
    let mut json = ScriptSafe(&mut out);
    json.write_all(b"{\"records\":[")?;
    let golden = write_rows(&mut json, v, journals)?;
    json.write_all(b"],\"report\":")?;
    let sampled = super::comparison::build(v);
    let compared = v.ctx.golden.map(|_| golden.as_slice());
    serde_json::to_writer(&mut json, &data::head(v, &sampled, compared))?;
    json.write_all(b"}")?;
    write!(out, "</script>\n<script>{js}</script>\n</body>\n</html>\n")?;
    out.commit()
}

/// `record` as the drill-down draws it ([`DRILL_JS`]): its row, prompt
/// included, against its golden transcript line when `golden` (the golden
/// directory) holds one.
pub(crate) fn drill_row(
    record: &Record,
    spec: &SpecInfo,
    golden: Option<&Path>,
) -> serde_json::Result<serde_json::Value> {
    let checked = rows::Golden::new(golden).check(&record.model, &record.model, record);
    serde_json::to_value(rows::row(record, (0, 0), spec, true, 0, checked))
}

/// What the page says when its script cannot run: in `body.html`.
const NOSCRIPT: &str = "This report draws its tables and charts with JavaScript, which is turned off. \
    The Markdown report beside it has the same numbers.";

/// `english` in the report's language, from the page's phrase table.
fn translated<'a>(v: &View, english: &'a str) -> &'a str {
    let pairs = v.words().html;
    pairs
        .iter()
        .find(|(e, _)| *e == english)
        .map_or(english, |(_, t)| *t)
}

/// Streams one row per record; returns what the golden transcripts showed.
fn write_rows(
    json: &mut impl Write,
    v: &View,
    journals: &mut Journals,
) -> io::Result<Vec<GoldenCell>> {
    let flaky: BTreeSet<(&str, &str, u64)> = v
        .flaky
        .instances
        .iter()
        .map(|f| (f.model.as_str(), f.spec.as_str(), f.instance))
        .collect();
    let flipped: BTreeSet<(&str, &str, u64)> = v
        .runs
        .iter()
        .flat_map(|c| &c.pairs)
        .flat_map(|p| {
            let flips = p.regressions.iter().chain(&p.fixes);
            flips.flat_map(move |f| {
                [p.baseline.as_str(), p.candidate.as_str()]
                    .map(|m| (m, f.spec.as_str(), f.instance))
            })
        })
        .collect();
    let mut golden = rows::Golden::new(v.ctx.golden);
    let mut seen = Seen { v, last: None };
    let mut first = true;
    for (m, shown) in v.models.iter().enumerate() {
        let origin = v
            .origins
            .get(m)
            .map_or(shown.as_str(), |o| o.model.as_str());
        for i in journals.model_range(m) {
            let record = journals.read(i)?;
            let Some(s) = v.specs.iter().position(|s| s.id == record.spec) else {
                continue;
            };
            let mut flags = 0;
            if flaky.contains(&(origin, record.spec.as_str(), record.instance)) {
                flags |= rows::FLAKY;
            }
            if flipped.contains(&(shown.as_str(), record.spec.as_str(), record.instance)) {
                flags |= rows::RUN_FLIP;
            }
            let g = golden.check(shown, origin, &record);
            let new = seen.first(m, s, record.instance);
            let row = rows::row(&record, (m, s), &v.specs[s], new, flags, g);
            if !first {
                json.write_all(b",")?;
            }
            first = false;
            serde_json::to_writer(&mut *json, &row)?;
        }
    }
    Ok(golden.cells)
}

/// Which instances' prompts the page holds already, without a set of every
/// instance: rows come model by model, each model's in (spec, instance) order,
/// so a row's instance is new when the previous row's differs and no earlier
/// model ran it (its outcomes, sorted by instance, tell).
struct Seen<'a, 'v> {
    v: &'a View<'v>,
    /// The previous row's (model, spec, instance).
    last: Option<(usize, usize, u64)>,
}

impl Seen<'_, '_> {
    /// Whether the row of model `m`, spec `s` (in `v.specs`) and `instance` is the
    /// first of its instance on the page.
    fn first(&mut self, m: usize, s: usize, instance: u64) -> bool {
        if self.last.replace((m, s, instance)) == Some((m, s, instance)) {
            return false;
        }
        let spec = &self.v.specs[s].id;
        let outcomes = &self.v.summary.outcomes;
        let ran = |model: &String| {
            let cell = outcomes.get(model).and_then(|specs| specs.get(spec));
            cell.is_some_and(|o| o.binary_search_by_key(&instance, |o| o.instance).is_ok())
        };
        !self.v.models[..m].iter().any(ran)
    }
}

/// Text safe in HTML content and attribute values.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Writes JSON into a `<script>` element: every `<` becomes `\u003c`, so no string
/// (a response holding `</script>` or `<!--`) can end or alter the element. `<` only
/// ever occurs inside JSON strings, where the escape reads back as the same text.
struct ScriptSafe<W: Write>(W);

impl<W: Write> Write for ScriptSafe<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut rest = buf;
        while let Some(at) = rest.iter().position(|b| *b == b'<') {
            self.0.write_all(&rest[..at])?;
            self.0.write_all(b"\\u003c")?;
            rest = &rest[at + 1..];
        }
        self.0.write_all(rest)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_string_can_close_the_data_element() {
        let mut out = Vec::new();
        let hostile = "</script><script>alert(1)</script><!-- <img src=x onerror=alert(2)>";
        serde_json::to_writer(ScriptSafe(&mut out), &hostile).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains('<'), "{text}");
        assert_eq!(serde_json::from_str::<String>(&text).unwrap(), hostile);
    }

    #[test]
    fn the_noscript_text_is_the_one_translated() {
        assert!(BODY.contains(NOSCRIPT));
    }

    #[test]
    fn titles_are_escaped() {
        assert_eq!(
            escape("<a href=\"x\">&"),
            "&lt;a href=&quot;x&quot;&gt;&amp;"
        );
    }
}
