//! Runner overhead: `harness run` against a zero-latency loopback server.
//!
//! Measures instances/s for 10,000 t06 instances at concurrency 64, and the
//! peak RSS of the harness process for 10,000 and 100,000 instances. Run with
//! `cargo bench --bench overhead` (or `bench/overhead.sh`). The server is a
//! minimal OpenAI-compatible responder in this process, answering every
//! request at once, so the numbers are the harness's own cost.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

fn respond(stream: TcpStream) {
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
        let reply = r#"{"id":"b","object":"chat.completion","created":0,"model":"bench","choices":[{"index":0,"message":{"role":"assistant","content":"Ответ: 42"},"finish_reason":"stop"}],"usage":{"prompt_tokens":40,"completion_tokens":4,"total_tokens":44}}"#;
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

fn serve() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let _ = stream.set_nodelay(true);
            std::thread::spawn(move || respond(stream));
        }
    });
    port
}

/// Peak RSS of waited-for children so far, in MiB (Linux reports KiB).
fn children_peak_rss_mib() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    usage.ru_maxrss as f64 / 1024.0
}

fn run(binary: &str, dir: &Path, port: u16, runs: u32) -> (f64, f64) {
    std::fs::write(
        dir.join("harness.toml"),
        format!(
            "[models.bench]\nprovider = \"openai\"\nmodel = \"bench\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nconcurrency = 64\n"
        ),
    )
    .unwrap();
    let started = Instant::now();
    let out = Command::new(binary)
        .args([
            "run",
            "specs/t06_mathematics.toml",
            "-m",
            "bench",
            "--no-cache",
            "--no-progress",
            "--runs",
        ])
        .arg(runs.to_string())
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("harness runs");
    let wall = started.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (f64::from(runs) / wall, children_peak_rss_mib())
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("specs")).unwrap();
    // Above 10,000 instances a spec must allow large runs.
    let spec = std::fs::read_to_string(root.join("specs/t06_mathematics.toml")).unwrap();
    let large = spec.replacen("runs = 10\n", "runs = 10\nallow_large_runs = true\n", 1);
    assert_ne!(large, spec, "t06 sets `runs = 10`");
    std::fs::write(dir.path().join("specs/t06_mathematics.toml"), large).unwrap();
    let port = serve();
    let binary = env!("CARGO_BIN_EXE_harness");
    let (rate, rss) = run(binary, dir.path(), port, 10_000);
    println!(
        "overhead: 10,000 instances at concurrency 64: {rate:.0} instances/s, peak RSS {rss:.1} MiB"
    );
    let (rate, rss) = run(binary, dir.path(), port, 100_000);
    println!(
        "overhead: 100,000 instances at concurrency 64: {rate:.0} instances/s, peak RSS {rss:.1} MiB"
    );
}
