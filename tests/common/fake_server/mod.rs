//! An in-process fake model server speaking the real wire formats
//! (OpenAI `/v1/chat/completions`, Ollama `/api/chat`, streaming and not;
//! Anthropic `/v1/messages`, Gemini `generateContent`, OpenAI `/v1/responses`),
//! with scripted faults and scripted tool calls in each wire's own form.
//!
//! The server is hand-rolled HTTP/1.1 on tokio so a test controls every byte:
//! a truncated body, a hang, garbage with a 200. It binds 127.0.0.1:0 only,
//! records every request body, and tracks how many requests it is serving at
//! once; [`FakeServer::rate_limited`] admits R requests a second and
//! refuses the rest with 429. It stops on drop, after `LIFETIME`, or after `MAX_REQUESTS`.
//! [`FakeBatchApi`] fakes the OpenAI Batch API and its Files endpoints, and
//! Anthropic's Message Batches.

mod anthropic_batch;
mod arith;
mod batch;
mod http;
mod native;
mod rate;
mod wire;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

pub use arith::{eval, expression};
pub use batch::{Ending, FakeBatchApi, LineReply};
pub use native::{redacted_data, signature};
pub use rate::RateLog;

/// Usage every successful answer reports, so tests can find it in records.
pub const PROMPT_TOKENS: u64 = 17;
/// See [`PROMPT_TOKENS`].
pub const COMPLETION_TOKENS: u64 = 5;
/// Of [`PROMPT_TOKENS`], those the OpenAI wire reports read from its prompt cache.
pub const CACHED_TOKENS: u64 = 4;
/// Of [`COMPLETION_TOKENS`], those the OpenAI, Gemini and Responses wires
/// report as reasoning for a [`Reply::Thinking`].
pub const REASONING_TOKENS: u64 = 3;
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
    /// The `Authorization` header, when sent.
    pub authorization: Option<String>,
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
    /// The inner reply with these header lines (each ending in `\r\n`) on a 200.
    Headers(String, Box<Reply>),
    /// This content (may be empty) and these tool calls, as the wire returns
    /// them: OpenAI's arguments as JSON text, Ollama's as an object.
    Calls(String, Vec<FakeCall>),
    /// This JSON body with a 200, whatever the wire (a documented example response).
    Raw(Value),
    /// This status, no Content-Length, and a body without end (an Ollama
    /// stream gets endless small NDJSON chunks), until the client leaves.
    Endless(u16),
    /// A reasoning model's answer: this thought in the wire's own field, then
    /// this content (may be empty).
    Thinking(Thought, String),
    /// The inner reply (text or calls), after this thought in the wire's own field.
    Thought(Thought, Box<Reply>),
}

/// What a reasoning model thought, as the wires return it apart from the content.
#[derive(Debug, Clone)]
pub struct Thought {
    /// The reasoning text.
    pub text: String,
    /// The OpenAI message field: `reasoning_content` (DeepSeek, llama-server
    /// `--reasoning-format deepseek`) or `reasoning` (OpenRouter, vLLM).
    /// Ollama always sends `message.thinking`; the native wires have one
    /// form each (Anthropic `thinking` and `redacted_thinking` blocks, a
    /// Gemini thought part and a signature, a Responses `reasoning` item).
    pub field: &'static str,
    /// Generation stopped at `max_tokens`: `finish_reason` (Ollama:
    /// `done_reason`) is `length` instead of `stop`.
    pub cut: bool,
}

/// One tool call of a [`Reply::Calls`].
#[derive(Debug, Clone)]
pub struct FakeCall {
    /// The function's name as the wire names it (`math_factorial`).
    pub name: String,
    /// The arguments as the model wrote them. Ollama parses them itself and
    /// sends an object, so an Ollama reply needs valid JSON here.
    pub arguments: String,
}

impl FakeCall {
    /// A call of `name` with `arguments` (JSON text, or not).
    pub fn new(name: &str, arguments: &str) -> FakeCall {
        FakeCall {
            name: name.into(),
            arguments: arguments.into(),
        }
    }
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
                http::serve(listener, st, rx).await;
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
