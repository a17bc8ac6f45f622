//! Reasoning on the native wires through the real CLI, against the fake
//! server's documented thinking shapes: Anthropic's signed `thinking` and
//! `redacted_thinking` blocks, Gemini's thought parts and
//! `thoughtSignature`, a Responses `reasoning` item's summary. The sums of
//! `tests/reasoning.rs` land their reasoning in the journal, never in the
//! answer, counted where the wire counts it, `unfinished_reasoning` on each
//! API's own length stop, and replay from the golden transcript; an agent
//! episode sends each earlier turn's signed reasoning back unchanged
//! (Anthropic, Gemini) or not at all (Responses).

use serde_json::{Value, json};

use crate::agent::{clerk, turn};
use crate::common::fake_server::{FakeServer, Reply, Request, Thought, redacted_data, signature};
use crate::common::openapi::assert_valid_openai;
use crate::common::workspace::Workspace;
use crate::native_wires::WIRES;
use crate::reasoning::{
    FORMATS, MARK, SPEC, by_instance, check_journal, check_replay, check_reports, reply,
};

#[test]
fn each_native_wire_keeps_reasoning_apart_counts_it_and_replays_it() {
    // The mean reasoning tokens per counted answer: Anthropic counts thinking
    // inside its output tokens only; Gemini counts the thoughts of the four
    // answers that thought; Responses reports a count, zero or not, for all eight.
    for (wire, tokens) in WIRES.iter().zip([None, Some("3.0"), Some("1.5")]) {
        let fake = FakeServer::start(|r| reply(r, "native"));
        let ws = Workspace::new();
        ws.write("specs/thinking_sums.toml", SPEC);
        wire.config(&ws, &fake, "timeout_secs = 5");
        let mut args = vec!["specs/thinking_sums.toml", "-m", "fake", "--bless"];
        args.extend(FORMATS);
        let out = wire.run_ok(&ws, &args);
        let recorded = by_instance(ws.last_journal());
        check_journal(&recorded, tokens.is_some());
        check_reports(&ws, &out, tokens);
        assert_valid_openai(&fake.requests());

        check_replay(&ws, &fake, &recorded, wire.provider);
    }
}

/// The thought of the clerk's turn `turn`.
fn thought(turn: usize) -> String {
    format!("{MARK} ход {turn}")
}

/// The shop clerk of `tests/agent.rs`, thinking before each turn's calls.
fn thinking_clerk(request: &Request) -> Reply {
    let text = thought(turn(request));
    let thought = Thought {
        text,
        field: "native",
        cut: false,
    };
    Reply::Thought(thought, Box::new(clerk(request)))
}

/// The `nth` turn of `role` in the list `key` of `body`.
fn nth_turn<'a>(body: &'a Value, key: &str, role: &str, nth: usize) -> &'a Value {
    let turns = body[key].as_array().expect("turns");
    (turns.iter().filter(|t| t["role"] == role).nth(nth)).expect("the turn")
}

/// What an episode's later request must carry of its turn `j`, answered to
/// request `index`: Anthropic's two blocks, first in the assistant message;
/// Gemini's model turn as it came, the signature on its call.
fn check_sent_back(provider: &str, body: &Value, j: usize, index: usize) {
    match provider {
        "anthropic" => {
            let blocks = &nth_turn(body, "messages", "assistant", j)["content"];
            let thinking =
                json!({"type": "thinking", "thinking": thought(j), "signature": signature(index)});
            let redacted = json!({"type": "redacted_thinking", "data": redacted_data(index)});
            assert_eq!(blocks[0], thinking, "{body:#}");
            assert_eq!(blocks[1], redacted, "{body:#}");
        }
        "gemini" => {
            let parts = &nth_turn(body, "contents", "model", j)["parts"];
            assert_eq!(
                parts[0],
                json!({"text": thought(j), "thought": true}),
                "{body:#}"
            );
            assert!(parts[1]["functionCall"].is_object(), "{body:#}");
            assert_eq!(parts[1]["thoughtSignature"], signature(index), "{body:#}");
        }
        _ => assert!(
            !body.to_string().contains("ЗАДУМКА"),
            "Responses sends no reasoning back"
        ),
    }
}

#[test]
fn an_episode_sends_each_turns_signed_reasoning_back_unchanged() {
    for wire in &WIRES {
        let (fake, ws) = wire.run_shop(thinking_clerk);
        let requests = fake.requests();
        assert_eq!(requests.len(), 3 * 8, "{}", wire.provider);
        for later in &requests {
            for j in 0..turn(later) {
                let earlier = (requests.iter())
                    .find(|e| e.prompt == later.prompt && turn(e) == j)
                    .expect("the earlier turn");
                check_sent_back(wire.provider, &later.body, j, earlier.index);
            }
        }
        assert_valid_openai(&requests);
        // A rerun answers from the cache (blessing the golden transcripts),
        // then a replay from them: the same blocks, and no request.
        wire.run_ok(&ws, &["specs/shop_agent.toml", "-m", "fake", "--bless"]);
        let records = ws.last_journal();
        ws.run_ok(&["specs/shop_agent.toml", "-m", "replay:fake"]);
        assert_eq!(fake.count(), requests.len(), "{}", wire.provider);
        let replayed = by_instance(ws.last_journal());
        for (was, now) in by_instance(records.clone()).iter().zip(&replayed) {
            assert_eq!(was["trajectory"], now["trajectory"], "{}", wire.provider);
        }
        let first = records.iter().find(|r| r["instance"] == 0).unwrap();
        assert_eq!(first["passed"], true, "{}: {first:#}", wire.provider);
        for r in &records {
            let turns =
                (r["trajectory"].as_array().unwrap().iter()).filter(|m| m["role"] == "assistant");
            for (j, m) in turns.enumerate() {
                assert_eq!(m["reasoning"]["text"], thought(j), "{m}");
                assert!(!m["content"].as_str().unwrap().contains("ЗАДУМКА"), "{m}");
                // Responses keeps no blocks: it has nothing to send back.
                let kept = m["reasoning"]["blocks"].as_array().map_or(0, Vec::len);
                assert_eq!(kept > 0, wire.provider != "openai-responses", "{m}");
            }
        }
    }
}
