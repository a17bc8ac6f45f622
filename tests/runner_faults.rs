//! The scheduler under faults, through the real binary against a fake
//! server: retries (honoring Retry-After), explicit error records, the
//! per-endpoint concurrency limit, and the response cache.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::common::fake_server::{FakeServer, Reply, Request, eval, expression};
use crate::common::workspace::{Workspace, model_toml};
use serde_json::Value;

/// A workspace with t06 and one model `fake` on `fake`'s OpenAI endpoint.
fn setup(fake: &FakeServer, settings: &str) -> Workspace {
    Workspace::with_fake("t06_mathematics.toml", fake, settings)
}

/// Runs t06 against `fake` with `runs` instances. The run finishes either
/// way; it exits 0 when every request got an answer, and 4 (naming how many
/// errors) when some instances ended as error records (`tests/run_errors.rs`
/// checks `--allow-errors`).
fn run(ws: &Workspace, runs: u32, extra: &[&str]) -> (String, Vec<Value>) {
    let runs = runs.to_string();
    let mut args = vec!["specs/t06_mathematics.toml", "-m", "fake", "--runs", &runs];
    args.extend_from_slice(extra);
    let (code, out) = ws.run(&args);
    let journal = ws.last_journal();
    let errors = journal.iter().filter(|r| !r["error"].is_null()).count();
    if errors == 0 {
        assert_eq!(code, 0, "{out}");
    } else {
        assert_eq!(code, 4, "error records must fail the run:\n{out}");
        assert!(out.contains(&format!("{errors} of ")), "{out}");
    }
    (out, journal)
}

/// Asserts one error record per instance with this failure label and error text.
fn assert_error_records(
    row: &str,
    records: &[Value],
    n: usize,
    failure: &str,
    error: &str,
    attempts: u64,
) {
    assert_eq!(records.len(), n, "{row}: {records:#?}");
    for r in records {
        assert_eq!(r["passed"], false, "{row}: {r:#}");
        assert_eq!(r["failure"], failure, "{row}: {r:#}");
        assert!(
            r["error"].as_str().unwrap_or_default().contains(error),
            "{row}: {r:#}"
        );
        assert_eq!(r["attempts"], attempts, "{row}: {r:#}");
        assert!(r["response"].is_null(), "{row}: {r:#}");
        assert_eq!(r["score"].as_f64(), Some(0.0), "{row}: {r:#}");
    }
}

/// Asserts every record passed after exactly `attempts` attempts.
fn assert_passed_after(row: &str, records: &[Value], attempts: u64) {
    for r in records {
        assert_eq!(
            (r["passed"].as_bool(), r["attempts"].as_u64()),
            (Some(true), Some(attempts)),
            "{row}: {r:#}"
        );
    }
}

fn prompts(requests: &[Request]) -> BTreeSet<String> {
    requests.iter().map(|r| r.prompt.clone()).collect()
}

#[test]
fn rate_limit_retry_after_is_honored_then_the_answer_counts() {
    let fake = FakeServer::start(|r: &Request| {
        if r.attempt == 0 {
            Reply::Status(429, Some(1))
        } else {
            Reply::Correct
        }
    });
    let ws = setup(&fake, "max_retries = 3\ntimeout_secs = 5");
    let (_, records) = run(&ws, 1, &[]);
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    // Own backoff for a first retry is at most 250 ms; only Retry-After explains a 1 s gap.
    let gap = requests[1].at - requests[0].at;
    assert!(
        gap >= Duration::from_millis(950),
        "Retry-After: 1 ignored: retried after {gap:?}"
    );
    assert!(gap < Duration::from_secs(5), "{gap:?}");
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["passed"], true, "{:#}", records[0]);
    assert_eq!(records[0]["attempts"], 2);
    assert!(records[0].get("error").is_none());
}

/// `harness.toml` settings: retries, and seconds an attempt may take.
fn settings(max_retries: u32, timeout_secs: f64) -> String {
    format!("max_retries = {max_retries}\ntimeout_secs = {timeout_secs}")
}

/// Faults on the first asks of every prompt, then right answers: (row, fault,
/// faulty attempts, max_retries, instances).
const TRANSIENT: [(&str, Reply, usize, u32, u32); 3] = [
    ("server errors", Reply::Status(500, None), 2, 3, 2),
    ("a truncated body", Reply::Truncated, 1, 2, 2),
    ("a garbage body", Reply::Garbage, 1, 2, 2),
];

#[test]
fn transient_faults_are_retried_until_success() {
    for (row, fault, faulty, max_retries, runs) in TRANSIENT {
        let fake = FakeServer::start(move |r: &Request| {
            if r.attempt < faulty {
                fault.clone()
            } else {
                Reply::Correct
            }
        });
        let ws = setup(&fake, &settings(max_retries, 5.0));
        let (_, records) = run(&ws, runs, &[]);
        let attempts = faulty + 1;
        assert_eq!(fake.count(), runs as usize * attempts, "{row}: requests");
        assert_eq!(records.len(), runs as usize, "{row}: records");
        assert_passed_after(row, &records, attempts as u64);
    }
}

/// A fault on every ask, and the error records it must leave: (row, fault,
/// max_retries, timeout_secs, instances, failure, error text, attempts).
type Persistent = (
    &'static str,
    Reply,
    u32,
    f64,
    u32,
    &'static str,
    &'static str,
    u64,
);

#[rustfmt::skip]
const PERSISTENT: [Persistent; 7] = [
    ("server error 500", Reply::Status(500, None),    2, 5.0, 2, "server_error",       "HTTP 500",           3),
    ("rate limited 429", Reply::Status(429, Some(0)), 1, 5.0, 1, "rate_limited",       "HTTP 429",           2),
    ("client error 400", Reply::Status(400, None),    3, 5.0, 2, "client_error",       "HTTP 400",           1),
    ("a hung server",    Reply::Hang,                 1, 0.5, 1, "timeout",            "timed out",          2),
    // Headers and half the body arrive, then nothing: the timeout covers the body too.
    ("a stalled body",   Reply::Stall,                1, 0.5, 1, "timeout",            "timed out",          2),
    ("truncated bodies", Reply::Truncated,            1, 5.0, 2, "malformed_response", "",                   2),
    ("garbage bodies",   Reply::Garbage,              1, 5.0, 2, "malformed_response", "malformed response", 2),
];

/// Faults that persist become explicit error records after the retries they
/// deserve (none for a client error), no more.
#[test]
fn persistent_faults_become_explicit_error_records() {
    for (row, fault, max_retries, timeout, runs, failure, error, attempts) in PERSISTENT {
        let fake = FakeServer::start(move |_| fault.clone());
        let ws = setup(&fake, &settings(max_retries, timeout));
        let (out, records) = run(&ws, runs, &[]);
        let requests = runs as usize * attempts as usize;
        assert_eq!(fake.count(), requests, "{row}: requests");
        assert_error_records(row, &records, runs as usize, failure, error, attempts);
        let written = format!("{runs} records written");
        assert!(out.contains(&written), "{row}: {out}");
    }
}

#[test]
fn requests_per_minute_spaces_request_starts() {
    // 240 rpm = one start every 250 ms, whatever the concurrency allows.
    let fake = FakeServer::healthy();
    let ws = setup(
        &fake,
        "concurrency = 4\nrequests_per_minute = 240\ntimeout_secs = 5",
    );
    let (_, records) = run(&ws, 4, &[]);
    assert_eq!(records.len(), 4);
    // The limiter spaces starts on the client; the server sees them through
    // the scheduler and loopback, which on a loaded machine shift one arrival
    // by tens of milliseconds (a 178 ms gap was seen). So: no two arrive
    // together (unpaced, they would come within a few ms), and the four span
    // about three intervals.
    let requests = fake.requests();
    for pair in requests.windows(2) {
        let gap = pair[1].at - pair[0].at;
        assert!(gap >= Duration::from_millis(100), "starts {gap:?} apart");
    }
    let span = requests[3].at - requests[0].at;
    assert!(
        span >= Duration::from_millis(650),
        "4 starts within {span:?}"
    );
}

#[test]
fn concurrency_limit_is_reached_and_never_exceeded() {
    let settings = "concurrency = 3\nmax_retries = 0\ntimeout_secs = 5";
    let fake = FakeServer::start(|_| Reply::slow(300, Reply::Correct));
    let ws = setup(&fake, settings);
    let (_, records) = run(&ws, 9, &["--no-cache"]);
    assert_eq!(records.len(), 9);
    assert_eq!(
        fake.max_in_flight(),
        3,
        "9 slow requests with concurrency 3"
    );

    // Two models on one endpoint share its limit: still 3 in flight, not 6.
    let shared = FakeServer::start(|_| Reply::slow(300, Reply::Correct));
    let ws = Workspace::new();
    ws.copy_spec("t06_mathematics.toml");
    let config = [
        model_toml("a", "openai", "model-a", &shared.openai_base(), settings),
        model_toml("b", "openai", "model-b", &shared.openai_base(), settings),
    ];
    ws.write("harness.toml", &config.concat());
    let (code, out) = ws.run(&["specs", "-m", "a", "-m", "b", "--runs", "6", "--no-cache"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(shared.count(), 12);
    assert_eq!(
        shared.max_in_flight(),
        3,
        "the endpoint's limit is shared by its models"
    );
}

#[test]
fn a_rerun_is_served_from_the_cache_and_no_cache_asks_again() {
    let fake = FakeServer::healthy();
    let ws = setup(&fake, "timeout_secs = 5");
    let (_, first) = run(&ws, 3, &[]);
    assert_eq!(fake.count(), 3);
    assert!(
        first
            .iter()
            .all(|r| r["passed"] == true && r["cached"] == false)
    );

    let (out, second) = run(&ws, 3, &[]);
    assert_eq!(
        fake.count(),
        3,
        "a rerun of the same plan makes no HTTP request"
    );
    assert_eq!(second.len(), 3);
    for r in &second {
        assert_eq!(
            (r["cached"].as_bool(), r["attempts"].as_u64()),
            (Some(true), Some(0)),
            "{r:#}"
        );
        assert_eq!(r["passed"], true);
    }
    assert!(out.contains("3 from cache, 0 attempts"), "{out}");

    let (_, third) = run(&ws, 3, &["--no-cache"]);
    assert_eq!(fake.count(), 6, "--no-cache asks the server again");
    assert!(
        third
            .iter()
            .all(|r| r["cached"] == false && r["attempts"] == 1)
    );
}

#[test]
fn wrong_answers_are_verdicts_not_errors() {
    // A wrong answer is a valid response: scored, not retried, and cached like any other.
    let fake = FakeServer::start(|_| Reply::Wrong);
    let ws = setup(&fake, "max_retries = 3\ntimeout_secs = 5");
    let (_, records) = run(&ws, 2, &[]);
    assert_eq!(fake.count(), 2);
    for r in &records {
        assert_eq!(r["passed"], false, "{r:#}");
        assert_eq!(r["failure"], "wrong_value", "{r:#}");
        assert!(r.get("error").is_none() && r["attempts"] == 1, "{r:#}");
    }
    let (_, again) = run(&ws, 2, &[]);
    assert_eq!(fake.count(), 2);
    assert!(
        again
            .iter()
            .all(|r| r["cached"] == true && r["failure"] == "wrong_value")
    );
}

#[test]
fn errors_are_never_cached() {
    // While unhealthy, prompts whose answer is odd get a 500; then the server recovers.
    let healthy = Arc::new(AtomicBool::new(false));
    let flag = healthy.clone();
    let odd = |prompt: &str| expression(prompt).and_then(|e| eval(&e)).unwrap() % 2 != 0;
    let fake = FakeServer::start(move |r: &Request| {
        if !flag.load(Ordering::SeqCst) && odd(&r.prompt) {
            Reply::Status(500, None)
        } else {
            Reply::Correct
        }
    });
    let ws = setup(&fake, "max_retries = 0\ntimeout_secs = 5");
    let (_, first) = run(&ws, 10, &[]);
    let failed: BTreeSet<String> = first
        .iter()
        .filter(|r| r["failure"] == "server_error")
        .map(|r| r["messages"][1]["content"].as_str().unwrap().to_owned())
        .collect();
    let failed_records = first
        .iter()
        .filter(|r| r["failure"] == "server_error")
        .count();
    assert!(
        failed_records > 0 && failed_records < 10,
        "t06 seed 6 mixes odd and even answers"
    );
    let before = fake.count();

    healthy.store(true, Ordering::SeqCst);
    let (_, second) = run(&ws, 10, &[]);
    let retried = &fake.requests()[before..];
    assert_eq!(
        retried.len(),
        failed_records,
        "only the failed instances are asked again"
    );
    assert_eq!(prompts(retried), failed);
    assert_eq!(second.len(), 10);
    for r in &second {
        let was_failed = failed.contains(r["messages"][1]["content"].as_str().unwrap());
        assert_eq!(r["passed"], true, "{r:#}");
        assert_eq!(r["cached"], !was_failed, "{r:#}");
    }
}
