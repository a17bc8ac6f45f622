//! A fake of the OpenAI Batch API and its Files endpoints, as the vendored
//! OpenAPI document (2.3.0: `CreateFileRequest`, `CreateBatchRequest`,
//! `Batch`, `BatchRequestCounts`) and the Batch guide describe them:
//!
//! - `POST /v1/files`, multipart with `purpose=batch` and a JSONL `file`
//!   whose every line is `{custom_id, method: "POST", url, body}` with
//!   unique `custom_id`s: a File object (`file-N`).
//! - `POST /v1/batches` `{input_file_id, endpoint, completion_window}`: a
//!   Batch (`batch_N`), `validating`.
//! - `GET /v1/batches/{id}`: each poll moves it on: `validating`, then
//!   `in_progress` for the planned polls (its counts rising), `finalizing`
//!   (or `cancelling`), then its end: `completed`, `expired`, `cancelled`
//!   or `failed`. An ended batch has `output_file_id` (200 lines:
//!   `{id, custom_id, response: {status_code, request_id, body}, error: null}`)
//!   and `error_file_id` (`{id, custom_id, response: null, error: {code, message}}`),
//!   each written in reverse input order so only `custom_id` can match them.
//! - `GET /v1/files/{id}/content`: the file's bytes.
//!
//! Blocking HTTP/1.1 on loopback, one thread per connection, `Connection: close`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use super::arith::{eval, expression};
use super::{COMPLETION_TOKENS, PROMPT_TOKENS};

/// What the fake does with one request line of a batch.
#[derive(Debug, Clone)]
pub enum LineReply {
    /// The right value of the prompt's expression.
    Correct,
    /// The right value plus one.
    Wrong,
    /// A line in the error file with this `error.code` and message.
    Error(&'static str, &'static str),
    /// No line at all: a partial results file.
    Omit,
    /// A line that is not JSON in the output file instead of its answer.
    Garbage,
}

/// How a batch ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Every request ran.
    Completed,
    /// The window passed: the first half ran, the rest `batch_expired`.
    Expired,
    /// Cancelled: the first half ran, the rest `batch_cancelled`.
    Cancelled,
    /// The input was refused: no files.
    Failed,
}

type Script = dyn Fn(&Value) -> LineReply + Send + Sync;

pub(super) struct Batch {
    input: String,
    pub(super) lines: Vec<Value>,
    pub(super) polls: usize,
    pub(super) status: &'static str,
    output: Option<String>,
    errors: Option<String>,
}

impl Batch {
    /// A new batch of `lines` (from file `input`: empty for Anthropic's).
    pub(super) fn new(input: String, lines: Vec<Value>) -> Batch {
        Batch {
            input,
            lines,
            polls: 0,
            status: "validating",
            output: None,
            errors: None,
        }
    }
}

#[derive(Default)]
pub(super) struct Store {
    files: HashMap<String, Vec<u8>>,
    pub(super) batches: HashMap<String, Batch>,
    pub(super) next: usize,
    /// Every request as `METHOD PATH`, in arrival order.
    log: Vec<String>,
    /// The body of every `POST /v1/batches`.
    pub(super) creates: Vec<Value>,
}

pub(super) struct Shared {
    script: Box<Script>,
    /// Polls a batch stays `in_progress`.
    pub(super) in_progress: usize,
    pub(super) ending: Ending,
    store: Mutex<Store>,
}

/// A running fake Batch API; stops on drop.
pub struct FakeBatchApi {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
}

impl FakeBatchApi {
    /// Batches that stay `in_progress` for `in_progress` polls, then end as
    /// `ending`, each line answered as `script` says.
    pub fn start(
        in_progress: usize,
        ending: Ending,
        script: impl Fn(&Value) -> LineReply + Send + Sync + 'static,
    ) -> FakeBatchApi {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            script: Box::new(script),
            in_progress,
            ending,
            store: Mutex::default(),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (shared.clone(), stop.clone());
        std::thread::spawn(move || {
            let deadline = std::time::Instant::now() + Duration::from_secs(120);
            while !st.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let s = s.clone();
                        std::thread::spawn(move || serve(stream, &s));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        FakeBatchApi { addr, shared, stop }
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request so far as `METHOD PATH`.
    pub fn log(&self) -> Vec<String> {
        self.shared.store.lock().unwrap().log.clone()
    }

    /// How many batches were created.
    pub fn created(&self) -> usize {
        self.count("POST /v1/batches")
    }

    /// How many requests were `METHOD PATH` exactly.
    pub fn count(&self, what: &str) -> usize {
        self.log().iter().filter(|l| *l == what).count()
    }

    /// The body of every `POST /v1/batches`, and every batch as a poll now shows it.
    pub fn creates_and_batches(&self) -> (Vec<Value>, Vec<Value>) {
        let store = self.shared.store.lock().unwrap();
        let batches = store.batches.iter().map(|(id, b)| batch_object(id, b));
        (store.creates.clone(), batches.collect())
    }

    /// The request lines of every batch, in creation order.
    pub fn batch_lines(&self) -> Vec<Vec<Value>> {
        let store = self.shared.store.lock().unwrap();
        let mut ids: Vec<&String> = store.batches.keys().collect();
        ids.sort_by_key(|id| id.rsplit('_').next().and_then(|n| n.parse::<usize>().ok()));
        ids.iter()
            .map(|id| store.batches[*id].lines.clone())
            .collect()
    }
}

impl Drop for FakeBatchApi {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn serve(mut stream: TcpStream, shared: &Shared) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut first = String::new();
    if reader.read_line(&mut first).is_err() {
        return;
    }
    let mut parts = first.split_whitespace();
    let (method, path) = (
        parts.next().unwrap_or("").to_owned(),
        parts.next().unwrap_or("").to_owned(),
    );
    let (mut len, mut content_type) = (0usize, String::new());
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        let (name, value) = line.split_once(':').unwrap_or((&line, ""));
        if name.eq_ignore_ascii_case("content-length") {
            len = value.trim().parse().unwrap_or(0);
        }
        if name.eq_ignore_ascii_case("content-type") {
            content_type = value.trim().to_owned();
        }
    }
    let mut body = vec![0; len.min(64 << 20)];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let (status, reply) = route(shared, &method, &path, &content_type, &body);
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        reply.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&reply);
}

pub(super) fn error(status: &'static str, message: &str) -> (&'static str, Vec<u8>) {
    let body =
        json!({"error": {"message": message, "type": "invalid_request_error", "code": null}});
    (status, body.to_string().into_bytes())
}

fn route(
    shared: &Shared,
    method: &str,
    path: &str,
    content_type: &str,
    body: &[u8],
) -> (&'static str, Vec<u8>) {
    let mut store = shared.store.lock().unwrap();
    store.log.push(format!("{method} {path}"));
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match (method, segments.as_slice()) {
        ("POST", ["v1", "files"]) => upload(&mut store, content_type, body),
        ("POST", ["v1", "batches"]) => create(&mut store, body),
        ("GET", ["v1", "batches", id]) => {
            let id = (*id).to_owned();
            poll(shared, &mut store, &id)
        }
        ("POST", ["v1", "messages", "batches"]) => super::anthropic_batch::create(&mut store, body),
        ("GET", ["v1", "messages", "batches", id]) => {
            let id = (*id).to_owned();
            match advance(shared, &mut store, &id) {
                Some(batch) => super::anthropic_batch::object(&id, batch),
                None => error("404 Not Found", "no such batch"),
            }
        }
        ("GET", ["v1", "messages", "batches", id, "results"]) => {
            super::anthropic_batch::results(shared, &store, id)
        }
        ("GET", ["v1", "files", id, "content"]) => match store.files.get(*id) {
            Some(bytes) => ("200 OK", bytes.clone()),
            None => error("404 Not Found", "no such file"),
        },
        _ => error("404 Not Found", "no such route"),
    }
}

/// `POST /v1/files`: the multipart form's `purpose` and `file` parts.
fn upload(store: &mut Store, content_type: &str, body: &[u8]) -> (&'static str, Vec<u8>) {
    let Some(boundary) = content_type.split("boundary=").nth(1) else {
        return error("400 Bad Request", "not multipart/form-data");
    };
    let text = String::from_utf8_lossy(body);
    let mut purpose = None;
    let mut file = None;
    for part in text.split(&format!("--{boundary}")) {
        let Some((head, content)) = part.split_once("\r\n\r\n") else {
            continue;
        };
        let content = content.strip_suffix("\r\n").unwrap_or(content);
        if head.contains("name=\"purpose\"") {
            purpose = Some(content.to_owned());
        } else if head.contains("name=\"file\"") && head.contains("filename=") {
            file = Some(content.to_owned());
        }
    }
    if purpose.as_deref() != Some("batch") {
        return error("400 Bad Request", "purpose must be batch");
    }
    let Some(file) = file else {
        return error("400 Bad Request", "no file part");
    };
    let mut ids = std::collections::HashSet::new();
    for line in file.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(line) = serde_json::from_str::<Value>(line) else {
            return error("400 Bad Request", "a line is not JSON");
        };
        let id = line["custom_id"].as_str().unwrap_or_default().to_owned();
        let valid = !id.is_empty()
            && line["method"] == "POST"
            && line["url"] == "/v1/chat/completions"
            && line["body"].is_object();
        if !valid || !ids.insert(id) {
            return error(
                "400 Bad Request",
                "a line lacks custom_id, method, url or body, or repeats a custom_id",
            );
        }
    }
    store.next += 1;
    let id = format!("file-{}", store.next);
    let bytes = file.len();
    store.files.insert(id.clone(), file.into_bytes());
    let object = json!({"id": id, "object": "file", "bytes": bytes, "created_at": 0,
        "filename": "batch.jsonl", "purpose": "batch"});
    ("200 OK", object.to_string().into_bytes())
}

/// `POST /v1/batches`.
fn create(store: &mut Store, body: &[u8]) -> (&'static str, Vec<u8>) {
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return error("400 Bad Request", "body is not JSON");
    };
    store.creates.push(request.clone());
    if request["endpoint"] != "/v1/chat/completions" || request["completion_window"] != "24h" {
        return error("400 Bad Request", "endpoint or completion_window");
    }
    let input = request["input_file_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let Some(file) = store.files.get(&input) else {
        return error("404 Not Found", "no such input file");
    };
    let lines = String::from_utf8_lossy(file)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    store.next += 1;
    let id = format!("batch_{}", store.next);
    let batch = Batch::new(input, lines);
    let object = batch_object(&id, &batch);
    store.batches.insert(id, batch);
    ("200 OK", object.to_string().into_bytes())
}

/// `GET /v1/batches/{id}`: one step further.
fn poll(shared: &Shared, store: &mut Store, id: &str) -> (&'static str, Vec<u8>) {
    if advance(shared, store, id).is_none() {
        return error("404 Not Found", "no such batch");
    }
    let ended = store.batches[id].polls > shared.in_progress + 2;
    let batch = &store.batches[id];
    if ended && batch.output.is_none() && batch.errors.is_none() && shared.ending != Ending::Failed
    {
        let (output, errors) = results(shared, &batch.lines);
        for (text, slot) in [(output, 0), (errors, 1)] {
            if text.is_empty() {
                continue;
            }
            store.next += 1;
            let file = format!("file-{}", store.next);
            store.files.insert(file.clone(), text.into_bytes());
            let batch = store.batches.get_mut(id).unwrap();
            if slot == 0 {
                batch.output = Some(file)
            } else {
                batch.errors = Some(file)
            }
        }
    }
    let object = batch_object(id, &store.batches[id]);
    ("200 OK", object.to_string().into_bytes())
}

/// Moves batch `id` one poll further: `None` when there is no such batch.
pub(super) fn advance<'a>(shared: &Shared, store: &'a mut Store, id: &str) -> Option<&'a Batch> {
    let batch = store.batches.get_mut(id)?;
    batch.polls += 1;
    let p = batch.polls;
    let last = shared.in_progress + 2;
    batch.status = match p {
        1 => "validating",
        _ if p < last => "in_progress",
        _ if p == last && shared.ending == Ending::Cancelled => "cancelling",
        _ if p == last => "finalizing",
        _ => match shared.ending {
            Ending::Completed => "completed",
            Ending::Expired => "expired",
            Ending::Cancelled => "cancelled",
            Ending::Failed => "failed",
        },
    };
    Some(batch)
}

/// The output and error files of a batch's `lines`, each in reverse order.
fn results(shared: &Shared, lines: &[Value]) -> (String, String) {
    let (mut output, mut errors) = (String::new(), String::new());
    for (i, line) in lines.iter().enumerate().rev() {
        let custom_id = &line["custom_id"];
        let reply = reply(shared, lines.len(), i, line);
        let offset = match reply {
            LineReply::Correct => 0,
            LineReply::Wrong => 1,
            LineReply::Error(code, message) => {
                let entry = json!({"id": format!("batch_req_{i}"), "custom_id": custom_id,
                    "response": null, "error": {"code": code, "message": message}});
                errors.push_str(&format!("{entry}\n"));
                continue;
            }
            LineReply::Omit => continue,
            LineReply::Garbage => {
                output.push_str("{\"custom_id\": \"trunc\n");
                continue;
            }
        };
        let value = answer(line, offset);
        let body = json!({
            "id": format!("chatcmpl-{i}"), "object": "chat.completion", "created": 0,
            "model": line["body"]["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": value.to_string()}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": COMPLETION_TOKENS,
                      "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS}
        });
        let entry = json!({"id": format!("batch_req_{i}"), "custom_id": custom_id,
            "response": {"status_code": 200, "request_id": format!("req_{i}"), "body": body}, "error": null});
        output.push_str(&format!("{entry}\n"));
    }
    (output, errors)
}

/// Line `i`'s reply (of `count`): the ending's for the unfinished half, else the script's.
pub(super) fn reply(shared: &Shared, count: usize, i: usize, line: &Value) -> LineReply {
    let unfinished = i >= count.div_ceil(2);
    match shared.ending {
        Ending::Expired if unfinished => LineReply::Error(
            "batch_expired",
            "This request could not be executed before the completion window expired.",
        ),
        Ending::Cancelled if unfinished => LineReply::Error(
            "batch_cancelled",
            "This request was cancelled before it ran.",
        ),
        _ => (shared.script)(line),
    }
}

/// The answer to a line's prompt (its `body`), plus `offset`.
pub(super) fn answer(line: &Value, offset: i64) -> i64 {
    let prompt = super::native::last_user_text(&line["body"]).unwrap_or_default();
    expression(&prompt).and_then(|e| eval(&e)).unwrap_or(42) + offset
}

/// A `Batch` object as the reference lists its fields.
fn batch_object(id: &str, b: &Batch) -> Value {
    let total = b.lines.len();
    let completed = match b.status {
        "validating" => 0,
        "in_progress" => (b.polls - 1).min(total),
        _ => total,
    };
    let errors = (b.status == "failed").then(|| {
        json!({"object": "list", "data": [{"code": "invalid_request", "message": "the input file was refused", "line": 1}]})
    });
    // The schema has no null for these: absent until they exist.
    let mut object = json!({
        "id": id, "object": "batch", "endpoint": "/v1/chat/completions",
        "errors": errors, "input_file_id": b.input, "completion_window": "24h",
        "status": b.status, "output_file_id": b.output, "error_file_id": b.errors,
        "created_at": 0, "request_counts": {"total": total, "completed": completed, "failed": 0},
        "metadata": null
    });
    let map = object.as_object_mut().unwrap();
    map.retain(|key, value| !value.is_null() || key == "metadata");
    object
}
