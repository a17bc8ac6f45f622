//! The statistics sections of the Markdown report: the leaderboard with tie
//! groups, per category the paired comparison of every model with the best and
//! the gap the category can detect, the run comparison and flaky instances.

use std::fmt::Write as _;

use super::View;
use super::lang::{Words, fill};
use super::terminal::{p_equals, p_value, ranked_models};
use crate::metrics::stats::Interval;
use crate::metrics::{Board, Test, Versus};
use crate::text::{inline_code, md_cell, percent, table};

const NONE: &str = "—";
/// Flaky instances listed in Markdown (the HTML report lists them all).
const FLAKY_LISTED: usize = 20;
/// Flipped instances listed per pair and direction.
const FLIPS_LISTED: usize = 30;

/// An interval in percent: `36.1–48.3%`.
pub(crate) fn span(i: Option<Interval>) -> String {
    i.map_or(NONE.into(), |i| {
        format!("{:.1}–{:.1}%", i.low * 100.0, i.high * 100.0)
    })
}

/// A difference in points with its interval: `+12.0 pp [4.1; 19.9]`.
fn delta(w: &Words, d: f64, i: Option<Interval>) -> String {
    let mut s = format!("{:+.1} {}", d * 100.0, w.pp);
    if let Some(i) = i {
        let _ = write!(s, " [{:+.1}; {:+.1}]", i.low * 100.0, i.high * 100.0);
    }
    s
}

fn test_name(w: &Words, t: Test) -> &'static str {
    match t {
        Test::Mcnemar => w.test_mcnemar,
        Test::Bootstrap => w.test_bootstrap,
    }
}

fn table_md(header: &[&str], rows: &[Vec<String>]) -> String {
    let header: Vec<String> = header.iter().map(|h| (*h).to_owned()).collect();
    let mut center = vec![true; header.len()];
    center[0] = false;
    table(&header, &center, rows)
}

fn board_rows(w: &Words, board: &Board) -> Vec<Vec<String>> {
    board
        .standings
        .iter()
        .map(|s| {
            let (d, p) = s
                .vs_best
                .as_ref()
                .map_or((NONE.into(), NONE.into()), |x: &Versus| {
                    (delta(w, x.difference, x.interval), p_value(x.p_value))
                });
            vec![
                s.rank.to_string(),
                format!("**{}**", md_cell(&s.model)),
                percent(s.score),
                span(s.interval),
                d,
                p,
            ]
        })
        .collect()
}

/// A board's header, its third column named `score` (the headline's name).
fn board_header(w: &Words, score: &str) -> Vec<String> {
    let mut header = w.md.board.map(str::to_owned).to_vec();
    header[2] = super::capitalized(score);
    header
}

/// A table whose first column is left-aligned and the rest centered.
fn table_owned(header: &[String], rows: &[Vec<String>]) -> String {
    let mut center = vec![true; header.len()];
    center[0] = false;
    table(header, &center, rows)
}

/// «Рейтинг Моделей»: the overall leaderboard with tie groups.
pub(crate) fn leaderboard(v: &View) -> String {
    let Some(board) = &v.summary.leaderboard else {
        return String::new();
    };
    let w = v.words();
    let score = super::capitalized(super::total_label(w, v.specs));
    let mut s = String::from(w.md.ranking);
    s += &table_owned(&board_header(w, &score), &board_rows(w, board));
    let test = test_name(w, board.test);
    let _ = writeln!(s, "{}", fill(w.md.ranking_note, &[&score, &test]));
    let (apart, none): (Vec<_>, Vec<_>) = ranked_models(v)
        .into_iter()
        .filter(|(_, r)| r.is_none())
        .partition(|(m, _)| v.summary.category_mean(m).is_some());
    let names = |models: Vec<(&String, Option<u32>)>| -> String {
        let names: Vec<String> = models.into_iter().map(|(m, _)| inline_code(m)).collect();
        names.join(", ")
    };
    if !apart.is_empty() {
        let _ = writeln!(s, "{}", fill(w.md.apart, &[&names(apart)]));
    }
    if !none.is_empty() {
        let _ = writeln!(s, "{}", fill(w.md.unranked, &[&names(none)]));
    }
    s
}

/// «Значимость по Категориям»: per spec, each model against the best.
pub(crate) fn categories(v: &View) -> String {
    let w = v.words();
    let mut s = String::new();
    for spec in v.specs {
        let Some(board) = v.summary.boards.get(&spec.id) else {
            continue;
        };
        if s.is_empty() {
            s.push_str(w.md.significance);
        }
        let _ = writeln!(s, "\n### {}\n", md_cell(&spec.title));
        let header = board_header(w, w.headline(spec.headline));
        s += &table_owned(&header, &board_rows(w, board));
        let test = test_name(w, board.test);
        s += &fill(w.md.instances_test, &[&board.instances, &test]);
        if let Some(mde) = board.mde {
            s += &fill(w.md.mde, &[&format!("{:.1}", mde * 100.0)]);
        }
        if let Some(gap) = &board.gap {
            match gap.needed {
                Some(n) if gap.difference > 0.0 => {
                    let points = format!("{:.1}", gap.difference * 100.0);
                    s += &fill(w.md.gap, &[&points, &n]);
                }
                _ => {}
            }
        }
        s.push('\n');
    }
    s
}

/// «Сравнение Запусков»: later runs against the first.
pub(crate) fn runs(v: &View) -> String {
    let Some(c) = &v.runs else {
        return String::new();
    };
    let w = v.words();
    let mut s = fill(w.md.run_comparison, &[&inline_code(&c.baseline_run)]);
    for p in &c.pairs {
        let (later, base) = (inline_code(&p.candidate), inline_code(&p.baseline));
        let _ = writeln!(s, "{}", fill(w.md.against, &[&later, &base]));
        let rows: Vec<Vec<String>> = p
            .categories
            .iter()
            .map(|c| {
                vec![
                    md_cell(&c.title),
                    percent(c.baseline),
                    percent(c.candidate),
                    delta(w, c.delta.difference, c.delta.interval),
                    p_value(c.delta.p_value),
                    c.delta.verdict.label().to_owned(),
                ]
            })
            .collect();
        s += &table_md(&w.md.run_header, &rows);
        if let Some(d) = &p.overall {
            let (change, p) = (delta(w, d.difference, d.interval), p_equals(d.p_value));
            let _ = writeln!(
                s,
                "{}",
                fill(w.md.overall, &[&d.verdict.label(), &change, &p])
            );
        }
        for (title, flips) in [(w.md.flips[0], &p.regressions), (w.md.flips[1], &p.fixes)] {
            if flips.is_empty() {
                continue;
            }
            let ids: Vec<String> = flips
                .iter()
                .take(FLIPS_LISTED)
                .map(|f| inline_code(&format!("{}/{}", f.spec, f.instance)))
                .collect();
            let more = flips.len().saturating_sub(FLIPS_LISTED);
            let tail = if more > 0 {
                format!(" {}", fill(w.and_more, &[&more]))
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                "\n**{title}: {}.** {}{tail}",
                flips.len(),
                ids.join(", ")
            );
        }
    }
    s
}

/// «Нестабильные Задания»: instances whose samples disagree, worst first.
pub(crate) fn flaky(v: &View) -> String {
    if v.flaky.stability.is_empty() {
        return String::new();
    }
    let w = &v.words().md;
    let mut s = String::from(w.flaky);
    let rows: Vec<Vec<String>> = v
        .flaky
        .stability
        .iter()
        .map(|st| {
            vec![
                format!("**{}**", md_cell(&st.model)),
                md_cell(&st.spec),
                st.instances.to_string(),
                st.k.to_string(),
                percent(st.pass_at_k),
                percent(st.pass_hat_k),
                st.flaky.to_string(),
            ]
        })
        .collect();
    s += &table_md(&w.flaky_header, &rows);
    s.push_str(w.flaky_note);
    if !v.flaky.instances.is_empty() {
        let rows: Vec<Vec<String>> = v
            .flaky
            .instances
            .iter()
            .take(FLAKY_LISTED)
            .map(|f| {
                vec![
                    inline_code(&format!("{}/{}", f.spec, f.instance)),
                    md_cell(&f.model),
                    format!("{}/{}", f.passed, f.samples),
                ]
            })
            .collect();
        s.push('\n');
        s += &table_md(&w.flaky_instances, &rows);
        let more = v.flaky.instances.len().saturating_sub(FLAKY_LISTED);
        if more > 0 {
            s += &fill(w.flaky_more, &[&more]);
        }
    }
    s
}
