//! What a run costs, through the real binary against the fake server, which
//! reports usage on every answer (17 prompt tokens, 4 of them from its prompt
//! cache, and 5 generated): costs per record and per cell against a table
//! computed by hand, cache hits as saved cost, the judge apart, an hourly
//! price, `--max-cost` stopping within the in-flight bound and `--resume`
//! finishing without a repeated request, `--max-tokens-total`, the refusal of
//! a budget over an unpriced model, LiteLLM price files and `--dry-run`; the
//! HTML report's cost-per-correct-answer chart in headless Chromium.

use std::collections::BTreeSet;
use std::time::Instant;

use crate::common::browser::{Browser, artifacts};
use crate::common::fake_server::{CACHED_TOKENS, FakeServer, Reply, Request};
use crate::common::workspace::{Workspace, model_toml};
use crate::common::{report, root};
use serde_json::Value;

/// Per million tokens: 13 fresh prompt tokens × 2 + 4 cached × 0.5 + 5 generated × 8 = 68.
const CHEAP: &str = "price = { input = 2.0, output = 8.0, cached_input = 0.5 }";
const CHEAP_ANSWER: f64 = 68e-6;
/// 17 prompt tokens × 10 (no cached price: the input price) + 5 × 30 = 320.
const DEAR: &str = "price = { input = 10.0, output = 30.0 }";
const DEAR_ANSWER: f64 = 320e-6;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

/// A workspace with t06 and t01 and the models `cheap`, `dear` and `free` (no price) on `fake`.
fn three_models(fake: &FakeServer) -> Workspace {
    let ws = Workspace::new();
    ws.copy_spec("t06_mathematics.toml")
        .copy_spec("t01_simple_logic.toml");
    let base = fake.openai_base();
    let config = model_toml("cheap", "openai", "cheap-model", &base, CHEAP)
        + model_toml("dear", "openai", "dear-model", &base, DEAR).as_str()
        + model_toml("free", "openai", "free-model", &base, "").as_str();
    ws.write("harness.toml", &config);
    ws
}

/// `metrics.cost` of (model, spec) in a JSON report; `None` spec: the model's total.
fn cost_of<'a>(json: &'a Value, model: &str, spec: Option<&str>) -> &'a Value {
    let m = json["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == model)
        .unwrap_or_else(|| panic!("no model {model}"));
    match spec {
        None => &m["total"]["cost"],
        Some(spec) => {
            let cells = m["specs"].as_array().unwrap();
            let cell = cells.iter().find(|c| c["spec"] == spec).unwrap();
            &cell["metrics"]["cost"]
        }
    }
}

const ALL: [&str; 8] = [
    "specs/", "-m", "cheap", "-m", "dear", "-m", "free", "--runs",
];

#[test]
fn costs_per_record_and_cell_match_the_hand_computed_table_and_cache_hits_are_saved() {
    let fake = FakeServer::healthy();
    let ws = three_models(&fake);
    let out = ws.run_ok(&[&ALL[..], &["3", "--format", "json", "--format", "csv"]].concat());
    let journal = ws.last_journal();
    assert_eq!(journal.len(), 18, "3 models × 2 specs × 3 instances");
    for r in &journal {
        let expected = match r["model"].as_str().unwrap() {
            "cheap" => Some(CHEAP_ANSWER),
            "dear" => Some(DEAR_ANSWER),
            _ => None,
        };
        assert_eq!(r["tokens_cached"], CACHED_TOKENS, "{r:#}");
        match expected {
            Some(cost) => assert!(close(r["cost"]["amount"].as_f64().unwrap(), cost), "{r:#}"),
            // No price: no cost, never 0.
            None => assert!(r.get("cost").is_none(), "{r:#}"),
        }
        assert!(
            r["cost"].get("estimated").is_none(),
            "usage was reported: {r:#}"
        );
    }
    // The table by hand: a cell is 3 answers, a model 2 cells, the run both priced models.
    let json: Value =
        serde_json::from_str(&report(&ws.path().join("results"), "report_", "json")).unwrap();
    let table = [
        ("cheap", Some("t06_mathematics"), 0.000204),
        ("cheap", Some("t01_simple_logic"), 0.000204),
        ("cheap", None, 0.000408),
        ("dear", Some("t06_mathematics"), 0.00096),
        ("dear", Some("t01_simple_logic"), 0.00096),
        ("dear", None, 0.00192),
    ];
    for (model, spec, amount) in table {
        let cost = cost_of(&json, model, spec);
        assert!(
            close(cost["amount"].as_f64().unwrap(), amount),
            "{model} {spec:?}: {cost:#}"
        );
        assert_eq!(cost["saved"], 0.0, "{cost:#}");
    }
    assert!(cost_of(&json, "free", None).is_null());
    assert_eq!(json["cost"]["currency"], "USD");
    assert!(
        close(json["cost"]["amount"].as_f64().unwrap(), 0.002328),
        "{:#}",
        json["cost"]
    );
    // The terminal: a cost table with "—" for the unpriced model, and the run's total.
    assert!(out.contains("cost (USD)"), "{out}");
    let table: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("cost (USD)"))
        .take_while(|l| !l.is_empty() && !l.starts_with("run cost"))
        .collect();
    // Models as rows, or (pivoted to fit 80 columns) as columns, `free` the last.
    let unpriced = match table.iter().find(|l| l.starts_with("free ")) {
        Some(row) => row.contains('—'),
        None => {
            table[0].split_whitespace().last() == Some("free")
                && table[2..].iter().all(|l| l.trim_end().ends_with('—'))
        }
    };
    assert!(unpriced, "{out}");
    assert!(out.contains("run cost: 0.002328 USD"), "{out}");
    let csv = report(&ws.path().join("results"), "report_", "csv");
    assert!(csv.lines().next().unwrap().contains(",cost,"), "{csv}");
    let md = report(&ws.path().join("results"), "report_", "md");
    assert!(md.contains("## Cost\n"), "{md}");
    html_cost_per_correct(&ws, &json);

    // Again: every answer from the response cache costs 0 and shows what it saved.
    let sent = fake.count();
    let out = ws.run_ok(&[&ALL[..], &["3", "--format", "json"]].concat());
    assert_eq!(fake.count(), sent);
    let json: Value =
        serde_json::from_str(&report(&ws.path().join("results"), "report_", "json")).unwrap();
    let cheap = cost_of(&json, "cheap", None);
    assert_eq!(cheap["amount"], 0.0, "{cheap:#}");
    assert!(
        close(cheap["saved"].as_f64().unwrap(), 0.000408),
        "{cheap:#}"
    );
    assert!(out.contains("saved by the cache 0.002328 USD"), "{out}");
}

/// The HTML report's cost-per-correct-answer chart, in headless Chromium:
/// one bar per priced model with a correct answer, cheapest first, each
/// showing the JSON report's `per_correct`; the unpriced model has none.
fn html_cost_per_correct(ws: &Workspace, json: &Value) {
    let Some(mut b) = Browser::launch() else {
        return;
    };
    let page = ws
        .path()
        .join("results/reports")
        .join(report_name(ws, "html"));
    b.open(&page);
    assert_eq!(b.errors(), Vec::<String>::new(), "console errors");
    let mut expected: Vec<(f64, String)> = ["cheap", "dear"]
        .iter()
        .map(|m| {
            (
                cost_of(json, m, None)["per_correct"].as_f64().unwrap(),
                m.to_string(),
            )
        })
        .collect();
    expected.sort_by(|a, b| a.0.total_cmp(&b.0));
    let expected: Vec<String> = expected
        .iter()
        .map(|(c, m)| format!("{m}={c:.6}"))
        .collect();
    let shown = b.eval(
        "[...document.querySelectorAll('[data-chart=cost-per-correct] .bar')].map(b => b.dataset.model + '=' + b.querySelector('.value').textContent).join()",
    );
    assert_eq!(shown.as_str().unwrap(), expected.join(","));
    let headings = b.eval(
        "[...document.querySelectorAll('#view-overview h2')].map(h => h.textContent).join('|')",
    );
    assert!(
        headings
            .as_str()
            .unwrap()
            .contains("Total against the cost of answering"),
        "{headings}"
    );
    b.screenshot(&artifacts().join("costs_overview_1280.png"));
}

/// The file name of the newest `report_*.EXT` under results/reports.
fn report_name(ws: &Workspace, ext: &str) -> String {
    let mut names: Vec<String> = std::fs::read_dir(ws.path().join("results/reports"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("report_") && n.ends_with(&format!(".{ext}")))
        .collect();
    names.sort();
    names.pop().expect("a report")
}

#[test]
fn the_judge_costs_apart_from_the_model() {
    let fake = FakeServer::start(|r: &Request| {
        if crate::judge::is_judge(r) {
            Reply::Text("{\"reasoning\": \"ok\", \"level\": 4}".into())
        } else {
            Reply::Text("Ответ модели.".into())
        }
    });
    let ws = crate::judge::workspace_with(&fake, CHEAP, DEAR);
    let args = crate::judge::judged_run("2");
    ws.run_ok(&[&args[..], &["--format", "json"]].concat());
    for r in ws.last_journal() {
        assert!(
            close(r["cost"]["amount"].as_f64().unwrap(), CHEAP_ANSWER),
            "{r:#}"
        );
        assert!(
            close(r["judge_cost"]["amount"].as_f64().unwrap(), DEAR_ANSWER),
            "{r:#}"
        );
    }
    let json: Value =
        serde_json::from_str(&report(&ws.path().join("results"), "report_", "json")).unwrap();
    let total = cost_of(&json, "m", None);
    assert!(
        close(total["amount"].as_f64().unwrap(), 2.0 * CHEAP_ANSWER),
        "{total:#}"
    );
    assert!(
        close(total["judge"].as_f64().unwrap(), 2.0 * DEAR_ANSWER),
        "{total:#}"
    );
}

#[test]
fn an_hourly_price_bills_the_wall_time_of_the_run() {
    let fake = FakeServer::start(|_: &Request| Reply::slow(60, Reply::Correct));
    // 3600 an hour: one per second.
    let ws = Workspace::with_fake(
        "t06_mathematics.toml",
        &fake,
        "concurrency = 1\nprice = { per_hour = 3600.0 }",
    );
    let started = Instant::now();
    ws.run_ok(&["specs/t06_mathematics.toml", "-m", "fake", "--runs", "4"]);
    let elapsed = started.elapsed().as_secs_f64();
    let costs: Vec<f64> = ws
        .last_journal()
        .iter()
        .map(|r| r["cost"]["amount"].as_f64().unwrap())
        .collect();
    let total: f64 = costs.iter().sum();
    assert!(
        costs.iter().all(|&c| c > 0.0),
        "every answer took server time: {costs:?}"
    );
    // One at a time, 60 ms each: at least 0.24 s, at most the whole run.
    assert!(total >= 0.24 && total <= elapsed, "{total} of {elapsed} s");
}

/// The price of the budget tests: one price per token, so the worst case
/// ((prompt + max_tokens) × 8 per million) is near the real cost (22 × 8 per million).
const FLAT: &str =
    "price = { input = 8.0, output = 8.0 }\nconcurrency = 2\noptions = { max_tokens = 10 }";
const FLAT_ANSWER: f64 = 176e-6;
const RUNS: u64 = 12;

/// The worst case the harness reserves for each t06 instance.
fn worst_cases(ws: &Workspace) -> Vec<f64> {
    let spec = harness::Spec::load(&ws.path().join("specs/t06_mathematics.toml")).unwrap();
    (0..RUNS)
        .map(|i| {
            let messages = spec.instance(i).unwrap().messages;
            (harness::prompt_tokens(&messages) + 10) as f64 * 8e-6
        })
        .collect()
}

#[test]
fn a_budget_stops_within_the_in_flight_bound_and_resume_completes_without_repeats() {
    let fake = FakeServer::start(|_: &Request| Reply::slow(150, Reply::Correct));
    let ws = Workspace::with_fake("t06_mathematics.toml", &fake, FLAT);
    let worst = worst_cases(&ws).into_iter().fold(0.0, f64::max);
    let budget = 2.0 * worst + 4.0 * FLAT_ANSWER;
    let runs = RUNS.to_string();
    let max_cost = budget.to_string();
    let args = [
        "specs/t06_mathematics.toml",
        "-m",
        "fake",
        "--runs",
        &runs,
        "--max-cost",
        &max_cost,
    ];
    let (code, out) = ws.run(&args);
    assert_eq!(code, 5, "the budget's own exit code:\n{out}");
    assert!(out.contains("budget reached: spent "), "{out}");
    let journal = ws.last_journal();
    // Nothing lost: every request the server answered is in the journal.
    assert_eq!(journal.len(), fake.count(), "{out}");
    assert!((1..RUNS as usize).contains(&journal.len()), "{out}");
    let spent: f64 = journal
        .iter()
        .map(|r| r["cost"]["amount"].as_f64().unwrap())
        .sum();
    // Within the bound: never past the budget, and stopped only when 2 requests'
    // worst case (the concurrency) no longer fit.
    assert!(spent <= budget, "{spent} > {budget}");
    assert!(
        budget - spent < 2.0 * worst,
        "stopped early: {spent} of {budget}"
    );
    assert!(
        out.contains(&format!("spent {} USD", harness::money(spent))),
        "{out}"
    );

    let (code, out) = ws.run(&["--resume", "latest", "--max-cost", "1"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("budget: spent "), "{out}");
    let journal = ws.last_journal();
    let keys: BTreeSet<u64> = journal
        .iter()
        .map(|r| r["instance"].as_u64().unwrap())
        .collect();
    assert_eq!((journal.len(), keys.len()), (RUNS as usize, RUNS as usize));
    // No request repeated: one per instance, each prompt asked once.
    assert_eq!(fake.count(), RUNS as usize);
    assert!(fake.requests().iter().all(|r| r.attempt == 0));
}

#[test]
fn a_token_budget_stops_the_run_without_prices() {
    let fake = FakeServer::healthy();
    let ws = Workspace::with_fake("t06_mathematics.toml", &fake, "concurrency = 1");
    let args = "specs/t06_mathematics.toml -m fake --runs 6 --max-tokens-total 1";
    let args: Vec<&str> = args.split(' ').collect();
    ws.run_expect(&args, 5, &["used 0 tokens of --max-tokens-total 1"]);
    assert_eq!(fake.count(), 0);
}

#[test]
fn a_cost_budget_over_an_unpriced_model_is_refused_before_any_request() {
    let fake = FakeServer::healthy();
    let ws = three_models(&fake);
    let (code, out) = ws.run(&[&ALL[..], &["2", "--max-cost", "5"]].concat());
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("needs a price for every model, and `free` has none"),
        "{out}"
    );
    assert_eq!(fake.count(), 0);
    assert!(
        !ws.path().join("results/runs").exists(),
        "no run was started"
    );
}

#[test]
fn a_litellm_price_file_prices_the_models_it_names() {
    let fake = FakeServer::healthy();
    let ws = Workspace::with_fake("t06_mathematics.toml", &fake, "");
    let prices = root().join("tests/fixtures/prices/model_prices_and_context_window.json");
    let prices = prices.to_str().unwrap();
    // fake-model's entry is the CHEAP price per token: 68 per million an answer.
    let args = [
        "specs/t06_mathematics.toml",
        "-m",
        "fake",
        "--runs",
        "2",
        "--prices",
        prices,
        "--max-cost",
        "1",
    ];
    ws.run_ok(&args);
    for r in ws.last_journal() {
        assert!(
            close(r["cost"]["amount"].as_f64().unwrap(), CHEAP_ANSWER),
            "{r:#}"
        );
    }
    ws.write(
        "bad.json",
        "{\n  \"fake-model\": {\"input_cost_per_token\": \"cheap\"}\n}\n",
    );
    let args = [
        "specs/t06_mathematics.toml",
        "-m",
        "fake",
        "--prices",
        "bad.json",
    ];
    ws.run_expect(&args, 2, &["bad.json:2:"]);
}

#[test]
fn a_dry_run_prints_requests_and_a_cost_estimate_and_sends_nothing() {
    let fake = FakeServer::healthy();
    let ws = three_models(&fake);
    let out = ws.run_ok(&[&ALL[..], &["3", "--dry-run"]].concat());
    assert_eq!(fake.count(), 0);
    assert!(!ws.path().join("results/runs").exists());
    let cheap = out.lines().find(|l| l.starts_with("cheap / t06")).unwrap();
    let cells: Vec<&str> = cheap.split_whitespace().collect();
    // 3 requests, no re-asks (text answers), each at most 256 tokens (t06's max_tokens).
    assert_eq!((cells[3], cells[4], cells[6]), ("3", "0", "768"), "{cheap}");
    // A wide table is split into column groups, each repeating the label.
    let free = out.lines().filter(|l| l.starts_with("free "));
    assert!(free.clone().any(|l| l.contains('—')), "{out}");
    assert!(out.contains("dry run: 18 requests"), "{out}");
    assert!(out.contains("Nothing was sent."), "{out}");
    assert!(out.lines().all(|l| l.chars().count() <= 80), "{out}");
}

/// A JSON spec whose every answer fails to parse: each request is asked
/// again up to its `attempts`, and each ask is billed. Every instance's
/// prompt differs, so no request is answered from another's cache entry.
const JSON_SPEC: &str = include_str!("fixtures/specs/json_asks.toml");

#[test]
fn a_dry_run_bounds_the_re_asks_a_run_makes() {
    let fake = FakeServer::start(|_| Reply::Text("not json at all".to_owned()));
    let ws = Workspace::new();
    ws.write("specs/json_asks.toml", JSON_SPEC);
    ws.write(
        "harness.toml",
        &model_toml("cheap", "openai", "cheap-model", &fake.openai_base(), CHEAP),
    );
    let out = ws.run_ok(&["specs/", "-m", "cheap", "--dry-run"]);
    // One model and spec: the table is pivoted, one line per number.
    let value = |name: &str| {
        let line = out.lines().find(|l| l.starts_with(name));
        let line = line.unwrap_or_else(|| panic!("{name}: {out}"));
        line.split_whitespace().last().unwrap().to_owned()
    };
    // 4 requests, 2 more asks each at most; 12 answers of at most 16 tokens.
    assert_eq!(value("requests"), "4", "{out}");
    assert_eq!(value("re-asks"), "8", "{out}");
    assert_eq!(value("max output tokens"), "192", "{out}");
    let flat = out.replace("\n  ", " ");
    assert!(
        flat.contains("4 requests (0 to the judge) and at most 8 re-asks"),
        "{out}"
    );
    assert_eq!(fake.count(), 0);
    let (code, run) = ws.run(&["specs/", "-m", "cheap", "--allow-errors"]);
    assert_eq!(code, 0, "{run}");
    assert_eq!(fake.count(), 12, "every request asked 3 times: {run}");
}
