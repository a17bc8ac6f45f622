//! Runs that fail loudly and leak nothing: error records exit 4 unless
//! `--allow-errors`; an API key a server echoes (in an error body or in an
//! answer) is in no file and no output; a server whose reported model changed
//! is named in the summary and its old answers are not served from the cache.
//! A small loopback server here plays the server: it answers OpenAI's chat
//! completions as the test's current settings say.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::common::fake_server::{FakeServer, Reply};
use crate::common::workspace::{Workspace, model_toml};

const KEY: &str = "sk-test-robust-0123456789abcdef";

/// What the loopback server does now.
#[derive(Clone)]
struct Behaviour {
    /// The `model` field of answers.
    model: String,
    /// Answer 401 with the request's bearer token in the body.
    echo_key_in_error: bool,
}

/// Starts the server on 127.0.0.1; returns its base URL, its settings and its request count.
fn serve() -> (String, Arc<Mutex<Behaviour>>, Arc<Mutex<usize>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let behaviour = Arc::new(Mutex::new(Behaviour {
        model: "model-a".into(),
        echo_key_in_error: false,
    }));
    let count = Arc::new(Mutex::new(0));
    let (b, c) = (behaviour.clone(), count.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming().take(500) {
            let Ok(stream) = stream else { continue };
            let b = b.lock().unwrap().clone();
            *c.lock().unwrap() += 1;
            let _ = answer(stream, &b);
        }
    });
    (base, behaviour, count)
}

fn answer(mut stream: std::net::TcpStream, b: &Behaviour) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let (mut length, mut token) = (0usize, String::new());
    loop {
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if lower.starts_with("authorization: bearer ") {
            token = line["authorization: bearer ".len()..].trim().to_owned();
        }
        if line == "\r\n" || line.is_empty() {
            break;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let (status, text) = if b.echo_key_in_error {
        (
            "401 Unauthorized",
            format!(r#"{{"error": "invalid key {token}"}}"#),
        )
    } else {
        let json = serde_json::json!({
            "model": b.model,
            "system_fingerprint": "fp-1",
            "choices": [{"message": {"role": "assistant", "content": format!("4, and your key is {token}")}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2}
        });
        ("200 OK", json.to_string())
    };
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    )
}

fn workspace(base: &str) -> Workspace {
    let ws = Workspace::new();
    ws.copy_spec("t06_mathematics.toml");
    ws.write(
        "harness.toml",
        &model_toml(
            "m",
            "openai",
            "served-model",
            base,
            "max_retries = 0\napi_key_env = \"ROBUST_KEY\"",
        ),
    );
    ws
}

fn run(ws: &Workspace, extra: &[&str]) -> (i32, String) {
    let mut args = vec!["specs/t06_mathematics.toml", "-m", "m"];
    if !extra.contains(&"--runs") {
        args.extend(["--runs", "3"]);
    }
    args.extend_from_slice(extra);
    crate::common::run(ws.run_cmd(&args).env("ROBUST_KEY", KEY))
}

/// Every file under `dir`, as text.
fn all_text(dir: &Path) -> String {
    let mut text = String::new();
    for p in crate::common::files_under(dir) {
        if p.extension().is_none_or(|x| x != "sqlite") {
            text.push_str(&String::from_utf8_lossy(&std::fs::read(&p).unwrap()));
        }
    }
    text
}

#[test]
fn error_records_exit_4_and_allow_errors_accepts_them() {
    let fake = FakeServer::start(|_| Reply::Status(500, None));
    let ws = workspace(&fake.openai_base());
    let (code, out) = run(&ws, &["--runs", "2"]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("2 of 2 answers are errors"), "{out}");
    assert!(out.contains("--allow-errors"), "{out}");
    let (code, out) = run(&ws, &["--runs", "2", "--allow-errors", "--no-cache"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("2 of 2 answers are errors"), "{out}");
}

#[test]
fn an_echoed_api_key_is_in_no_file_and_no_output() {
    let (base, behaviour, _) = serve();
    let ws = workspace(&base);
    let (code, out) = run(
        &ws,
        &["--format", "json", "--format", "csv", "--format", "junit"],
    );
    assert_eq!(code, 0, "{out}");
    behaviour.lock().unwrap().echo_key_in_error = true;
    let (code, more) = run(&ws, &["--no-cache"]);
    assert_eq!(code, 4, "{more}");
    let files = all_text(ws.path());
    let output = out + more.as_str();
    for (what, text) in [("output", &output), ("files", &files)] {
        assert!(!text.contains(KEY), "the key is in the {what}");
    }
    assert!(files.contains("your key is [redacted]"), "{files}");
    assert!(files.contains("invalid key [redacted]"), "{files}");
}

#[test]
fn a_changed_model_identity_is_reported_and_not_served_from_the_cache() {
    let (base, behaviour, count) = serve();
    let ws = workspace(&base);
    let (code, out) = run(&ws, &[]);
    assert_eq!(code, 0, "{out}");
    let journal = ws.last_journal();
    assert!(
        journal
            .iter()
            .all(|r| r["served_model"] == "model-a" && r["system_fingerprint"] == "fp-1")
    );
    let asked = *count.lock().unwrap();
    let (code, out) = run(&ws, &[]);
    assert_eq!(
        (code, *count.lock().unwrap()),
        (0, asked),
        "a rerun comes from the cache:\n{out}"
    );

    behaviour.lock().unwrap().model = "model-b".into();
    // One new instance is asked live and reveals the change; the old ones are asked again.
    let (code, out) = run(&ws, &["--runs", "4"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("now reports `model-b` (fp-1), no longer `model-a` (fp-1)"),
        "{out}"
    );
    let (code, out) = run(&ws, &["--runs", "4"]);
    assert_eq!(code, 0, "{out}");
    let journal = ws.last_journal();
    assert_eq!(journal.len(), 4);
    assert!(
        journal.iter().all(|r| r["served_model"] == "model-b"),
        "no answer of model-a is served for model-b: {journal:#?}"
    );
}
