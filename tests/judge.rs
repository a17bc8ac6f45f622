//! The `judge` rule through the real binary against a fake OpenAI server that
//! plays both the model under test and the judge: levels, normalized scores
//! and reasoning in records; re-asks of unreadable judgements, then judge
//! errors; the JSON schema on the wire; cached reruns and SIGKILL + resume
//! without a repeated judge request; judge and rubric in every report.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::common::fake_server::{FakeServer, Reply, Request};
use crate::common::report;
use crate::common::workspace::{Workspace, model_toml};
use serde_json::Value;

pub(crate) fn is_judge(r: &Request) -> bool {
    r.body["model"] == "judge-model"
}

/// The model answers every question the same way; the judge's level follows the question.
fn script(r: &Request) -> Reply {
    if !is_judge(r) {
        return Reply::Text("Ответ модели.".into());
    }
    let level = if r.prompt.contains("Эйфелев") {
        "4"
    } else if r.prompt.contains("фотосинтез") {
        // Unreadable on the first ask: the harness must ask again.
        if r.attempt == 0 {
            return Reply::Text("Думаю, что на четвёрку.".into());
        }
        "5"
    } else if r.prompt.contains("небо") {
        // Always outside the rubric: a judge error after three asks.
        "9"
    } else {
        "1"
    };
    Reply::Text(format!(
        "```json\n{{\"reasoning\": \"разбор\", \"level\": {level}}}\n```"
    ))
}

fn workspace(fake: &FakeServer) -> Workspace {
    workspace_with(fake, "concurrency = 1", "max_retries = 0")
}

/// The rubric spec, model `m` and judge `j` on `fake`, with these `[models]` settings each.
pub(crate) fn workspace_with(fake: &FakeServer, model: &str, judge: &str) -> Workspace {
    let ws = Workspace::new();
    ws.copy_spec("rubric_quality.toml")
        .copy_spec("rubrics/quality_5.toml");
    let base = fake.openai_base();
    let config = model_toml("m", "openai", "model-under-test", &base, model)
        + model_toml("j", "openai", "judge-model", &base, judge).as_str();
    ws.write("harness.toml", &config);
    ws
}

/// `harness run` arguments: the rubric spec, model `m` judged by `j`, `runs` instances.
pub(crate) fn judged_run(runs: &str) -> [&str; 7] {
    [
        "specs/rubric_quality.toml",
        "-m",
        "m",
        "--judge",
        "j",
        "--runs",
        runs,
    ]
}

fn judge_of(record: &Value) -> &Value {
    &record["rules"][0]["judge"]
}

#[test]
fn judged_run_scores_levels_reasks_and_records_judge_errors_then_reruns_from_cache() {
    let fake = FakeServer::start(script);
    let ws = workspace(&fake);
    let args = judged_run("4");
    let (code, out) = ws.run(
        &[
            &args[..],
            &["--format", "csv", "--format", "junit", "--format", "json"],
        ]
        .concat(),
    );
    assert_eq!(code, 0, "{out}");
    let records = ws.last_journal();
    assert_eq!(records.len(), 4);
    let by_instance: BTreeMap<u64, &Value> = records
        .iter()
        .map(|r| (r["instance"].as_u64().unwrap(), r))
        .collect();

    // Level 4 of 1-5 is (4 - 1) / (5 - 1) = 0.75.
    let eiffel = by_instance[&0];
    assert_eq!(eiffel["score"], 0.75);
    assert_eq!(eiffel["passed"], true);
    assert_eq!(judge_of(eiffel)["level"], 4.0);
    assert_eq!(judge_of(eiffel)["reasoning"][0], "разбор");
    assert_eq!(judge_of(eiffel)["judge"], "j");
    assert_eq!(judge_of(eiffel)["rubric"].as_str().unwrap().len(), 12);

    // Re-asked once, then level 5.
    let photo = by_instance[&1];
    assert_eq!(photo["score"], 1.0);
    assert_eq!(judge_of(photo)["attempts"], 2);
    let retries = photo["retries"].to_string();
    assert!(retries.contains("holds no JSON object"), "{retries}");

    // Never a level inside the rubric: a judge error, not a score.
    let sky = by_instance[&2];
    assert_eq!(sky["failure"], "judge_error");
    assert_eq!(sky["score"], 0.0);
    assert!(
        sky["detail"]
            .as_str()
            .unwrap()
            .contains("level 9 is not in the rubric")
    );
    assert_eq!(judge_of(sky)["attempts"], 3);
    assert!(judge_of(sky)["level"].is_null());

    // Every judge request asks for the rubric's levels through a JSON schema.
    let judge_requests: Vec<Request> = fake.requests().into_iter().filter(is_judge).collect();
    assert_eq!(judge_requests.len(), 1 + 2 + 3 + 1);
    for r in &judge_requests {
        let format = &r.body["response_format"];
        assert_eq!(format["type"], "json_schema", "{format}");
        let levels = &format["json_schema"]["schema"]["properties"]["level"]["enum"];
        assert_eq!(levels, &serde_json::json!([5, 4, 3, 2, 1]));
        assert!(r.prompt.contains("Эталонный ответ") && r.prompt.contains("Ответ модели."));
    }

    // The reports name the judge and the rubric.
    let results = ws.path().join("results");
    let md = report(&results, "", "md");
    let hash = judge_of(eiffel)["rubric"].as_str().unwrap();
    assert!(md.contains("## Judge Scores") && md.contains(hash), "{md}");
    let csv = report(&results, "", "csv");
    assert!(csv.contains(&format!("рубрика:j@{hash}=3/1")), "{csv}");
    assert!(out.contains("judge j on m / "), "{out}");
    let xml = report(&results, "", "xml");
    assert!(
        xml.contains(&format!(r#"name="judge:рубрика" value="j rubric {hash}""#)),
        "{xml}"
    );

    // A rerun is a new run answered entirely from the cache: no request at all.
    let before = fake.count();
    let (code, out) = ws.run(&args);
    assert_eq!(code, 0, "{out}");
    assert_eq!(fake.count(), before, "the rerun asked again");
    let again = ws.last_journal();
    let scores = |rs: &[Value]| -> Vec<(u64, f64)> {
        let mut v: Vec<(u64, f64)> = rs
            .iter()
            .map(|r| {
                (
                    r["instance"].as_u64().unwrap(),
                    r["score"].as_f64().unwrap(),
                )
            })
            .collect();
        v.sort_by_key(|p| p.0);
        v
    };
    assert_eq!(scores(&again), scores(&records));
    assert!(again.iter().all(|r| r["judge_attempts"].is_null()));
}

#[test]
fn a_live_model_without_a_judge_is_refused_before_any_request() {
    let fake = FakeServer::start(script);
    let ws = workspace(&fake);
    let (code, out) = ws.run(&["specs/rubric_quality.toml", "-m", "m"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("--judge"), "{out}");
    assert_eq!(fake.count(), 0);
}

#[test]
fn a_killed_judged_run_resumes_without_repeating_an_answered_request() {
    // Slow answers, so the kill lands mid-run.
    let fake = FakeServer::start(|r| Reply::slow(150, script(r)));
    let ws = workspace(&fake);
    let mut child = ws
        .run_cmd(&judged_run("6"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while ws.run_dirs().is_empty() || ws.last_journal().len() < 2 {
        assert!(Instant::now() < deadline, "no progress");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let done = ws.last_journal().len();
    assert!(done < 6, "the run finished before the kill");
    let (code, out) = ws.run(&["--resume", "latest"]);
    assert_eq!(code, 0, "{out}");
    let records = ws.last_journal();
    assert_eq!(records.len(), 6);
    // Without a kill: 6 model requests and 9 judge requests (one re-ask, one judge
    // error after three asks). At most the request in flight at the kill is asked
    // twice; everything answered came from the cache on resume.
    assert!(fake.count() <= 15 + 1, "{} requests", fake.count());
}
