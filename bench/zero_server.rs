//! A minimal OpenAI-compatible server on loopback answering every request
//! at once with the same short answer: what the runner benchmarks run
//! against, so their numbers are the harness's own cost. Also the
//! workspace those benchmarks share (t06 and a model pointing at the
//! server) and a timed `harness` call.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// The answer [`serve`] gives: a short text.
const TEXT_REPLY: &str = r#"{"id":"b","object":"chat.completion","created":0,"model":"bench","choices":[{"index":0,"message":{"role":"assistant","content":"Ответ: 42"},"finish_reason":"stop"}],"usage":{"prompt_tokens":40,"completion_tokens":4,"total_tokens":44}}"#;

fn respond(stream: TcpStream, reply: &str) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut writer = stream;
    loop {
        let mut content_length = 0usize;
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some(v) = l.to_ascii_lowercase().strip_prefix("content-length:") {
                content_length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; content_length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            reply.len()
        );
        if writer
            .write_all(head.as_bytes())
            .and_then(|_| writer.write_all(reply.as_bytes()))
            .is_err()
        {
            return;
        }
    }
}

/// Starts the server on a free loopback port, in this process; returns the port.
pub fn serve() -> u16 {
    serve_with(TEXT_REPLY)
}

/// [`serve`] answering every request with the response body `reply`.
pub fn serve_with(reply: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let _ = stream.set_nodelay(true);
            std::thread::spawn(move || respond(stream, reply));
        }
    });
    port
}

/// A workspace with t06 as shipped (allowed past the 10,000-instance
/// ceiling) and a model `bench` on this process's zero-latency server at
/// concurrency 64.
pub fn t06_workspace() -> tempfile::TempDir {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("specs")).unwrap();
    let spec = std::fs::read_to_string(root.join("specs/t06_mathematics.toml")).unwrap();
    let spec = spec.replacen("runs = 10\n", "runs = 10\nallow_large_runs = true\n", 1);
    assert!(spec.contains("allow_large_runs"), "t06 sets `runs = 10`");
    std::fs::write(dir.join("specs/t06_mathematics.toml"), spec).unwrap();
    let port = serve();
    std::fs::write(
        dir.join("harness.toml"),
        format!(
            "[models.bench]\nprovider = \"openai\"\nmodel = \"bench\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nconcurrency = 64\n"
        ),
    )
    .unwrap();
    tmp
}

/// The arguments of a run of `n` t06 instances on the bench model, uncached.
pub fn t06_run_args(n: &str) -> [&str; 8] {
    [
        "run",
        "specs/t06_mathematics.toml",
        "-m",
        "bench",
        "--no-cache",
        "--no-progress",
        "--runs",
        n,
    ]
}

/// Runs `harness ARGS` in `dir` and checks that it succeeded; returns its
/// wall time in seconds.
pub fn timed(dir: &Path, args: &[&str]) -> f64 {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("harness runs");
    let wall = started.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "harness {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    wall
}
