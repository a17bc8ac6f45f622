//! The page in the report's language, and a heatmap of many categories at
//! 1280×800: it scrolls sideways in its own box with the model column kept in
//! view, and the page itself never scrolls sideways.

use std::path::{Path, PathBuf};

use harness::Lang;
use harness::{ReportContext, SpecInfo, write_reports};
use serde_json::{Value, json};

use super::{assert_clean, text};
use crate::common::browser::{Browser, artifacts};
use crate::common::root;

/// Categories on the page: more than 1280 px of columns.
const CATEGORIES: usize = 16;

/// A journal of two models on [`CATEGORIES`] specs, three instances each,
/// made from the fixture journal's first record.
fn many_categories(run_dir: &Path) -> (PathBuf, Vec<SpecInfo>) {
    std::fs::create_dir_all(run_dir).unwrap();
    let fixture = root().join("tests/fixtures/journals/two_models.jsonl");
    let text = std::fs::read_to_string(fixture).unwrap();
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let (mut lines, mut specs) = (Vec::new(), Vec::new());
    for c in 0..CATEGORIES {
        let spec = format!("category_{c:02}");
        specs.push(SpecInfo {
            title: format!("Category number {c} with a long title"),
            ..SpecInfo::plain(&spec)
        });
        for (m, model) in ["a-model-with-a-long-name:8b", "b"].iter().enumerate() {
            for i in 0..3u64 {
                let passed = (c + m + i as usize) % 3 != 0;
                let mut r = first.clone();
                r["model"] = json!(model);
                r["spec"] = json!(spec);
                r["instance"] = json!(i);
                r["instance_id"] = json!(format!("{spec}/{i}"));
                r["passed"] = json!(passed);
                r["score"] = json!(if passed { 1.0 } else { 0.0 });
                r["rules"][0]["passed"] = json!(passed);
                r["rules"][0]["score"] = r["score"].clone();
                lines.push(r.to_string());
            }
        }
    }
    let journal = run_dir.join("journal.jsonl");
    std::fs::write(&journal, lines.join("\n") + "\n").unwrap();
    (journal, specs)
}

/// The report of [`many_categories`] in `lang`: its HTML page.
fn page(dir: &Path, lang: Lang) -> PathBuf {
    let (journal, specs) = many_categories(&dir.join("results/runs/r1"));
    let models = vec!["a-model-with-a-long-name:8b".to_owned(), "b".to_owned()];
    let journals = [journal];
    let results = dir.join("results");
    let ctx = ReportContext {
        run_ids: &["r1".to_owned()],
        timestamp: "2026-11-21 22:30:00",
        file_stamp: lang.code(),
        lang,
        ..ReportContext::new(&results, &models, &specs, &journals)
    };
    write_reports(&ctx).unwrap().files.html
}

/// The text a reader sees on the overview, the tabs and the instance filters.
fn visible_text(b: &mut Browser) -> String {
    b.eval("document.querySelector('#tabs [data-view=instances]').click()");
    b.wait_for("document.querySelectorAll('#view-instances .vrow').length > 0");
    let filters = text(b, "#view-instances .controls");
    let count = text(b, "#view-instances .count");
    b.eval("document.querySelector('#tabs [data-view=overview]').click()");
    let overview = b.eval("document.body.innerText");
    format!(
        "{}\n{filters}\n{count}",
        overview.as_str().unwrap_or_default()
    )
}

#[test]
fn the_page_speaks_the_reports_language() {
    let Some(mut b) = Browser::launch() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Phrases of the page in English and in Russian, where each must show.
    let cases = [
        (
            Lang::En,
            "en",
            [
                "Overview",
                "Leaderboard",
                "Results by category",
                "of 96 records",
            ],
            [
                "Обзор",
                "Рейтинг",
                "Результаты по категориям",
                "из 96 записей",
            ],
        ),
        (
            Lang::Ru,
            "ru",
            [
                "Обзор",
                "Рейтинг",
                "Результаты по категориям",
                "из 96 записей",
            ],
            [
                "Overview",
                "Leaderboard",
                "Results by category",
                "of 96 records",
            ],
        ),
    ];
    for (lang, code, shown, absent) in cases {
        let html = page(dir.path(), lang);
        b.viewport(1280, 800);
        b.open(&html);
        assert_clean(&b);
        assert_eq!(b.eval("document.documentElement.lang"), json!(code));
        let title = if code == "ru" {
            "отчёт harness"
        } else {
            "harness report"
        };
        assert_eq!(
            b.eval("document.title.split(' 2026')[0]"),
            json!(title),
            "{code}"
        );
        let seen = visible_text(&mut b);
        for phrase in shown {
            assert!(seen.contains(phrase), "{code}: no {phrase:?} in\n{seen}");
        }
        for phrase in absent {
            assert!(!seen.contains(phrase), "{code}: {phrase:?} in\n{seen}");
        }
        b.screenshot(&artifacts().join(format!("language_{code}_1280.png")));
    }
}

#[test]
fn many_categories_scroll_in_the_heatmap_with_the_model_column_kept() {
    let Some(mut b) = Browser::launch() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let html = page(dir.path(), Lang::En);
    b.viewport(1280, 800);
    b.open(&html);
    assert_clean(&b);
    assert_eq!(
        b.eval("document.querySelectorAll('table.heat thead th').length"),
        json!(CATEGORIES + 1)
    );
    let geometry = "(() => { const box = document.querySelector('table.heat').parentElement; \
        const first = document.querySelector('table.heat tbody td'); \
        const last = [...document.querySelectorAll('table.heat thead th')].pop(); \
        const f = first.getBoundingClientRect(), l = last.getBoundingClientRect(); \
        const hit = document.elementFromPoint(f.left + 4, f.top + f.height / 2); \
        return { scrolls: box.scrollWidth > box.clientWidth, \
          page: document.documentElement.scrollWidth <= window.innerWidth + 1, \
          first_left: Math.round(f.left), first_on_top: first.contains(hit), \
          last_in_view: l.left >= 0 && l.right <= window.innerWidth }; })()";
    let before = b.eval(geometry);
    assert_eq!(before["scrolls"], json!(true), "{before}");
    assert_eq!(
        before["page"],
        json!(true),
        "the page never scrolls sideways"
    );
    assert_eq!(before["last_in_view"], json!(false), "{before}");
    b.eval("(() => { const box = document.querySelector('table.heat').parentElement; box.scrollLeft = box.scrollWidth; })()");
    let after = b.eval(geometry);
    b.screenshot(&artifacts().join("many_categories_scrolled_1280.png"));
    assert_eq!(
        after["last_in_view"],
        json!(true),
        "the last column is reachable: {after}"
    );
    assert_eq!(
        after["first_left"], before["first_left"],
        "the model column stays"
    );
    assert_eq!(
        after["first_on_top"],
        json!(true),
        "no cell covers the model column: {after}"
    );
    assert_eq!(after["page"], json!(true));
}
