//! An in-process fake model server speaking the real wire formats
//! (OpenAI `/v1/chat/completions`, Ollama `/api/chat`, streaming and not),
//! with scripted faults, plus a temp-dir workspace for driving the binary.
//!
//! The server is hand-rolled HTTP/1.1 on tokio so a test controls every byte:
//! a truncated body, a hang, garbage with a 200. It binds 127.0.0.1:0 only,
//! records every request body, and tracks how many requests it is serving at
//! once. It stops on drop, after `LIFETIME`, or after `MAX_REQUESTS`.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// Usage every successful answer reports, so tests can find it in records.
pub const PROMPT_TOKENS: u64 = 17;
/// See [`PROMPT_TOKENS`].
pub const COMPLETION_TOKENS: u64 = 5;
/// Hard bounds, so a broken test cannot leave a server running forever.
const LIFETIME: Duration = Duration::from_secs(120);
const MAX_REQUESTS: usize = 5_000;
const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 8 * 1024 * 1024;

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Request {
    /// 0-based arrival order.
    pub index: usize,
    /// `/v1/chat/completions` or `/api/chat`.
    pub path: String,
    /// The parsed JSON body.
    pub body: Value,
    /// The last user message's text.
    pub prompt: String,
    /// How many earlier requests carried the same prompt (0 = first ask).
    pub attempt: usize,
    /// When the request was fully read.
    pub at: Instant,
}

/// What the server does with one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// The right value of the prompt's arithmetic expression (JSON `{"answer": N}` when a format is requested).
    Correct,
    /// The right value plus one.
    Wrong,
    /// This exact content.
    Text(String),
    /// An error status, with `Retry-After: secs` when given.
    Status(u16, Option<u64>),
    /// Never answer; wait until the client gives up.
    Hang,
    /// A 200 announcing a full Content-Length, then half of the body and a closed connection;
    /// on an Ollama stream, every content line but no final `done: true` line.
    Truncated,
    /// A 200 announcing a full Content-Length, half of the body, then silence until the client leaves.
    Stall,
    /// A 200 whose body is HTML, as a misconfigured proxy would return.
    Garbage,
    /// Wait, then do the inner reply.
    Slow(Duration, Box<Reply>),
}

impl Reply {
    /// `Slow` in milliseconds.
    pub fn slow(ms: u64, then: Reply) -> Reply {
        Reply::Slow(Duration::from_millis(ms), Box::new(then))
    }
}

type Script = dyn Fn(&Request) -> Reply + Send + Sync;

struct State {
    script: Box<Script>,
    requests: Mutex<Vec<Request>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

/// Counts a request as in flight from the moment it is read until the
/// response starts (or the client leaves). Ending *before* the response is
/// written keeps the count a strict subset of the client's own permit span.
struct InFlight<'a>(&'a State);

impl<'a> InFlight<'a> {
    fn new(state: &'a State) -> Self {
        let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        state.max_in_flight.fetch_max(now, Ordering::SeqCst);
        InFlight(state)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A running fake server; stops on drop.
pub struct FakeServer {
    addr: SocketAddr,
    state: Arc<State>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeServer {
    /// Starts a server whose replies `script` decides.
    pub fn start(script: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> FakeServer {
        let state = Arc::new(State {
            script: Box::new(script),
            requests: Mutex::new(Vec::new()),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
        });
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        std_listener.set_nonblocking(true).unwrap();
        let addr = std_listener.local_addr().unwrap();
        let (tx, rx) = oneshot::channel();
        let st = state.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(4)
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let listener = TcpListener::from_std(std_listener).expect("listener");
                serve(listener, st, rx).await;
            });
            // Dropping the runtime cancels every connection task, hung ones included.
            rt.shutdown_timeout(Duration::from_secs(1));
        });
        FakeServer {
            addr,
            state,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }

    /// A server that always answers correctly.
    pub fn healthy() -> FakeServer {
        FakeServer::start(|_| Reply::Correct)
    }

    /// `http://127.0.0.1:PORT/v1`, the OpenAI base URL.
    pub fn openai_base(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// `http://127.0.0.1:PORT`, the Ollama base URL.
    pub fn ollama_base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `127.0.0.1:PORT`.
    pub fn host_port(&self) -> String {
        self.addr.to_string()
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.state.requests.lock().unwrap().clone()
    }

    /// How many requests arrived.
    pub fn count(&self) -> usize {
        self.state.requests.lock().unwrap().len()
    }

    /// The most requests served at the same time.
    pub fn max_in_flight(&self) -> usize {
        self.state.max_in_flight.load(Ordering::SeqCst)
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn serve(listener: TcpListener, state: Arc<State>, mut shutdown: oneshot::Receiver<()>) {
    let deadline = tokio::time::sleep(LIFETIME);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            _ = &mut shutdown => return,
            _ = &mut deadline => return,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                tokio::spawn(connection(stream, state.clone()));
            }
        }
    }
}

/// Serves requests on one keep-alive connection until either side closes.
async fn connection(mut stream: TcpStream, state: Arc<State>) {
    let mut buf = Vec::new();
    while let Some((path, body)) = read_request(&mut stream, &mut buf).await {
        if !handle(&mut stream, &state, path, body).await {
            return;
        }
    }
}

/// Reads one request (head + Content-Length body); None on close or nonsense.
async fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<(String, Vec<u8>)> {
    let head_end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
        if buf.len() > MAX_HEAD || !read_more(stream, buf).await {
            return None;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let path = lines.next()?.split(' ').nth(1)?.to_owned();
    let mut len = 0usize;
    for line in lines {
        let (name, value) = line.split_once(':').unwrap_or((line, ""));
        if name.eq_ignore_ascii_case("content-length") {
            len = value.trim().parse().ok()?;
        }
        if name.eq_ignore_ascii_case("transfer-encoding") {
            return None; // the harness always sends Content-Length bodies
        }
    }
    if len > MAX_BODY {
        return None;
    }
    while buf.len() < head_end + len {
        if !read_more(stream, buf).await {
            return None;
        }
    }
    let body = buf[head_end..head_end + len].to_vec();
    buf.drain(..head_end + len);
    Some((path, body))
}

async fn read_more(stream: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 8192];
    match stream.read(&mut chunk).await {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            true
        }
    }
}

/// Answers one request; returns whether the connection stays open.
async fn handle(stream: &mut TcpStream, state: &State, path: String, raw: Vec<u8>) -> bool {
    let Ok(body) = serde_json::from_slice::<Value>(&raw) else {
        return plain(stream, "400 Bad Request", b"body is not JSON").await;
    };
    let prompt = last_user_message(&body);
    let request = {
        let mut all = state.requests.lock().unwrap();
        let attempt = all.iter().filter(|r| r.prompt == prompt).count();
        let at = Instant::now();
        let (index, path) = (all.len(), path.clone());
        all.push(Request {
            index,
            path,
            body,
            prompt,
            attempt,
            at,
        });
        all[index].clone()
    };
    if request.index >= MAX_REQUESTS {
        return plain(stream, "503 Busy", b"request budget spent").await;
    }
    let guard = InFlight::new(state);
    let mut reply = (state.script)(&request);
    while let Reply::Slow(delay, inner) = reply {
        tokio::time::sleep(delay).await;
        reply = *inner;
    }
    let content = match &reply {
        Reply::Wrong => answer_text(&request, 1),
        Reply::Text(t) => t.clone(),
        Reply::Hang => {
            wait_for_hangup(stream).await;
            return false;
        }
        Reply::Status(code, retry_after) => {
            drop(guard);
            let extra = retry_after.map_or(String::new(), |s| format!("Retry-After: {s}\r\n"));
            let body =
                json!({"error": {"code": code, "message": "fake failure", "type": "server_error"}});
            let status = format!("{code} Fake");
            return write(
                stream,
                &status,
                &extra,
                "application/json",
                body.to_string().as_bytes(),
            )
            .await;
        }
        Reply::Garbage => {
            drop(guard);
            let html =
                b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>";
            return write(stream, "200 OK", "", "text/html", html).await;
        }
        _ => answer_text(&request, 0),
    };
    drop(guard);
    let model = request.body["model"].clone();
    let cut = matches!(reply, Reply::Truncated | Reply::Stall);
    let body = match (request.path.as_str(), request.body["stream"] == json!(true)) {
        ("/v1/chat/completions", false) => {
            let n = request.body["n"].as_u64().unwrap_or(1);
            openai_body(&model, &content, request.index, n)
        }
        ("/api/chat", false) => ollama_final(&model, &content),
        ("/api/chat", true) => return ollama_stream(stream, &model, &content, cut).await,
        _ => return plain(stream, "404 Not Found", b"no such endpoint").await,
    }
    .to_string();
    if !cut {
        return write(stream, "200 OK", "", "application/json", body.as_bytes()).await;
    }
    // Announce the whole body, send half of it, then close (Truncated) or go silent (Stall).
    let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(&body.as_bytes()[..body.len() / 2]).await;
    if matches!(reply, Reply::Stall) {
        wait_for_hangup(stream).await;
    }
    false
}

/// Waits until the client hangs up (a read returns 0) or the server's lifetime ends.
async fn wait_for_hangup(stream: &mut TcpStream) {
    let mut sink = [0u8; 1024];
    let hangup = async { while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {} };
    let _ = tokio::time::timeout(LIFETIME, hangup).await;
}

async fn plain(stream: &mut TcpStream, status: &str, text: &[u8]) -> bool {
    write(stream, status, "", "text/plain", text).await
}

/// Writes a whole response; `extra` holds additional header lines.
async fn write(
    stream: &mut TcpStream,
    status: &str,
    extra: &str,
    ctype: &str,
    body: &[u8],
) -> bool {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n{extra}\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.is_ok() && stream.write_all(body).await.is_ok()
}

/// `/v1/chat/completions` response, shaped like llama.cpp's server output: `n` choices
/// of the same content, and (as llama-server does) usage counting one choice only.
fn openai_body(model: &Value, content: &str, index: usize, n: u64) -> Value {
    let choices: Vec<Value> = (0..n)
        .map(|i| {
            json!({
                "index": i,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop"
            })
        })
        .collect();
    json!({
        "id": format!("chatcmpl-fake{index}"),
        "object": "chat.completion",
        "created": 1_767_225_600,
        "model": model,
        "system_fingerprint": "b0000-fake",
        "choices": choices,
        "usage": {
            "prompt_tokens": PROMPT_TOKENS,
            "completion_tokens": COMPLETION_TOKENS,
            "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS
        },
        "timings": {"prompt_n": PROMPT_TOKENS, "predicted_n": COMPLETION_TOKENS, "predicted_ms": 12.5}
    })
}

/// Ollama's non-streaming response (also the last line of a stream, with empty content).
fn ollama_final(model: &Value, content: &str) -> Value {
    json!({
        "model": model,
        "created_at": "2026-01-01T00:00:00.000000Z",
        "message": {"role": "assistant", "content": content},
        "done_reason": "stop",
        "done": true,
        "total_duration": 123_456_789,
        "load_duration": 1_234_567,
        "prompt_eval_count": PROMPT_TOKENS,
        "prompt_eval_duration": 2_345_678,
        "eval_count": COMPLETION_TOKENS,
        "eval_duration": 3_456_789
    })
}

/// Ollama's NDJSON stream: content in 2-character lines, sent in 7-byte HTTP
/// chunks that cut lines (and UTF-8 sequences) apart, so the client must
/// buffer. A cut stream ends cleanly but never sends the `done: true` line.
async fn ollama_stream(
    stream: &mut TcpStream,
    model: &Value,
    content: &str,
    truncated: bool,
) -> bool {
    let mut ndjson = String::new();
    let chars: Vec<char> = content.chars().collect();
    for piece in chars.chunks(2) {
        let line = json!({
            "model": model,
            "created_at": "2026-01-01T00:00:00.000000Z",
            "message": {"role": "assistant", "content": piece.iter().collect::<String>()},
            "done": false
        });
        ndjson.push_str(&format!("{line}\n"));
    }
    if !truncated {
        ndjson.push_str(&format!("{}\n", ollama_final(model, "")));
    }
    let head = "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n";
    if stream.write_all(head.as_bytes()).await.is_err() {
        return false;
    }
    let bytes = ndjson.as_bytes();
    let mut start = 0;
    while start < bytes.len() {
        let end = (start + 7).min(bytes.len());
        let chunk = &bytes[start..end];
        let framed = [format!("{:x}\r\n", chunk.len()).as_bytes(), chunk, b"\r\n"].concat();
        if stream.write_all(&framed).await.is_err() {
            return false;
        }
        start = end;
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    stream.write_all(b"0\r\n\r\n").await.is_ok()
}

fn last_user_message(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// The answer to the prompt's expression (plus `offset`), as JSON when the request asks for JSON.
fn answer_text(request: &Request, offset: i64) -> String {
    let value = expression(&request.prompt)
        .and_then(|e| eval(&e))
        .unwrap_or(42)
        + offset;
    let structured =
        request.body.get("response_format").is_some() || request.body.get("format").is_some();
    if structured {
        json!({"answer": value}).to_string()
    } else {
        value.to_string()
    }
}

/// The text after t06's "Вычисли значение выражения:" up to the end of the line.
pub fn expression(prompt: &str) -> Option<String> {
    let (_, rest) = prompt.split_once("Вычисли значение выражения:")?;
    Some(rest.lines().next().unwrap_or_default().trim().to_owned())
}

/// Evaluates integers with + - * and parentheses, usual precedence.
pub fn eval(expr: &str) -> Option<i64> {
    let tokens: Vec<char> = expr.chars().filter(|c| !c.is_whitespace()).collect();
    let mut pos = 0;
    let v = sum(&tokens, &mut pos)?;
    (pos == tokens.len()).then_some(v)
}

fn sum(t: &[char], pos: &mut usize) -> Option<i64> {
    let mut v = product(t, pos)?;
    while let Some(&op @ ('+' | '-' | '−')) = t.get(*pos) {
        *pos += 1;
        let r = product(t, pos)?;
        v = if op == '+' { v + r } else { v - r };
    }
    Some(v)
}

fn product(t: &[char], pos: &mut usize) -> Option<i64> {
    let mut v = atom(t, pos)?;
    while let Some('*' | '×') = t.get(*pos) {
        *pos += 1;
        v *= atom(t, pos)?;
    }
    Some(v)
}

fn atom(t: &[char], pos: &mut usize) -> Option<i64> {
    match t.get(*pos)? {
        '(' => {
            *pos += 1;
            let v = sum(t, pos)?;
            (t.get(*pos) == Some(&')')).then(|| *pos += 1)?;
            Some(v)
        }
        '-' | '−' => {
            *pos += 1;
            Some(-atom(t, pos)?)
        }
        c if c.is_ascii_digit() => {
            let start = *pos;
            while t.get(*pos).is_some_and(char::is_ascii_digit) {
                *pos += 1;
            }
            t[start..*pos].iter().collect::<String>().parse().ok()
        }
        _ => None,
    }
}

// ---------------------------------------------------------------------------
// A workspace: a temp cwd with specs, harness.toml, results/ and golden/.
// ---------------------------------------------------------------------------

/// A temporary working directory for one test.
pub struct Workspace {
    /// Kept alive for the test's duration.
    pub dir: tempfile::TempDir,
}

impl Workspace {
    /// An empty workspace with a `specs/` directory.
    pub fn new() -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("specs")).unwrap();
        Workspace { dir }
    }

    /// The workspace root (the harness's cwd).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Copies `specs/<file>` of the repository into the workspace's `specs/`.
    pub fn copy_spec(&self, file: &str) -> &Self {
        let from = super::root().join("specs").join(file);
        std::fs::copy(&from, self.path().join("specs").join(file)).unwrap();
        self
    }

    /// Copies `tests/fixtures/<rel>` into the workspace's `specs/` (flat).
    pub fn copy_fixture(&self, rel: &str) -> &Self {
        let from = super::root().join("tests/fixtures").join(rel);
        let name = from.file_name().unwrap().to_owned();
        std::fs::copy(&from, self.path().join("specs").join(name)).unwrap();
        self
    }

    /// Writes a file relative to the workspace.
    pub fn write(&self, rel: &str, text: &str) -> &Self {
        std::fs::write(self.path().join(rel), text).unwrap();
        self
    }

    /// `harness run ARGS --results results --golden golden --no-progress`.
    pub fn run_cmd(&self, args: &[&str]) -> Command {
        let mut cmd = super::harness(self.path());
        cmd.arg("run").args(args).args([
            "--results",
            "results",
            "--golden",
            "golden",
            "--no-progress",
        ]);
        cmd
    }

    /// Runs `harness run ARGS ...` to completion: (exit code, output).
    pub fn run(&self, args: &[&str]) -> (i32, String) {
        super::run(&mut self.run_cmd(args))
    }

    /// Run directories, oldest first.
    pub fn run_dirs(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(self.path().join("results/runs"))
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        // Run ids are UTC timestamps (suffixed -2, -3 within a second): name order is age order here.
        dirs.sort();
        dirs
    }

    /// The complete, parseable lines of a run's journal.
    pub fn journal(&self, run_dir: &Path) -> Vec<Value> {
        let text = std::fs::read_to_string(run_dir.join("journal.jsonl")).unwrap_or_default();
        text.split_inclusive('\n')
            .filter(|l| l.ends_with('\n'))
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The journal of the most recent run.
    pub fn last_journal(&self) -> Vec<Value> {
        let dirs = self.run_dirs();
        self.journal(dirs.last().expect("a run directory exists"))
    }
}

/// A `[models.NAME]` table for harness.toml; `extra` adds raw lines.
pub fn model_toml(name: &str, provider: &str, model: &str, base_url: &str, extra: &str) -> String {
    format!(
        "[models.{name}]\nprovider = \"{provider}\"\nmodel = \"{model}\"\nbase_url = \"{base_url}\"\n{extra}\n"
    )
}

/// A workspace with one spec, `specs/<file>`, and the model `fake` on `fake`'s OpenAI API.
pub fn fake_workspace(fake: &FakeServer, file: &str, spec: &str) -> Workspace {
    let ws = Workspace::new();
    ws.write(&format!("specs/{file}"), spec);
    let table = model_toml(
        "fake",
        "openai",
        "fake-model",
        &fake.openai_base(),
        "timeout_secs = 5",
    );
    ws.write("harness.toml", &table);
    ws
}

/// Starts `cmd` with piped output, sends it SIGINT (Ctrl-C) once the server has
/// seen `requests` requests, and returns its exit code and output (stderr, then stdout).
pub fn interrupt_after(
    cmd: &mut Command,
    fake: &FakeServer,
    requests: usize,
) -> (Option<i32>, String) {
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while fake.count() < requests {
        assert!(Instant::now() < deadline, "no requests arrived");
        std::thread::sleep(Duration::from_millis(10));
    }
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let output = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&output.stderr).into_owned()
        + String::from_utf8_lossy(&output.stdout).as_ref();
    (output.status.code(), text)
}
