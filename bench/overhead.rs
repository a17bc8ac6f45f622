//! Runner overhead: `harness run` against a zero-latency loopback server.
//!
//! Measures instances/s for 10,000 t06 instances at concurrency 64, and the
//! peak RSS of the harness process for 10,000 and 100,000 instances. Run with
//! `cargo bench --bench overhead` (or `bench/overhead.sh`). The server is a
//! minimal OpenAI-compatible responder in this process, answering every
//! request at once, so the numbers are the harness's own cost.

#[path = "zero_server.rs"]
mod zero_server;

use std::path::Path;

/// Peak RSS of waited-for children so far, in MiB (Linux reports KiB).
fn children_peak_rss_mib() -> f64 {
    // SAFETY: all-zero bytes are a valid `rusage` (integers only).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we own.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    usage.ru_maxrss as f64 / 1024.0
}

/// One uncached run of `runs` t06 instances: instances/s and the peak RSS
/// of every harness run so far.
fn run(dir: &Path, runs: u32) -> (f64, f64) {
    let n = runs.to_string();
    let wall = zero_server::timed(dir, &zero_server::t06_run_args(&n));
    (f64::from(runs) / wall, children_peak_rss_mib())
}

fn main() {
    let dir = zero_server::t06_workspace();
    let (rate, rss) = run(dir.path(), 10_000);
    println!(
        "overhead: 10,000 instances at concurrency 64: {rate:.0} instances/s, peak RSS {rss:.1} MiB"
    );
    let (rate, rss) = run(dir.path(), 100_000);
    println!(
        "overhead: 100,000 instances at concurrency 64: {rate:.0} instances/s, peak RSS {rss:.1} MiB"
    );
}
