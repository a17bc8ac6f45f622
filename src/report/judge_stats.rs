//! The judges section: for every judged (model, spec, rule), who judged,
//! under which rubric hash, how many answers got a level, how many were
//! judge errors, the mean score over judged answers and how much repeated
//! judge samples disagreed. Different judges or rubrics get separate rows
//! and a warning: their scores are different measurements.

use std::fmt::Write as _;

use super::View;
use crate::text::{md_cell, num, percent, table};

/// One row: model, spec title, and the stats.
struct Row<'a> {
    model: &'a str,
    spec: &'a str,
    stat: &'a crate::metrics::JudgeStats,
    /// The (model, spec, rule) has rows under other judges or rubrics too.
    mixed: bool,
}

fn rows<'a>(v: &'a View) -> Vec<Row<'a>> {
    let mut out = Vec::new();
    for m in v.models {
        for spec in v.specs {
            let Some(cell) = v.summary.cell(m, &spec.id) else {
                continue;
            };
            for stat in &cell.judges {
                let same_rule = cell
                    .judges
                    .iter()
                    .filter(|s| s.key.rule == stat.key.rule)
                    .count();
                out.push(Row {
                    model: m,
                    spec: &spec.title,
                    stat,
                    mixed: same_rule > 1,
                });
            }
        }
    }
    out
}

fn cells(r: &Row) -> [String; 10] {
    let s = r.stat;
    [
        r.model.to_owned(),
        r.spec.to_owned(),
        s.key.rule.clone(),
        s.key.judge.clone(),
        s.key.rubric.clone(),
        s.judged.to_string(),
        s.errors.to_string(),
        s.mean_score.map_or("—".into(), percent),
        num(s.mean_spread, 2, "—"),
        s.disagreements.to_string(),
    ]
}

/// The Markdown section (empty when nothing was judged).
pub(crate) fn markdown(v: &View) -> String {
    let rows = rows(v);
    if rows.is_empty() {
        return String::new();
    }
    let w = &v.words().md;
    let mut s = String::from(w.judge);
    let header = w.judge_header.map(str::to_owned);
    let center: Vec<bool> = (0..header.len()).map(|i| i >= 5).collect();
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| cells(r).map(|c| md_cell(&c)).to_vec())
        .collect();
    s.push_str(&table(&header, &center, &cells));
    s.push_str(w.judge_note);
    for r in rows.iter().filter(|r| r.mixed) {
        let _ = writeln!(
            s,
            "\n**⚠ {} / {} / {}:** {}.",
            md_cell(r.model),
            md_cell(r.spec),
            md_cell(&r.stat.key.rule),
            w.judge_mixed
        );
    }
    s
}

/// The terminal lines (empty when nothing was judged), wrapped to 80 columns.
pub(crate) fn terminal(v: &View) -> String {
    let w = &v.words().t;
    let mut out = String::new();
    for r in rows(v) {
        let s = r.stat;
        let mut line = super::lang::fill(
            w.judge,
            &[
                &s.key.judge,
                &r.model,
                &r.spec,
                &s.key.rule,
                &s.key.rubric,
                &s.judged,
                &s.errors,
                &s.mean_score.map_or("—".into(), percent),
                &num(s.mean_spread, 2, "—"),
            ],
        );
        if r.mixed {
            line += &format!(" — {}", w.judge_mixed);
        }
        out += &super::fit::wrap(&crate::text::visible(&line), v.ctx.width);
    }
    out
}
