//! One language per report set: `--lang`, else harness.toml's `[report]
//! language`, else the locale (the first of `LC_ALL`, `LC_MESSAGES`, `LANG`
//! set and non-empty; `ru*` is Russian, anything else English) picks the
//! language of the terminal summary, the Markdown and the CSV header of
//! `harness run` and `harness report`; errors stay English.

use std::path::PathBuf;

use crate::common::fake_server::{FakeServer, Reply, eval, expression};
use crate::common::workspace::{Workspace, fake_workspace, model_toml};
use crate::common::{harness, run};

/// A workspace with one finished run of the sums spec.
fn one_run() -> (Workspace, FakeServer, String) {
    let fake = FakeServer::start(|request| {
        let value = expression(&request.prompt).and_then(|e| eval(&e));
        Reply::Text(format!("= {}", value.unwrap_or(0)))
    });
    let ws = fake_workspace(&fake, "sums.toml", crate::compare_runs::SPEC);
    ws.run_ok(&["specs/sums.toml", "-m", "fake", "--runs", "3"]);
    let run_id = ws.run_dirs()[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    (ws, fake, run_id)
}

/// The Markdown report a command's output names (`report: PATH`).
fn markdown(out: &str) -> PathBuf {
    let line = out.lines().find_map(|l| l.strip_prefix("report: "));
    PathBuf::from(line.expect("a report: line").trim())
}

/// Which language the terminal summary, the Markdown and the CSV header are in:
/// `en` or `ru`, each checked to agree with the others.
fn language_of(ws: &Workspace, out: &str) -> &'static str {
    // The CSV report shares the Markdown's stamp.
    let path = ws.path().join(markdown(out));
    let read = |ext: &str| std::fs::read_to_string(path.with_extension(ext)).unwrap();
    let (md, csv) = (read("md"), read("csv"));
    let ru = [
        out.contains("ранг  модель"),
        md.starts_with("# Отчет о Тестировании LLM\n"),
        csv.starts_with("модель,"),
    ];
    let en = [
        out.contains("rank  model"),
        md.starts_with("# LLM Test Report\n"),
        csv.starts_with("model,"),
    ];
    match (ru, en) {
        ([true, true, true], [false, false, false]) => "ru",
        ([false, false, false], [true, true, true]) => "en",
        _ => panic!("mixed languages: ru {ru:?}, en {en:?}\n{out}\n{md}"),
    }
}

/// One case: the environment, `--lang`, `[report] language`, the language expected.
type Case = (
    &'static [(&'static str, &'static str)],
    Option<&'static str>,
    Option<&'static str>,
    &'static str,
);

#[test]
fn flag_config_and_locale_pick_the_language_in_that_order() {
    let (ws, _fake, run_id) = one_run();
    let toml = std::fs::read_to_string(ws.path().join("harness.toml")).unwrap();
    let cases: [Case; 10] = [
        (&[], None, None, "en"),
        (&[("LANG", "C")], None, None, "en"),
        (&[("LANG", "ru_RU.UTF-8")], None, None, "ru"),
        (
            &[("LANG", "ru_RU.UTF-8"), ("LC_ALL", "en_US.UTF-8")],
            None,
            None,
            "en",
        ),
        (
            &[("LANG", "C"), ("LC_MESSAGES", "ru_RU.UTF-8")],
            None,
            None,
            "ru",
        ),
        (&[("LANG", "ru_RU.UTF-8"), ("LC_ALL", "")], None, None, "ru"),
        (&[("LANG", "ru_RU.UTF-8")], Some("en"), None, "en"),
        (&[("LANG", "C")], None, Some("ru"), "ru"),
        (&[("LANG", "ru_RU.UTF-8")], None, Some("en"), "en"),
        (&[("LANG", "C")], Some("en"), Some("ru"), "en"),
    ];
    for (env, flag, config, want) in cases {
        let section = config.map_or(String::new(), |l| {
            format!("\n[report]\nlanguage = \"{l}\"\n")
        });
        std::fs::write(ws.path().join("harness.toml"), format!("{toml}{section}")).unwrap();
        let mut cmd = harness(ws.path());
        cmd.args(["report", "--results", "results", "--format", "csv", &run_id]);
        cmd.args(flag.map(|l| ["--lang", l]).into_iter().flatten());
        cmd.envs(env.iter().copied());
        let (code, out) = run(&mut cmd);
        assert_eq!(code, 0, "{out}");
        assert_eq!(language_of(&ws, &out), want, "{env:?} {flag:?} {config:?}");
    }
}

#[test]
fn a_russian_run_prints_russian_reports_and_english_errors() {
    let (ws, _fake, _run_id) = one_run();
    // `harness run` itself: the locale, then `--lang` over it.
    let cases = [
        (("LANG", "ru_RU.UTF-8"), None, "ru"),
        (("LC_ALL", "ru_RU.UTF-8"), Some("en"), "en"),
    ];
    for ((var, value), flag, want) in cases {
        let mut cmd = ws.run_cmd(&["specs/sums.toml", "-m", "fake", "--runs", "3"]);
        cmd.args(["--format", "csv"])
            .env(var, value)
            .env("COLUMNS", "80");
        cmd.args(flag.map(|l| ["--lang", l]).into_iter().flatten());
        let (code, out) = run(&mut cmd);
        assert_eq!(code, 0, "{out}");
        assert_eq!(language_of(&ws, &out), want, "{var}={value} {flag:?}");
        // Russian phrases are longer: the summary still fits 80 columns.
        let wide: Vec<&str> = out.lines().filter(|l| l.chars().count() > 80).collect();
        assert!(wide.is_empty(), "{wide:#?}");
    }
    // Errors are not reports: they stay English.
    let mut cmd = harness(ws.path());
    cmd.args(["report", "--results", "results", "no-such-run"])
        .env("LANG", "ru_RU.UTF-8");
    let (code, out) = run(&mut cmd);
    assert_eq!(code, 2, "{out}");
    assert!(out.starts_with("error: "), "{out}");
    // A language the harness does not have is bad input.
    let (code, out) = run(harness(ws.path()).args(["report", "--lang", "de", "latest"]));
    assert_eq!(code, 2, "{out}");
}

#[test]
fn error_causes_are_summed_up_in_russian_and_the_error_line_stays_english() {
    let fake = FakeServer::start(|_| Reply::Status(500, None));
    let ws = Workspace::new();
    ws.write("specs/sums.toml", crate::compare_runs::SPEC);
    let table = model_toml(
        "m",
        "openai",
        "served",
        &fake.openai_base(),
        "max_retries = 0",
    );
    ws.write("harness.toml", &table);
    let mut cmd = ws.run_cmd(&["specs/sums.toml", "-m", "m", "--runs", "2"]);
    cmd.env("LANG", "ru_RU.UTF-8");
    let (code, out) = run(&mut cmd);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("2 из 2 ответов — ошибки"), "{out}");
    assert!(
        out.contains("error: 2 of 2 answers are errors (exit 4)"),
        "{out}"
    );
}
