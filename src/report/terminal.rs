//! The summary table printed after a run: models × specs accuracy, then the
//! category mean (the report's ИТОГО), request errors and median latency.
//! Widths count characters, not bytes, so Cyrillic titles line up; color is
//! applied after padding so escape codes never count toward a width.

use owo_colors::OwoColorize;

use super::View;
use crate::text::{Align, pad, percent};

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
    out += &super::judge_stats::terminal(v);
    out += &super::sandbox_line(v.ctx).map_or(String::new(), |l| format!("sandbox: {l}\n"));
    out += &super::costs::terminal(v);
    for c in super::comparison::build(v) {
        out += &comparison_table(&c, v.ctx.color);
        if let (Some(wanted), None) = (v.ctx.baseline, &c.baseline) {
            out += &format!(
                "baseline `{wanted}` has no sampled results for {}\n",
                c.spec
            );
        }
    }
    out
}

/// A sampled spec's comparison: mean accuracy, pass@k, maj@n, tier and change
/// against the baseline per model, then mean accuracy / pass@(largest k) per group.
fn comparison_table(c: &super::comparison::Comparison, color: bool) -> String {
    let has_maj = c.models.iter().any(|l| l.maj.is_some());
    let mut header = vec![format!("{} (sampled)", c.title), "mean acc".to_owned()];
    header.extend(c.ks.iter().map(|k| format!("pass@{k}")));
    if has_maj {
        header.push("maj".to_owned());
    }
    header.push("tier".to_owned());
    if c.baseline.is_some() {
        header.push("vs baseline".to_owned());
    }
    let rows: Vec<Vec<(String, Option<f64>)>> = c
        .models
        .iter()
        .map(|l| {
            let mut row = vec![
                (l.model.clone(), None),
                (percent(l.accuracy), Some(l.accuracy)),
            ];
            for k in &c.ks {
                let p = l.pass_at_k.get(k).copied();
                row.push((p.map_or(NONE.into(), percent), p));
            }
            if has_maj {
                row.push((l.maj.map_or(NONE.into(), percent), l.maj));
            }
            row.push((l.tier.to_owned(), None));
            if c.baseline.is_some() {
                let delta = l.vs_baseline.map(super::comparison::points);
                row.push((delta.unwrap_or_else(|| NONE.into()), None));
            }
            row
        })
        .collect();
    let mut out = format!("\n{}", grid(&header, &rows, color));
    if let Some(best) = &c.best {
        out += &format!("best: {best}");
        if let Some(base) = &c.baseline {
            out += &format!(" (baseline: {base})");
        }
        out.push('\n');
    }
    for (rule, lines) in super::comparison::alongside(c) {
        let mut header = vec![
            format!("{}: {rule} (report only)", c.title),
            "mean acc".to_owned(),
        ];
        header.extend(c.ks.iter().map(|k| format!("pass@{k}")));
        let rows: Vec<Vec<(String, Option<f64>)>> = lines
            .iter()
            .map(|(model, g)| {
                let mut row = vec![
                    ((*model).to_owned(), None),
                    (percent(g.accuracy), Some(g.accuracy)),
                ];
                for k in &c.ks {
                    let p = g.pass_at_k.get(k).copied();
                    row.push((p.map_or(NONE.into(), percent), p));
                }
                row
            })
            .collect();
        out += &format!("\n{}", grid(&header, &rows, color));
    }
    let top = c.ks.last().copied();
    for (var, values) in c.group_columns() {
        let label = top.map_or("mean acc".to_owned(), |k| format!("mean acc / pass@{k}"));
        let mut header = vec![format!("{} by {var}: {label}", c.title)];
        header.extend(values.iter().map(|v| (*v).clone()));
        let rows: Vec<Vec<(String, Option<f64>)>> = c
            .models
            .iter()
            .map(|l| {
                let mut row = vec![(l.model.clone(), None)];
                for value in &values {
                    let g = l.groups.get(var).and_then(|g| g.get(*value));
                    let text = g.map_or(NONE.into(), |g| {
                        let pass = top.and_then(|k| g.pass_at_k.get(&k)).copied();
                        match pass {
                            Some(p) => format!("{} / {}", percent(g.accuracy), percent(p)),
                            None => percent(g.accuracy),
                        }
                    });
                    row.push((text, g.map(|g| g.accuracy)));
                }
                row
            })
            .collect();
        out += &format!("\n{}", grid(&header, &rows, color));
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
pub(super) fn grid(header: &[String], rows: &[Vec<(String, Option<f64>)>], color: bool) -> String {
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
