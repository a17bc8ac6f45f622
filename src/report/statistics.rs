//! The statistics sections of the Markdown report: the leaderboard with tie
//! groups, per category the paired comparison of every model with the best and
//! the gap the category can detect, the run comparison and flaky instances.

use std::fmt::Write as _;

use super::View;
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

/// A difference in points with its interval: `+12.0 пп [4.1; 19.9]`.
fn delta(d: f64, i: Option<Interval>) -> String {
    let mut s = format!("{:+.1} пп", d * 100.0);
    if let Some(i) = i {
        let _ = write!(s, " [{:+.1}; {:+.1}]", i.low * 100.0, i.high * 100.0);
    }
    s
}

fn test_name(t: Test) -> &'static str {
    match t {
        Test::Mcnemar => "точный тест Макнемара, интервал Ньюкомба",
        Test::Bootstrap => "парный бутстреп по заданиям",
    }
}

fn table_md(header: &[&str], rows: &[Vec<String>]) -> String {
    let header: Vec<String> = header.iter().map(|h| (*h).to_owned()).collect();
    let mut center = vec![true; header.len()];
    center[0] = false;
    table(&header, &center, rows)
}

fn board_rows(board: &Board) -> Vec<Vec<String>> {
    board
        .standings
        .iter()
        .map(|s| {
            let (d, p) = s
                .vs_best
                .as_ref()
                .map_or((NONE.into(), NONE.into()), |x: &Versus| {
                    (delta(x.difference, x.interval), p_value(x.p_value))
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

const BOARD_HEADER: [&str; 6] = [
    "Ранг",
    "Модель",
    "Точность",
    "95% ДИ",
    "Δ к лучшей [95% ДИ]",
    "p",
];

/// «Рейтинг Моделей»: the overall leaderboard with tie groups.
pub(crate) fn leaderboard(v: &View) -> String {
    let Some(board) = &v.summary.leaderboard else {
        return String::new();
    };
    let mut s = String::from("\n## Рейтинг Моделей\n\n");
    s += &table_md(&BOARD_HEADER, &board_rows(board));
    let _ = writeln!(
        s,
        "\nТочность — ИТОГО (среднее по категориям), 95% ДИ — стратифицированный по категориям бутстреп. \
         Модели с одним рангом статистически не хуже лучшей модели своей группы \
         ({}, поправка Холма, α = 0,05).",
        test_name(board.test)
    );
    let unranked: Vec<String> = ranked_models(v)
        .into_iter()
        .filter(|(_, r)| r.is_none())
        .map(|(m, _)| inline_code(m))
        .collect();
    if !unranked.is_empty() {
        let _ = writeln!(s, "\nБез записей: {}.", unranked.join(", "));
    }
    s
}

/// «Значимость по Категориям»: per spec, each model against the best.
pub(crate) fn categories(v: &View) -> String {
    let mut s = String::new();
    for spec in v.specs {
        let Some(board) = v.summary.boards.get(&spec.id) else {
            continue;
        };
        if s.is_empty() {
            s.push_str("\n## Значимость по Категориям\n");
        }
        let _ = writeln!(s, "\n### {}\n", md_cell(&spec.title));
        s += &table_md(&BOARD_HEADER, &board_rows(board));
        let _ = write!(
            s,
            "\nЗаданий: {}; тест: {}.",
            board.instances,
            test_name(board.test)
        );
        if let Some(mde) = board.mde {
            let _ = write!(
                s,
                " При таком числе заданий категория замечает отставание от лучшей модели на {:.1} пп и больше (мощность 80%).",
                mde * 100.0
            );
        }
        if let Some(gap) = &board.gap {
            match gap.needed {
                Some(n) if gap.difference > 0.0 => {
                    let _ = write!(
                        s,
                        " Чтобы надёжно различить две лучшие модели (разрыв {:.1} пп), нужно около {n} заданий.",
                        gap.difference * 100.0
                    );
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
    let mut s = format!(
        "\n## Сравнение Запусков\n\nБазовый запуск: {}.\n",
        inline_code(&c.baseline_run)
    );
    for p in &c.pairs {
        let _ = writeln!(
            s,
            "\n### {} против {}\n",
            inline_code(&p.candidate),
            inline_code(&p.baseline)
        );
        let rows: Vec<Vec<String>> = p
            .categories
            .iter()
            .map(|c| {
                vec![
                    md_cell(&c.title),
                    percent(c.baseline),
                    percent(c.candidate),
                    delta(c.delta.difference, c.delta.interval),
                    p_value(c.delta.p_value),
                    c.delta.verdict.label().to_owned(),
                ]
            })
            .collect();
        let header = ["Категория", "Было", "Стало", "Δ [95% ДИ]", "p", "Вывод"];
        s += &table_md(&header, &rows);
        if let Some(d) = &p.overall {
            let _ = writeln!(
                s,
                "\n**В целом:** {} ({}, {}).",
                d.verdict.label(),
                delta(d.difference, d.interval),
                p_equals(d.p_value)
            );
        }
        for (title, flips) in [
            ("Регрессии (было верно, стало неверно)", &p.regressions),
            ("Исправления (было неверно, стало верно)", &p.fixes),
        ] {
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
                format!(" …и ещё {more}")
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
    let mut s = String::from("\n## Нестабильные Задания\n\n");
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
    let header = [
        "Модель",
        "Категория",
        "Заданий",
        "k",
        "pass@k",
        "pass^k",
        "Нестабильных",
    ];
    s += &table_md(&header, &rows);
    s.push_str("\npass@k — хотя бы одна из k попыток верна; pass^k — верны все k.\n");
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
        s += &table_md(&["Задание", "Модель", "Верно"], &rows);
        let more = v.flaky.instances.len().saturating_sub(FLAKY_LISTED);
        if more > 0 {
            let _ = writeln!(s, "\n…и ещё {more} — все в HTML-отчёте.");
        }
    }
    s
}
