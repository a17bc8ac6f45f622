//! `harness view`: a local web app over a results folder: the runs, live
//! ones updating as their journals grow, a run's cells and records, and two
//! runs compared. It reads what `harness run` writes (plans, journals,
//! reports) and writes nothing.
//!
//! The server indexes the folder every [`REFRESH`] on a blocking thread
//! ([`index`]); pages ask for JSON ([`api`]) and hear of changes over
//! server-sent events. The page (`app.html`, `app.js`, `app.css`) is in the
//! binary: nothing is fetched from elsewhere, and its Content-Security-Policy
//! allows nothing else. It sets model output as text, never as markup.
//!
//! Imports go down only: `run` (the plan), `metrics` (the statistics),
//! `verify` (failure kinds), `files`.

mod api;
mod index;
mod journal;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path as UrlPath, Query, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::sync::watch;

use index::Index;

/// How often the results folder is read again.
pub(crate) const REFRESH: Duration = Duration::from_millis(250);

const APP_HTML: &str = include_str!("app.html");
const APP_JS: &str = include_str!("app.js");
const APP_CSS: &str = include_str!("app.css");

/// What every page is allowed: its own script, style and JSON, data: images.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; \
    frame-ancestors 'none'";

/// The server's state.
struct Shared {
    index: Mutex<Index>,
    version: watch::Sender<u64>,
    token: Option<String>,
}

impl Shared {
    fn index(&self) -> std::sync::MutexGuard<'_, Index> {
        self.index.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Serves the results folder `root` on `listener` until the process ends;
/// with `token`, every request must carry it (`?token=` or the
/// `X-Harness-Token` header).
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    root: &Path,
    token: Option<String>,
) -> std::io::Result<()> {
    // Served at once: the first read of the folder (a large one takes a
    // while) fills the index as the pages watch.
    let (version, _) = watch::channel(0);
    let shared = Arc::new(Shared {
        index: Mutex::new(Index::new(root)),
        version,
        token,
    });
    tokio::spawn(refresh_forever(shared.clone()));
    let app = Router::new()
        .route("/", get(page))
        .route(
            "/app.js",
            get(|| asset(APP_JS, "text/javascript; charset=utf-8")),
        )
        .route(
            "/app.css",
            get(|| asset(APP_CSS, "text/css; charset=utf-8")),
        )
        .route("/api/runs", get(list))
        .route("/api/trends", get(trends))
        .route("/api/runs/{id}", get(one_run))
        .route("/api/runs/{id}/records", get(page_of_records))
        .route("/api/runs/{id}/records/{n}", get(one_record))
        .route("/api/compare/{a}/{b}", get(compare))
        .route("/api/events", get(events))
        .layer(middleware::from_fn_with_state(shared.clone(), guard))
        .with_state(shared);
    axum::serve(listener, app).await
}

/// Reads the folder now and again every [`REFRESH`] after each read,
/// telling the pages when it changed.
async fn refresh_forever(shared: Arc<Shared>) {
    loop {
        let s = shared.clone();
        let read = tokio::task::spawn_blocking(move || {
            index::refresh(&s.index, &|version| {
                s.version.send_replace(version);
            });
        });
        if read.await.is_err() {
            return; // a panic in the read: the pages keep what they have
        }
        tokio::time::sleep(REFRESH).await;
    }
}

/// Refuses a request without the token, and marks every answer as not to
/// be framed, sniffed or cached.
async fn guard(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    if let Some(token) = &shared.token {
        let given = request
            .headers()
            .get("x-harness-token")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .or_else(|| query_token(request.uri().query()));
        if !given.is_some_and(|g| constant_time_eq(g.as_bytes(), token.as_bytes())) {
            return (StatusCode::UNAUTHORIZED, "this viewer needs its token\n").into_response();
        }
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The `token` parameter of a query string.
fn query_token(query: Option<&str>) -> Option<String> {
    query?
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == "token")
        .map(|(_, v)| v.to_owned())
}

/// Whether `a` equals `b`, in time that does not depend on where they differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn page() -> Response {
    asset(APP_HTML, "text/html; charset=utf-8").await
}

async fn asset(body: &'static str, kind: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}

fn not_found(what: &str) -> Response {
    (StatusCode::NOT_FOUND, format!("no {what}\n")).into_response()
}

async fn list(State(shared): State<Arc<Shared>>) -> Response {
    axum::Json(api::runs(&shared.index())).into_response()
}

async fn trends(State(shared): State<Arc<Shared>>) -> Response {
    axum::Json(api::trends(&shared.index())).into_response()
}

async fn one_run(State(shared): State<Arc<Shared>>, UrlPath(id): UrlPath<String>) -> Response {
    match api::run(&shared.index(), &id) {
        Some(detail) => axum::Json(detail).into_response(),
        None => not_found("such run"),
    }
}

async fn page_of_records(
    State(shared): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
    Query(query): Query<api::RecordQuery>,
) -> Response {
    let index = shared.index();
    let Some(run) = index.runs.get(&id) else {
        return not_found("such run");
    };
    match api::records(run, &query) {
        Ok(page) => axum::Json(page).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")).into_response(),
    }
}

async fn one_record(
    State(shared): State<Arc<Shared>>,
    UrlPath((id, n)): UrlPath<(String, usize)>,
) -> Response {
    let index = shared.index();
    let Some(run) = index.runs.get(&id) else {
        return not_found("such run");
    };
    match api::record(run, n) {
        Some(Ok(bytes)) => ([(header::CONTENT_TYPE, "application/json")], bytes).into_response(),
        Some(Err(e)) => (StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")).into_response(),
        None => not_found("such record"),
    }
}

async fn compare(
    State(shared): State<Arc<Shared>>,
    UrlPath((a, b)): UrlPath<(String, String)>,
) -> Response {
    let index = shared.index();
    match (index.runs.get(&a), index.runs.get(&b)) {
        (Some(a), Some(b)) => axum::Json(api::compare(a, b)).into_response(),
        _ => not_found("such run"),
    }
}

/// `version` events: the index's version, now and whenever it changes.
async fn events(State(shared): State<Arc<Shared>>) -> impl IntoResponse {
    let changes = shared.version.subscribe();
    let stream = futures_util::stream::unfold((changes, true), |(mut rx, first)| async move {
        if !first && rx.changed().await.is_err() {
            return None;
        }
        let version = *rx.borrow_and_update();
        let event = Event::default().event("version").data(version.to_string());
        Some((Ok::<_, std::convert::Infallible>(event), (rx, false)))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

/// Whether `addr` reaches only this machine.
pub(crate) fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}
