//! The unit tests of `agent.rs`: calls, their limits, the state, the shop spec's tools.

use super::*;
use crate::prompt::Message;
use serde_json::json;

fn runtime(scripts: &[(&str, &str)]) -> AgentRuntime {
    let engine = sandboxed_engine(DEFAULT_MAX_OPERATIONS);
    let scripts = scripts
        .iter()
        .map(|(n, s)| {
            (
                (*n).to_owned(),
                scripting::compile(&engine, &SCOPE_NAMES, s).unwrap(),
            )
        })
        .collect();
    AgentRuntime {
        max_turns: 4,
        user: None,
        end_tool: None,
        state_var: "state".into(),
        limits: EpisodeLimits::default(),
        engine,
        scripts,
        seed: 7,
    }
}

const AT: CallSite = CallSite {
    instance: 0,
    sample: 0,
    turn: 0,
    call: 0,
};

fn call(name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: "c1".into(),
        name: name.into(),
        arguments,
        invalid: None,
    }
}

#[test]
fn a_call_changes_the_state_and_a_throw_leaves_it() {
    let agent = runtime(&[(
        "cancel",
        r#"let o = state.orders[args.id]; if o.status == "shipped" { throw "already shipped" } o.status = "cancelled"; state.orders[args.id] = o; #{ ok: true }"#,
    )]);
    let mut state = json!({"orders": [{"status": "new"}, {"status": "shipped"}]});
    let done = agent.call(&call("cancel", json!({"id": 0})), &mut state, AT);
    assert_eq!(done, Ok(json!({"ok": true})));
    assert_eq!(state["orders"][0]["status"], "cancelled");
    let refused = agent.call(&call("cancel", json!({"id": 1})), &mut state, AT);
    assert_eq!(refused, Err(ToolError::said("already shipped")));
    assert_eq!(result_text(&refused), r#"{"error":"already shipped"}"#);
    assert_eq!(state["orders"][1]["status"], "shipped");
}

#[test]
fn bad_calls_become_messages_not_crashes() {
    let agent = runtime(&[("f", "args.x + 1"), ("spin", "loop {}")]);
    let mut state = json!({});
    let cases = [
        (
            call("g", json!({})),
            "there is no tool `g` (tools: f, spin)",
        ),
        (call("f", json!([1])), "must be a JSON object"),
        (ToolCall::from_text("c", "f", "{x:"), "not valid JSON"),
        (call("spin", json!({})), "operation budget"),
    ];
    for (c, want) in cases {
        let got = agent.call(&c, &mut state, AT).unwrap_err().message;
        assert!(got.contains(want), "{got}");
    }
    assert_eq!(
        agent.call(&call("f", json!({"x": 1})), &mut state, AT),
        Ok(json!(2))
    );
}

#[test]
fn values_past_the_limits_are_errors_for_the_model_and_leave_the_state() {
    let agent = runtime(&[
        (
            "undo",
            "state.log = #{ prev: state.log, n: args.n }; #{ ok: true }",
        ),
        (
            "loop_deep",
            "for i in 0..100 { state.log = #{ prev: state.log }; } true",
        ),
        ("deep_result", "let v = 1; for i in 0..200 { v = [v]; } v"),
        // Just past each limit (each nesting step above copies what it
        // wraps), so the work stays far inside the scripts' 1 s time limit
        // on a loaded machine.
        ("big", "let s = \"\"; s.pad(70000, \"x\"); s"),
        (
            "grow",
            "let a = []; a.pad(66000, 1000000000000000); state.a = a; 1",
        ),
        ("shout", "let s = \"x\"; s.pad(100000, \"!\"); throw s;"),
    ]);
    let mut state = json!({"log": null});
    let mut first_refused = None;
    for n in 0..100 {
        let done = agent.call(&call("undo", json!({ "n": n })), &mut state, AT);
        if let Err(e) = done {
            assert!(e.too_deep, "{e:?}");
            assert!(e.message.contains("levels deep"), "{}", e.message);
            first_refused.get_or_insert(n);
        }
    }
    // The state map is level 1, each `log` one more: 63 calls fit in 64 levels.
    assert_eq!(first_refused, Some(63));
    assert_eq!(value_depth(&state), MAX_DEPTH);
    let before = state.clone();
    let cases = [
        (
            "loop_deep",
            true,
            "the state `loop_deep` leaves would nest 164 levels deep",
        ),
        (
            "deep_result",
            true,
            "the result of `deep_result` would nest 200 levels deep",
        ),
        (
            "big",
            false,
            "is more than max_result_bytes = 65536 bytes as JSON",
        ),
        (
            "grow",
            false,
            "more than max_state_bytes = 1048576 bytes as JSON; the state is unchanged",
        ),
        ("shout", false, "… (97952 bytes more)"),
    ];
    for (tool, too_deep, says) in cases {
        let e = agent
            .call(&call(tool, json!({})), &mut state, AT)
            .unwrap_err();
        assert_eq!(e.too_deep, too_deep, "{tool}: {}", e.message);
        assert!(e.message.contains(says), "{tool}: {}", e.message);
        assert!(e.message.len() <= 2_048 + 30, "{tool}: {}", e.message.len());
        assert_eq!(state, before, "{tool}");
    }
}

#[test]
fn an_unknown_tool_lists_twenty_tools_and_counts_the_rest() {
    let names: Vec<String> = (0..3000).map(|i| format!("tool_{i:04}")).collect();
    let scripts: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "1")).collect();
    let agent = runtime(&scripts);
    let e = agent
        .call(&call(&"y".repeat(10_000), json!({})), &mut json!({}), AT)
        .unwrap_err();
    assert!(
        e.message.ends_with("tool_0019, and 2980 more)"),
        "{}",
        e.message
    );
    assert!(e.message.len() < 600, "{}", e.message);
}

#[test]
fn initial_state_comes_from_the_variable() {
    let agent = runtime(&[]);
    let vars = |v: Value| v.as_object().unwrap().clone();
    assert_eq!(agent.initial_state(&vars(json!({}))), Ok(json!({})));
    let from_text = agent.initial_state(&vars(json!({"state": "{\"a\": 1}"})));
    assert_eq!(from_text, Ok(json!({"a": 1})));
    assert!(agent.initial_state(&vars(json!({"state": 3}))).is_err());
}

#[test]
fn the_rng_is_seeded_per_step() {
    let agent = runtime(&[("r", "rng.int(1, 1000000)")]);
    let roll = |turn| {
        agent.call(
            &call("r", json!({})),
            &mut json!({}),
            CallSite { turn, ..AT },
        )
    };
    assert_eq!(roll(0), roll(0));
    assert_ne!(roll(0), roll(1));
}

/// The shipped shop spec's tools, run as a model would call them: the
/// state they leave passes `final_state` exactly when the right orders changed.
#[test]
fn the_shop_spec_tools_keep_their_promises() {
    let spec = crate::spec::Spec::load(Path::new("specs/shop_agent.toml")).unwrap();
    let agent = spec.agent().unwrap();
    // (instance, the calls as (tool, order), what the last result says, passes)
    type Case<'a> = (u64, &'a [(&'a str, &'a str)], &'a str, bool);
    let cases: [Case; 5] = [
        (0, &[("cancel_order", "A-1002")], "отменён", true),
        (0, &[("cancel_order", "A-1003")], "нельзя отменить", false),
        (
            1,
            &[("get_order", "B-2001"), ("refund_order", "B-2001")],
            "возврат",
            true,
        ),
        (
            5,
            &[("cancel_order", "F-6001"), ("cancel_order", "F-6003")],
            "отменён",
            true,
        ),
        (7, &[("cancel_order", "H-8009")], "не найден", true),
    ];
    for (instance, calls, said, passes) in cases {
        let inst = spec.instance(instance).unwrap();
        let mut state = agent.initial_state(&inst.vars).unwrap();
        let (mut last, mut steps) = (String::new(), Vec::new());
        for (tool, id) in calls {
            let asked = call(tool, json!({"order_id": id}));
            last = result_text(&agent.call(&asked, &mut state, AT));
            steps.push(Message::assistant("", vec![asked.clone()]));
            steps.push(Message::tool_result(&asked, last.clone()));
        }
        let end = call("submit", json!({"answer": "ок"}));
        let submit = agent.call(&end, &mut state, AT);
        assert_eq!(submit, Ok(json!({"ok": true})));
        steps.push(Message::assistant("", vec![end]));
        assert!(last.contains(said), "{instance}: {last}");
        let reply = crate::verify::Reply {
            state: Some(&state),
            trajectory: &steps,
            ..crate::verify::Reply::text("")
        };
        let verdict = spec.verify_judged(&reply, &inst.vars, &Default::default());
        assert_eq!(
            verdict.passed,
            passes,
            "{instance}: {}",
            verdict.failure_details()
        );
    }
}
