//! The summary printed after a run, fitted to 80 columns: the leaderboard (tie
//! group, total with its interval, errors, median latency, speed), then each
//! category's headline number per model (pivoted or split when too wide), the
//! mean scores where they differ from the pass rates, the mean measures (CER,
//! WER) of specs whose rules measure something, `group_by` breakdowns,
//! judges, sampled comparisons and the run comparison. The CLI prints the HTML
//! report's path after it: the full statistics are there.

use super::View;
use super::fit::{Cell, Fit, fitted, longer_in_rows};
use super::lang::fill;
use super::runs::{Pair, RunComparison};
use crate::metrics::Metrics;
use crate::metrics::stats::Interval;
use crate::text::{header_row, num, percent};

/// Shown for cells without records or numbers.
const NONE: &str = "—";

/// A number with half its 95% interval's width: `42.0% ±3.1`.
pub(crate) fn with_interval(value: f64, interval: Option<Interval>) -> String {
    match interval {
        Some(i) => format!("{} ±{:.1}", percent(value), (i.high - i.low) * 50.0),
        None => percent(value),
    }
}

/// Models in leaderboard order (rank, score, name), then those without records.
pub(crate) fn ranked_models<'a>(v: &'a View) -> Vec<(&'a String, Option<u32>)> {
    let mut out: Vec<(&String, Option<u32>)> = Vec::new();
    if let Some(board) = &v.summary.leaderboard {
        for s in &board.standings {
            if let Some(m) = v.models.iter().find(|m| **m == s.model) {
                out.push((m, Some(s.rank)));
            }
        }
    }
    for m in v.models {
        if !out.iter().any(|(n, _)| *n == m) {
            out.push((m, None));
        }
    }
    out
}

/// The summary, ending with a newline.
pub(crate) fn render(v: &View) -> String {
    let mut out = leaderboard(v);
    let by_category = categories(v);
    if !by_category.is_empty() {
        out += "\n";
        out += &by_category;
    }
    out += &mean_scores(v);
    out += &super::measures::terminal(v);
    let w = v.words();
    let table =
        |heading, header: &[&str], rows| super::cell_table::terminal(v, heading, header, rows);
    out += &table(
        w.t.reasoning,
        &w.reasoning_header,
        super::reasoning::rows(v),
    );
    out += &table(w.t.choices, &w.choices_header, super::choices::rows(v));
    out += &table(w.t.users, &w.users_header, super::users::rows(v));
    for spec in v.specs {
        for var in &spec.group_by {
            out += &groups_table(v, &spec.title, &spec.id, var);
        }
    }
    out += &super::judge_stats::terminal(v);
    if let Some(line) = super::sandbox_line(v.ctx) {
        let line = fill(v.words().t.sandbox, &[&line]);
        out += &super::fit::wrap(&line, v.ctx.width);
    }
    out += &super::costs::terminal(v);
    out += &super::endpoints::terminal(v);
    let w = v.words();
    for c in super::comparison::build(v) {
        out += &super::comparison::terminal(w, &c, v.fit());
        if let (Some(wanted), None) = (v.ctx.baseline, &c.baseline) {
            out += &fill(w.t.no_baseline, &[&wanted, &c.spec]);
        }
    }
    if let Some(runs) = &v.runs {
        out += &run_comparison(w, runs, v.fit());
    }
    out += "\n";
    out += &numbers_note(v);
    out
}

/// The leaderboard: rank, model, total with interval, errors, p50 latency, speed.
fn leaderboard(v: &View) -> String {
    let w = v.words();
    let total = super::total_label(w, v.specs);
    let [errors, p50_ms, speed, rank_model] = w.t.board;
    let header = ["", w.model, total, errors, p50_ms, speed].map(str::to_owned);
    let rows: Vec<Vec<Cell>> = ranked_models(v)
        .into_iter()
        .map(|(m, rank)| {
            let total = v.summary.model(m);
            let standing = v.summary.leaderboard.as_ref().and_then(|b| b.standing(m));
            let mean = v.summary.category_mean(m);
            let interval = standing.and_then(|s| s.interval);
            vec![
                (rank.map_or(NONE.into(), |r| r.to_string()), None),
                (m.clone(), None),
                (
                    mean.map_or(NONE.into(), |a| with_interval(a, interval)),
                    mean,
                ),
                (total.map_or(NONE.into(), |t| t.errors.to_string()), None),
                (p50(total), None),
                (num(total.and_then(|t| t.tokens_per_sec), 1, NONE), None),
            ]
        })
        .collect();
    // The label column comes second here: keep it left-aligned by moving rank into it.
    let rows: Vec<Vec<Cell>> = rows
        .into_iter()
        .map(|mut r| {
            let rank = r.remove(0).0;
            r[0].0 = format!("{rank:>4}  {}", r[0].0);
            r
        })
        .collect();
    let mut header = header.to_vec();
    header.remove(0);
    header[0] = rank_model.to_owned();
    fitted(&header, &rows, v.fit(), None)
}

fn p50(m: Option<&Metrics>) -> String {
    m.and_then(|t| t.latency_ms)
        .map_or(NONE.into(), |l| l.p50.to_string())
}

/// The headline's name of spec `id`: `pass rate` or `mean score`.
fn headline_of(v: &View, id: &str) -> &'static str {
    let headline = v.specs.iter().find(|s| s.id == id).map(|s| s.headline);
    v.words().headline(headline.unwrap_or_default())
}

/// What the tables' numbers are, for the closing note.
fn numbers_note(v: &View) -> String {
    use crate::metrics::Headline;
    let w = v.words();
    let total = super::total_label(w, v.specs);
    let mut note = match super::common_headline(v.specs) {
        Some(Headline::MeanScore) => w.t.note_mean,
        None => w.t.note_mixed,
        Some(Headline::PassRate) => w.t.note_pass,
    }
    .to_owned();
    note += &fill(w.t.note_rest, &[&total]);
    if ranked_models(v).iter().any(|(_, rank)| rank.is_none()) && v.models.len() > 1 {
        note += w.t.note_unranked;
    }
    super::fit::wrap(&note, v.ctx.width)
}

/// The mean scores (partial credit) of every pass-rate cell whose mean score
/// differs from its pass rate: a second number, never the ranked one.
fn mean_scores(v: &View) -> String {
    let specs: Vec<&super::SpecInfo> = v
        .specs
        .iter()
        .filter(|s| s.headline == crate::metrics::Headline::PassRate)
        .filter(|s| {
            let differs = |m: &String| {
                v.summary
                    .cell(m, &s.id)
                    .is_some_and(|c| (c.mean_score - c.pass_rate).abs() > 1e-12)
            };
            v.models.iter().any(differs)
        })
        .collect();
    if specs.is_empty() {
        return String::new();
    }
    let w = v.words();
    let header = header_row(w.model, specs.iter().map(|s| s.title.clone()));
    let rows = model_rows(v, &specs, |c| (percent(c.mean_score), c.mean_score));
    let heading = w.t.mean_scores;
    format!(
        "\n{heading}{}",
        longer_in_rows(&header, &rows, v.fit(), w.category)
    )
}

/// The headline number with its interval per model and category, the longer
/// of the two in rows, `*` marking a mean-score headline among pass rates;
/// categories without any record are left out.
fn categories(v: &View) -> String {
    let specs: Vec<&super::SpecInfo> = v
        .specs
        .iter()
        .filter(|s| v.models.iter().any(|m| v.summary.cell(m, &s.id).is_some()))
        .collect();
    if specs.is_empty() {
        return String::new();
    }
    let w = v.words();
    let mixed = super::common_headline(v.specs).is_none();
    let mut header = vec![w.model.to_owned()];
    header.extend(specs.iter().map(|s| {
        let scored = mixed && s.headline == crate::metrics::Headline::MeanScore;
        if scored {
            format!("{} *", s.title)
        } else {
            s.title.clone()
        }
    }));
    let rows = model_rows(v, &specs, |c| {
        let interval = c.interval.map(|e| e.interval());
        (with_interval(c.score(), interval), c.score())
    });
    longer_in_rows(&header, &rows, v.fit(), w.category)
}

/// A row per model in leaderboard order: its name, then `cell`'s text and
/// color value for each of `specs` (`—` where it has no records).
fn model_rows(
    v: &View,
    specs: &[&super::SpecInfo],
    cell: impl Fn(&Metrics) -> (String, f64),
) -> Vec<Vec<Cell>> {
    ranked_models(v)
        .into_iter()
        .map(|(m, _)| {
            let mut row = vec![(m.clone(), None)];
            for s in specs {
                row.push(v.summary.cell(m, &s.id).map_or((NONE.into(), None), |c| {
                    let (text, value) = cell(c);
                    (text, Some(value))
                }));
            }
            row
        })
        .collect()
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
    let w = v.words();
    let header = header_row(w.model, values.iter().map(|k| (*k).clone()));
    let rows: Vec<Vec<Cell>> = v
        .models
        .iter()
        .filter_map(|m| {
            let groups = v.summary.groups(m, spec)?.get(var)?;
            let mut row = vec![(m.clone(), None)];
            for value in &values {
                let g = groups.get(*value);
                let text = g.map_or(NONE.into(), |g| {
                    with_interval(g.score(), g.interval.map(|e| e.interval()))
                });
                row.push((text, g.map(Metrics::score)));
            }
            Some(row)
        })
        .collect();
    let heading = super::fit::wrap(
        &fill(w.t.by, &[&title, &var, &headline_of(v, spec)]),
        v.ctx.width,
    );
    format!("\n{heading}{}", fitted(&header, &rows, v.fit(), Some(var)))
}

/// Each later run against the baseline: overall and per category, then flips.
fn run_comparison(w: &super::lang::Words, c: &RunComparison, fit: Fit) -> String {
    let mut out = String::new();
    for p in &c.pairs {
        let mut title = fill(w.t.against, &[&p.candidate, &p.baseline]);
        if let Some(d) = &p.overall {
            title += &format!(
                ": {} ({}, {})",
                d.verdict.label(),
                super::comparison::points(d.difference),
                p_equals(d.p_value)
            );
        }
        out += "\n";
        out += &super::fit::wrap(&title, fit.width);
        out += &pair_table(w, p, fit);
        out += &flip_line(w.t.flips[0], &p.regressions, fit.width);
        out += &flip_line(w.t.flips[1], &p.fixes, fit.width);
    }
    out
}

fn pair_table(w: &super::lang::Words, p: &Pair, fit: Fit) -> String {
    let header = w.t.pair_header.map(str::to_owned);
    let rows: Vec<Vec<Cell>> = p
        .categories
        .iter()
        .map(|c| {
            let d = &c.delta;
            let interval = d.interval.map_or(NONE.into(), |i| {
                format!("{:+.1}…{:+.1}", i.low * 100.0, i.high * 100.0)
            });
            let tone = match d.verdict {
                super::runs::Verdict::Better => Some(1.0),
                super::runs::Verdict::Worse => Some(0.0),
                super::runs::Verdict::Same => None,
            };
            vec![
                (super::fit::label(&c.title).chars().take(20).collect(), None),
                (super::comparison::points(d.difference), None),
                (interval, None),
                (p_value(d.p_value), None),
                (d.verdict.label().to_owned(), tone),
            ]
        })
        .collect();
    fitted(&header, &rows, fit, None)
}

/// `n: id, id, ...` for the first ten flips.
fn flip_line(what: &str, flips: &[super::runs::Flip], width: usize) -> String {
    if flips.is_empty() {
        return String::new();
    }
    let ids: Vec<String> = flips
        .iter()
        .take(10)
        .map(|f| format!("{}/{}", f.spec, f.instance))
        .collect();
    let more = if flips.len() > 10 { ", …" } else { "" };
    super::fit::wrap(
        &format!("{what}: {}: {}{more}", flips.len(), ids.join(", ")),
        width,
    )
}

/// `p = 0.012`, or `p < 0.001`.
pub(crate) fn p_equals(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".to_owned()
    } else {
        format!("p = {p:.3}")
    }
}

/// A p-value with three decimals, `<0.001` below.
pub(crate) fn p_value(p: f64) -> String {
    if p < 0.001 {
        "<0.001".to_owned()
    } else {
        format!("{p:.3}")
    }
}
