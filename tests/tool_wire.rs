//! Tool calls on the wire, through the real CLI against fakes that answer
//! in each wire's own form: what the request carries (tools, `tool_choice`,
//! dotted names made safe), the calls coming back under the spec's names into
//! the journal's `trajectory`, arguments that are not JSON kept as a call, a
//! rerun served from the cache, replay of recorded calls, and Ollama's
//! streamed calls gathered across chunks.

use serde_json::{Value, json};

use crate::common::fake_server::{FakeCall, FakeServer, Reply};
use crate::common::workspace::{Workspace, model_toml};

/// The fixture's tools as the wire must name them: the dotted one made safe
/// and moved aside by the tool already named `math_factorial`.
const SAFE: &str = "math_factorial_2";

/// A workspace with the fixture spec, its `tool_choice = "auto"` line
/// replaced by `choice`, and the model `m` of `provider` on `fake`.
fn workspace(fake: &FakeServer, provider: &str, choice: &str) -> Workspace {
    let ws = Workspace::new();
    let spec =
        std::fs::read_to_string(crate::common::root().join("tests/fixtures/wire/tool_calls.toml"))
            .unwrap()
            .replace("tool_choice = \"auto\"", choice);
    ws.write("specs/tool_calls.toml", &spec);
    let base = match provider {
        "openai" => fake.openai_base(),
        _ => fake.ollama_base(),
    };
    ws.write(
        "harness.toml",
        &model_toml("m", provider, "fake-tools", &base, "timeout_secs = 5"),
    );
    ws
}

/// A fake answering every request with no text and these calls.
fn calling(calls: &[(&'static str, &'static str)]) -> FakeServer {
    let calls: Vec<FakeCall> = calls.iter().map(|(n, a)| FakeCall::new(n, a)).collect();
    FakeServer::start(move |_| Reply::Calls(String::new(), calls.clone()))
}

/// The one record of the last run, which must not be an error record.
fn record(ws: &Workspace) -> Value {
    let journal = ws.last_journal();
    assert_eq!(journal.len(), 1, "{journal:#?}");
    let record = journal[0].clone();
    assert!(record.get("error").is_none(), "{record:#}");
    record
}

/// The tool names a request body offers.
fn offered(body: &Value) -> Vec<&str> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect()
}

/// The record's trajectory is one turn of the two calls the fakes make,
/// under the spec's names, with the wire's `ids`.
fn assert_both_calls(record: &Value, ids: [&str; 2]) {
    assert_eq!(
        record["trajectory"],
        json!([{"role": "assistant", "content": "", "tool_calls": [
            {"id": ids[0], "name": "math.factorial", "arguments": {"n": 5}},
            {"id": ids[1], "name": "math_factorial", "arguments": {"n": 6}}]}])
    );
}

/// Runs again and proves the answer came from the cache, calls intact.
fn rerun_from_cache(ws: &Workspace, fake: &FakeServer, first: &Value) {
    let asked = fake.count();
    ws.run_ok(&["specs", "-m", "m"]);
    assert_eq!(fake.count(), asked, "the rerun asks nothing");
    let again = record(ws);
    assert_eq!(again["cached"], true, "{again:#}");
    assert_eq!(again["trajectory"], first["trajectory"]);
}

#[test]
fn openai_sends_safe_names_and_journals_the_spec_names() {
    let fake = calling(&[(SAFE, r#"{"n": 5}"#), ("math_factorial", r#"{"n": 6}"#)]);
    let ws = workspace(
        &fake,
        "openai",
        "tool_choice = { function = \"math.factorial\" }",
    );
    ws.run_ok(&["specs", "-m", "m"]);
    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    let body = &requests[0].body;
    assert_eq!(offered(body), [SAFE, "math_factorial"]);
    assert_eq!(body["tools"][0]["function"]["parameters"]["type"], "object");
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "function": {"name": SAFE}})
    );
    let record = record(&ws);
    assert_both_calls(&record, ["call_0_0_0", "call_0_0_1"]);
    assert_eq!(record["passed"], true, "{record:#}");
    rerun_from_cache(&ws, &fake, &record);
}

#[test]
fn openai_arguments_that_are_not_json_stay_a_call() {
    let fake = calling(&[(SAFE, "{n: 5")]);
    let ws = workspace(&fake, "openai", "tool_choice = \"required\"");
    ws.run_ok(&["specs", "-m", "m"]);
    assert_eq!(fake.requests()[0].body["tool_choice"], "required");
    let record = record(&ws);
    let call = &record["trajectory"][0]["tool_calls"][0];
    assert_eq!(call["name"], "math.factorial");
    assert_eq!(call["arguments"], "{n: 5", "the model's text, as written");
    assert!(
        call["invalid"].as_str().is_some_and(|e| !e.is_empty()),
        "{call:#}"
    );
    rerun_from_cache(&ws, &fake, &record);
}

#[test]
fn ollama_sends_tools_and_journals_the_spec_names() {
    let fake = calling(&[(SAFE, r#"{"n": 5}"#), ("math_factorial", r#"{"n": 6}"#)]);
    let ws = workspace(&fake, "ollama", "tool_choice = \"auto\"");
    ws.run_ok(&["specs", "-m", "m"]);
    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    let body = &requests[0].body;
    assert_eq!(requests[0].path, "/api/chat");
    assert_eq!(offered(body), [SAFE, "math_factorial"]);
    assert_eq!(
        body["tools"][0],
        json!({"type": "function", "function": {"name": SAFE, "description": "Факториал числа",
            "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}})
    );
    // Ollama has no tool_choice; "auto" is what it does anyway.
    assert!(body.get("tool_choice").is_none(), "{body:#}");
    let record = record(&ws);
    assert_both_calls(&record, ["call_0", "call_1"]);
    rerun_from_cache(&ws, &fake, &record);
}

#[test]
fn ollama_refuses_a_tool_choice_it_cannot_send() {
    let fake = calling(&[(SAFE, r#"{"n": 5}"#)]);
    for choice in ["tool_choice = \"required\"", "parallel_tool_calls = false"] {
        let ws = workspace(&fake, "ollama", choice);
        let (code, out) = ws.run(&["specs", "-m", "m"]);
        assert_eq!(code, 4, "an error record: {out}");
        let journal = ws.last_journal();
        let error = journal[0]["error"].as_str().unwrap();
        assert!(error.contains(choice.split(' ').next().unwrap()), "{error}");
        assert_eq!(journal[0]["failure"], "config_error");
    }
    assert_eq!(
        fake.count(),
        0,
        "nothing is sent without what the spec asked"
    );
}

#[test]
fn recorded_calls_replay_with_no_model() {
    let fake = calling(&[(SAFE, r#"{"n": 5}"#)]);
    let ws = workspace(&fake, "openai", "tool_choice = \"auto\"");
    ws.run_ok(&["specs", "-m", "m", "--bless"]);
    let recorded = record(&ws);
    ws.run_ok(&["specs", "-m", "replay:m"]);
    assert_eq!(fake.count(), 1, "the replay asks nothing");
    let replayed = record(&ws);
    assert_eq!(replayed["trajectory"], recorded["trajectory"]);
    assert_eq!(
        replayed["trajectory"][0]["tool_calls"][0]["name"],
        "math.factorial"
    );
    assert_eq!(replayed["passed"], true);
}

/// The runner asks Ollama without streaming, so the stream is driven
/// through the library client, as `provider_wire` does.
mod streaming {
    use super::*;
    use harness::{ChatRequest, ModelSetup, OllamaClient, ProviderKind};

    #[tokio::test]
    async fn calls_of_every_chunk_are_gathered_under_the_spec_names() {
        let fake = FakeServer::start(|_| {
            let calls = vec![
                FakeCall::new(SAFE, r#"{"n": 5}"#),
                FakeCall::new("math_factorial", r#"{"n": 6, "note": "шесть"}"#),
            ];
            Reply::Calls("Считаю факториалы.".into(), calls)
        });
        harness::install_tls();
        let mut setup = ModelSetup::new(ProviderKind::Ollama, "stream-model");
        setup.base_url = Some(fake.ollama_base());
        setup.timeout_secs = 5.0;
        let client = OllamaClient::new(&setup, reqwest::Client::new(), true);
        let request: ChatRequest = serde_json::from_value(json!({
            "messages": [{"role": "user", "content": "5! и 6!?"}],
            "temperature": 0.0, "max_tokens": 32, "format": {"type": "text"},
            "tools": [{"name": "math.factorial", "parameters": {"type": "object"}},
                      {"name": "math_factorial", "parameters": {"type": "object"}}]
        }))
        .unwrap();
        let completion = client.complete(&request).await.unwrap();
        assert_eq!(completion.text, "Считаю факториалы.");
        // No ids (this stream's form has none) and nothing invalid: both fields stay out.
        assert_eq!(
            serde_json::to_value(&completion.tool_calls).unwrap(),
            json!([{"name": "math.factorial", "arguments": {"n": 5}},
                   {"name": "math_factorial", "arguments": {"n": 6, "note": "шесть"}}])
        );
        let body = &fake.requests()[0].body;
        assert_eq!(body["stream"], true);
        assert_eq!(offered(body), [SAFE, "math_factorial"]);
    }
}
