//! The OpenAI wires held to the vendored OpenAPI document
//! (`schemas/vendor/openai/`, version 2.3.0): the chat and Responses request
//! bodies of every request option the harness sends, validated, and the
//! document's example responses read through the CLI.

use serde_json::Value;

use crate::agent::clerk;
use crate::common::fake_server::{FakeServer, Reply, Request};
use crate::common::openapi::{self, assert_valid_openai};
use crate::common::workspace::{Workspace, model_toml};
use crate::common::{root, run};
use crate::native_wires::{KEY, spec_with};

/// The answer text a documented example response holds: a Responses
/// body's `output_text` parts, a chat body's first choice's content.
fn example_text(example: &Value) -> String {
    if let Some(choices) = example["choices"].as_array() {
        return choices[0]["message"]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
    }
    let items = example["output"].as_array().unwrap();
    let parts = items.iter().filter(|i| i["type"] == "message");
    parts
        .flat_map(|i| i["content"].as_array().unwrap())
        .filter_map(|p| p["text"].as_str())
        .collect()
}

#[test]
fn documented_example_responses_are_read() {
    let examples: [(&str, &str, &[&str]); 2] = [
        (
            "/responses",
            "openai-responses",
            &["Text input", "Image input", "Functions", "Reasoning"],
        ),
        (
            "/chat/completions",
            "openai",
            &["Default", "Image input", "Functions"],
        ),
    ];
    for (path, provider, titles) in examples {
        let documented = openapi::examples(path);
        for title in titles {
            let (_, example) = (documented.iter().find(|(t, _)| t == title))
                .unwrap_or_else(|| panic!("{path}: no example {title}"));
            let raw = example.clone();
            let fake = FakeServer::start(move |_| Reply::Raw(raw.clone()));
            let ws = Workspace::new();
            ws.copy_spec("t06_mathematics.toml");
            let model = format!("{provider}:m@{}", fake.openai_base());
            let args = ["specs/t06_mathematics.toml", "-m", &model, "--runs", "1"];
            let (code, out) = run(&mut ws.run_cmd(&args));
            assert!(code == 0 || code == 1, "{title}: {out}");
            let record = &ws.last_journal()[0];
            // The answer is no number: a wrong answer, not a failed request.
            assert!(record.get("error").is_none(), "{path} {title}: {record:#}");
            assert_eq!(record["response"], example_text(example), "{path} {title}");
            let usage = &example["usage"];
            let tokens_in = (usage.get("input_tokens")).or_else(|| usage.get("prompt_tokens"));
            assert_eq!(record.get("tokens_in"), tokens_in, "{path} {title}");
        }
    }
}

#[test]
fn chat_and_responses_bodies_of_every_request_option_are_valid_openapi() {
    let schema = r#"{"type": "object", "properties": {"answer": {"type": "integer"}},
                     "required": ["answer"], "additionalProperties": false}"#;
    // (provider, options only it carries)
    for (provider, own) in [
        ("openai", "stop = [\"\\n\\n\"]\n"),
        ("openai-responses", ""),
    ] {
        let fake = FakeServer::start(|r: &Request| {
            if r.body.get("tools").is_some() {
                clerk(r)
            } else {
                Reply::Correct
            }
        });
        let ws = Workspace::new();
        // A seed makes each sample a request of its own (`seed + sample`): only the episodes get one.
        let common = "top_p = 0.9\n";
        // OpenAI's `n` serves samples of free text only.
        for (format, n) in [("json", 1), ("json_schema", 1), ("text", 2)] {
            let format = match format {
                "text" => String::new(),
                f => format!("response_format = \"{f}\"\nschema = \"answer.json\"\n"),
            };
            let lines = format!("{common}{own}{format}");
            spec_with(&ws, "t06_mathematics.toml", n, &lines);
            ws.write("specs/answer.json", schema);
            let base = fake.openai_base();
            let table = model_toml("fake", provider, "fake-model", &base, "max_n = 2");
            ws.write("harness.toml", &table);
            let args = ["specs/t06_mathematics.toml", "-m", "fake", "--runs", "2"];
            let (code, out) = run(ws.run_cmd(&args).env("OPENAI_API_KEY", KEY));
            assert_eq!(code, 0, "{provider} {format}: {out}");
        }
        let rows = std::fs::read_to_string(root().join("datasets/shop_agent/orders.jsonl"));
        std::fs::create_dir_all(ws.path().join("datasets/shop_agent")).unwrap();
        ws.write("datasets/shop_agent/orders.jsonl", &rows.unwrap());
        let tools = "parallel_tool_calls = false\nseed = 3\n";
        spec_with(&ws, "shop_agent.toml", 1, &format!("{common}{own}{tools}"));
        let args = ["specs/shop_agent.toml", "-m", "fake"];
        let (code, out) = run(ws.run_cmd(&args).env("OPENAI_API_KEY", KEY));
        assert_eq!(code, 0, "{provider}: {out}");
        let requests = fake.requests();
        let sent = |key: &str| {
            requests
                .iter()
                .filter(|r| r.body.get(key).is_some())
                .count()
        };
        assert!(
            sent("tools") > 0 && sent("top_p") == requests.len(),
            "{provider}"
        );
        // Two runs as JSON, two with a schema, then two samples of two runs
        // of text: a request each, or one per run with OpenAI's `n`.
        let formats = sent("response_format") + sent("text");
        let want = if provider == "openai" { (4, 2) } else { (4, 0) };
        assert_eq!((formats, sent("n")), want, "{provider}");
        assert_valid_openai(&requests);
    }
}
