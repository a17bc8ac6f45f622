//! Agent episodes through the real CLI against the fake OpenAI server,
//! which plays a model calling the shop's tools turn by turn: the whole
//! trajectory and final state in the journal, every turn priced, a rerun
//! that asks nothing, the named ends of an episode (`max_turns`,
//! `no_end_call`), `--dry-run` bounding an episode by `max_turns`, a budget
//! stopping between turns, a SIGKILL mid-run followed by `--resume` that
//! asks no finished turn again, replay of blessed episodes, shards and
//! merge, `show`, and the golden diff naming the step where an episode departs.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::fake_server::{FakeCall, FakeServer, PROMPT_TOKENS, Reply, Request};
use crate::common::workspace::Workspace;
use crate::common::{root, spawn_quiet, strings};

/// The shop spec's instances.
const INSTANCES: usize = 8;

/// A workspace with `specs/shop_agent.toml`, its dataset, and the model `fake`.
pub(crate) fn shop(fake: &FakeServer, settings: &str) -> Workspace {
    let ws = Workspace::with_fake("shop_agent.toml", fake, settings);
    let rows = std::fs::read_to_string(root().join("datasets/shop_agent/orders.jsonl")).unwrap();
    std::fs::create_dir_all(ws.path().join("datasets/shop_agent")).unwrap();
    ws.write("datasets/shop_agent/orders.jsonl", &rows);
    ws
}

/// The model turn a request asks for: the model turns it already holds
/// (assistant messages; Gemini's `model` turns; a Responses `input`'s
/// `function_call` items, one per turn of the clerk's).
pub(crate) fn turn(request: &Request) -> usize {
    let count = |list: &Value, key: &str, value: &str| {
        list.as_array()
            .map_or(0, |l| l.iter().filter(|m| m[key] == value).count())
    };
    count(&request.body["messages"], "role", "assistant")
        + count(&request.body["contents"], "role", "model")
        + count(&request.body["input"], "type", "function_call")
}

/// A clerk who lists the orders, cancels A-1002 and submits, whatever the request.
pub(crate) fn clerk(request: &Request) -> Reply {
    let call = |name: &str, arguments: Value| FakeCall::new(name, &arguments.to_string());
    match turn(request) {
        0 => Reply::Calls(String::new(), vec![call("list_orders", json!({}))]),
        1 => Reply::Calls(
            String::new(),
            vec![call("cancel_order", json!({"order_id": "A-1002"}))],
        ),
        _ => Reply::Calls(
            "Готово.".into(),
            vec![call("submit", json!({"answer": "Готово."}))],
        ),
    }
}

/// The roles of a record's trajectory, in order.
pub(crate) fn roles(record: &Value) -> Vec<&str> {
    let steps = record["trajectory"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    strings(steps, "role")
}

fn by_instance(records: Vec<Value>) -> BTreeMap<u64, Value> {
    records
        .into_iter()
        .map(|r| (r["instance"].as_u64().unwrap(), r))
        .collect()
}

#[test]
fn an_episode_keeps_its_trajectory_and_state_and_a_rerun_asks_nothing() {
    let fake = FakeServer::start(clerk);
    let ws = shop(
        &fake,
        "timeout_secs = 10\nprice = { input = 10.0, output = 30.0 }",
    );
    ws.run_ok(&["specs/shop_agent.toml", "-m", "fake"]);
    assert_eq!(fake.count(), 3 * INSTANCES, "three turns per episode");
    let records = by_instance(ws.last_journal());
    let first = &records[&0];
    assert_eq!(
        roles(first),
        [
            "assistant",
            "tool",
            "assistant",
            "tool",
            "assistant",
            "tool"
        ]
    );
    let steps = &first["trajectory"];
    assert_eq!(steps[2]["tool_calls"][0]["name"], "cancel_order");
    assert_eq!(steps[3]["tool_name"], "cancel_order");
    assert_eq!(
        steps[3]["content"],
        r#"{"order_id":"A-1002","status":"отменён"}"#
    );
    assert_eq!(first["state"]["orders"][1]["status"], "отменён");
    assert_eq!(first["state"]["answer"], "Готово.");
    assert_eq!(first["response"], "Готово.");
    assert_eq!(first["passed"], true, "{first:#}");
    assert_eq!(first["tokens_in"], json!(3 * PROMPT_TOKENS), "turns summed");
    assert_eq!(first["attempts"], 3);
    // Each turn priced: 17 prompt tokens × 10 + 5 × 30 = 320 per million, three times.
    let cost = |r: &Value, key: &str| r["cost"][key].as_f64().unwrap_or(0.0);
    assert!((cost(first, "amount") - 960e-6).abs() < 1e-9, "{first:#}");
    // The turns after the prompt carry the calls and results back to the model.
    let last_turn = fake
        .requests()
        .into_iter()
        .find(|r| turn(r) == 2 && r.prompt.contains("A-1002"))
        .unwrap();
    let sent = last_turn.body["messages"].as_array().unwrap();
    assert_eq!(sent.len(), 6, "system, user, two turns and their results");
    assert_eq!(sent[5]["role"], "tool");
    // A tool's error is the model's to read, not a crash: the order is not this customer's.
    let other = &records[&1];
    assert_eq!(
        other["trajectory"][3]["content"],
        r#"{"error":"заказ A-1002 не найден"}"#
    );
    assert_eq!(other["passed"], false);
    assert!(
        other["detail"]
            .as_str()
            .unwrap()
            .contains("state.orders = "),
        "{other:#}"
    );
    // Instances where nothing was to change pass: the clerk changed nothing of theirs.
    let passed: Vec<u64> = records
        .iter()
        .filter(|(_, r)| r["passed"] == true)
        .map(|(i, _)| *i)
        .collect();
    assert_eq!(passed, [0, 2, 4, 7]);

    let asked = fake.count();
    ws.run_ok(&["specs/shop_agent.toml", "-m", "fake"]);
    assert_eq!(fake.count(), asked, "the rerun asks nothing");
    let again = by_instance(ws.last_journal());
    for (i, record) in &again {
        assert_eq!(record["cached"], true, "{i}");
        assert_eq!(cost(record, "amount"), 0.0, "{i}");
        assert!((cost(record, "saved") - 960e-6).abs() < 1e-9, "{record:#}");
        assert_eq!(record["trajectory"], records[i]["trajectory"], "{i}");
        assert_eq!(record["state"], records[i]["state"], "{i}");
    }
}

#[test]
fn episodes_end_by_name_when_they_do_not_end_well() {
    let list = || Reply::Calls(String::new(), vec![FakeCall::new("list_orders", "{}")]);
    // (what the model does every turn, requests per episode, failure, detail)
    let cases: [(Reply, usize, &str, &str); 3] = [
        (list(), 4, "max_turns", "did not end within max_turns = 4"),
        (
            Reply::Text("Заказ отменён.".into()),
            1,
            "no_end_call",
            "without calling `submit`",
        ),
        (
            Reply::Calls(String::new(), vec![FakeCall::new("cancel_order", "{oops")]),
            4,
            "max_turns",
            "",
        ),
    ];
    for (reply, requests, failure, detail) in cases {
        let fake = FakeServer::start(move |_| reply.clone());
        let ws = shop(&fake, "timeout_secs = 10");
        let (code, out) = ws.run(&["specs/shop_agent.toml", "-m", "fake", "--runs", "1"]);
        assert!(code == 0 || code == 1, "{out}");
        assert_eq!(fake.count(), requests, "{failure}");
        let record = &ws.last_journal()[0];
        assert_eq!(record["failure"], failure, "{record:#}");
        assert!(
            record["detail"].as_str().unwrap().contains(detail),
            "{record:#}"
        );
        assert_eq!(record["passed"], false);
        if record["trajectory"][0]["tool_calls"][0]["invalid"].is_string() {
            let result = record["trajectory"][1]["content"].as_str().unwrap();
            assert!(result.contains("not valid JSON"), "{result}");
        }
    }
}

#[test]
fn a_dry_run_bounds_an_episode_by_max_turns() {
    let fake = FakeServer::healthy();
    let ws = shop(&fake, "timeout_secs = 10");
    let requests = format!("dry run: {} requests", INSTANCES * 4);
    ws.run_expect(
        &["specs/shop_agent.toml", "-m", "fake", "--dry-run"],
        0,
        &[&requests, "8 agent episodes are counted at their max_turns"],
    );
    assert_eq!(fake.count(), 0);
}

/// Runs `harness run ARGS` in `ws` and SIGKILLs it once `ready` holds for
/// the number of records in its journal; fails when the run ends first or
/// nothing is ready within 30 s.
pub(crate) fn kill_when(ws: &Workspace, args: &[&str], ready: impl Fn(usize) -> bool) {
    let mut child = spawn_quiet(&mut ws.run_cmd(args));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let records = ws
            .run_dirs()
            .last()
            .and_then(|d| std::fs::read_to_string(d.join("journal.jsonl")).ok())
            .map_or(0, |t| t.lines().count());
        if ready(records) {
            break;
        }
        assert!(Instant::now() < deadline, "no records appeared");
        assert!(child.try_wait().unwrap().is_none(), "the run ended first");
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

/// The turns the fake was asked, by (user prompt, turn).
fn turns_asked(requests: &[Request]) -> BTreeMap<(String, usize), usize> {
    let mut asked = BTreeMap::new();
    for r in requests {
        *asked.entry((r.prompt.clone(), turn(r))).or_default() += 1;
    }
    asked
}

#[test]
fn sigkill_mid_episode_then_resume_repeats_no_finished_turn() {
    const CONCURRENCY: usize = 2;
    let fake = FakeServer::start(|r| Reply::slow(120, clerk(r)));
    let settings = format!("concurrency = {CONCURRENCY}\nmax_retries = 0\ntimeout_secs = 10");
    let ws = shop(&fake, &settings);
    // Kill once two episodes are recorded: others are mid-way (8 × 3 turns × 120 ms / 2 ≈ 1.4 s).
    kill_when(&ws, &["specs/shop_agent.toml", "-m", "fake"], |records| {
        records >= 2
    });
    let before = fake.requests();
    let kept = ws.last_journal().len();
    assert!(kept < INSTANCES, "the kill came too late");
    let started_episodes = turns_asked(&before).keys().filter(|(_, t)| *t > 0).count();
    assert!(started_episodes > kept, "no episode was cut mid-way");

    let (code, out) = ws.run(&["--resume", "latest"]);
    assert!(code == 0 || code == 1, "{out}");
    let all = fake.requests();
    let asked = turns_asked(&all);
    // Every turn of every episode was asked, and only a turn in flight at the kill twice.
    assert_eq!(asked.len(), 3 * INSTANCES);
    let repeated: Vec<_> = asked.iter().filter(|(_, n)| **n > 1).collect();
    assert!(repeated.len() <= CONCURRENCY, "{repeated:?}");
    for ((prompt, t), _) in &repeated {
        let last_before = before
            .iter()
            .rposition(|r| &r.prompt == prompt && turn(r) == *t);
        assert!(
            last_before.is_some_and(|i| i + CONCURRENCY >= before.len()),
            "turn {t} of `{prompt}` was finished before the kill and asked again"
        );
    }
    let records = by_instance(ws.last_journal());
    assert_eq!(records.len(), INSTANCES);
    assert!(
        records
            .values()
            .all(|r| r["trajectory"].as_array().unwrap().len() == 6)
    );
    println!(
        "agent resume: {} requests before the kill ({kept} episodes recorded), {} after; {} turns in all, {} asked twice",
        before.len(),
        all.len() - before.len(),
        asked.len(),
        repeated.len()
    );
}

#[test]
fn blessed_episodes_replay_turn_by_turn_with_no_model() {
    let fake = FakeServer::start(clerk);
    let ws = shop(&fake, "timeout_secs = 10");
    ws.run_ok(&["specs/shop_agent.toml", "-m", "fake", "--bless"]);
    let recorded = by_instance(ws.last_journal());
    let golden = std::fs::read_to_string(ws.path().join("golden/shop_agent/fake.jsonl")).unwrap();
    assert!(golden.contains("\"trajectory\"") && golden.contains("\"state\""));
    let asked = fake.count();
    ws.run_ok(&["specs/shop_agent.toml", "-m", "replay:fake"]);
    assert_eq!(fake.count(), asked, "the replay asks nothing");
    let replayed = by_instance(ws.last_journal());
    for (i, record) in &replayed {
        let was = &recorded[i];
        for field in ["trajectory", "state", "passed", "tokens_in"] {
            assert_eq!(record[field], was[field], "{i}: {field}");
        }
    }
}

#[test]
fn a_budget_stops_between_turns_and_resume_asks_no_turn_twice() {
    let fake = FakeServer::start(clerk);
    // Priced per call, a turn's worst case is its price: the budget holds 10 turns.
    let settings = "concurrency = 1\ntimeout_secs = 10\nprice = { per_call = 0.001 }";
    let ws = shop(&fake, settings);
    let budget = 0.0105;
    let max_cost = budget.to_string();
    let (code, out) = ws.run(&[
        "specs/shop_agent.toml",
        "-m",
        "fake",
        "--max-cost",
        &max_cost,
    ]);
    assert_eq!(code, 5, "the budget's own exit code:\n{out}");
    let stopped = ws.last_journal().len();
    let asked = fake.count();
    // Three episodes recorded; the fourth stopped after its first turn.
    assert_eq!((stopped, asked), (3, 10), "{out}");
    let spent: f64 = ws
        .last_journal()
        .iter()
        .map(|r| r["cost"]["amount"].as_f64().unwrap())
        .sum();
    assert!(spent <= budget, "{spent}");
    let (code, out) = ws.run(&["--resume", "latest", "--max-cost", "1"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(ws.last_journal().len(), INSTANCES);
    let turns = turns_asked(&fake.requests());
    assert_eq!(turns.len(), 3 * INSTANCES);
    assert!(turns.values().all(|n| *n == 1), "{turns:?}");
    println!(
        "agent budget: {asked} requests ({stopped} episodes) before the stop, {} in all",
        fake.count()
    );
}

#[test]
fn show_prints_the_agent_and_each_instance_state() {
    let fake = FakeServer::healthy();
    let ws = shop(&fake, "");
    let show = ["show", "specs/shop_agent.toml", "--count", "1"];
    crate::common::expect(
        crate::common::harness(ws.path()).args(show),
        0,
        &[
            "agent:\n  max_turns: 4\n  ends on: a call of `submit`\n  state (`state`): {\"orders\":[{\"date\":\"2026-10-02\",\"id\":\"A-1001\"",
        ],
    );
}

#[test]
fn shards_split_episodes_whole_and_merge_joins_them() {
    let fake = FakeServer::start(clerk);
    let ws = shop(&fake, "timeout_secs = 10");
    for shard in ["0/2", "1/2"] {
        let args = ["specs/shop_agent.toml", "-m", "fake", "--run-id", "job"];
        ws.run_ok(&[&args[..], &["--shard", shard]].concat());
    }
    assert_eq!(fake.count(), 3 * INSTANCES, "each episode ran in one shard");
    let (code, out) = crate::common::run(crate::common::harness(ws.path()).args([
        "merge",
        "results/runs/job-shard-0-of-2",
        "results/runs/job-shard-1-of-2",
    ]));
    assert_eq!(code, 0, "{out}");
    let merged = ws.journal(&ws.path().join("results/runs/job"));
    assert_eq!(merged.len(), INSTANCES);
    assert!(
        merged
            .iter()
            .all(|r| r["trajectory"].as_array().unwrap().len() == 6)
    );
}

#[test]
fn a_run_against_golden_episodes_names_the_step_that_departs() {
    let fake = FakeServer::start(clerk);
    let ws = shop(&fake, "timeout_secs = 10");
    let args = ["specs/shop_agent.toml", "-m", "fake", "--runs", "1"];
    ws.run_ok(&[&args[..], &["--bless"]].concat());
    drop(fake);
    // Another clerk: the same first turn, then the wrong order.
    let wrong = FakeServer::start(|r: &Request| match turn(r) {
        1 => Reply::Calls(
            String::new(),
            vec![FakeCall::new("cancel_order", r#"{"order_id": "A-1003"}"#)],
        ),
        _ => clerk(r),
    });
    ws.write(
        "harness.toml",
        &crate::common::workspace::model_toml(
            "fake",
            "openai",
            "fake-model",
            &wrong.openai_base(),
            "timeout_secs = 10",
        ),
    );
    let (_, out) = ws.run(&[&args[..], &["--verbose"]].concat());
    assert!(
        out.contains(
            r#"trajectory turn 1, call 0 `cancel_order` arguments order_id: "A-1002" → "A-1003""#
        ),
        "{out}"
    );
    assert!(
        out.contains(r#"state.orders[1].status: "отменён" → "в обработке""#),
        "{out}"
    );
    assert!(!out.contains("trajectory[3]"), "{out}");
}

#[test]
fn each_sample_is_an_episode_of_its_own() {
    let fake = FakeServer::start(clerk);
    let ws = shop(&fake, "timeout_secs = 10");
    let spec = std::fs::read_to_string(ws.path().join("specs/shop_agent.toml")).unwrap();
    ws.write(
        "specs/shop_agent.toml",
        &format!("{spec}\n[sampling]\nn = 3\ntemperature = 0.7\nseed = 1\n"),
    );
    ws.run_ok(&["specs/shop_agent.toml", "-m", "fake", "--runs", "1"]);
    assert_eq!(fake.count(), 3 * 3, "three episodes of three turns");
    let records = ws.last_journal();
    let samples: Vec<u64> = records
        .iter()
        .map(|r| r["sample"].as_u64().unwrap())
        .collect();
    assert_eq!(samples.len(), 3);
    assert!(
        records
            .iter()
            .all(|r| r["trajectory"].as_array().unwrap().len() == 6)
    );
    // Each sample asks with its own seed, turn after turn.
    let seeds: std::collections::BTreeSet<u64> = fake
        .requests()
        .iter()
        .map(|r| r.body["seed"].as_u64().unwrap())
        .collect();
    assert_eq!(seeds, [1, 2, 3].into());
}
