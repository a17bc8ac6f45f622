//! Reasoning kept apart from the answer, counted, and reported: a fake
//! reasoning model answers eight sums on the OpenAI wire (its thought in
//! `reasoning_content` or `reasoning`, `completion_tokens_details` counting
//! it) and on Ollama's (`message.thinking`, streamed and not). Per value: a
//! finished thought and the right answer; a thought cut by `length` with no
//! answer (`unfinished_reasoning`); an inline `<think>` block before a wrong
//! answer (`wrong_value`); a plain right answer. Every thought holds hostile
//! markup. The journal, the replayed golden transcript and every report
//! format are checked, and no answer ever holds the reasoning.

use serde_json::Value;

use crate::common::fake_server::{FakeServer, Reply, Request, Thought, eval, expression};
use crate::common::workspace::{Workspace, fake_workspace, model_toml};

pub(crate) const SPEC: &str = include_str!("fixtures/specs/thinking_sums.toml");

/// In every thought: a marker no answer may hold, and markup the HTML must not run.
pub(crate) const MARK: &str = "ЗАДУМКА </script><img src=x onerror=alert(1)>";

/// The reply to the sum in `request`, by its value modulo 4 (see the module doc).
pub(crate) fn reply(request: &Request, field: &'static str) -> Reply {
    let v = expression(&request.prompt)
        .and_then(|e| eval(&e))
        .unwrap_or(0);
    let thought = |text: String, cut| Thought { text, field, cut };
    match v % 4 {
        0 => Reply::Thinking(
            thought(format!("{MARK} сложим: {v}"), false),
            format!("the answer is {v}"),
        ),
        1 => Reply::Thinking(thought(format!("{MARK} считаю {v}"), true), String::new()),
        2 => Reply::Text(format!(
            "<think>{MARK} может быть {v}</think>the answer is {}",
            v + 1
        )),
        _ => Reply::Text(format!("the answer is {v}")),
    }
}

/// The journal's records by instance.
fn by_instance_of(journal: Vec<Value>) -> Vec<Value> {
    let mut records: Vec<Value> = journal
        .into_iter()
        .filter(|r| r["instance"].is_u64())
        .collect();
    records.sort_by_key(|r| r["instance"].as_u64());
    records
}

/// The journal's eight records by instance.
pub(crate) fn by_instance(journal: Vec<Value>) -> Vec<Value> {
    let records = by_instance_of(journal);
    assert_eq!(records.len(), 8);
    records
}

/// What the journal must hold of each record; `counted`: whether the wire
/// counts reasoning tokens (OpenAI, Gemini and Responses do, Ollama and
/// Anthropic do not).
pub(crate) fn check_journal(records: &[Value], counted: bool) {
    for r in records {
        let v = r["instance"].as_u64().unwrap() + 1;
        let response = r["response"].as_str().unwrap_or_default();
        let answer = r["answer"].as_str().unwrap_or_default();
        assert!(
            !response.contains("ЗАДУМКА") && !answer.contains("ЗАДУМКА"),
            "{r}"
        );
        assert!(!response.contains("think>"), "{r}");
        let reasoning = r["reasoning"]["text"].as_str();
        let (failure, thought) = match v % 4 {
            0 => (None, true),
            1 => (Some("unfinished_reasoning"), true),
            2 => (Some("wrong_value"), true),
            _ => (None, false),
        };
        assert_eq!(r["failure"].as_str(), failure, "{r}");
        assert_eq!(r["passed"], failure.is_none(), "{r}");
        assert_eq!(
            reasoning.is_some_and(|t| t.starts_with(MARK)),
            thought,
            "{r}"
        );
        assert_eq!(r["reasoning"]["unfinished"] == true, v % 4 == 1, "{r}");
        let wire_thought = v % 4 < 2;
        // A zero is no count: the Responses API reports one for every answer.
        let tokens = r["tokens_reasoning"].as_u64().filter(|t| *t > 0);
        assert_eq!(tokens, (counted && wire_thought).then_some(3), "{r}");
        // The report-only rule reads the reasoning's last number, never the answer's.
        let reasoned = &r["rules"][1];
        assert_eq!(reasoned["name"], "reasoned");
        let from_thought = thought.then(|| v.to_string());
        assert_eq!(reasoned["answer"].as_str(), from_thought.as_deref(), "{r}");
    }
}

/// The newest report of kind `ext`.
fn report(ws: &Workspace, ext: &str) -> String {
    crate::common::report(&ws.path().join("results"), "report_", ext)
}

/// Every report format counts the two unfinished answers apart from the two
/// wrong ones and shows six answers with reasoning, `tokens` the mean
/// reasoning tokens per counted answer; none shows the thought but the HTML,
/// escaped.
pub(crate) fn check_reports(ws: &Workspace, out: &str, tokens: Option<&str>) {
    let row = out
        .lines()
        .skip_while(|l| !l.starts_with("reasoning per cell"))
        .skip(1)
        .find(|l| l.contains("Thinking sums"))
        .unwrap_or_else(|| panic!("no reasoning table: {out}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    let mean = tokens.unwrap_or("—");
    assert_eq!(cells[cells.len() - 4..], ["6", mean, "2", "2"], "{row}");

    let md = report(ws, "md");
    assert!(md.contains("## Reasoning"), "{md}");
    let md_row = md
        .lines()
        .skip_while(|l| !l.starts_with("## Reasoning"))
        .find(|l| l.starts_with("| **fake**"))
        .unwrap_or_else(|| panic!("{md}"));
    let md_cells: Vec<&str> = md_row.split('|').map(str::trim).collect();
    assert_eq!(md_cells[3..7], ["6", mean, "2", "2"], "{md_row}");
    assert!(
        md.contains("Reasoning: ") && md.contains(" characters"),
        "{md}"
    );
    assert!(
        !md.contains("ЗАДУМКА"),
        "Markdown shows the length, not the text"
    );

    let json: Value = serde_json::from_str(&report(ws, "json")).unwrap();
    let cell = &json["models"][0]["specs"][0]["metrics"];
    assert_eq!(cell["with_reasoning"], 6, "{cell}");
    assert_eq!(
        cell["failures"]["unfinished_reasoning"]["count"], 2,
        "{cell}"
    );
    assert_eq!(cell["failures"]["wrong_value"]["count"], 2, "{cell}");
    let mean_json = cell["tokens_reasoning"]["mean"].as_f64();
    assert_eq!(mean_json, tokens.map(|t| t.parse().unwrap()), "{cell}");

    let csv = report(ws, "csv");
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let values: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = |name: &str| values[header.iter().position(|h| *h == name).unwrap()];
    assert_eq!(at("with_reasoning"), "6");
    assert_eq!(at("tokens_reasoning_mean"), tokens.unwrap_or(""));
    assert_eq!(at("unfinished_reasoning"), "2");
    let failures = at("failures");
    assert!(failures.contains("unfinished_reasoning=2") && failures.contains("wrong_value=2"));

    let junit = report(ws, "xml");
    assert_eq!(junit.matches(r#"type="unfinished_reasoning""#).count(), 2);
    assert_eq!(junit.matches(r#"type="wrong_value""#).count(), 2);
    assert!(
        !junit.contains("ЗАДУМКА"),
        "JUnit shows answers, not reasoning"
    );
    assert!(
        junit.contains(r#"<property name="unfinished_reasoning" value="2"/>"#),
        "{junit}"
    );
    let mean_property = format!(r#"<property name="tokens_reasoning_mean" value="{mean}"/>"#);
    assert_eq!(junit.contains(&mean_property), tokens.is_some(), "{junit}");

    let html = report(ws, "html");
    assert!(html.contains("ЗАДУМКА"), "the drill-down has the reasoning");
    assert!(
        !html.contains("<img src=x"),
        "the reasoning's markup is escaped"
    );
    assert_eq!(
        html.matches("</script>").count(),
        html.matches("<script").count()
    );
}

pub(crate) const FORMATS: [&str; 6] = ["--format", "json", "--format", "csv", "--format", "junit"];

#[test]
fn the_openai_wire_keeps_reasoning_apart_counts_it_and_replays_it() {
    for field in ["reasoning_content", "reasoning"] {
        let fake = FakeServer::start(move |r| reply(r, field));
        let ws = fake_workspace(&fake, "thinking_sums.toml", SPEC);
        let mut args = vec!["specs/thinking_sums.toml", "-m", "fake", "--bless"];
        args.extend(FORMATS);
        let out = ws.run_ok(&args);
        let recorded = by_instance(ws.last_journal());
        check_journal(&recorded, true);
        check_reports(&ws, &out, Some("3.0"));
        let golden = ws.path().join("golden/thinking_sums/fake.jsonl");
        let golden = std::fs::read_to_string(golden).unwrap();
        assert_eq!(golden.matches("\"unfinished\":true").count(), 2);

        check_replay(&ws, &fake, &recorded, field);
    }
}

/// Replays the golden transcript just blessed in `ws`: the same reasoning,
/// failures and verdicts as `recorded`, and no request to `fake`.
pub(crate) fn check_replay(ws: &Workspace, fake: &FakeServer, recorded: &[Value], what: &str) {
    let asked = fake.count();
    ws.run_ok(&["specs/thinking_sums.toml", "-m", "replay:fake"]);
    assert_eq!(fake.count(), asked, "{what}: the replay asks nothing");
    let replayed = by_instance(ws.last_journal());
    for (was, now) in recorded.iter().zip(&replayed) {
        for key in [
            "reasoning",
            "tokens_reasoning",
            "failure",
            "response",
            "rules",
        ] {
            assert_eq!(was[key], now[key], "{what}: {key}");
        }
    }
}

#[test]
fn the_ollama_wire_keeps_thinking_apart_and_counts_no_tokens() {
    for stream in [false, true] {
        let fake = FakeServer::start(|r| reply(r, "thinking"));
        let ws = Workspace::new();
        ws.write("specs/thinking_sums.toml", SPEC);
        let settings = format!("timeout_secs = 5\nstream = {stream}");
        let table = model_toml("fake", "ollama", "qwen3", &fake.ollama_base(), &settings);
        ws.write("harness.toml", &table);
        let mut args = vec!["specs/thinking_sums.toml", "-m", "fake"];
        args.extend(FORMATS);
        let out = ws.run_ok(&args);
        check_journal(&by_instance(ws.last_journal()), false);
        check_reports(&ws, &out, None);
    }
}

/// A model on the OpenAI wire priced per million tokens: input 1, output 2,
/// and `reasoning` as given.
fn priced(fake: &FakeServer, reasoning: &str) -> Workspace {
    let ws = Workspace::new();
    ws.write("specs/thinking_sums.toml", SPEC);
    let price = format!("price = {{ input = 1.0, output = 2.0, reasoning = {reasoning} }}");
    let table = model_toml("fake", "openai", "m", &fake.openai_base(), &price);
    ws.write("harness.toml", &table);
    ws
}

#[test]
fn reasoning_tokens_cost_their_own_price_and_bound_the_dry_run() {
    let fake = FakeServer::start(|r| reply(r, "reasoning_content"));
    let ws = priced(&fake, "10.0");
    // The dry run prices every output token at the higher of output and reasoning.
    let out = ws.run_ok(&["specs/thinking_sums.toml", "-m", "fake", "--dry-run"]);
    assert_eq!(fake.count(), 0, "{out}");
    let said = out.split_whitespace().collect::<Vec<_>>().join(" ");
    let number_after = |words: &str| -> f64 {
        let at = said.find(words).unwrap_or_else(|| panic!("{said}")) + words.len();
        let token = said[at..].split_whitespace().next().unwrap();
        token.trim_end_matches(';').parse().unwrap()
    };
    let prompt = number_after("to the models");
    let output = number_after("prompt tokens and at most");
    let most = number_after("cost at most");
    assert!(
        (most - (prompt + output * 10.0) / 1e6).abs() < 1e-4,
        "{said}"
    );

    ws.run_ok(&["specs/thinking_sums.toml", "-m", "fake"]);
    for r in by_instance(ws.last_journal()) {
        // 17 prompt tokens at 1; 5 output tokens at 2, of them 3 reasoning at 10.
        let counted = r["tokens_reasoning"] == 3;
        let want = if counted {
            17.0 + 2.0 * 2.0 + 3.0 * 10.0
        } else {
            17.0 + 5.0 * 2.0
        };
        let amount = r["cost"]["amount"].as_f64().unwrap();
        assert!((amount - want / 1e6).abs() < 1e-12, "{r}");
    }

    // A negative reasoning price is an error at its place in harness.toml.
    let bad = priced(&fake, "-1.0");
    let args = ["specs/thinking_sums.toml", "-m", "fake"];
    bad.run_expect(&args, 2, &["harness.toml:5:9", "price `reasoning` is -1"]);
}

/// The CI models' recorded reasoning (`tests/e2e_llama/reasoning.rs` asks
/// them live) replays with no server: every answer reasoned, none finished,
/// and the golden comparison finds nothing changed.
#[test]
fn the_ci_models_recorded_reasoning_replays_from_its_golden_transcripts() {
    let ws = Workspace::new();
    let fixtures = crate::common::root().join("tests/fixtures/reasoning");
    let spec = std::fs::read_to_string(fixtures.join("thinking.toml")).unwrap();
    ws.write("specs/thinking.toml", &spec);
    // The workspace's golden folder (`--golden golden`) holds the recorded transcripts.
    std::fs::create_dir_all(ws.path().join("golden/thinking")).unwrap();
    for model in ["smollm2-think", "gemma3-think"] {
        let file = format!("thinking/{model}.jsonl");
        let from = fixtures.join("golden").join(&file);
        std::fs::copy(from, ws.path().join("golden").join(&file)).unwrap();
    }
    let args = [
        "specs/thinking.toml",
        "-m",
        "replay:smollm2-think",
        "-m",
        "replay:gemma3-think",
    ];
    let out = ws.run_ok(&args);
    let records = ws.last_journal();
    assert_eq!(records.len(), 8, "{out}");
    let golden = fixtures.join("golden");
    crate::common::golden_lines::assert_as_golden(&records, &golden, "replayed answers");
    for r in &records {
        assert_eq!(r["failure"], "unfinished_reasoning", "{r}");
        assert_eq!(r["reasoning"]["unfinished"], true, "{r}");
        assert_eq!(r["response"], "", "{r}");
    }
    assert!(out.contains("unfinished"), "{out}");
}

/// The shop clerk of `tests/agent.rs`, thinking before each turn's calls.
fn thinking_clerk(request: &Request) -> Reply {
    match crate::agent::clerk(request) {
        Reply::Calls(text, calls) => Reply::Calls(
            format!("<think>{MARK} ход {}</think>{text}", request.index),
            calls,
        ),
        other => other,
    }
}

#[test]
fn an_episode_keeps_each_turns_reasoning_in_its_history_and_never_sends_it() {
    // The same episodes without reasoning: the verdicts must not change.
    let plain = FakeServer::start(crate::agent::clerk);
    let ws = crate::agent::shop(&plain, "timeout_secs = 10");
    ws.run_ok(&["specs/shop_agent.toml", "-m", "fake"]);
    let verdicts: Vec<(Value, Value)> = by_instance_of(ws.last_journal())
        .into_iter()
        .map(|r| (r["passed"].clone(), r["score"].clone()))
        .collect();
    let fake = FakeServer::start(thinking_clerk);
    let ws = crate::agent::shop(&fake, "timeout_secs = 10");
    ws.run_ok(&["specs/shop_agent.toml", "-m", "fake"]);
    let records = by_instance_of(ws.last_journal());
    assert!(!records.is_empty() && records.len() == verdicts.len());
    for (r, (passed, score)) in records.iter().zip(&verdicts) {
        assert_eq!((&r["passed"], &r["score"]), (passed, score), "{r}");
        let turns: Vec<&Value> = (r["trajectory"].as_array().unwrap().iter())
            .filter(|m| m["role"] == "assistant")
            .collect();
        assert_eq!(turns.len(), 3, "{r}");
        for m in &turns {
            let thought = m["reasoning"]["text"].as_str().unwrap();
            assert!(thought.starts_with(MARK), "{m}");
            assert!(!m["content"].as_str().unwrap().contains("ЗАДУМКА"), "{m}");
        }
        assert_eq!(r["reasoning"], turns[2]["reasoning"], "the last turn's");
    }
    for request in fake.requests() {
        assert!(
            !request.body.to_string().contains("ЗАДУМКА"),
            "the OpenAI wire sends no reasoning back"
        );
    }
}
