//! The summary table printed after a run: models × specs accuracy, then the
//! category mean (the report's ИТОГО), request errors and median latency.
//! Widths count characters, not bytes, so Cyrillic titles line up; color is
//! applied after padding so escape codes never count toward a width.

use owo_colors::OwoColorize;

use super::View;
use super::text::{Align, pad, percent};

/// Shown for cells without records.
const NONE: &str = "-";

/// Colors an accuracy: green from 80 %, yellow from 50 %, red below.
fn paint(text: &str, accuracy: f64) -> String {
    if accuracy >= 0.8 {
        text.green().to_string()
    } else if accuracy >= 0.5 {
        text.yellow().to_string()
    } else {
        text.red().to_string()
    }
}

/// The table, one line per model, ending with a newline.
pub(crate) fn render(v: &View) -> String {
    let mut header = vec!["model".to_owned()];
    header.extend(v.specs.iter().map(|s| s.title.clone()));
    header.extend(["total", "errors", "p50 ms"].map(str::to_owned));
    // Each cell: text plus the accuracy to color it by.
    let rows: Vec<Vec<(String, Option<f64>)>> = v
        .models
        .iter()
        .map(|m| {
            let mut row = vec![(m.clone(), None)];
            for s in v.specs {
                let acc = v.summary.cell(m, &s.id).map(|c| c.accuracy);
                row.push((acc.map_or(NONE.into(), percent), acc));
            }
            let mean = v.summary.category_mean(m);
            row.push((mean.map_or(NONE.into(), percent), mean));
            let total = v.summary.model(m);
            row.push((total.map_or(NONE.into(), |t| t.errors.to_string()), None));
            let p50 = total.and_then(|t| t.latency_ms).map(|l| l.p50.to_string());
            row.push((p50.unwrap_or_else(|| NONE.into()), None));
            row
        })
        .collect();
    let mut out = grid(&header, &rows, v.ctx.color);
    for spec in v.specs {
        for var in &spec.group_by {
            out += &groups_table(v, &spec.title, &spec.id, var);
        }
    }
    out
}

/// Accuracy per value of `var` for each model with records in the spec.
fn groups_table(v: &View, title: &str, spec: &str, var: &str) -> String {
    let values: std::collections::BTreeSet<&String> = v
        .models
        .iter()
        .filter_map(|m| v.summary.groups(m, spec)?.get(var))
        .flat_map(|g| g.keys())
        .collect();
    if values.is_empty() {
        return String::new();
    }
    let mut header = vec![format!("{title} by {var}")];
    header.extend(values.iter().map(|k| (*k).clone()));
    let rows: Vec<Vec<(String, Option<f64>)>> = v
        .models
        .iter()
        .filter_map(|m| {
            let groups = v.summary.groups(m, spec)?.get(var)?;
            let mut row = vec![(m.clone(), None)];
            for value in &values {
                let acc = groups.get(*value).map(|g| g.accuracy);
                row.push((acc.map_or(NONE.into(), percent), acc));
            }
            Some(row)
        })
        .collect();
    format!("\n{}", grid(&header, &rows, v.ctx.color))
}

/// A table: first column left-aligned, the rest right-aligned, cells colored by their accuracy.
fn grid(header: &[String], rows: &[Vec<(String, Option<f64>)>], color: bool) -> String {
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            rows.iter()
                .map(|r| r[c].0.chars().count())
                .chain([header[c].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let align = |c: usize| if c == 0 { Align::Left } else { Align::Right };
    let line = |cells: Vec<String>| cells.join("  ").trim_end().to_owned() + "\n";
    let mut out = line(
        header
            .iter()
            .enumerate()
            .map(|(c, h)| pad(h, widths[c], align(c)))
            .collect(),
    );
    out += &line(widths.iter().map(|w| "-".repeat(*w)).collect());
    for row in rows {
        let cells = row.iter().enumerate().map(|(c, (text, acc))| {
            let padded = pad(text, widths[c], align(c));
            match acc {
                Some(a) if color => paint(&padded, *a),
                _ => padded,
            }
        });
        out += &line(cells.collect());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::paint;

    #[test]
    fn thresholds() {
        assert_eq!(paint("x", 0.8), "\u{1b}[32mx\u{1b}[39m");
        assert_eq!(paint("x", 0.5), "\u{1b}[33mx\u{1b}[39m");
        assert_eq!(paint("x", 0.49), "\u{1b}[31mx\u{1b}[39m");
    }
}
