//! `concurrency = "auto"` through the real binary against a fake that
//! admits R requests a second and answers 429 beyond: the requests in
//! flight fall when the server refuses and rise again while it answers,
//! as the run's summary reports them, and every instance is answered. Rate
//! limit headers at 0 on an answer lower it too, before any 429.

use std::time::Duration;

use std::sync::Arc;

use crate::common::fake_server::{FakeServer, RateLog, Reply, Request};
use crate::common::workspace::Workspace;

/// The fake's allowance, and how long an admitted request takes: about
/// `RATE × LATENCY` = 5 requests fit in flight, far below the ceiling.
const RATE: f64 = 50.0;
const LATENCY: Duration = Duration::from_millis(100);
const CEILING: usize = 32;
const RUNS: usize = 150;

/// The whole number right after `label` in `text`.
fn number_after(text: &str, label: &str) -> usize {
    let at = text
        .find(label)
        .unwrap_or_else(|| panic!("no {label:?} in {text}"))
        + label.len();
    let digits: String = text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("no number after {label:?} in {text}"))
}

#[test]
fn requests_in_flight_fall_on_429_and_rise_after() {
    let (fake, log): (FakeServer, Arc<RateLog>) = FakeServer::rate_limited(RATE, LATENCY);
    let settings = format!("concurrency = \"auto\"\nmax_concurrency = {CEILING}\nmax_retries = 20");
    let ws = Workspace::with_fake("t06_mathematics.toml", &fake, &settings);
    let runs = RUNS.to_string();
    let out = ws.run_ok(&[
        "specs/t06_mathematics.toml",
        "-m",
        "fake",
        "--runs",
        &runs,
        "--no-cache",
    ]);
    let journal = ws.last_journal();
    assert_eq!(journal.len(), RUNS, "{out}");
    assert!(journal.iter().all(|r| r["passed"] == true), "{out}");

    // The summary, unwrapped: how the limit moved.
    let words = out.split_whitespace().collect::<Vec<_>>().join(" ");
    let summary = words
        .split("model `fake`: requests in flight adapted to the server")
        .nth(1)
        .unwrap_or_else(|| panic!("no summary of the adaptive limit:\n{out}"));
    let start = number_after(summary, ": ");
    let highest = number_after(summary, "up to ");
    let cuts = number_after(summary, "cuts on throttling: ");
    let lowest = number_after(summary, "(down to ");
    let raises = number_after(summary, "raises after the first cut: ");
    assert_eq!(number_after(summary, "(ceiling "), CEILING, "{summary}");
    assert!(
        highest > start,
        "it rose until the server refused: {summary}"
    );
    assert!(cuts >= 1 && lowest < highest, "a 429 lowered it: {summary}");
    assert!(raises >= 1, "it rose again while answers came: {summary}");
    let end = summary
        .split(" at the end")
        .next()
        .and_then(|s| s.rsplit(' ').next());
    let end: usize = end.and_then(|n| n.parse().ok()).expect("where it ended");
    assert!(
        end < CEILING / 2,
        "the rate limit, not the ceiling, bounds it: {summary}"
    );

    // The server saw what the summary says: refusals, each retried until answered.
    let refusals = log.refused();
    assert_eq!((log.admitted(), fake.count()), (RUNS, RUNS + refusals));
    assert!(refusals >= cuts, "{refusals} refusals, {cuts} cuts");
    // Loose: only a stalled limit (or a loaded machine far past two cores) misses it.
    let throughput = log.throughput(LATENCY);
    assert!(throughput > RATE / 2.0, "{throughput:.1} answers/s");
    assert!(
        refusals * 5 < RUNS,
        "{refusals} of {RUNS} requests refused: the limit did not settle"
    );
}

#[test]
fn rate_limit_headers_at_zero_lower_it_without_a_429() {
    // (the remaining allowance every tenth answer reports, whether it is cut)
    let cases = [("0", true), ("3", false)];
    for (remaining, cut) in cases {
        let fake = FakeServer::start(move |r: &Request| {
            let answer = Reply::slow(20, Reply::Correct);
            match r.index % 10 {
                9 => {
                    let line = format!("x-ratelimit-remaining-requests: {remaining}\r\n");
                    Reply::Headers(line, Box::new(answer))
                }
                _ => answer,
            }
        });
        let ws = Workspace::with_fake(
            "t06_mathematics.toml",
            &fake,
            "concurrency = \"auto\"\nmax_concurrency = 16",
        );
        let out = ws.run_ok(&[
            "specs/t06_mathematics.toml",
            "-m",
            "fake",
            "--runs",
            "60",
            "--no-cache",
        ]);
        let words = out.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(fake.count(), 60, "nothing refused, nothing retried: {out}");
        assert_eq!(
            words.contains("cuts on throttling: "),
            cut,
            "{remaining}: {out}"
        );
        assert_eq!(
            words.contains("the server never throttled"),
            !cut,
            "{remaining}: {out}"
        );
    }
}
