//! The exact JSON the harness puts on the wire, per provider, checked
//! against an in-process fake server; and that what the fake answers
//! (content, usage) lands in the run journal.

use std::collections::BTreeSet;

use crate::common::fake_server::{COMPLETION_TOKENS, FakeServer, PROMPT_TOKENS, Reply, Request};
use crate::common::workspace::{Workspace, model_toml};
use crate::common::{root, run};
use serde_json::{Value, json};

fn keys(body: &Value) -> BTreeSet<&str> {
    body.as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect()
}

fn set<'a>(items: &[&'a str]) -> BTreeSet<&'a str> {
    items.iter().copied().collect()
}

fn schema_file() -> Value {
    let path = root().join("tests/fixtures/wire/answer.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A workspace with `tests/fixtures/wire/<name>` of each of `fixtures` in its `specs/`.
fn wire_fixtures(fixtures: &[&str]) -> Workspace {
    let ws = Workspace::new();
    for name in fixtures {
        ws.copy_fixture(&format!("wire/{name}"));
    }
    ws
}

/// The last journal, which must hold `count` records that all passed and
/// carry the fake's usage.
fn journal_passed_with_usage(ws: &Workspace, count: usize) -> Vec<Value> {
    let records = ws.last_journal();
    assert_eq!(records.len(), count);
    for r in &records {
        assert_eq!(r["passed"], true, "{r:#}");
        assert_eq!(r["tokens_in"], PROMPT_TOKENS, "{r:#}");
        assert_eq!(r["tokens_out"], COMPLETION_TOKENS, "{r:#}");
        assert!(r.get("error").is_none(), "{r:#}");
    }
    records
}

#[test]
fn openai_body_for_a_shipped_spec_and_usage_in_the_journal() {
    let fake = FakeServer::healthy();
    let ws = Workspace::new();
    ws.copy_spec("t06_mathematics.toml");
    let model = format!("openai:fake-model-7b@{}", fake.openai_base());
    ws.run_ok(&["specs/t06_mathematics.toml", "-m", &model, "--runs", "2"]);

    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "one request per instance");
    for r in &requests {
        assert_eq!(r.path, "/v1/chat/completions");
        // Nothing optional is sent when the spec does not set it: t06 sets temperature and max_tokens only.
        assert_eq!(
            keys(&r.body),
            set(&["model", "messages", "temperature", "max_tokens"])
        );
        assert_eq!(r.body["model"], "fake-model-7b");
        assert_eq!(r.body["temperature"].as_f64(), Some(0.0));
        assert_eq!(r.body["max_tokens"], 256);
        let messages = r.body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 2);
        assert_eq!(
            messages[0],
            json!({"role": "system", "content": "Ты — точный калькулятор. Вычисляй выражения, соблюдая порядок операций и скобки."})
        );
        assert_eq!(messages[1]["role"], "user");
        let user = messages[1]["content"].as_str().unwrap();
        assert!(user.starts_with("Вычисли значение выражения: "), "{user}");
        assert!(
            user.ends_with("\nОтветь одним числом, без пояснений."),
            "{user}"
        );
    }

    let records = journal_passed_with_usage(&ws, 2);
    for r in &records {
        assert_eq!(
            (r["attempts"].as_u64(), r["cached"].as_bool()),
            (Some(1), Some(false))
        );
        // The journal keeps the messages exactly as sent.
        assert!(
            requests.iter().any(|q| q.body["messages"] == r["messages"]),
            "{r:#}"
        );
    }
}

#[test]
fn openai_defaults_spec_options_and_model_options() {
    let fake = FakeServer::healthy();
    let ws = wire_fixtures(&["defaults.toml", "options.toml"]);
    let base = fake.openai_base();
    let tuned = "options = { temperature = 0.3, max_tokens = 77, seed = 5, top_p = 0.5 }";
    let config = [
        model_toml("plain", "openai", "m-plain", &base, ""),
        model_toml("tuned", "openai", "m-tuned", &base, tuned),
    ];
    ws.write("harness.toml", &config.concat());
    ws.run_ok(&["specs", "-m", "plain", "-m", "tuned"]);

    let requests = fake.requests();
    assert_eq!(requests.len(), 4, "2 models × 2 specs × 1 instance");
    let find = |model: &str, defaults: bool| -> Value {
        requests
            .iter()
            .find(|r| r.body["model"] == model && r.prompt.contains("(2 + 3) * 4") == defaults)
            .unwrap_or_else(|| panic!("no request for {model}, defaults={defaults}"))
            .body
            .clone()
    };
    // No [request] table: temperature 0 and max_tokens 1024 are still always sent.
    let plain_defaults = find("m-plain", true);
    assert_eq!(
        plain_defaults,
        json!({
            "model": "m-plain",
            "messages": [{"role": "user", "content": "Вычисли значение выражения: (2 + 3) * 4"}],
            "temperature": 0.0,
            "max_tokens": 1024
        })
    );
    // Every spec option under OpenAI's names.
    let sampling = [
        "model",
        "messages",
        "temperature",
        "max_tokens",
        "top_p",
        "seed",
    ];
    let plain_options = find("m-plain", false);
    assert_eq!(
        keys(&plain_options),
        set(&[&sampling[..], &["stop"]].concat())
    );
    assert_eq!(plain_options["temperature"].as_f64(), Some(0.7));
    assert_eq!(plain_options["top_p"].as_f64(), Some(0.9));
    assert_eq!(plain_options["seed"], 42);
    assert_eq!(plain_options["max_tokens"], 64);
    assert_eq!(plain_options["stop"], json!(["\n\n", "END"]));
    assert_eq!(plain_options["messages"][0]["role"], "system");
    // Model options in harness.toml override the spec's; stop stays the spec's.
    let tuned_options = find("m-tuned", false);
    assert_eq!(tuned_options["temperature"].as_f64(), Some(0.3));
    assert_eq!(tuned_options["max_tokens"], 77);
    assert_eq!(tuned_options["seed"], 5);
    assert_eq!(tuned_options["top_p"].as_f64(), Some(0.5));
    assert_eq!(tuned_options["stop"], json!(["\n\n", "END"]));
    let tuned_defaults = find("m-tuned", true);
    assert_eq!(keys(&tuned_defaults), set(&sampling));

    journal_passed_with_usage(&ws, 4);
}

#[test]
fn openai_tools_tool_choice_and_parallel_calls() {
    let fake = FakeServer::healthy();
    let ws = wire_fixtures(&["tools.toml", "defaults.toml"]);
    let model = format!("openai:m@{}", fake.openai_base());
    ws.run(&["specs", "-m", &model]);
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let (with, without): (Vec<&Request>, Vec<&Request>) =
        requests.iter().partition(|r| r.body.get("tools").is_some());
    assert_eq!((with.len(), without.len()), (1, 1));
    assert!(!keys(&without[0].body).contains("tool_choice"));
    let body = &with[0].body;
    // BFCL's type names go out as JSON Schema's; a tool without parameters takes none.
    assert_eq!(
        body["tools"],
        json!([
            {"type": "function", "function": {
                "name": "calculate",
                "description": "Evaluates an arithmetic expression",
                "parameters": {"type": "object", "properties": {
                    "expr": {"type": "string"}, "precision": {"type": "number"}},
                    "required": ["expr"]}}},
            {"type": "function", "function": {
                "name": "noop",
                "parameters": {"type": "object", "properties": {}}}}
        ])
    );
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "function": {"name": "calculate"}})
    );
    assert_eq!(body["parallel_tool_calls"], false);
}

#[test]
fn openai_json_schema_format_and_reask_with_next_seed() {
    // The first ask of each prompt is prose, which does not parse as JSON: the
    // runner must ask again (seed + 1) and accept the schema-valid second answer.
    let fake = FakeServer::start(|r: &Request| {
        if r.attempt == 0 {
            Reply::Text("Думаю, ответ где-то рядом с пятью.".into())
        } else {
            Reply::Correct
        }
    });
    let ws = wire_fixtures(&["structured.toml", "answer.schema.json"]);
    let model = format!("openai:fake-json@{}", fake.openai_base());
    ws.run_ok(&["specs/structured.toml", "-m", &model]);

    let requests = fake.requests();
    let prompts: BTreeSet<&str> = requests.iter().map(|r| r.prompt.as_str()).collect();
    assert_eq!(
        prompts.len(),
        2,
        "the fixture's two instances have distinct prompts"
    );
    assert_eq!(requests.len(), 4, "two asks per instance");
    let expected_format = json!({
        "type": "json_schema",
        "json_schema": {"name": "answer", "strict": true, "schema": schema_file()}
    });
    for r in &requests {
        assert_eq!(r.body["response_format"], expected_format);
        assert_eq!(
            r.body["seed"],
            7 + r.attempt as u64,
            "re-asks vary the seed"
        );
    }
    let records = journal_passed_with_usage(&ws, 2);
    for r in &records {
        assert_eq!(r["attempts"], 2, "{r:#}");
        assert!(
            r["response"].as_str().unwrap().starts_with("{\"answer\":"),
            "{r:#}"
        );
    }
}

#[test]
fn ollama_body_options_format_and_usage() {
    let fake = FakeServer::healthy();
    let ws = wire_fixtures(&["options.toml", "structured.toml", "answer.schema.json"]);
    ws.write(
        "harness.toml",
        &model_toml(
            "local",
            "ollama",
            "llama3.2:1b",
            &fake.ollama_base(),
            "options = { num_ctx = 4096 }",
        ),
    );
    ws.run_ok(&["specs", "-m", "local"]);

    let requests = fake.requests();
    assert_eq!(
        requests.len(),
        3,
        "1 + 2 instances, all answered first time"
    );
    for r in &requests {
        assert_eq!(r.path, "/api/chat");
        assert_eq!(r.body["model"], "llama3.2:1b");
        assert_eq!(
            r.body["stream"], false,
            "the runner asks for one JSON object"
        );
        assert_eq!(r.body["options"]["num_ctx"], 4096);
    }
    let options = requests
        .iter()
        .find(|r| r.prompt.contains("7 - 2 * 3"))
        .unwrap();
    assert_eq!(
        keys(&options.body),
        set(&["model", "messages", "stream", "options"])
    );
    assert_eq!(
        options.body["options"],
        json!({"temperature": 0.7, "num_predict": 64, "top_p": 0.9, "seed": 42, "num_ctx": 4096, "stop": ["\n\n", "END"]})
    );
    assert_eq!(options.body["messages"][0]["role"], "system");
    for r in requests.iter().filter(|r| !r.prompt.contains("7 - 2 * 3")) {
        // Ollama takes the schema itself as `format`.
        assert_eq!(r.body["format"], schema_file());
        assert_eq!(
            r.body["options"],
            json!({"temperature": 0.0, "num_predict": 1024, "seed": 7, "num_ctx": 4096})
        );
    }
    journal_passed_with_usage(&ws, 3);
}

#[test]
fn ollama_reference_reads_ollama_host() {
    let fake = FakeServer::healthy();
    let ws = Workspace::new();
    ws.copy_spec("t06_mathematics.toml");
    let (code, out) = run(ws
        .run_cmd(&["specs", "-m", "ollama:qwen3:8b", "--runs", "3"])
        .env("OLLAMA_HOST", fake.host_port()));
    assert_eq!(code, 0, "{out}");
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests
            .iter()
            .all(|r| r.path == "/api/chat" && r.body["model"] == "qwen3:8b")
    );
    let records = journal_passed_with_usage(&ws, 3);
    assert!(records.iter().all(|r| r["model"] == "qwen3:8b"));
}

/// The runner always builds Ollama clients with `stream = false` (src/run/mod.rs,
/// `model_runtimes`) and harness.toml has no stream option, so streaming is
/// driven through the library client directly.
mod streaming {
    use super::*;
    use harness::{ChatRequest, ModelSetup, OllamaClient, ProviderKind};

    fn client(fake: &FakeServer) -> OllamaClient {
        harness::install_tls();
        let mut spec = ModelSetup::new(ProviderKind::Ollama, "stream-model");
        spec.base_url = Some(fake.ollama_base());
        spec.timeout_secs = 5.0;
        OllamaClient::new(&spec, reqwest::Client::new(), true)
    }

    fn request() -> ChatRequest {
        serde_json::from_value(json!({
            "messages": [{"role": "user", "content": "Скажи ответ."}],
            "temperature": 0.0,
            "max_tokens": 32,
            "format": {"type": "text"}
        }))
        .unwrap()
    }

    #[tokio::test]
    async fn chunks_are_assembled_across_split_lines() {
        // Multi-byte text: the fake splits lines (and UTF-8 sequences) across HTTP chunks.
        let text = "Ответ: двадцать — 20 ✓";
        let fake = FakeServer::start(move |_| Reply::Text(text.into()));
        let completion = client(&fake).complete(&request()).await.unwrap();
        assert_eq!(completion.text, text);
        assert_eq!(completion.usage.tokens_in, Some(PROMPT_TOKENS));
        assert_eq!(completion.usage.tokens_out, Some(COMPLETION_TOKENS));
        assert_eq!(completion.finish_reason.as_deref(), Some("stop"));
        let body = &fake.requests()[0].body;
        assert_eq!(body["stream"], true);
        assert_eq!(
            body["options"],
            json!({"temperature": 0.0, "num_predict": 32})
        );
    }

    #[tokio::test]
    async fn a_tool_choice_ollama_lacks_is_refused_not_dropped() {
        let fake = FakeServer::healthy();
        let mut tooled = serde_json::to_value(request()).unwrap();
        tooled["tools"] = json!([{"name": "f", "parameters": {"type": "object"}}]);
        tooled["tool_choice"] = json!("required");
        let tooled: ChatRequest = serde_json::from_value(tooled).unwrap();
        let err = client(&fake).complete(&tooled).await.unwrap_err();
        assert_eq!(err.kind().name(), "config_error", "{err}");
        assert!(fake.requests().is_empty());
    }

    #[tokio::test]
    async fn a_stream_without_done_is_malformed() {
        let fake = FakeServer::start(|_| Reply::Truncated);
        let err = client(&fake).complete(&request()).await.unwrap_err();
        assert_eq!(err.kind().name(), "malformed_response", "{err}");
        assert!(err.retryable());
    }
}
