//! The native wires `anthropic:`, `gemini:` and `openai-responses:` through
//! the real CLI against the fake server's Anthropic Messages, Gemini
//! `generateContent` and OpenAI Responses shapes: a shipped spec with each
//! API's key header (and the key in no file), usage, agent episodes of
//! `specs/shop_agent.toml` with calls and results over turns in each API's
//! form, images, error classes (Anthropic's 529, Gemini's
//! RESOURCE_EXHAUSTED, a 400 not retried), Gemini's samples as candidates;
//! every Responses body validated against the vendored OpenAI OpenAPI
//! document (more in `openapi_wires`).

use std::path::Path;

use serde_json::{Value, json};

use crate::agent::{clerk, turn};
use crate::common::fake_server::{FakeServer, Reply, Request};
use crate::common::openapi::assert_valid_openai;
use crate::common::workspace::{Workspace, model_toml};
use crate::common::{root, run};

/// A key no file of a run may hold.
pub(crate) const KEY: &str = "native-wire-test-key-0123456789";

/// One native wire as a test drives it.
struct Wire {
    provider: &'static str,
    /// The base URL path on the fake (`/v1`, `/v1beta`).
    base: &'static str,
    /// The path every request must go to.
    path: &'static str,
    /// The variable the key is read from.
    key_var: &'static str,
    /// The key header's value as the fake records it.
    sent_key: fn() -> String,
}

const WIRES: [Wire; 3] = [
    Wire {
        provider: "anthropic",
        base: "/v1",
        path: "/v1/messages",
        key_var: "ANTHROPIC_API_KEY",
        sent_key: || KEY.to_owned(),
    },
    Wire {
        provider: "gemini",
        base: "/v1beta",
        path: "/v1beta/models/fake-model:generateContent",
        key_var: "GEMINI_API_KEY",
        sent_key: || KEY.to_owned(),
    },
    Wire {
        provider: "openai-responses",
        base: "/v1",
        path: "/v1/responses",
        key_var: "OPENAI_API_KEY",
        sent_key: || format!("Bearer {KEY}"),
    },
];

impl Wire {
    fn base_url(&self, fake: &FakeServer) -> String {
        format!("http://{}{}", fake.host_port(), self.base)
    }

    /// `harness.toml` with the model `fake` on this wire, and `settings`.
    fn config(&self, ws: &Workspace, fake: &FakeServer, settings: &str) {
        let table = model_toml(
            "fake",
            self.provider,
            "fake-model",
            &self.base_url(fake),
            settings,
        );
        ws.write("harness.toml", &table);
    }

    /// Runs `harness run ARGS` with the key set; must exit 0.
    fn run_ok(&self, ws: &Workspace, args: &[&str]) -> String {
        let (code, out) = run(ws.run_cmd(args).env(self.key_var, KEY));
        assert_eq!(code, 0, "{}: {out}", self.provider);
        out
    }
}

/// Asserts no file under `dir` holds `needle`.
fn assert_nowhere(dir: &Path, needle: &str) {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            stack.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else {
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            assert!(!text.contains(needle), "{} holds the key", path.display());
        }
    }
}

#[test]
fn each_wire_answers_a_shipped_spec_with_its_key_and_usage() {
    for wire in &WIRES {
        let fake = FakeServer::healthy();
        let ws = Workspace::new();
        ws.copy_spec("t06_mathematics.toml");
        let model = format!("{}:fake-model@{}", wire.provider, wire.base_url(&fake));
        wire.run_ok(
            &ws,
            &["specs/t06_mathematics.toml", "-m", &model, "--runs", "2"],
        );
        let requests = fake.requests();
        assert_eq!(requests.len(), 2, "{}", wire.provider);
        for r in &requests {
            assert_eq!(r.path, wire.path);
            assert_eq!(r.authorization.as_deref(), Some((wire.sent_key)().as_str()));
            assert!(
                r.prompt.starts_with("Вычисли значение выражения: "),
                "{r:?}"
            );
            let system =
                "Ты — точный калькулятор. Вычисляй выражения, соблюдая порядок операций и скобки.";
            let (said, limit) = match wire.provider {
                "anthropic" => (&r.body["system"], &r.body["max_tokens"]),
                "gemini" => (
                    &r.body["systemInstruction"]["parts"][0]["text"],
                    &r.body["generationConfig"]["maxOutputTokens"],
                ),
                _ => (&r.body["input"][0]["content"], &r.body["max_output_tokens"]),
            };
            assert_eq!((said, limit), (&json!(system), &json!(256)), "{:#}", r.body);
        }
        assert_valid_openai(&requests);
        let records = ws.last_journal();
        assert_eq!(records.len(), 2);
        for r in &records {
            assert_eq!(r["passed"], true, "{r:#}");
            assert_eq!(
                (&r["tokens_in"], &r["tokens_out"]),
                (&json!(17), &json!(5)),
                "{r:#}"
            );
        }
        assert_nowhere(ws.path(), KEY);
    }
}

#[test]
fn agent_episodes_carry_calls_and_results_in_each_wires_form() {
    for wire in &WIRES {
        let fake = FakeServer::start(clerk);
        let ws = Workspace::new();
        ws.copy_spec("shop_agent.toml");
        let rows =
            std::fs::read_to_string(root().join("datasets/shop_agent/orders.jsonl")).unwrap();
        std::fs::create_dir_all(ws.path().join("datasets/shop_agent")).unwrap();
        ws.write("datasets/shop_agent/orders.jsonl", &rows);
        wire.config(&ws, &fake, "timeout_secs = 10");
        wire.run_ok(&ws, &["specs/shop_agent.toml", "-m", "fake"]);
        assert_eq!(
            fake.count(),
            3 * 8,
            "{}: three turns per episode",
            wire.provider
        );
        let records = ws.last_journal();
        let first = records.iter().find(|r| r["instance"] == 0).unwrap();
        assert_eq!(first["passed"], true, "{}: {first:#}", wire.provider);
        assert_eq!(first["state"]["orders"][1]["status"], "отменён");
        assert_eq!(first["trajectory"][3]["tool_name"], "cancel_order");
        let last = fake
            .requests()
            .into_iter()
            .find(|r| turn(r) == 2 && r.prompt.contains("A-1002"))
            .unwrap_or_else(|| panic!("{}: no last turn", wire.provider));
        let result = r#"{"order_id":"A-1002","status":"отменён"}"#;
        let body = &last.body;
        match wire.provider {
            "anthropic" => {
                let turns = body["messages"].as_array().unwrap();
                let calls = &turns[turns.len() - 2]["content"][0];
                assert_eq!(
                    (&calls["type"], &calls["name"]),
                    (&json!("tool_use"), &json!("cancel_order"))
                );
                let answer = &turns[turns.len() - 1]["content"][0];
                assert_eq!(answer["type"], "tool_result");
                assert_eq!(answer["tool_use_id"], calls["id"]);
                assert_eq!(answer["content"], result);
            }
            "gemini" => {
                let turns = body["contents"].as_array().unwrap();
                let call = &turns[turns.len() - 2]["parts"][0]["functionCall"];
                assert_eq!(call["args"], json!({"order_id": "A-1002"}));
                let answer = &turns[turns.len() - 1]["parts"][0]["functionResponse"];
                assert_eq!(
                    answer,
                    &json!({"name": "cancel_order", "response": {"result": result}})
                );
            }
            _ => {
                let items = body["input"].as_array().unwrap();
                let (call, answer) = (&items[items.len() - 2], &items[items.len() - 1]);
                assert_eq!(call["type"], "function_call");
                assert_eq!(call["arguments"], r#"{"order_id":"A-1002"}"#);
                assert_eq!(
                    (&answer["type"], &answer["call_id"], &answer["output"]),
                    (
                        &json!("function_call_output"),
                        &call["call_id"],
                        &json!(result)
                    )
                );
            }
        }
        assert_valid_openai(&fake.requests());
    }
}

/// The base64 of an image of the documented OCR example.
fn image_base64(name: &str) -> String {
    use base64::Engine;
    let path = root()
        .join("docs/examples/datasets/ocr_mini/images")
        .join(name);
    base64::engine::general_purpose::STANDARD.encode(std::fs::read(path).unwrap())
}

/// The image data a native request carries, in each API's form.
fn sent_image(body: &Value) -> Option<String> {
    let anthropic = || body["messages"][0]["content"][1]["source"]["data"].as_str();
    let gemini = || body["contents"][0]["parts"][1]["inlineData"]["data"].as_str();
    let responses = || {
        body["input"][2]["content"][0]["image_url"]
            .as_str()?
            .strip_prefix("data:image/png;base64,")
    };
    anthropic()
        .or_else(gemini)
        .or_else(responses)
        .map(str::to_owned)
}

#[test]
fn images_go_in_each_wires_own_form() {
    let lines = [
        ("en_41.png", "Please cancel my request"),
        ("ru_19.png", "Банковская карта заблокирована"),
    ];
    for wire in &WIRES {
        let fake = FakeServer::start(move |r: &Request| {
            let sent = sent_image(&r.body);
            let line = lines
                .iter()
                .find(|(name, _)| sent.as_deref() == Some(image_base64(name).as_str()));
            Reply::Text(line.map_or("no image", |(_, text)| text).to_owned())
        });
        let ws = Workspace::new();
        let from = root().join("docs/examples");
        std::fs::create_dir_all(ws.path().join("datasets/ocr_mini/images")).unwrap();
        for file in [
            "specs/ocr_images.toml",
            "datasets/ocr_mini/lines.jsonl",
            "datasets/ocr_mini/images/en_41.png",
            "datasets/ocr_mini/images/ru_19.png",
        ] {
            std::fs::copy(from.join(file), ws.path().join(file)).unwrap();
        }
        wire.config(&ws, &fake, "");
        wire.run_ok(&ws, &["specs/ocr_images.toml", "-m", "fake"]);
        let records = ws.last_journal();
        assert_eq!(records.len(), 2);
        assert!(
            records.iter().all(|r| r["passed"] == true),
            "{}: {records:#?}",
            wire.provider
        );
        let body = &fake.requests()[0].body;
        let mime = match wire.provider {
            "anthropic" => &body["messages"][0]["content"][1]["source"]["media_type"],
            "gemini" => &body["contents"][0]["parts"][1]["inlineData"]["mimeType"],
            _ => &body["input"][2]["content"][0]["type"],
        };
        let want = if wire.provider == "openai-responses" {
            "input_image"
        } else {
            "image/png"
        };
        assert_eq!(mime, want, "{body:#}");
        assert_valid_openai(&fake.requests());
    }
}

/// A record's failure and a word of its error; None: the record passed.
type Failed = Option<(&'static str, &'static str)>;

#[test]
fn provider_errors_take_the_existing_classes() {
    // (wire, first reply (every reply when the record fails), attempts,
    // the record's failure and a word of its error, or None when it passed)
    let cases: [(usize, Reply, u64, Failed); 6] = [
        (0, Reply::Status(529, None), 2, None),
        (1, Reply::Status(429, Some(0)), 2, None),
        (2, Reply::Status(503, None), 2, None),
        (
            0,
            Reply::Status(529, None),
            3,
            Some(("server_error", "overloaded_error")),
        ),
        (
            1,
            Reply::Status(429, Some(0)),
            3,
            Some(("rate_limited", "RESOURCE_EXHAUSTED")),
        ),
        (
            0,
            Reply::Status(400, None),
            1,
            Some(("client_error", "invalid_request_error")),
        ),
    ];
    for (index, first, attempts, failure) in cases {
        let wire = &WIRES[index];
        let fake = FakeServer::start(move |r: &Request| {
            if r.attempt == 0 || failure.is_some() {
                first.clone()
            } else {
                Reply::Correct
            }
        });
        let ws = Workspace::new();
        ws.copy_spec("t06_mathematics.toml");
        wire.config(&ws, &fake, "max_retries = 2\ntimeout_secs = 10");
        let args = [
            "specs/t06_mathematics.toml",
            "-m",
            "fake",
            "--runs",
            "1",
            "--allow-errors",
        ];
        wire.run_ok(&ws, &args);
        let record = &ws.last_journal()[0];
        assert_eq!(
            record["attempts"], attempts,
            "{}: {record:#}",
            wire.provider
        );
        match failure {
            None => assert_eq!(record["passed"], true, "{record:#}"),
            Some((kind, word)) => {
                assert_eq!(record["failure"], kind, "{record:#}");
                let said = record["error"].to_string();
                assert!(said.contains(word), "{said}");
            }
        }
    }
}

/// `specs/NAME` of the repository with `lines` added after its
/// `[request]`'s `max_tokens`, and `[sampling] n = samples` when more than 1.
pub(crate) fn spec_with(ws: &Workspace, name: &str, samples: u32, lines: &str) {
    let text = std::fs::read_to_string(root().join("specs").join(name)).unwrap();
    let mut text = text.replacen(
        "max_tokens = 256\n",
        &format!("max_tokens = 256\n{lines}"),
        1,
    );
    if samples > 1 {
        let sampling = format!("[sampling]\nn = {samples}\n\n[request]\n");
        text = text.replacen("[request]\n", &sampling, 1);
    }
    ws.write(&format!("specs/{name}"), &text);
}

#[test]
fn gemini_samples_share_one_request_as_candidates() {
    let fake = FakeServer::healthy();
    let ws = Workspace::new();
    spec_with(&ws, "t06_mathematics.toml", 3, "");
    let wire = &WIRES[1];
    wire.config(&ws, &fake, "max_n = 3");
    wire.run_ok(
        &ws,
        &["specs/t06_mathematics.toml", "-m", "fake", "--runs", "2"],
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "one request per instance");
    assert!(
        requests
            .iter()
            .all(|r| r.body["generationConfig"]["candidateCount"] == 3)
    );
    let records = ws.last_journal();
    assert_eq!(records.len(), 6);
    assert!(records.iter().all(|r| r["passed"] == true), "{records:#?}");
}
