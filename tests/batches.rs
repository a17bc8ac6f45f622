//! `--batch` and `batch = true` against the fake OpenAI Batch API: answers
//! matched by `custom_id` (the fake writes results in reverse order), the
//! batch price, the batch's states on the progress lines, a SIGKILL while
//! polling that `--resume` survives with no new batch and no answer lost,
//! failed, expired and cancelled entries named and asked again on resume,
//! malformed and partial results files named, `--dry-run`, and providers
//! without a batch API refused.

use std::collections::BTreeMap;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::fake_server::{Ending, FakeBatchApi, LineReply};
use crate::common::workspace::{Workspace, model_toml};
use crate::common::{openapi, strings};

/// `fake` on the batch fake, priced so one answer costs a round amount.
const PRICE: &str = "price = { input = 1000.0, output = 2000.0 }";

fn workspace(api: &FakeBatchApi, batch: &str) -> Workspace {
    wire_workspace(api, "openai", batch)
}

fn wire_workspace(api: &FakeBatchApi, provider: &str, batch: &str) -> Workspace {
    let ws = Workspace::new();
    ws.copy_spec("t06_mathematics.toml");
    let extra = format!("max_retries = 0\ntimeout_secs = 10\n{PRICE}\n{batch}");
    ws.write(
        "harness.toml",
        &model_toml("fake", provider, "fake-model", &api.base(), &extra),
    );
    ws
}

fn args(runs: &str, extra: &[&str]) -> Vec<String> {
    let base = ["specs/t06_mathematics.toml", "-m", "fake", "--runs", runs];
    base.iter().chain(extra).map(|s| (*s).to_owned()).collect()
}

fn run_args(ws: &Workspace, runs: &str, extra: &[&str]) -> (i32, String) {
    let args = args(runs, extra);
    ws.run(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// `harness run ARGS` started, once the fake has seen `polls` polls of its batch.
fn polling(ws: &Workspace, api: &FakeBatchApi, args: &[String], polls: usize) -> Child {
    polling_at(ws, api, args, ("GET /v1/batches/batch_2", polls))
}

/// [`polling`] until the fake has seen `polls` requests `what`.
fn polling_at(
    ws: &Workspace,
    api: &FakeBatchApi,
    args: &[String],
    (what, polls): (&str, usize),
) -> Child {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut child = ws
        .run_cmd(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while api.count(what) < polls {
        assert!(Instant::now() < deadline, "no polls: {:?}", api.log());
        assert!(child.try_wait().unwrap().is_none(), "the run ended first");
        std::thread::sleep(Duration::from_millis(5));
    }
    child
}

fn failures(journal: &[Value]) -> BTreeMap<String, usize> {
    let mut map = BTreeMap::new();
    for r in journal {
        let kind = r["failure"].as_str().unwrap_or("passed").to_owned();
        *map.entry(kind).or_default() += 1;
    }
    map
}

/// The final record of each (instance, sample): later lines win.
fn latest(journal: &[Value]) -> Vec<Value> {
    let mut by_key = BTreeMap::new();
    for r in journal {
        by_key.insert((r["instance"].as_u64(), r["sample"].as_u64()), r.clone());
    }
    by_key.into_values().collect()
}

#[test]
fn a_batch_answers_by_custom_id_at_half_price_and_shows_its_states() {
    let api = FakeBatchApi::start(2, Ending::Completed, |_| LineReply::Correct);
    let ws = workspace(&api, "batch = { poll_secs = 0.05 }");
    // Progress on (no `--no-progress`): stderr is no terminal, so plain lines.
    let mut cmd = crate::common::harness(ws.path());
    cmd.arg("run").args(args(
        "6",
        &["--batch", "--results", "results", "--golden", "golden"],
    ));
    let (code, out) = crate::common::run(&mut cmd);
    assert_eq!(code, 0, "{out}");
    for state in [
        "submitted batch batch_2 (6 requests)",
        "validating",
        "in_progress 1/6 done",
        "finalizing",
        "completed 6/6 done, 0 failed",
    ] {
        assert!(out.contains(state), "no `{state}` in:\n{out}");
    }
    assert_eq!((api.created(), api.count("POST /v1/files")), (1, 1));
    assert_eq!(
        api.count("POST /v1/chat/completions"),
        0,
        "nothing asked live"
    );
    let journal = ws.last_journal();
    assert_eq!(journal.len(), 6);
    assert!(journal.iter().all(|r| r["passed"] == true), "{journal:?}");
    // 17 prompt tokens at 1000 and 5 output tokens at 2000 per million: 0.027, half of it.
    for r in &journal {
        let cost = r["cost"]["amount"].as_f64().unwrap();
        assert!((cost - 0.0135).abs() < 1e-9, "{cost}");
    }
    let lines = api.batch_lines();
    let ids = strings(&lines[0], "custom_id");
    assert_eq!(ids.len(), 6);
    assert!(
        ids.iter()
            .all(|id| id.len() <= 64 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
    );
    // What the harness sent, and what the fake answered, as the vendored OpenAPI document has it.
    let chat = openapi::validator("CreateChatCompletionRequest");
    for line in &lines[0] {
        openapi::assert_valid(&chat, "CreateChatCompletionRequest", &line["body"]);
    }
    let (creates, objects) = api.creates_and_batches();
    let create = openapi::validator("CreateBatchRequest");
    openapi::assert_valid(&create, "CreateBatchRequest", &creates[0]);
    openapi::assert_valid(&openapi::validator("Batch"), "Batch", &objects[0]);
    let batches = std::fs::read_to_string(ws.run_dirs()[0].join("batches.jsonl")).unwrap();
    assert!(batches.contains("\"batch\":\"batch_2\""), "{batches}");

    // A second run takes every answer from the cache: no batch at all.
    let (code, out) = run_args(&ws, "6", &["--batch"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(api.created(), 1, "cached answers are not batched again");
}

#[test]
fn sigkill_mid_poll_then_resume_polls_the_same_batch() {
    // Long enough in progress that the kill lands while polling.
    let api = FakeBatchApi::start(40, Ending::Completed, |_| LineReply::Correct);
    let ws = workspace(&api, "batch = { poll_secs = 0.05 }");
    let mut child = polling(&ws, &api, &args("8", &["--no-cache"]), 3);
    child.kill().unwrap(); // SIGKILL: no handler runs.
    child.wait().unwrap();
    assert!(ws.last_journal().is_empty(), "killed before any answer");

    let (code, out) = ws.run(&["--resume", "latest", "--no-cache"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(api.created(), 1, "0 new batches: {:?}", api.log());
    assert_eq!(api.count("POST /v1/files"), 1);
    let journal = ws.last_journal();
    assert_eq!(journal.len(), 8, "0 answers lost");
    assert!(journal.iter().all(|r| r["passed"] == true));
}

#[test]
fn expired_and_cancelled_entries_are_named_and_asked_again_on_resume() {
    for (ending, kind) in [
        (Ending::Expired, "batch_expired"),
        (Ending::Cancelled, "batch_cancelled"),
    ] {
        let api = FakeBatchApi::start(1, ending, |_| LineReply::Correct);
        let ws = workspace(&api, "batch = { poll_secs = 0.01 }");
        let (code, out) = run_args(&ws, "6", &["--allow-errors"]);
        assert_eq!(code, 0, "{out}");
        let first = ws.last_journal();
        assert_eq!(failures(&first)[kind], 3, "{kind}: {first:?}");
        assert!(
            first
                .iter()
                .filter(|r| r["failure"] == kind)
                .all(|r| r["cost"].is_null())
        );

        // The resume asks only the three again, in a new batch; half of those end alike.
        let (code, out) = ws.run(&["--resume", "latest", "--allow-errors"]);
        assert_eq!(code, 0, "{out}");
        let lines = api.batch_lines();
        assert_eq!((lines.len(), lines[1].len()), (2, 3), "{kind}");
        let last = latest(&ws.last_journal());
        assert_eq!(last.len(), 6);
        assert_eq!(failures(&last)[kind], 1, "{kind}: {last:?}");
    }
}

#[test]
fn malformed_partial_and_failed_results_end_in_named_errors() {
    // Lines by their position in the request: sample 0 of instance 0 first.
    let api = FakeBatchApi::start(0, Ending::Completed, |line| {
        match line["custom_id"]
            .as_str()
            .unwrap()
            .rsplit_once('-')
            .unwrap()
            .0
            .rsplit('-')
            .next()
        {
            Some("0") => LineReply::Omit,
            Some("1") => LineReply::Garbage,
            Some("2") => LineReply::Error("server_error", "the model broke"),
            Some("3") => LineReply::Wrong,
            _ => LineReply::Correct,
        }
    });
    let ws = workspace(&api, "batch = { poll_secs = 0.01 }");
    let (code, out) = run_args(&ws, "5", &["--allow-errors"]);
    assert_eq!(code, 0, "{out}");
    let journal = ws.last_journal();
    let by_instance: BTreeMap<u64, &Value> = journal
        .iter()
        .map(|r| (r["instance"].as_u64().unwrap(), r))
        .collect();
    let kind = |i: u64| {
        by_instance[&i]["failure"]
            .as_str()
            .unwrap_or("passed")
            .to_owned()
    };
    assert_eq!(
        (0..5).map(kind).collect::<Vec<_>>(),
        [
            "malformed_response",
            "malformed_response",
            "batch_failed",
            "wrong_value",
            "passed"
        ]
    );
    let error = |i: u64| {
        by_instance[&i]["error"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(error(0).contains("no result for"), "{}", error(0));
    assert!(
        error(1).contains("1 lines of its results could not be read"),
        "{}",
        error(1)
    );
    assert!(error(2).contains("the model broke"), "{}", error(2));

    // A batch refused as a whole: every request `batch_failed`, none lost.
    let api = FakeBatchApi::start(0, Ending::Failed, |_| LineReply::Correct);
    let ws = workspace(&api, "batch = { poll_secs = 0.01 }");
    let (code, out) = run_args(&ws, "3", &["--allow-errors"]);
    assert_eq!(code, 0, "{out}");
    let journal = ws.last_journal();
    assert_eq!(failures(&journal)["batch_failed"], 3, "{journal:?}");
    assert!(
        journal[0]["error"]
            .as_str()
            .unwrap()
            .contains("the input file was refused")
    );
}

#[test]
fn dry_run_says_what_would_be_batched_and_sends_nothing() {
    let api = FakeBatchApi::start(0, Ending::Completed, |_| LineReply::Correct);
    let ws = workspace(&api, "batch = { discount = 0.25 }");
    let (code, out) = run_args(&ws, "4", &["--dry-run"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("batch: model `fake` would send 4 requests (t06_mathematics) in one batch")
            && out.contains("at 75% of its price"),
        "{out}"
    );
    assert!(api.log().is_empty(), "{:?}", api.log());
    // A budget cannot stop a batch: refused before anything is sent.
    let (code, out) = run_args(&ws, "4", &["--max-cost", "1"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("--max-cost and --max-tokens-total cannot stop it"),
        "{out}"
    );
    assert!(
        api.log().is_empty() && ws.run_dirs().is_empty(),
        "{:?}",
        api.log()
    );
}

#[test]
fn providers_without_a_batch_api_are_refused() {
    let ws = Workspace::new();
    ws.copy_spec("t06_mathematics.toml");
    ws.run_expect(
        &["specs/t06_mathematics.toml", "-m", "ollama:m", "--batch"],
        2,
        &["--batch: model `m`: provider ollama has no batch API"],
    );
    let cases = [
        (
            "ollama",
            "http://127.0.0.1:9",
            "batch = true",
            "model `m`: batch: provider ollama has no batch API",
        ),
        (
            "openai",
            "http://127.0.0.1:9/v1",
            "batch = { poll_secs = 0 }",
            "poll_secs = 0 is out of range",
        ),
        (
            "openai",
            "http://127.0.0.1:9/v1",
            "batch = { discount = 1.5 }",
            "discount = 1.5 is out of range",
        ),
    ];
    for (provider, url, batch, wanted) in cases {
        ws.write("harness.toml", &model_toml("m", provider, "m", url, batch));
        let args = ["specs/t06_mathematics.toml", "-m", "m"];
        ws.run_expect(&args, 2, &["harness.toml:5:", wanted]);
        assert!(ws.run_dirs().is_empty(), "nothing run for {batch}");
    }
}

#[test]
fn a_batch_that_cannot_be_polled_to_its_end_fails_the_run_and_keeps_nothing() {
    let api = FakeBatchApi::start(1000, Ending::Completed, |_| LineReply::Correct);
    let ws = workspace(&api, "batch = { poll_secs = 0.02 }");
    let child = polling(&ws, &api, &args("2", &[]), 2);
    drop(api); // the provider goes away mid-poll
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("model `fake`: batch batch_2 was left unfinished")
            && stderr.contains("`harness run --resume` polls it again"),
        "{stderr}"
    );
    assert!(ws.last_journal().is_empty());
}

#[test]
fn anthropic_message_batches_answer_by_custom_id_survive_a_kill_and_name_expired_entries() {
    let api = FakeBatchApi::start(30, Ending::Expired, |_| LineReply::Correct);
    let ws = wire_workspace(&api, "anthropic", "batch = { poll_secs = 0.02 }");
    let poll = "GET /v1/messages/batches/msgbatch_1";
    let mut child = polling_at(&ws, &api, &args("6", &["--no-cache"]), (poll, 3));
    child.kill().unwrap(); // SIGKILL mid-poll
    child.wait().unwrap();
    let (code, out) = ws.run(&["--resume", "latest", "--no-cache", "--allow-errors"]);
    let log = api.log();
    assert_eq!(code, 0, "{out}{:?}", &log[log.len().saturating_sub(8)..]);
    assert_eq!(api.count("POST /v1/messages/batches"), 1, "{:?}", api.log());
    let journal = ws.last_journal();
    assert_eq!(journal.len(), 6, "0 answers lost");
    assert_eq!(failures(&journal)["passed"], 3, "{journal:?}");
    assert_eq!(failures(&journal)["batch_expired"], 3, "{journal:?}");
    for r in journal.iter().filter(|r| r["passed"] == true) {
        let cost = r["cost"]["amount"].as_f64().unwrap();
        assert!((cost - 0.0135).abs() < 1e-9, "half price: {cost}");
    }
    // The expired three go in a new batch on the next resume.
    let (code, out) = ws.run(&["--resume", "latest", "--no-cache", "--allow-errors"]);
    assert_eq!(code, 0, "{out}");
    let lines = api.batch_lines();
    assert_eq!((lines.len(), lines[1].len()), (2, 3));
    assert!(lines[1].iter().all(|l| l["body"]["max_tokens"].is_u64()));
}
