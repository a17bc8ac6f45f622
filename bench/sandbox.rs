//! Sandbox overhead: `python3 -c pass` run bare against the same command in
//! the sandbox (namespaces, own uid, tmpfs, Landlock, seccomp, rlimits), in
//! one process, interleaved so both see the same machine state.
//!
//! Run with `cargo bench --bench sandbox` (or `bench/sandbox.sh`). Prints the
//! median and mean wall time of each and their ratio; the target is ≤ 1.3×.
//! Then, for the `code` rule's cost, the same command as a pair joined by
//! pipes (a program and its checker), as each verdict runs it. Last, the
//! `code` rule's throughput: t03's tasks verified against a correct answer
//! (program and checker in their sandboxes), against the same answer and
//! tests run bare as one `python3 file.py` each, interleaved; the ratio is
//! sandboxed verdicts per second over bare programs per second (goal ≥ 2).
//!
//! For profiling, `SANDBOX_BENCH=code` runs only the throughput part, and
//! `SANDBOX_BENCH_ROUNDS=N` sets its number of tasks (default 40).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use harness::{Program, Sandbox, Spec, python_interpreter};

const ROUNDS: usize = 200;

/// t03 tasks verified per side in the throughput comparison.
const CODE_ROUNDS: u64 = 40;

/// A correct solution for every t03 task family at once.
const UNIVERSAL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/code/t03_universal.py"
));

/// The bare side: the answer and its tests in one file, run by `python3`.
const BARE_TESTS: &str = "
import json, sys
for test in json.loads(sys.argv[2]):
    assert globals()[sys.argv[1]](*test['args']) == test['expected']
";

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn mean(xs: &[Duration]) -> Duration {
    xs.iter().sum::<Duration>() / xs.len() as u32
}

fn main() {
    if std::env::var("SANDBOX_BENCH").as_deref() == Ok("code") {
        let python = python_interpreter().unwrap_or_else(|e| panic!("{e}"));
        let (bare, sandboxed) = code_rule_throughput(&python.path);
        println!(
            "bare {bare:.1}/s, sandboxed {sandboxed:.1}/s, ratio {:.2}x",
            sandboxed / bare
        );
        return;
    }
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
    let (code_bare, code_sandboxed) = code_rule_throughput(&python.path);
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
    println!(
        "code rule, t03 ({CODE_ROUNDS} tasks each, interleaved): bare python3 file.py {code_bare:.1}/s, \
         sandboxed verdicts {code_sandboxed:.1}/s, ratio {:.2}x (goal >= 2x)",
        code_sandboxed / code_bare
    );
}

/// Programs per second of t03's tasks: (bare `python3 file.py`, sandboxed `code` verdicts).
fn code_rule_throughput(python: &std::path::Path) -> (f64, f64) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let spec = Spec::load(&root.join("specs/t03_code_gen.toml")).expect("t03 loads");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("solution.py");
    std::fs::write(&file, format!("{UNIVERSAL}{BARE_TESTS}")).expect("write the bare program");
    let answer = format!("```python\n{UNIVERSAL}```");
    let rounds = std::env::var("SANDBOX_BENCH_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(CODE_ROUNDS);
    let (mut bare, mut sandboxed) = (Duration::ZERO, Duration::ZERO);
    for i in 0..rounds {
        let vars = spec.instance(i).expect("t03 generates").vars;
        let func = vars["func"].as_str().expect("a function name");
        let start = Instant::now();
        let status = Command::new(python)
            .arg(&file)
            .args([func, &vars["tests"].to_string()])
            .stdin(Stdio::null())
            .status()
            .expect("python runs");
        bare += start.elapsed();
        assert!(status.success(), "the bare program failed its tests");
        let start = Instant::now();
        let verdict = spec.verify(&answer, &vars);
        sandboxed += start.elapsed();
        assert!(verdict.passed, "{verdict:?}");
    }
    let rate = |total: Duration| rounds as f64 / total.as_secs_f64();
    (rate(bare), rate(sandboxed))
}
