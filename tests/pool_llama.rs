//! A pool of two real llama-servers serving the same SmolLM2 model: both get
//! traffic, the answers are the golden transcript's (one server's, at
//! temperature 0), the report shows each endpoint, and killing one server
//! mid-run loses nothing: its requests go to the other.
//!
//! Needs `LLAMA_SERVER_BIN` and `SMOLLM2_MODEL` (exported by `scripts/test.sh`);
//! the servers are this test's own, started and killed by PID.

use std::fs;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::managed::{llama_paths, wait_until};
use crate::common::{harness, locks, root, run};

/// A llama-server this test started, killed when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    /// Starts SmolLM2 as `scripts/test.sh` does (one thread, 4 slots, 8k
    /// context), so its greedy answers are the golden transcripts'.
    fn start(bin: &Path, model: &Path, log: &Path) -> Server {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = fs::File::create(log).unwrap();
        let child = Command::new(bin)
            .args(["-m", &model.display().to_string(), "--alias", "smollm2"])
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["-np", "4", "-c", "8192", "-t", "1"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("llama-server starts");
        let server = Server {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        let ready = wait_until(Duration::from_secs(180), || healthy(port));
        assert!(ready, "llama-server on port {port} not ready in 180 s");
        server
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Whether `GET /health` answers 200.
fn healthy(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    if s.write_all(b"GET /health HTTP/1.0\r\n\r\n").is_err() {
        return false;
    }
    let mut reply = String::new();
    let _ = s.read_to_string(&mut reply);
    reply.starts_with("HTTP/1.1 200") || reply.starts_with("HTTP/1.0 200")
}

/// A workspace with t06, its golden files, and `smollm2` as a pool of `urls`.
fn workspace(tmp: &Path, urls: &[&str]) -> PathBuf {
    let dir = tmp.join("ws");
    fs::create_dir_all(dir.join("specs")).unwrap();
    fs::create_dir_all(dir.join("golden/t06_mathematics")).unwrap();
    fs::copy(
        root().join("specs/t06_mathematics.toml"),
        dir.join("specs/t06_mathematics.toml"),
    )
    .unwrap();
    for entry in fs::read_dir(root().join("golden/t06_mathematics")).unwrap() {
        let path = entry.unwrap().path();
        fs::copy(
            &path,
            dir.join("golden/t06_mathematics")
                .join(path.file_name().unwrap()),
        )
        .unwrap();
    }
    let list: Vec<String> = urls.iter().map(|u| format!("\"{u}/v1\"")).collect();
    // As tests/fixtures/llama/harness.toml.in: one request at a time per
    // server and no prompt cache, so greedy answers reproduce exactly.
    let config = format!(
        "[models.smollm2]\nprovider = \"openai\"\nmodel = \"SmolLM2-135M-Instruct.Q4_1\"\n\
         base_url = [{}]\nconcurrency = 1\ntimeout_secs = 300\n\
         options = {{ max_tokens = 128, extra_body = {{ cache_prompt = false }} }}\n",
        list.join(", ")
    );
    fs::write(dir.join("harness.toml"), config).unwrap();
    dir
}

fn records(dir: &Path, results: &str) -> Vec<Value> {
    let runs = dir.join(results).join("runs");
    let run = fs::read_dir(&runs).unwrap().next().unwrap().unwrap().path();
    fs::read_to_string(run.join("journal.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// `harness run` of t06 on the pool `smollm2` in `dir`, with `extra` arguments.
fn t06(dir: &Path, extra: &[&str]) -> Command {
    let mut cmd = harness(dir);
    cmd.args([
        "run",
        "specs/t06_mathematics.toml",
        "-m",
        "smollm2",
        "--no-progress",
    ])
    .args(extra);
    cmd
}

fn endpoint_of(r: &Value) -> String {
    r["endpoint"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn a_pool_of_two_llama_servers_answers_like_one_and_loses_nothing_when_one_dies() {
    let Some((bin, model)) = llama_paths() else {
        return;
    };
    let _turn = locks::real_llama();
    let tmp = tempfile::tempdir().unwrap();
    let a = Server::start(&bin, &model, &tmp.path().join("a.log"));
    let mut b = Server::start(&bin, &model, &tmp.path().join("b.log"));
    let dir = workspace(tmp.path(), &[&a.url, &b.url]);

    // Both serve; the answers are the golden transcript's (exit 0: no diff).
    let (code, out) = run(&mut t06(&dir, &["--results", "both"]));
    assert_eq!(code, 0, "{out}");
    let both = records(&dir, "both");
    assert_eq!(both.len(), 10, "{out}");
    for url in [&a.url, &b.url] {
        let served = both
            .iter()
            .filter(|r| endpoint_of(r).starts_with(url.as_str()))
            .count();
        assert!(served > 0, "{url} got no traffic: {out}");
        assert!(
            out.contains(url.as_str()),
            "the endpoint table names {url}:\n{out}"
        );
    }

    // One dies mid-run: the other finishes, every answer still the golden one.
    let mut child = t06(&dir, &["--no-cache", "--results", "killed"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let journal_has = |n: usize| {
        fs::read_dir(dir.join("killed/runs")).is_ok_and(|_| records(&dir, "killed").len() >= n)
    };
    assert!(wait_until(Duration::from_secs(300), || journal_has(2)));
    b.kill();
    let done = wait_until(Duration::from_secs(600), || {
        child.try_wait().unwrap().is_some()
    });
    if !done {
        let _ = child.kill();
    }
    let output = child.wait_with_output().unwrap();
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(done, "the run did not finish after a server died:\n{out}");
    assert_eq!(output.status.code(), Some(0), "{out}");
    let killed = records(&dir, "killed");
    assert_eq!(killed.len(), 10, "{out}");
    assert!(killed.iter().all(|r| r["error"].is_null()), "{out}");
    let moved = killed
        .iter()
        .flat_map(|r| r["retries"].as_array().cloned().unwrap_or_default())
        .filter(|n| {
            n.as_str()
                .is_some_and(|n| n.contains("the endpoint is out"))
        })
        .count();
    assert!(moved > 0, "no request went to the other endpoint:\n{out}");
    let mut want: Vec<String> = both
        .iter()
        .map(|r| format!("{} {}", r["instance"], r["response"]))
        .collect();
    let mut got: Vec<String> = killed
        .iter()
        .map(|r| format!("{} {}", r["instance"], r["response"]))
        .collect();
    want.sort();
    got.sort();
    assert_eq!(got, want, "the same answers with one server lost");
}

#[test]
fn a_pool_whose_every_endpoint_is_down_ends_in_error_records_naming_each() {
    let tmp = tempfile::tempdir().unwrap();
    // Two loopback ports nobody listens on: bound, then released.
    let closed: Vec<String> = (0..2)
        .map(|_| {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            format!("http://127.0.0.1:{}", l.local_addr().unwrap().port())
        })
        .collect();
    let dir = workspace(tmp.path(), &[&closed[0], &closed[1]]);
    let config = fs::read_to_string(dir.join("harness.toml")).unwrap();
    fs::write(
        dir.join("harness.toml"),
        config.replace("timeout_secs = 300", "timeout_secs = 5\nmax_retries = 1"),
    )
    .unwrap();
    let (code, out) = run(&mut t06(&dir, &["--runs", "2"]));
    assert_eq!(code, 4, "{out}");
    let records = records(&dir, "results");
    assert_eq!(records.len(), 2, "{out}");
    for r in &records {
        let error = r["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("every endpoint of `smollm2` is out"),
            "{error}"
        );
        for url in &closed {
            assert!(error.contains(url.as_str()), "{error} names {url}");
        }
    }
}
