//! Shards and merge at scale: 100,000 t06 instances against a zero-latency
//! loopback server, run whole and as 4 shards one after another, then merged.
//!
//! Prints the unsharded wall time, each shard's and their sum, the merge's,
//! and the ratios: what sharding costs in CPU (the sum against the whole
//! run) and what a 4-machine cluster waits for (the slowest shard plus the
//! merge, against the whole run). Run with `cargo bench --bench shard_merge`
//! (or `bench/shard_merge.sh`); `HARNESS_BENCH_N` changes the instance count.

#[path = "zero_server.rs"]
mod zero_server;

use zero_server::timed;

fn main() {
    let n: u32 = std::env::var("HARNESS_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let tmp = zero_server::t06_workspace();
    let dir = tmp.path();
    let n_text = n.to_string();
    let common = zero_server::t06_run_args(&n_text);
    let whole = timed(dir, &[&common[..], &["--run-id", "whole"]].concat());
    let shards: Vec<f64> = (0..4)
        .map(|i| {
            let shard = format!("{i}/4");
            let args = ["--run-id", "job", "--results", "sharded", "--shard", &shard];
            timed(dir, &[&common[..], &args].concat())
        })
        .collect();
    let dirs: Vec<String> = (0..4)
        .map(|i| format!("sharded/runs/job-shard-{i}-of-4"))
        .collect();
    let mut merge_args = vec!["merge", "--results", "sharded"];
    merge_args.extend(dirs.iter().map(String::as_str));
    let merge = timed(dir, &merge_args);
    let merged = std::fs::read_to_string(dir.join("sharded/runs/job/journal.jsonl")).unwrap();
    assert_eq!(merged.lines().count(), n as usize, "every record merged");
    let sum: f64 = shards.iter().sum();
    let slowest = shards.iter().copied().fold(0.0, f64::max);
    println!("shard_merge: {n} t06 instances, zero-latency server, concurrency 64");
    println!("shard_merge: unsharded run {whole:.2} s");
    let each: Vec<String> = shards.iter().map(|s| format!("{s:.2}")).collect();
    println!(
        "shard_merge: 4 shards {} s, sum {sum:.2} s = {:.2}x the unsharded run",
        each.join(" / "),
        sum / whole
    );
    println!(
        "shard_merge: merge {merge:.2} s; slowest shard + merge {:.2} s = {:.2}x the unsharded run (4 machines)",
        slowest + merge,
        (slowest + merge) / whole
    );
}
