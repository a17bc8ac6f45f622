//! The server's HTTP/1.1: keep-alive connections, Content-Length request
//! bodies, and the scripted reply for each request.

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

use super::native;
use super::wire::{answer_text, last_user_message, ollama_final, ollama_stream, openai_body};
use super::{InFlight, LIFETIME, MAX_BODY, MAX_HEAD, MAX_REQUESTS, Reply, Request, State};

pub(super) async fn serve(
    listener: TcpListener,
    state: Arc<State>,
    mut shutdown: oneshot::Receiver<()>,
) {
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
    while let Some((head, body)) = read_request(&mut stream, &mut buf).await {
        if !handle(&mut stream, &state, head, body).await {
            return;
        }
    }
}

/// What a request's head says: its path and `Authorization` header.
struct Head {
    path: String,
    authorization: Option<String>,
}

/// Reads one request (head + Content-Length body); None on close or nonsense.
async fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<(Head, Vec<u8>)> {
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
    let mut authorization = None;
    for line in lines {
        let (name, value) = line.split_once(':').unwrap_or((line, ""));
        // The native APIs' key headers (Anthropic's, Google's) count as authorization.
        if ["authorization", "x-api-key", "x-goog-api-key"]
            .iter()
            .any(|h| name.eq_ignore_ascii_case(h))
        {
            authorization = Some(value.trim().to_owned());
        }
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
    Some((
        Head {
            path,
            authorization,
        },
        body,
    ))
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
async fn handle(stream: &mut TcpStream, state: &State, head: Head, raw: Vec<u8>) -> bool {
    let Head {
        path,
        authorization,
    } = head;
    let Ok(body) = serde_json::from_slice::<Value>(&raw) else {
        return plain(stream, "400 Bad Request", b"body is not JSON").await;
    };
    let request = record(state, path, body, authorization);
    if request.index >= MAX_REQUESTS {
        return plain(stream, "503 Busy", b"request budget spent").await;
    }
    let guard = InFlight::new(state);
    let (reply, headers) = unwrap(state.script.as_ref()(&request)).await;
    let mut calls = Vec::new();
    let mut thought = None;
    let content = match &reply {
        Reply::Thinking(t, text) => {
            thought = Some(t.clone());
            text.clone()
        }
        Reply::Wrong => answer_text(&request, 1),
        Reply::Text(t) => t.clone(),
        Reply::Calls(text, scripted) => {
            calls.clone_from(scripted);
            text.clone()
        }
        Reply::Hang => {
            wait_for_hangup(stream).await;
            return false;
        }
        Reply::Status(code, retry_after) => {
            drop(guard);
            let extra = retry_after.map_or(String::new(), |s| format!("Retry-After: {s}\r\n"));
            let body = native::error_body(&request.path, *code);
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
        Reply::Endless(code) => {
            drop(guard);
            let stream_chunks = request.body["stream"] == json!(true);
            endless(stream, *code, stream_chunks).await;
            return false;
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
    // A base URL's query (`?api-key=...`) follows the path.
    let route = request.path.split('?').next().unwrap_or_default();
    let body = match (route, request.body["stream"] == json!(true)) {
        _ if let Reply::Raw(raw) = &reply => raw.clone(),
        ("/v1/chat/completions", false) => {
            let n = request.body["n"].as_u64().unwrap_or(1);
            let answer = (content.as_str(), thought.as_ref());
            openai_body(&model, answer, &calls, request.index, n)
        }
        ("/api/chat", false) => ollama_final(&model, (&content, thought.as_ref()), &calls),
        (route, false) if native::wire(route).is_some() => {
            let wire = native::wire(route).expect("matched");
            native::answer(
                wire,
                route,
                &request.body,
                (&content, &calls),
                request.index,
            )
        }
        ("/api/chat", true) => {
            let thinking = thought.as_ref();
            return ollama_stream(stream, &model, (&content, &calls, thinking), cut).await;
        }
        _ => return plain(stream, "404 Not Found", b"no such endpoint").await,
    }
    .to_string();
    if !cut {
        return write(
            stream,
            "200 OK",
            &headers,
            "application/json",
            body.as_bytes(),
        )
        .await;
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

/// Logs a request, numbered, with how many times its prompt came before.
fn record(state: &State, path: String, body: Value, authorization: Option<String>) -> Request {
    let prompt = last_user_message(&body);
    let mut all = state.requests.lock().unwrap();
    let attempt = all.iter().filter(|r| r.prompt == prompt).count();
    let index = all.len();
    all.push(Request {
        index,
        path,
        body,
        prompt,
        attempt,
        at: Instant::now(),
        authorization,
    });
    all[index].clone()
}

/// The reply inside `Slow` and `Headers`, after their waits, with their header lines.
async fn unwrap(mut reply: Reply) -> (Reply, String) {
    let mut headers = String::new();
    loop {
        reply = match reply {
            Reply::Slow(delay, inner) => {
                tokio::time::sleep(delay).await;
                *inner
            }
            Reply::Headers(lines, inner) => {
                headers.push_str(&lines);
                *inner
            }
            other => return (other, headers),
        };
    }
}

/// A head without a length, then body bytes until a write fails (the client
/// left) or the server's lifetime ends.
async fn endless(stream: &mut TcpStream, code: u16, ndjson: bool) {
    let head = format!(
        "HTTP/1.1 {code} Fake\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
    );
    if stream.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    // Whole lines in every block, so each chunk parses and only the count can stop it.
    let block: Vec<u8> = if ndjson {
        "{\"message\":{\"role\":\"assistant\",\"content\":\"x\"},\"done\":false}\n"
            .repeat(1024)
            .into_bytes()
    } else {
        vec![b' '; 64 * 1024]
    };
    let flood = async { while stream.write_all(&block).await.is_ok() {} };
    let _ = tokio::time::timeout(LIFETIME, flood).await;
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
