//! An agent episode in the browser (`tests/fixtures/journals/tool_episode.jsonl`):
//! the drill-down draws the conversation step by step in order (prompt, each
//! assistant turn with its calls, each tool result, the final answer, the
//! final state folded), the tool-name and failed-argument filters pick the
//! right answers, and a hostile tool name and argument stay text.

use serde_json::{Value, json};

use super::{assert_clean, open, set_filter, text, wait_count};
use crate::common::browser::{Browser, artifacts};
use harness::Lang;

const HOSTILE_TOOL: &str = "<img src=x onerror=\"window.__pwned = 5\">";

/// The text of every element `selector` matches in the drill-down, in order.
fn texts(b: &mut Browser, selector: &str) -> Vec<String> {
    let v = b.eval(&format!(
        "[...document.querySelectorAll({})].map(e => e.textContent)",
        json!(selector)
    ));
    serde_json::from_value(v).unwrap()
}

/// Opens the first row of the instance list.
fn open_first(b: &mut Browser) {
    b.eval("document.querySelector('#view-instances .vrow').click()");
    b.wait_for("!document.getElementById('drill').hidden");
}

/// The tool and failed-argument filters list each name once, as text, and
/// pick the records that called the tool or failed on the argument.
fn filters_pick_by_tool_and_argument(b: &mut Browser) {
    let tools = texts(b, "#view-instances [name=tool] option");
    let called = format!("called {HOSTILE_TOOL}");
    assert_eq!(
        tools,
        [
            "Any tool",
            &called,
            "called shop.cancel_order",
            "called shop.find_order"
        ],
        "tool names as text, each once"
    );
    let args = texts(b, "#view-instances [name=arg] option");
    let want = [
        "Any argument",
        "failed argument order_id",
        "failed argument reason",
    ];
    assert_eq!(args, want);
    // (tool, failed argument) → records picked of 5.
    let cases = [
        ("shop.find_order", "", 2),
        ("shop.cancel_order", "", 4),
        (HOSTILE_TOOL, "", 1),
        ("", "order_id", 1),
        ("", "reason", 1),
        ("shop.find_order", "reason", 0),
        ("", "", 5),
    ];
    for (tool, arg, picked) in cases {
        set_filter(b, "tool", tool);
        set_filter(b, "arg", arg);
        wait_count(b, picked, 5);
    }
}

#[test]
fn an_episode_renders_step_by_step_and_filters_reach_into_calls() {
    let Some(mut b) = Browser::launch() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = crate::reports::episodes::build(dir.path(), Lang::En);
    open(&mut b, &out.files.html, 1280, "episode_overview");
    // No model has a price: the charts' heading does not speak of cost.
    let headings = b.eval(
        "[...document.querySelectorAll('#view-overview h2')].map(h => h.textContent).join('|')",
    );
    let headings = headings.as_str().unwrap();
    assert!(
        headings.contains("Total against latency and answer length"),
        "{headings}"
    );
    assert!(!headings.contains("cost"), "{headings}");
    b.eval("document.querySelector('#tabs [data-view=instances]').click()");
    b.wait_for("document.querySelectorAll('#view-instances .vrow').length > 0");
    filters_pick_by_tool_and_argument(&mut b);
    let line = texts(&mut b, "#view-instances .vrow .txt");
    assert!(
        line.iter()
            .any(|l| l.starts_with("→ shop.cancel_order({\"order_id\": 5,) [invalid arguments")),
        "a call-only answer is not an empty line: {line:?}"
    );
    b.screenshot(&artifacts().join("episode_instances_1280.png"));
    set_filter(&mut b, "arg", "order_id");
    wait_count(&mut b, 1, 5);
    open_first(&mut b);
    b.screenshot(&artifacts().join("episode_drill_1280.png"));
    b.viewport(390, 900);
    b.screenshot(&artifacts().join("episode_drill_390.png"));
    b.viewport(1280, 900);
    let steps = texts(
        &mut b,
        "#drill-body h3, #drill-body .step > .role, #drill-body .call-head, #drill-body details > summary",
    );
    let tool_result =
        |name: &str, id: &str, error: &str| format!("tool result · {name} {id}{error}");
    let want = [
        "Prompt".to_owned(),
        "Episode".into(),
        "assistant, turn 1".into(),
        "→ shop.find_order call 1".into(),
        tool_result("shop.find_order", "call 1", ""),
        "assistant, turn 2".into(),
        format!("→ {HOSTILE_TOOL} call 2"),
        "→ shop.cancel_order call 3".into(),
        tool_result(HOSTILE_TOOL, "call 2", " error"),
        tool_result("shop.cancel_order", "call 3", ""),
        "Final answer".into(),
        "Final state".into(),
        "Expected".into(),
    ];
    assert_eq!(steps[..want.len()], want, "{steps:#?}");
    let pres = texts(&mut b, "#drill-body .episode pre");
    assert_eq!(
        pres,
        [
            "{\n  \"order_id\": 7\n}",
            "{\n  \"id\": 7,\n  \"status\": \"paid\"\n}",
            "Отменяю заказ <b>7</b>.",
            "{\n  \"reason\": \"</script><script>window.__pwned = 6</script>\"\n}",
            "{\n  \"order_id\": 8\n}",
            "{\n  \"error\": \"нет инструмента <img src=x onerror=\\\"window.__pwned = 5\\\">\"\n}",
            "{\n  \"ok\": true\n}",
        ],
        "each step's text, arguments and structured results pretty-printed"
    );
    assert_eq!(text(&mut b, "#drill-body pre.response"), "Заказ 7 отменён.");
    assert_eq!(
        b.eval("document.querySelectorAll('#drill-body pre.result.error').length"),
        json!(1)
    );
    let state = b.eval(
        "[document.querySelector('#drill-body details.state').open, \
          document.querySelector('#drill-body pre.state').textContent.includes('\"cancelled\"')]",
    );
    assert_eq!(state, json!([false, true]), "the final state, folded");
    let rules = texts(&mut b, "#drill-body td.name");
    assert!(
        rules.iter().any(|d| d.contains("argument `order_id`: 8")),
        "{rules:?}"
    );
    assert_no_injection(&mut b);
    // A call whose arguments were not JSON is flagged, its text shown.
    b.eval("document.getElementById('drill-close').click()");
    set_filter(&mut b, "arg", "");
    set_filter(&mut b, "q", "shop_agent/2");
    wait_count(&mut b, 1, 5);
    open_first(&mut b);
    let flags = texts(&mut b, "#drill-body .call-head .flag");
    assert_eq!(
        flags,
        ["invalid arguments: EOF while parsing an object at line 1 column 15"]
    );
    assert_eq!(text(&mut b, "#drill-body pre.args"), "{\"order_id\": 5,");
    assert_no_injection(&mut b);
    assert_clean(&b);
}

/// Nothing from the data became an element or ran.
fn assert_no_injection(b: &mut Browser) {
    let injected: Value = b.eval(
        "[window.__pwned === undefined, \
          document.querySelectorAll('main img, #drill img, main script, #drill script, #drill b').length]",
    );
    assert_eq!(
        injected,
        json!([true, 0]),
        "no markup from the data became elements"
    );
}

/// A conversation with a simulated user (`tests/fixtures/journals/conversation.jsonl`):
/// the user's turns are marked apart from the assistant's, numbered on
/// their own, and their hostile text stays text.
#[test]
fn a_conversation_marks_the_simulated_users_turns() {
    let Some(mut b) = drilled_into("conversation", "ru_support_dialogue") else {
        return;
    };
    let roles = texts(&mut b, "#drill-body .step > .role");
    assert_eq!(
        roles,
        [
            "assistant, turn 1",
            "simulated user, turn 1",
            "assistant, turn 2",
            "tool result · cancel_order call 1",
            "assistant, turn 3",
            "simulated user, turn 2",
        ]
    );
    let users = texts(&mut b, "#drill-body .step.user pre");
    assert_eq!(
        users,
        [
            "A-1002 <img src=x onerror=\"window.__pwned = 7\">",
            "</script><script>window.__pwned = 8</script>###STOP###",
        ]
    );
    assert_no_injection(&mut b);
    assert_clean(&b);
}

/// A browser on the report of `tests/fixtures/journals/<name>.jsonl` (one
/// model, the spec `spec`), drilled into its first record; `None` when no
/// browser runs here.
fn drilled_into(name: &str, spec: &str) -> Option<Browser> {
    let mut b = Browser::launch()?;
    let dir = tempfile::tempdir().unwrap();
    let journal = crate::common::root().join(format!("tests/fixtures/journals/{name}.jsonl"));
    let models = vec!["qwen3:8b".to_owned()];
    let specs = vec![harness::SpecInfo::plain(spec)];
    let journals = [journal];
    let ctx = harness::ReportContext {
        run_ids: &["r1".to_owned()],
        timestamp: "2026-11-28 05:00:00",
        file_stamp: name,
        formats: &[],
        lang: Lang::En,
        ..harness::ReportContext::new(dir.path(), &models, &specs, &journals)
    };
    let out = harness::write_reports(&ctx).unwrap();
    open(&mut b, &out.files.html, 1280, &format!("{name}_overview"));
    b.eval("document.querySelector('#tabs [data-view=instances]').click()");
    b.wait_for("document.querySelectorAll('#view-instances .vrow').length > 0");
    open_first(&mut b);
    b.screenshot(&artifacts().join(format!("{name}_drill_1280.png")));
    Some(b)
}

/// An episode with an MCP server's structured result
/// (`tests/fixtures/journals/mcp_episode.jsonl`): the result is shown as
/// pretty JSON, and the hostile text inside it stays text.
#[test]
fn an_mcp_result_is_pretty_json_and_text() {
    let Some(mut b) = drilled_into("mcp_episode", "mcp_memory") else {
        return;
    };
    let results = texts(&mut b, "#drill-body .step.tool pre");
    let expected = "{\n  \"entities\": [\n    {\n      \"entityType\": \"person\",\n      \"name\": \"Анна\",\n      \"observations\": [\n        \"любит чай <img src=x onerror=\\\"window.__pwned = 9\\\">\"\n      ]\n    }\n  ]\n}";
    assert_eq!(results, [expected]);
    assert_no_injection(&mut b);
    assert_clean(&b);
}
