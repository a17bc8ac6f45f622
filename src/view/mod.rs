//! `harness view`: a local web app over a results folder: the runs, live
//! ones updating as their journals grow, shards of one plan as one run, a
//! run's cells and records, two runs compared or a run against its golden
//! transcripts. It reads what `harness run` writes (plans, journals,
//! reports, golden transcripts) and writes nothing.
//!
//! The server indexes the folder every [`REFRESH`] on a blocking thread
//! ([`index`]); pages ask for JSON ([`api`], [`records`], [`compare`]) and
//! hear of changes over server-sent events. The page (`app.html`, `app.js`,
//! `app.css`, with the HTML report's drawing code and style before them) is
//! in the binary: nothing is fetched from elsewhere, and its
//! Content-Security-Policy allows nothing else. It sets model output as
//! text, never as markup.
//!
//! Imports go down only: `report` (a record's drill-down, drawn by the
//! report's own code, and how specs are shown), `run` (plans, records),
//! `golden` (transcripts), `metrics` (the statistics), `verify` (failure
//! kinds).

mod api;
mod compare;
mod index;
mod journal;
mod records;
mod shown;

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
/// The page's own script; [`script`] puts the report's drawing code before it.
const APP_JS: &str = include_str!("app.js");
const APP_CSS: &str = include_str!("app.css");

/// The page's script: the HTML report's elements and drill-down, then the
/// viewer's own, in one function so they share its scope.
fn script() -> String {
    [
        "(function () {\n'use strict';\n",
        crate::report::DOM_JS,
        crate::report::DRILL_JS,
        APP_JS,
        "})();\n",
    ]
    .concat()
}

/// The page's style: the report's (its drill-down's look), then the viewer's.
fn style() -> String {
    [crate::report::REPORT_CSS, APP_CSS].concat()
}

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
            get(|| asset(script(), "text/javascript; charset=utf-8")),
        )
        .route(
            "/app.css",
            get(|| asset(style(), "text/css; charset=utf-8")),
        )
        .route("/api/runs", get(list))
        .route("/api/trends", get(trends))
        .route("/api/runs/{id}", get(one_run))
        .route("/api/runs/{id}/records", get(page_of_records))
        .route("/api/runs/{id}/records/{n}", get(one_record))
        .route("/api/runs/{id}/records/{n}/raw", get(raw_record))
        .route("/api/runs/{id}/records/{n}/golden", get(golden_record))
        .route("/api/compare/{a}/{b}", get(compare))
        .route("/api/golden/{id}", get(against_golden))
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

async fn asset(body: impl Into<axum::body::Body>, kind: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind)], body.into()).into_response()
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
    Query(query): Query<records::RecordQuery>,
) -> Response {
    let index = shared.index();
    let Some(shown) = index.find(&id) else {
        return not_found("such run");
    };
    let cells = api::cell_names(&shown);
    match records::records(&shown, &cells, &query) {
        Ok(page) => axum::Json(page).into_response(),
        Err(e) => server_error(&e),
    }
}

fn server_error(e: &dyn std::fmt::Display) -> Response {
    (StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")).into_response()
}

/// What `answer` makes of record `n` of the run folder named in the URL.
fn with_record(
    shared: &Shared,
    (id, n): (String, usize),
    answer: impl FnOnce(&index::Index, &index::Run, usize) -> Response,
) -> Response {
    let index = shared.index();
    match index.runs.get(&id) {
        Some(run) if n < run.journal.lines.len() => answer(&index, run, n),
        Some(_) => not_found("such record"),
        None => not_found("such run"),
    }
}

/// Record `n` of run folder `id`, drawn as the report's drill-down draws it.
async fn one_record(
    State(shared): State<Arc<Shared>>,
    UrlPath(at): UrlPath<(String, usize)>,
) -> Response {
    with_record(&shared, at, |index, run, n| {
        let golden = run.golden_dir(&index.root);
        match records::drill(run, n, golden.as_deref()) {
            Ok(Ok(drill)) => axum::Json(drill).into_response(),
            Ok(Err(unreadable)) => axum::Json(unreadable).into_response(),
            Err(e) => server_error(&e),
        }
    })
}

/// Record `n` of run folder `id` as its journal holds it.
async fn raw_record(
    State(shared): State<Arc<Shared>>,
    UrlPath(at): UrlPath<(String, usize)>,
) -> Response {
    with_record(&shared, at, |_, run, n| match records::raw(run, n) {
        Ok(bytes) => ([(header::CONTENT_TYPE, "application/json")], bytes).into_response(),
        Err(e) => server_error(&e),
    })
}

/// The golden transcript's answer for record `n` of run folder `id`.
async fn golden_record(
    State(shared): State<Arc<Shared>>,
    UrlPath(at): UrlPath<(String, usize)>,
) -> Response {
    with_record(&shared, at, |index, run, n| {
        let Ok(bytes) = records::raw(run, n) else {
            return not_found("readable record");
        };
        let Ok(record) = serde_json::from_slice::<crate::run::record::Record>(&bytes) else {
            return not_found("readable record");
        };
        let Some(dir) = run.golden_dir(&index.root) else {
            return not_found("golden directory");
        };
        match compare::golden_drill(&record, &run.spec(&record.spec), &dir) {
            Some(Ok(drill)) => axum::Json(drill).into_response(),
            Some(Err(e)) => server_error(&e),
            None => not_found("golden answer"),
        }
    })
}

async fn compare(
    State(shared): State<Arc<Shared>>,
    UrlPath((a, b)): UrlPath<(String, String)>,
) -> Response {
    let index = shared.index();
    match (index.find(&a), index.find(&b)) {
        (Some(a), Some(b)) => axum::Json(compare::runs(&a, &b)).into_response(),
        _ => not_found("such run"),
    }
}

/// Run `id` against its golden transcripts.
async fn against_golden(
    State(shared): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
) -> Response {
    let index = shared.index();
    match index.find(&id) {
        Some(b) => axum::Json(compare::golden(&b, &index.root)).into_response(),
        None => not_found("such run"),
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
