//! `[sampling]` through the real binary against the fake server: n samples
//! per instance as n journal lines with derived seeds, OpenAI `n` batching with
//! honest token accounting, per-sample cache keys, per-sample resume, and
//! pass@k in the reports.

use std::collections::BTreeSet;

use crate::common::fake_server::{FakeServer, Reply, Request, eval, expression};
use crate::common::workspace::{Workspace, model_toml};
use crate::common::{harness, report, run};
use serde_json::Value;

/// Arithmetic instances `index + 1`, four samples each, seeded from 5.
pub(crate) const SPEC: &str = include_str!("fixtures/specs/sampled.toml");

/// The request's seed and the right value of its expression (0 when absent).
fn seed_and_value(request: &Request) -> (u64, i64) {
    let seed = request.body["seed"].as_u64().unwrap_or(0);
    let value = expression(&request.prompt)
        .and_then(|e| eval(&e))
        .unwrap_or(0);
    (seed, value)
}

/// Answers carry the request's seed, so a record shows which request produced it;
/// sample 0 (seed 5) answers wrong, every other sample right.
pub(crate) fn seeded(request: &Request) -> Reply {
    let (seed, value) = seed_and_value(request);
    let answer = if seed == 5 { value + 10 } else { value };
    Reply::Text(format!("seed {seed}: the answer is {answer}"))
}

fn setup(fake: &FakeServer, extra: &str) -> Workspace {
    let ws = Workspace::new();
    ws.write("specs/sampled.toml", SPEC);
    ws.write(
        "harness.toml",
        &model_toml("fake", "openai", "fake-model", &fake.openai_base(), extra),
    );
    ws
}

fn run_sampled(ws: &Workspace, extra: &[&str]) -> (String, Vec<Value>) {
    let mut args = vec!["specs/sampled.toml", "-m", "fake"];
    args.extend_from_slice(extra);
    let out = ws.run_ok(&args);
    (out, ws.last_journal())
}

/// (instance, sample) of every record, asserting none repeats.
fn keys(records: &[Value]) -> BTreeSet<(u64, u64)> {
    let keys: BTreeSet<(u64, u64)> = records
        .iter()
        .map(|r| {
            (
                r["instance"].as_u64().unwrap(),
                r["sample"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(keys.len(), records.len(), "a key is repeated: {records:#?}");
    keys
}

#[test]
fn separate_requests_give_one_record_per_sample_with_derived_seeds_and_a_cached_rerun() {
    let fake = FakeServer::start(seeded);
    let ws = setup(&fake, "timeout_secs = 5");
    let (out, records) = run_sampled(&ws, &[]);
    assert_eq!(records.len(), 12, "3 instances x 4 samples");
    assert_eq!(keys(&records).len(), 12);
    assert_eq!(fake.count(), 12, "max_n = 1: one request per sample");
    assert!(fake.requests().iter().all(|r| r.body.get("n").is_none()));
    for r in &records {
        let sample = r["sample"].as_u64().unwrap();
        let response = r["response"].as_str().unwrap();
        assert!(
            response.starts_with(&format!("seed {}:", 5 + sample)),
            "sample {sample} must be asked with seed {}: got {response}",
            5 + sample
        );
        assert_eq!(r["passed"], sample != 0, "{r:#}");
        assert_eq!(
            r["tokens_out"], 5,
            "one choice per request: usage is its own"
        );
    }
    // mean accuracy 3/4; pass@1 = 0.75, pass@2 = 1 - C(1,2)/C(4,2) = 1; maj@4 = 1 (3 votes for the right one).
    assert!(out.contains("pass@1"), "{out}");
    let line = out
        .lines()
        .find(|l| {
            l.starts_with("fake") && l.contains("very good")
                || l.starts_with("fake") && l.contains("exceptional")
        })
        .unwrap_or_else(|| panic!("a comparison line for fake: {out}"));
    let cells: Vec<&str> = line.split_whitespace().collect();
    // pass^4 = C(3,4)/C(4,4) = 0: no problem passed all four samples.
    assert_eq!(
        &cells[..7],
        [
            "fake", "75.0%", "75.0%", "100.0%", "100.0%", "0.0%", "100.0%"
        ],
        "{out}"
    );
    // One model: nothing to be better than, so no best line.
    assert!(!out.contains("best:"), "{out}");

    let (out, again) = run_sampled(&ws, &[]);
    assert_eq!(fake.count(), 12, "a rerun makes zero requests");
    assert!(again.iter().all(|r| r["cached"] == true), "{out}");
    // The cache gave every sample its own answer, never sample 0's.
    for r in &again {
        let sample = r["sample"].as_u64().unwrap();
        assert!(
            r["response"]
                .as_str()
                .unwrap()
                .starts_with(&format!("seed {}:", 5 + sample))
        );
    }
}

#[test]
fn max_n_asks_samples_in_one_request_and_keeps_shared_usage_apart() {
    let fake = FakeServer::start(seeded);
    let ws = setup(&fake, "timeout_secs = 5\nmax_n = 4");
    let (_, records) = run_sampled(&ws, &[]);
    assert_eq!(records.len(), 12);
    assert_eq!(keys(&records).len(), 12);
    let requests = fake.requests();
    assert_eq!(requests.len(), 3, "one request of n = 4 per instance");
    assert!(
        requests
            .iter()
            .all(|r| r.body["n"] == 4 && r.body["seed"] == 5)
    );
    for r in &records {
        assert_eq!(
            r["tokens_out"],
            Value::Null,
            "no per-choice count is invented: {r:#}"
        );
        assert_eq!(r["shared"]["choices"], 4);
        assert_eq!(
            r["shared"]["tokens_out"], 5,
            "the server's figure is kept as reported"
        );
        assert_eq!(r["tokens_in"], 17);
    }
    let attempts: u64 = records
        .iter()
        .map(|r| r["attempts"].as_u64().unwrap())
        .sum();
    assert_eq!(attempts, 3, "a request's attempts are counted once");

    let (_, again) = run_sampled(&ws, &[]);
    assert_eq!(fake.count(), 3, "a rerun makes zero requests");
    assert_eq!(again.len(), 12);
}

#[test]
fn resume_asks_only_the_missing_samples() {
    let fake = FakeServer::start(seeded);
    let ws = setup(&fake, "timeout_secs = 5\nmax_n = 4");
    run_sampled(&ws, &[]);
    assert_eq!(fake.count(), 3);
    // Drop samples 1 and 3 of instance 2 from the journal, as an interrupted run would lack them.
    let dir = ws.run_dirs().pop().unwrap();
    let journal = dir.join("journal.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    let kept: String = text
        .lines()
        .filter(|l| {
            let r: Value = serde_json::from_str(l).unwrap();
            !(r["instance"] == 2 && (r["sample"] == 1 || r["sample"] == 3))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&journal, kept).unwrap();

    let out = ws.run_ok(&["--resume", "latest", "--no-cache"]);
    let requests = fake.requests();
    assert_eq!(
        requests.len(),
        4,
        "one more request, for instance 2 only: {out}"
    );
    let last = &requests[3];
    assert_eq!(
        (last.body["n"].as_u64(), last.body["seed"].as_u64()),
        (Some(2), Some(6)),
        "the two missing samples, asked with the first one's seed"
    );
    let records = ws.journal(&dir);
    assert_eq!(keys(&records).len(), 12);
}

#[test]
fn report_compares_models_against_a_baseline_with_tiers_in_every_format() {
    // `base` answers right only on samples with an even seed (5 + 1, 5 + 3): 50 %;
    // `good` always answers right: 100 %.
    let fake = FakeServer::start(|request| {
        let (seed, value) = seed_and_value(request);
        let right = request.body["model"] == "good-model" || seed % 2 == 0;
        let answer = if right { value } else { value + 1 };
        Reply::Text(format!("seed {seed}: {answer}"))
    });
    let ws = Workspace::new();
    ws.write("specs/sampled.toml", SPEC);
    ws.write(
        "harness.toml",
        &(model_toml("base", "openai", "base-model", &fake.openai_base(), "")
            + &*model_toml("good", "openai", "good-model", &fake.openai_base(), "")),
    );
    ws.run_ok(&["specs/sampled.toml", "-m", "base", "-m", "good"]);
    let mut cmd = harness(ws.path());
    cmd.args(["report", "latest", "--baseline", "base", "--format", "json"]);
    let (code, out) = run(&mut cmd);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("best: good (baseline: base)"), "{out}");
    // Too wide for 80 columns with pass^4 beside pass@k: models as columns
    // (base, then good).
    let row = |name: &str| {
        (out.lines().find(|l| l.starts_with(name)))
            .unwrap_or_else(|| panic!("the {name} row: {out}"))
    };
    assert!(
        row("vs baseline").ends_with("+0.0 pp     +50.0 pp"),
        "{out}"
    );
    assert!(row("tier").ends_with("exceptional  exceptional"), "{out}");
    assert!(row("pass^4").ends_with("0.0%       100.0%"), "{out}");

    let file = |ext: &str| report(&ws.path().join("results"), "", ext);
    let json: Value = serde_json::from_str(&file("json")).unwrap();
    let c = &json["comparisons"][0];
    assert_eq!(
        (
            c["spec"].as_str(),
            c["best"].as_str(),
            c["baseline"].as_str()
        ),
        (Some("sampled"), Some("good"), Some("base"))
    );
    let lines = c["models"].as_array().unwrap();
    assert_eq!(lines[0]["model"], "base");
    assert_eq!(lines[0]["pass_rate"], 0.5);
    // pass@2 of 2 right out of 4: 1 - C(2,2)/C(4,2) = 5/6.
    assert!((lines[0]["pass_at_k"]["2"].as_f64().unwrap() - 5.0 / 6.0).abs() < 1e-12);
    assert_eq!(lines[0]["vs_baseline"], 0.0);
    assert_eq!(lines[1]["tier"], "exceptional");
    assert_eq!(lines[1]["vs_baseline"], 0.5);
    assert_eq!(lines[1]["groups"]["parity"]["even"]["pass_at_k"]["4"], 1.0);
    // The report-only rule: one sample in four, whatever the model's answers.
    for line in lines {
        assert_eq!(
            line["alongside"]["says_seed_6"]["pass_rate"], 0.25,
            "{line:#}"
        );
        assert_eq!(
            line["alongside"]["says_seed_6"]["pass_at_k"]["4"], 1.0,
            "{line:#}"
        );
    }
    assert!(out.contains("says_seed_6 (report only)"), "{out}");
    let cell = &json["models"][0]["specs"][0]["metrics"]["sampled"];
    assert_eq!(cell["per_problem"][0]["n_correct"], 2);
    assert_eq!(cell["per_problem"][0]["n_total"], 4);
    let md = file("md");
    assert!(
        md.contains("**Best model:** `good`; baseline: `base`"),
        "{md}"
    );
    assert!(md.contains("+50.0 pp"), "{md}");
    let mut cmd = harness(ws.path());
    cmd.args(["report", "latest", "--baseline", "nobody"]);
    let (code, out) = run(&mut cmd);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("baseline `nobody` has no sampled results for sampled"),
        "{out}"
    );
    assert!(!out.contains("vs baseline"), "{out}");
}
