//! The HTML report in a real browser (headless Chromium over the DevTools
//! protocol): reports from real runs (the shipped replay with its judged specs,
//! a sampled spec against the fake server) and from a journal of hostile
//! answers, opened from `file://`. Each test asserts no console errors and no
//! network request, the numbers the page shows against the other reports, the
//! filters, the drill-down, and that model output renders as text.
//! Screenshots at 1280 and 390 px land in `target/browser/`.

mod common;

use std::path::{Path, PathBuf};

use common::browser::{Browser, artifacts};
use common::fake_server::{FakeServer, Reply, Request, fake_workspace};
use common::{harness, root};
use serde_json::{Value, json};

/// The only report of `kind` (`html`, `json`) under `results/reports`.
fn report(results: &Path, ext: &str) -> PathBuf {
    let dir = results.join("reports");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("report_")
        })
        .collect();
    found.sort();
    found
        .pop()
        .unwrap_or_else(|| panic!("no .{ext} report in {}", dir.display()))
}

/// `42.0% ±3.1`, as every report prints an accuracy with its interval.
fn with_interval(score: f64, interval: &Value) -> String {
    let pct = format!("{:.1}%", score * 100.0);
    match (interval["low"].as_f64(), interval["high"].as_f64()) {
        (Some(lo), Some(hi)) => format!("{pct} ±{:.1}", (hi - lo) * 50.0),
        _ => pct,
    }
}

/// Opens `page` at `width`, checks it drew cleanly, and saves a screenshot.
fn open(b: &mut Browser, page: &Path, width: u32, shot: &str) {
    b.viewport(width, 900);
    b.open(page);
    assert_clean(b);
    b.screenshot(&artifacts().join(format!("{shot}_{width}.png")));
}

/// No console error, no exception, and no request but the page itself.
fn assert_clean(b: &Browser) {
    assert_eq!(b.errors(), Vec::<String>::new(), "console errors");
    let page_only = b
        .requests()
        .iter()
        .all(|u| u.starts_with("file://") && u.ends_with(".html") || u.starts_with("data:"));
    assert!(page_only, "network requests: {:?}", b.requests());
}

fn text(b: &mut Browser, selector: &str) -> String {
    let v = b.eval(&format!(
        "(document.querySelector({}) || {{}}).textContent || ''",
        json!(selector)
    ));
    v.as_str().unwrap_or_default().to_owned()
}

fn set_filter(b: &mut Browser, name: &str, value: &str) {
    b.eval(&format!(
        "(() => {{ const el = document.querySelector('#view-instances [name={name}]'); \
         el.value = {}; el.dispatchEvent(new Event(el.tagName === 'INPUT' ? 'input' : 'change')); }})()",
        json!(value)
    ));
}

/// The instance list's count line once it reads `expected` records.
fn wait_count(b: &mut Browser, expected: usize, total: usize) {
    b.wait_for(&format!(
        "document.querySelector('#view-instances .count').textContent === '{expected} of {total} records'"
    ));
}

#[test]
fn shipped_replay_report_shows_the_numbers_the_other_reports_print() {
    let Some(mut b) = Browser::launch() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    // Golden transcripts are copied, so a machine whose sandbox differs writes its
    // `.new` files there and never into the repository.
    let golden = dir.path().join("golden");
    copy_dir(&root().join("golden"), &golden);
    let output = harness(&root())
        .args([
            "run",
            "specs/",
            "--no-progress",
            "--format",
            "json",
            "--results",
        ])
        .arg(&results)
        .arg("--golden")
        .arg(&golden)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout).into_owned();
    let code = output.status.code().unwrap_or(-1);
    assert!(
        code == 0 || code == 1,
        "{out}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let html = report(&results, "html");
    let last = out.lines().next_back().unwrap_or_default();
    assert_eq!(
        last,
        format!("html report: {}", html.display()),
        "the last line: {out}"
    );
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(report(&results, "json")).unwrap()).unwrap();

    open(&mut b, &html, 1280, "replay_overview");
    // The leaderboard: the terminal's and the JSON report's numbers, in rank order.
    let standings = json["leaderboard"]["standings"].as_array().unwrap();
    for (i, st) in standings.iter().enumerate() {
        let shown = with_interval(st["score"].as_f64().unwrap(), &st["interval"]);
        let row = format!("table.board tbody tr:nth-child({})", i + 1);
        assert_eq!(text(&mut b, &format!("{row} td.total")), shown);
        assert_eq!(
            text(&mut b, &format!("{row} td.name")),
            st["model"].as_str().unwrap()
        );
        assert!(out.contains(&shown), "the terminal prints {shown}: {out}");
        // The bar is drawn to the score, the error bar to the interval.
        let width = b.eval(&format!(
            "Number(document.querySelector('{row} rect.score').getAttribute('width'))"
        ));
        assert!((width.as_f64().unwrap() - st["score"].as_f64().unwrap() * 100.0).abs() < 1e-9);
        let low = b.eval(&format!(
            "Number(document.querySelector('{row} line.interval').dataset.low)"
        ));
        assert_eq!(low.as_f64(), st["interval"]["low"].as_f64());
    }
    // The heatmap: every cell's accuracy.
    for (m, model) in json["models"].as_array().unwrap().iter().enumerate() {
        for cell in model["specs"].as_array().unwrap() {
            let acc = cell["metrics"]["accuracy"].as_f64().unwrap();
            let shown = b.eval(&format!(
                "document.querySelector('table.heat tr[data-model=\"{}\"] td[data-spec=\"{}\"]').textContent",
                model["name"].as_str().unwrap(),
                cell["spec"].as_str().unwrap()
            ));
            assert_eq!(shown, json!(format!("{:.1}%", acc * 100.0)), "model {m}");
        }
    }
    // The scatter plot places each model at its total.
    let ys =
        b.eval("[...document.querySelectorAll('.chart g.mark')].map(g => Number(g.dataset.y))");
    assert!(!ys.as_array().unwrap().is_empty(), "a chart is drawn");
    for y in ys.as_array().unwrap() {
        let total = json["models"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["category_mean"].as_f64() == y.as_f64());
        assert!(total, "chart point at {y} is some model's total");
    }

    // Filters change the visible rows.
    b.eval("document.querySelector('#tabs [data-view=instances]').click()");
    let total = count_records(&json);
    let failed = total - count_passed(&json);
    wait_count(&mut b, total, total);
    set_filter(&mut b, "status", "fail");
    wait_count(&mut b, failed, total);
    let rows = b.eval("document.querySelectorAll('#view-instances .vrow').length");
    assert!(
        rows.as_u64().unwrap() < 60,
        "rows are drawn on demand: {rows}"
    );
    let first_model = json["models"][0]["name"].as_str().unwrap().to_owned();
    let m0 = json["models"][0]["total"]["total"].as_u64().unwrap() as usize
        - json["models"][0]["total"]["passed"].as_u64().unwrap() as usize;
    set_filter(&mut b, "model", "0");
    b.wait_for(&format!(
        "document.querySelector('#view-instances .count').textContent.startsWith('{m0} of')"
    ));
    let only = b.eval(&format!(
        "[...document.querySelectorAll('#view-instances .vrow .mdl')].every(e => e.textContent === {})",
        json!(first_model)
    ));
    assert_eq!(only, json!(true));
    set_filter(&mut b, "model", "-1");
    set_filter(&mut b, "status", "all");
    set_filter(&mut b, "q", "humaneval/22");
    b.wait_for("[...document.querySelectorAll('#view-instances .vrow .id')].map(e => e.textContent).join() === 'humaneval/22,humaneval/22'");
    b.screenshot(&artifacts().join("replay_instances_1280.png"));

    // The drill-down shows the response, the judge's reasoning on a judged spec.
    b.eval("document.querySelector('#view-instances .vrow').click()");
    b.wait_for("!document.getElementById('drill').hidden");
    let response = text(&mut b, "#drill-body pre.response");
    let model = text(&mut b, "#drill-body dl.kv dd");
    let recorded = raw_response(&results, &model, "humaneval/22");
    assert_eq!(
        response, recorded,
        "the drill-down shows {model}'s response"
    );
    b.screenshot(&artifacts().join("replay_drill_1280.png"));
    b.eval("document.getElementById('drill-close').click()");
    set_filter(&mut b, "q", "t05_summarization_judged/0");
    b.wait_for("document.querySelector('#view-instances .vrow .id').textContent === 't05_summarization_judged/0'");
    b.eval("document.querySelector('#view-instances .vrow').click()");
    b.wait_for("!document.getElementById('drill').hidden");
    let reasoning = b.eval("document.querySelectorAll('#drill-body pre.reasoning').length");
    assert!(reasoning.as_u64().unwrap() > 0, "judge reasoning shown");
    assert_clean(&b);

    // A phone-sized screen: the same page, laid out narrow.
    open(&mut b, &html, 390, "replay_overview");
    let overflow = b.eval("document.documentElement.scrollWidth <= window.innerWidth + 1");
    assert_eq!(
        overflow,
        json!(true),
        "no sideways scrolling of the page at 390 px"
    );

    // The golden view: a transcript that says smollm2 passed t01/0 with another
    // answer shows one flip, with a word diff of the two responses.
    let transcript = golden.join("t01_simple_logic/smollm2.jsonl");
    let edited: Vec<String> = std::fs::read_to_string(&transcript)
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if v["instance"] == 0 {
                v["passed"] = json!(true);
                v["score"] = json!(1.0);
                v["response"] = json!("Ответ: Иван бегает медленнее всех.");
            }
            v.to_string()
        })
        .collect();
    std::fs::write(&transcript, edited.join("\n") + "\n").unwrap();
    let run_id = std::fs::read_dir(results.join("runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name();
    let output = harness(&root())
        .arg("report")
        .arg(&run_id)
        .arg("--results")
        .arg(&results)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let rebuilt = report(&results, "html");
    open(&mut b, &rebuilt, 1280, "replay_golden");
    b.eval("document.querySelector('#tabs [data-view=golden]').click()");
    let cell = b.eval(
        "[...document.querySelectorAll('#view-golden tbody tr')].map(r => [...r.cells].map(c => c.textContent).join('|'))\
         .filter(r => r.startsWith('smollm2|t01_simple_logic|'))",
    );
    assert_eq!(cell, json!(["smollm2|t01_simple_logic|10|1|0|1|0"]));
    b.wait_for("document.querySelectorAll('#view-golden .vrow').length === 1");
    b.eval("document.querySelector('#view-golden .vrow').click()");
    b.wait_for("!document.getElementById('drill').hidden");
    let diff = b.eval(
        "[document.querySelectorAll('#drill-body pre.diff del').length > 0, \
          document.querySelectorAll('#drill-body pre.diff ins').length > 0, \
          document.querySelector('#drill-body').textContent.includes('the verdict flipped')]",
    );
    assert_eq!(diff, json!([true, true, true]));
    b.screenshot(&artifacts().join("replay_golden_drill_1280.png"));
    assert_clean(&b);
}

/// `model`'s recorded response to `id`, from the raw results.
fn raw_response(results: &Path, model: &str, id: &str) -> String {
    let dir = results.join("raw");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let records: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for r in records.as_array().unwrap() {
            if r["model_name"] == model && r["test_id"] == id {
                return r["llm_response"].as_str().unwrap().to_owned();
            }
        }
    }
    panic!("no raw record of {model} for {id}")
}

fn count_records(json: &Value) -> usize {
    json["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["total"]["total"].as_u64().unwrap_or(0) as usize)
        .sum()
}

fn count_passed(json: &Value) -> usize {
    json["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["total"]["passed"].as_u64().unwrap_or(0) as usize)
        .sum()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, target).unwrap();
        }
    }
}

/// Hostile answers: markup, an event handler and raw terminal escapes.
const HOSTILE: &str = "</script><script>window.__pwned = 1</script>\
    <img src=x onerror=\"window.__pwned = 2\"> \u{1b}[31mred\u{1b}[0m <b>bold</b>";

#[test]
fn hostile_answers_render_as_text() {
    let Some(mut b) = Browser::launch() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("results/runs/r1");
    std::fs::create_dir_all(&run_dir).unwrap();
    let fixture = root().join("tests/fixtures/journals/two_models.jsonl");
    let mut lines = Vec::new();
    for line in std::fs::read_to_string(fixture).unwrap().lines() {
        let Ok(mut r) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        r["response"] = json!(HOSTILE);
        r["detail"] = json!(HOSTILE);
        r["answer"] = json!("<script>window.__pwned = 3</script>");
        lines.push(r.to_string());
    }
    let journal = run_dir.join("journal.jsonl");
    std::fs::write(&journal, lines.join("\n") + "\n").unwrap();
    let ctx_models = vec!["qwen3:8b".to_owned()];
    let specs = vec![harness::report::SpecInfo {
        title: "<img src=x onerror=\"window.__pwned = 4\">".into(),
        ..harness::report::SpecInfo::plain("t01_simple_logic")
    }];
    let journals = [journal];
    let ctx = harness::report::ReportContext {
        run_ids: &["r1".to_owned()],
        timestamp: "2026-11-21 22:30:00",
        file_stamp: "hostile",
        results_dir: &dir.path().join("results"),
        models: &ctx_models,
        model_ids: &Default::default(),
        specs: &specs,
        formats: &[],
        journals: &journals,
        color: false,
        baseline: None,
        golden: None,
    };
    let out = harness::report::write_reports(&ctx).unwrap();
    open(&mut b, &out.html, 1280, "hostile_overview");
    b.eval("document.querySelector('#tabs [data-view=instances]').click()");
    b.wait_for("document.querySelectorAll('#view-instances .vrow').length > 0");
    b.eval("document.querySelector('#view-instances .vrow').click()");
    b.wait_for("!document.getElementById('drill').hidden");
    b.screenshot(&artifacts().join("hostile_drill_1280.png"));
    let response = text(&mut b, "#drill-body pre.response");
    assert!(
        response.contains("<script>window.__pwned = 1</script>"),
        "{response}"
    );
    assert!(response.contains("<img src=x onerror="), "{response}");
    assert!(
        response.contains("␛[31mred␛[0m"),
        "escapes shown, not obeyed: {response}"
    );
    let injected = b.eval(
        "[window.__pwned === undefined, document.querySelectorAll('main img, #drill img, main script, #drill script, b').length]",
    );
    assert_eq!(
        injected,
        json!([true, 0]),
        "no markup from the data became elements"
    );
    b.eval("document.querySelector('#tabs [data-view=categories]').click()");
    assert_eq!(b.eval("window.__pwned === undefined"), json!(true));
    assert_clean(&b);
}

/// Sample 0 of every instance answers wrong, the others right: every instance is flaky.
fn seeded(request: &Request) -> Reply {
    let seed = request.body["seed"].as_u64().unwrap_or(0);
    let value: i64 = common::fake_server::expression(&request.prompt)
        .and_then(|e| common::fake_server::eval(&e))
        .unwrap_or(0);
    let answer = if seed == 5 { value + 10 } else { value };
    Reply::Text(format!("the answer is {answer}"))
}

const SAMPLED: &str = r#"
id = "sampled"
title = "Sampled sums"
runs = 3

[generate]
script = '''
#{ expr: `${index} + 1`, answer: index + 1, parity: if index % 2 == 0 { "even" } else { "odd" } }
'''

[prompt]
user = "Вычисли значение выражения: {{ expr }}"

[sampling]
n = 4
temperature = 0.7
seed = 5
k = [1, 2, 4]

[[verify]]
rule = "numeric"
extract = "last_number"
expected = "answer"

[report]
group_by = "parity"
"#;

#[test]
fn sampled_spec_report_shows_pass_at_k_beside_pass_hat_k_and_flaky_instances() {
    let Some(mut b) = Browser::launch() else {
        return;
    };
    let fake = FakeServer::start(seeded);
    let ws = fake_workspace(&fake, "sampled.toml", SAMPLED);
    let (code, out) = ws.run(&["specs/sampled.toml", "-m", "fake"]);
    assert_eq!(code, 0, "{out}");
    let html = report(&ws.path().join("results"), "html");
    open(&mut b, &html, 1280, "sampled_overview");
    b.eval("document.querySelector('#tabs [data-view=categories]').click()");
    let heads =
        b.eval("[...document.querySelectorAll('#view-categories th')].map(t => t.textContent)");
    for head in ["pass@2", "pass^2", "pass@4", "pass^4"] {
        assert!(heads.as_array().unwrap().contains(&json!(head)), "{heads}");
    }
    // pass@2 = 1, pass^2 = C(3,2)/C(4,2) = 50%: three of four samples pass.
    let row = b.eval(
        "[...document.querySelectorAll('#view-categories h4 + .scroll tbody tr td')].map(t => t.textContent)",
    );
    let cells: Vec<String> = row
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    assert!(
        cells.windows(3).any(|w| w == ["100.0%", "100.0%", "50.0%"]),
        "{cells:?}"
    );
    b.screenshot(&artifacts().join("sampled_categories_1280.png"));
    b.eval("document.querySelector('#tabs [data-view=flaky]').click()");
    b.wait_for("document.querySelectorAll('#view-flaky table.flaky tbody tr').length === 3");
    let first = text(&mut b, "#view-flaky table.flaky tbody tr td");
    assert_eq!(first, "sampled/0");
    b.eval("document.querySelector('#view-flaky table.flaky tbody tr').click()");
    b.wait_for("!document.getElementById('drill').hidden");
    let samples = b.eval("document.querySelectorAll('#drill-body .samples button').length");
    assert_eq!(
        samples,
        json!(4),
        "every sample of the instance is one click away"
    );
    b.eval("document.querySelector('#tabs [data-view=instances]').click()");
    set_filter(&mut b, "status", "flaky");
    wait_count(&mut b, 12, 12);
    set_filter(&mut b, "status", "fail");
    wait_count(&mut b, 3, 12);
    open(&mut b, &html, 390, "sampled_overview");
    assert_clean(&b);
}
