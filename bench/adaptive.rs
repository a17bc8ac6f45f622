//! Adaptive concurrency against a rate limit: `harness run` of t06 against
//! a loopback fake that admits R requests a second (each answered after
//! about 200 ms, give or take half) and answers 429 beyond, with `concurrency = "auto"` and,
//! in the same run, a fixed concurrency set too high and one set too low.
//! Prints each one's throughput (answers a second, and as a share of R)
//! and the share of requests refused. Run with `cargo bench --bench
//! adaptive` (or `bench/adaptive.sh`). Bounded: 600 instances a setting,
//! each fake stops after 5,000 requests or 120 s.

// The tests' fake server, whole: this bench uses its rate-limited mode
// only, so the rest of its items and re-exports go unused here.
#[allow(dead_code, unused_imports)]
#[path = "../tests/common/fake_server/mod.rs"]
mod fake_server;

// Its workspace helpers only; not its server.
#[path = "zero_server.rs"]
#[allow(dead_code)]
mod zero_server;

use std::sync::Arc;
use std::time::Duration;

use fake_server::{FakeServer, RateLog};

/// The fake's allowance and latency: `RATE × LATENCY` = 20 requests fit in flight.
const RATE: f64 = 100.0;
const LATENCY: Duration = Duration::from_millis(200);
const INSTANCES: u32 = 600;

/// Runs `INSTANCES` t06 instances with `settings` against a fresh fake;
/// returns answers a second and the share of requests refused.
fn measure(settings: &str) -> (f64, f64) {
    let (fake, log): (FakeServer, Arc<RateLog>) = FakeServer::rate_limited(RATE, LATENCY);
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("specs")).unwrap();
    std::fs::copy(
        root.join("specs/t06_mathematics.toml"),
        dir.path().join("specs/t06_mathematics.toml"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("harness.toml"),
        format!(
            "[models.bench]\nprovider = \"openai\"\nmodel = \"bench\"\nbase_url = \"{}\"\nmax_retries = 40\n{settings}\n",
            fake.openai_base()
        ),
    )
    .unwrap();
    let n = INSTANCES.to_string();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(zero_server::t06_run_args(&n))
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .output()
        .expect("harness runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // How an adaptive limit moved, as the run's summary says (one line here).
    let words = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some(at) = words.find("model `bench`: requests in flight") {
        let summary = &words[at..];
        let end = summary
            .find(" at the end")
            .map_or(summary.len(), |e| e + 11);
        println!("adaptive:   {}", &summary[..end]);
    }
    assert_eq!(
        log.admitted(),
        INSTANCES as usize,
        "every instance answered once"
    );
    let refused = log.refused() as f64 / fake.count() as f64;
    (log.throughput(LATENCY), refused)
}

fn main() {
    println!(
        "adaptive: {INSTANCES} instances against a fake admitting {RATE} requests/s, {} ms each",
        LATENCY.as_millis()
    );
    for (name, settings) in [
        (
            "auto (max 64)",
            "concurrency = \"auto\"\nmax_concurrency = 64",
        ),
        ("fixed 64 (too high)", "concurrency = 64"),
        ("fixed 8 (too low)", "concurrency = 8"),
    ] {
        let (rate, refused) = measure(settings);
        println!(
            "adaptive: {name:<20} {rate:6.1} answers/s ({:5.1}% of R), {:5.1}% of requests refused",
            100.0 * rate / RATE,
            100.0 * refused
        );
    }
}
