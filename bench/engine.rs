//! Engine throughput: generation + rendering + verification of the t06 spec
//! on one thread, and the wall time of `harness check specs/`.
//!
//! Run with `cargo bench --bench engine`. Numbers are printed, not asserted:
//! compare runs on the same machine.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use harness::Spec;

fn instances_per_second(spec: &Spec, budget: Duration) -> (u64, f64) {
    let started = Instant::now();
    let mut done = 0u64;
    let mut passed = 0u64;
    while started.elapsed() < budget {
        for _ in 0..1000 {
            let instance = spec.instance(done).expect("t06 generates");
            let answer = instance.vars["answer"].to_string();
            let verdict = spec.verify(&format!("Ответ: {answer}"), &instance.vars);
            passed += u64::from(verdict.passed);
            done += 1;
        }
    }
    assert_eq!(passed, done, "every correct answer must pass");
    (done, done as f64 / started.elapsed().as_secs_f64())
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let spec = Spec::load(&root.join("specs/t06_mathematics.toml")).expect("t06 loads");
    instances_per_second(&spec, Duration::from_millis(300)); // warm-up
    let (count, rate) = instances_per_second(&spec, Duration::from_secs(3));
    println!("t06 generate+render+verify: {count} instances, {rate:.0} instances/s on one thread");

    let binary = env!("CARGO_BIN_EXE_harness");
    let runs: Vec<Duration> = (0..10)
        .map(|_| {
            let started = Instant::now();
            let status = Command::new(binary)
                .args(["check", "specs"])
                .current_dir(root)
                .env("CI", "true")
                .env("NO_COLOR", "1")
                .output()
                .expect("harness runs");
            assert!(status.status.success(), "harness check specs/ failed");
            started.elapsed()
        })
        .collect();
    println!(
        "harness check specs/: median {:.1} ms over {} runs (min {:.1} ms)",
        median(runs.clone()).as_secs_f64() * 1000.0,
        runs.len(),
        runs.iter().min().unwrap().as_secs_f64() * 1000.0
    );
}
