//! Sandbox overhead: `python3 -c pass` run bare against the same command in
//! the sandbox (namespaces, own uid, tmpfs, Landlock, seccomp, rlimits), in
//! one process, interleaved so both see the same machine state.
//!
//! Run with `cargo bench --bench sandbox` (or `bench/sandbox.sh`). Prints the
//! median and mean wall time of each and their ratio; the target is ≤ 1.3×.
//! Then, for the `code` rule's cost, the same command as a pair joined by
//! pipes (a program and its checker), as each verdict runs it.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use harness::{Program, Sandbox, python_interpreter};

const ROUNDS: usize = 200;

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn mean(xs: &[Duration]) -> Duration {
    xs.iter().sum::<Duration>() / xs.len() as u32
}

fn main() {
    let sandbox = Sandbox::isolated().unwrap_or_else(|e| panic!("{e}"));
    let python = python_interpreter().unwrap_or_else(|e| panic!("{e}"));
    let program = Program {
        argv: vec![
            python.path.to_string_lossy().into_owned(),
            "-c".into(),
            "pass".into(),
        ],
        read_paths: python.read_paths.clone(),
        ..Program::default()
    };
    let bare = || {
        let start = Instant::now();
        let status = Command::new(&python.path)
            .args(["-c", "pass"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("python runs");
        assert!(status.success());
        start.elapsed()
    };
    let sandboxed = || {
        let start = Instant::now();
        let outcome = sandbox.run(&program).expect("sandbox runs");
        assert!(outcome.success(), "{outcome:?}");
        start.elapsed()
    };
    // Warm the page cache and the interpreter's files.
    for _ in 0..10 {
        bare();
        sandboxed();
    }
    let (mut b, mut s) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        b.push(bare());
        s.push(sandboxed());
    }
    let paired = || {
        let start = Instant::now();
        let (a, b) = sandbox.run_pair(&program, &program).expect("sandbox runs");
        assert!(a.success() && b.success(), "{a:?} {b:?}");
        start.elapsed()
    };
    let mut p = Vec::new();
    for _ in 0..ROUNDS / 4 {
        p.push(paired());
    }
    let (bm, sm) = (median(b.clone()), median(s.clone()));
    println!("python: {}", python.path.display());
    println!("rounds: {ROUNDS} each, interleaved");
    println!(
        "bare      python3 -c pass: median {bm:.2?}, mean {:.2?}",
        mean(&b)
    );
    println!(
        "sandboxed python3 -c pass: median {sm:.2?}, mean {:.2?}",
        mean(&s)
    );
    println!(
        "ratio (median): {:.2}x   ratio (mean): {:.2}x   overhead: +{:.2?}",
        sm.as_secs_f64() / bm.as_secs_f64(),
        mean(&s).as_secs_f64() / mean(&b).as_secs_f64(),
        sm.saturating_sub(bm)
    );
    println!(
        "paired    python3 -c pass (two sandboxes, {} rounds): median {:.2?}, mean {:.2?}",
        p.len(),
        median(p.clone()),
        mean(&p)
    );
}
