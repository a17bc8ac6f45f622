//! Limits cases: episodes (see `tests/limits.rs`). Calls per turn and in
//! all, result and error sizes, state cost and an episode's wall time: a
//! model flooding an episode ends it by name (or gets error results), in
//! seconds, with a journal of a few hundred kilobytes.

use std::time::Duration;

use serde_json::Value;

use super::capped;
use crate::common::fake_server::{FakeCall, FakeServer, Reply, Request};
use crate::common::harness;
use crate::common::workspace::fake_workspace;

/// Every case ends within this, in a debug build.
const WALL: Duration = Duration::from_secs(90);

/// The most journal bytes any case may leave: the floods were hundreds of
/// megabytes.
const JOURNAL_BYTES: u64 = 2 << 20;

/// One hostile episode.
struct Case {
    name: &'static str,
    /// Lines added to `[agent]`.
    agent: &'static str,
    /// `[[tools]]` tables besides `f`, which returns `{"ok": true}`.
    tools: String,
    /// The model, by turn.
    model: fn(&Request) -> Reply,
    /// Requests the model sees.
    asks: usize,
    /// The record's failure.
    failure: Option<&'static str>,
    /// What the record's detail, or its last tool result, says.
    says: &'static str,
    /// Tool results in the trajectory.
    results: usize,
}

/// A case with no tools whose model ends at once: the base of the cases
/// that stop before any request.
const QUIET: Case = Case {
    name: "",
    agent: "",
    tools: String::new(),
    model: |_| done(),
    asks: 0,
    failure: None,
    says: "",
    results: 0,
};

/// The model turn a request asks for: the assistant messages it holds.
fn turn(request: &Request) -> usize {
    let messages = request.body["messages"].as_array().unwrap();
    messages.iter().filter(|m| m["role"] == "assistant").count()
}

/// `n` calls of `name` without arguments.
fn calls(name: &str, n: usize) -> Reply {
    Reply::Calls(String::new(), vec![FakeCall::new(name, "{}"); n])
}

/// `n` calls of `name` in each of the first `turns` turns, then the end call.
fn calls_then_done(request: &Request, turns: usize, name: &str, n: usize) -> Reply {
    if turn(request) < turns {
        calls(name, n)
    } else {
        done()
    }
}

/// A final answer, which the spec's rule passes.
fn done() -> Reply {
    Reply::Text("Done.".into())
}

/// A tool table running `script`.
fn tool(name: &str, script: &str) -> String {
    format!(
        "[[tools]]\nname = \"{name}\"\ndescription = \"A tool.\"\nparameters = {{ type = \"object\", properties = {{}} }}\nscript = '{script}'\n"
    )
}

/// The spec of a case: 3 turns unless its `[agent]` lines say otherwise.
fn spec(case: &Case) -> String {
    let turns = if case.agent.contains("max_turns") {
        ""
    } else {
        "max_turns = 3"
    };
    format!(
        "id = \"ep\"\nruns = 1\n\n[prompt]\nuser = \"Go.\"\n\n[agent]\n{}\n{turns}\n\n{}\n{}\n[[verify]]\nrule = \"regex\"\npattern = \".\"\n",
        case.agent,
        tool("f", "#{ ok: true }"),
        case.tools
    )
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            // 200,000, not the 500,000 of the issue: a debug build takes 15 s
            // to write and read those. Unbounded, they were 36 MB of journal.
            name: "200,000 calls in one turn",
            agent: "",
            tools: String::new(),
            model: |_| calls("f", 200_000),
            asks: 1,
            failure: Some("too_many_calls"),
            says: "turn 1 made more than 1024 calls, more than max_calls_per_turn = 32; none of them ran",
            results: 0,
        },
        Case {
            // A literal: a debug build takes 50 ms to build a megabyte.
            name: "300 calls of a tool returning 1 MB",
            agent: "max_calls_per_turn = 300\nmax_calls = 300",
            tools: tool("big", &format!("\"{}\"", "x".repeat(1_000_000))),
            model: |r| calls_then_done(r, 1, "big", 300),
            asks: 2,
            failure: None,
            says: "the result of `big` is more than max_result_bytes = 65536 bytes as JSON",
            results: 300,
        },
        Case {
            name: "2,000 calls of an unknown tool among 3,000",
            agent: "max_calls_per_turn = 1000\nmax_calls = 2000",
            tools: (0..3_000).map(|i| tool(&format!("t{i:04}"), "1")).collect(),
            model: |r| calls_then_done(r, 2, "nope", 1_000),
            asks: 3,
            failure: None,
            says: "there is no tool `nope` (tools: f, t0000,",
            results: 2_000,
        },
        Case {
            name: "more calls than max_calls",
            agent: "max_calls_per_turn = 4\nmax_calls = 5",
            tools: String::new(),
            model: |_| calls("f", 4),
            asks: 2,
            failure: Some("max_calls"),
            says: "more than max_calls = 5 calls; the last 3 did not run",
            results: 5,
        },
        Case {
            name: "an episode past its wall time",
            agent: "max_turns = 8\nmax_episode_secs = 1",
            tools: String::new(),
            model: |_| Reply::slow(700, calls("f", 1)),
            asks: 2,
            failure: Some("episode_timeout"),
            says: "the episode ran past max_episode_secs = 1",
            // The second turn's answer came after the deadline: its call did not run.
            results: 1,
        },
        Case {
            name: "a state of 2.4 MB",
            agent: "max_calls_per_turn = 20",
            tools: tool(
                "grow",
                "let a = []; a.pad(100000, 1.2345678901234567e300); state.a = a; 1",
            ),
            model: |r| calls_then_done(r, 1, "grow", 20),
            asks: 2,
            failure: None,
            says: "more than max_state_bytes = 1048576 bytes as JSON; the state is unchanged",
            results: 20,
        },
        Case {
            name: "an error of 100 KB",
            agent: "",
            tools: tool("shout", "let s = \"x\"; s.pad(100000, \"!\"); throw s;"),
            model: |r| calls_then_done(r, 1, "shout", 1),
            asks: 2,
            failure: None,
            says: "!!!… (97952 bytes more)",
            results: 1,
        },
    ]
}

/// What a record shows of a case: its detail, and its last tool result.
fn shown(record: &Value) -> (String, Vec<String>) {
    let detail = record["detail"].as_str().unwrap_or_default().to_owned();
    let results = record["trajectory"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    (detail, results)
}

/// Each hostile episode of "Why" 4 ends quickly by name (or with error
/// results for the model), and its journal stays small.
#[test]
fn hostile_episodes_end_by_name_with_small_journals() {
    for case in cases() {
        let fake = FakeServer::start(case.model);
        let ws = fake_workspace(&fake, "ep.toml", &spec(&case));
        // A flood of calls takes seconds to build and read in a debug build.
        ws.fake_model(&fake, "timeout_secs = 60");
        let mut cmd = ws.run_cmd(&["specs", "-m", "fake", "--run-id", "e"]);
        let ran = capped(&mut cmd, WALL);
        let journal = ws.last_journal();
        let error = journal.first().map(|r| r["error"].clone());
        assert_eq!(ran.code, Some(0), "{}: {error:?}\n{}", case.name, ran.out);
        ran.expect_output("1 records written");
        assert_eq!(fake.count(), case.asks, "{}", case.name);
        let record = &ws.last_journal()[0];
        assert_eq!(
            record["failure"].as_str(),
            case.failure,
            "{}: {record:#}",
            case.name
        );
        let (detail, results) = shown(record);
        assert_eq!(results.len(), case.results, "{}: {detail}", case.name);
        let last = results.last().cloned().unwrap_or_default();
        assert!(
            detail.contains(case.says) || last.contains(case.says),
            "{}: {detail}\n{}",
            case.name,
            &last[..last.len().min(3_000)]
        );
        assert!(
            results.iter().all(|r| r.len() <= 2_200),
            "{}: a result of {} bytes",
            case.name,
            results.iter().map(String::len).max().unwrap_or(0)
        );
        let journal = ws.path().join("results/runs/e/journal.jsonl");
        let bytes = std::fs::metadata(journal).unwrap().len();
        assert!(
            bytes < JOURNAL_BYTES,
            "{}: journal of {bytes} bytes",
            case.name
        );
    }
}

/// `[agent]` limits out of their ranges are errors at their keys (exit 2).
#[test]
fn agent_limits_out_of_range_are_located_errors() {
    let fake = FakeServer::healthy();
    // (the key's line, what the error says)
    let cases = [
        (
            "max_calls_per_turn = 5000",
            "max_calls_per_turn bounds the calls one turn may make",
        ),
        ("max_calls = 0", "must be within 1..=10000, not 0"),
        (
            "max_result_bytes = 1",
            "must be within 64..=16777216, not 1",
        ),
        (
            "max_error_bytes = 100000",
            "must be within 64..=65536, not 100000",
        ),
        (
            "max_state_bytes = 10",
            "must be within 64..=67108864, not 10",
        ),
        (
            "max_episode_secs = 100000",
            "must be within 1..=86400, not 100000",
        ),
    ];
    for (line, says) in cases {
        let case = Case {
            agent: line,
            ..QUIET
        };
        let ws = fake_workspace(&fake, "ep.toml", &spec(&case));
        let checked = capped(harness(ws.path()).args(["check", "specs/ep.toml"]), WALL);
        checked
            .expect_code(2)
            .expect_output(says)
            .expect_output("--> specs/ep.toml:8:");
    }
}

/// An instance whose initial state is past `max_state_bytes` (2.4 MB, which
/// every call would convert twice) cannot seed an episode: an error at the
/// `[agent]` table, exit 2, before any model is asked.
#[test]
fn an_initial_state_past_max_state_bytes_is_a_located_error() {
    let fake = FakeServer::healthy();
    let case = QUIET;
    let generate = "[generate]\nscript = 'let a = []; a.pad(100000, 1.2345678901234567e300); #{ state: #{ a: a } }'\n";
    let ws = fake_workspace(&fake, "ep.toml", &format!("{}\n{generate}", spec(&case)));
    let says = "instance 0: state `state` is more than max_state_bytes = 1048576 bytes as JSON";
    for args in [
        &["check", "specs/ep.toml"][..],
        &["run", "specs", "-m", "fake", "--no-progress"],
    ] {
        let ran = capped(harness(ws.path()).args(args), WALL);
        ran.expect_code(2)
            .expect_output(says)
            .expect_output("--> specs/ep.toml:7:1");
    }
    assert_eq!(fake.count(), 0);
}
