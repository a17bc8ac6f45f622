//! Agent history: what one turn of an episode costs the harness as the
//! history grows. Every turn's request carries the whole history, so a
//! turn that copied it (as episodes once did) costs more with every turn
//! and an episode grows with the square of its turns.
//!
//! Runs 8 episodes, one at a time, of 10, 20, 30, 40 and 50 turns (`max_turns` tops out
//! at 50) against a loopback server, in this process, that answers every
//! request at once with a call of a tool whose result is 2 KiB, so the
//! history grows by one call and one result a turn and no episode ends
//! before its last turn. Prints the wall time per turn of each length
//! (less a 1-turn run's, which is process start and one request) and its
//! ratio to the 10-turn one: flat ratios mean an episode costs its turns,
//! not their square. Run with `cargo bench --bench agent_history` (or
//! `bench/agent_history.sh`).

#[path = "zero_server.rs"]
#[allow(dead_code, reason = "the t06 workspace is the other benches'")]
mod zero_server;

use std::path::Path;

/// A model turn that calls `grow` once and says nothing.
const CALL: &str = r#"{"id":"b","object":"chat.completion","created":0,"model":"bench","choices":[{"index":0,"message":{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"grow","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":40,"completion_tokens":4,"total_tokens":44}}"#;

/// Episodes per run.
const EPISODES: u32 = 8;

/// The spec: `EPISODES` instances whose episodes run `turns` turns.
fn spec(turns: u32) -> String {
    format!(
        r#"id = "agent_history"
title = "Agent history"
runs = {EPISODES}

[generate]
script = '#{{ n: 0 }}'

[prompt]
user = "Call grow until told to stop."

[request]
max_tokens = 16

[agent]
max_turns = {turns}

[[tools]]
name = "grow"
description = "Returns 2 KiB."
parameters = {{ type = "object", properties = {{}} }}
script = 'let s = "x"; for i in 0..11 {{ s += s; }} s'

[[verify]]
rule = "tool_used"
tools = ["grow"]
"#
    )
}

/// The wall time of one uncached run of `EPISODES` episodes of `turns` turns.
fn run(dir: &Path, turns: u32) -> f64 {
    std::fs::write(dir.join("specs/agent_history.toml"), spec(turns)).unwrap();
    let args = [
        "run",
        "specs/agent_history.toml",
        "-m",
        "bench",
        "--no-cache",
        "--no-progress",
    ];
    // The best of three: the machine's other work only ever adds time.
    (0..3)
        .map(|_| zero_server::timed(dir, &args))
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("specs")).unwrap();
    let port = zero_server::serve_with(CALL);
    std::fs::write(
        dir.join("harness.toml"),
        format!(
            "[models.bench]\nprovider = \"openai\"\nmodel = \"bench\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nconcurrency = 1\n"
        ),
    )
    .unwrap();
    let base = run(dir, 1);
    let mut first = None;
    for turns in [10, 20, 30, 40, 50] {
        let wall = run(dir, turns);
        let per_turn = (wall - base) / f64::from(EPISODES * (turns - 1));
        let ratio = per_turn / *first.get_or_insert(per_turn);
        println!(
            "agent_history: {turns} turns: {:.3} ms/turn, ×{ratio:.2} of 10 turns",
            per_turn * 1000.0
        );
    }
}
