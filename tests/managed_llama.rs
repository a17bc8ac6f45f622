//! Managed llama.cpp: the harness starts the real `llama-server` from the CI
//! setup on a free port, runs specs through it and stops it — after a normal
//! run, a server crash (then `--resume` restarts it), Ctrl-C, a SIGKILLed
//! harness and a start-up failure — leaving no server process behind.
//!
//! Needs `LLAMA_SERVER_BIN` and `SMOLLM2_MODEL` (exported by `scripts/test.sh`);
//! without them these tests skip, unless `HARNESS_E2E=1` makes that a failure.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::MutexGuard;
use std::time::{Duration, Instant};

use crate::common::managed::{
    NoOrphans, alive, llama_paths, server_logs, started_pids, wait_until,
};
use crate::common::workspace::Workspace;
use crate::common::{locks, run};

/// A workspace with t06 and a `smol` llamacpp model. The binary is not
/// configured: the harness finds it in the cache directory the test setup
/// builds into (`HARNESS_CACHE_DIR`, set on each command by `cmd`).
fn setup(model: &Path, max_tokens: u32) -> (Workspace, NoOrphans) {
    let ws = Workspace::new();
    ws.copy_spec("t06_mathematics.toml");
    ws.write(
        "harness.toml",
        &format!(
            "[models.smol]\nprovider = \"llamacpp\"\nmodel = \"{}\"\nconcurrency = 1\n\
             max_retries = 1\ntimeout_secs = 120\n\
             options = {{ max_tokens = {max_tokens}, extra_body = {{ cache_prompt = false }} }}\n\
             [models.smol.server]\nthreads = 1\nctx_size = 1024\nready_timeout_secs = 120\n",
            model.display()
        ),
    );
    let guard = NoOrphans(ws.path().join("results"));
    (ws, guard)
}

fn cmd(ws: &Workspace, bin: &Path, args: &[&str]) -> Command {
    let mut cmd = ws.run_cmd(args);
    // `<cache>/llama-server-<version>/bin/llama-server`
    let cache = bin.ancestors().nth(3).expect("the cache layout");
    cmd.env("HARNESS_CACHE_DIR", cache);
    cmd
}

fn spawn(ws: &Workspace, bin: &Path, args: &[&str]) -> Child {
    cmd(ws, bin, args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn output(child: Child) -> (i32, String) {
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!text.contains("panicked"), "{text}");
    (out.status.code().unwrap_or(-1), text)
}

/// The first server pid of the newest run, once logged.
fn wait_for_server(ws: &Workspace) -> i32 {
    let mut pid = None;
    assert!(
        wait_until(Duration::from_secs(60), || {
            pid = server_logs(&ws.path().join("results"))
                .last()
                .and_then(|log| started_pids(log).first().copied());
            pid.is_some()
        }),
        "no server was started"
    );
    pid.unwrap()
}

fn wait_for_records(ws: &Workspace, n: usize) {
    assert!(
        wait_until(Duration::from_secs(120), || ws
            .run_dirs()
            .last()
            .is_some_and(|d| ws.journal(d).len() >= n)),
        "no {n} records in time"
    );
}

fn assert_no_errors(records: &[serde_json::Value]) {
    for r in records {
        assert!(r["error"].is_null(), "a failed request was journaled: {r}");
        assert!(r["response"].is_string(), "{r}");
    }
}

/// One test's state: the workspace, the orphan guard, the binary, and the
/// real server to itself (one llama-server at a time: these machines have two cores).
struct Live {
    ws: Workspace,
    guard: NoOrphans,
    bin: PathBuf,
    _one: MutexGuard<'static, ()>,
}

/// The real server's test state, with `model` (default: SmolLM2) answering
/// at most `max_tokens`; `None` when the tests skip.
fn live(model: Option<&Path>, max_tokens: u32) -> Option<Live> {
    let (bin, smollm2) = llama_paths()?;
    let one = locks::real_llama();
    let (ws, guard) = setup(model.unwrap_or(&smollm2), max_tokens);
    Some(Live {
        ws,
        guard,
        bin,
        _one: one,
    })
}

impl Live {
    /// `harness run specs -m smol --runs RUNS` to completion: (exit code, output).
    fn run_smol(&self, runs: &str) -> (i32, String) {
        run(&mut cmd(
            &self.ws,
            &self.bin,
            &["specs", "-m", "smol", "--runs", runs],
        ))
    }
}

/// SmolLM2 mid-way through a 12-instance run, once `records` answers are
/// journaled: the test state, the harness and the server pid; `None` when the tests skip.
fn mid_run(records: usize) -> Option<(Live, Child, i32)> {
    let live = live(None, 24)?;
    let args = ["specs", "-m", "smol", "--runs", "12", "--no-cache"];
    let child = spawn(&live.ws, &live.bin, &args);
    let pid = wait_for_server(&live.ws);
    wait_for_records(&live.ws, records);
    Some((live, child, pid))
}

#[test]
fn a_run_starts_uses_and_stops_the_server_and_a_rerun_hits_the_cache() {
    let Some(live) = live(None, 16) else {
        return;
    };
    let Live { ws, guard, .. } = &live;
    let started = Instant::now();
    let (code, out) = live.run_smol("3");
    let elapsed = started.elapsed();
    assert!(code == 0 || code == 1, "{out}");
    assert!(
        out.contains("model smol: ready at http://127.0.0.1:"),
        "{out}"
    );
    let records = ws.last_journal();
    assert_eq!(records.len(), 3, "{out}");
    assert_no_errors(&records);
    let log = ws.run_dirs().last().unwrap().join("server.log");
    let text = std::fs::read_to_string(&log).unwrap();
    let pids = started_pids(&log);
    assert_eq!(pids.len(), 1, "{text}");
    assert!(!alive(pids[0]), "the server survived the run");
    assert!(
        text.contains("--parallel 1 --ctx-size 1024 --threads 1"),
        "{text}"
    );
    assert!(text.contains(&format!(
        "[harness] stopped pid {} (exit status: 0)",
        pids[0]
    )));
    eprintln!("start + 3 requests + stop: {elapsed:.1?}");

    // The cache identity is the model file, not the URL with its random port:
    // a rerun finds every answer cached and starts no server at all.
    let (code, out) = live.run_smol("3");
    assert!(code == 0 || code == 1, "{out}");
    assert!(out.contains("3 from cache, 0 attempts"), "{out}");
    assert!(!out.contains("starting its llamacpp server"), "{out}");
    // One more instance: the server starts again, on another port, and the three cached stay cached.
    let (code, out) = live.run_smol("4");
    assert!(code == 0 || code == 1, "{out}");
    assert!(out.contains("3 from cache, 1 attempts"), "{out}");
    assert!(guard.survivors().is_empty());
}

#[test]
fn a_server_killed_mid_run_stops_the_run_and_resume_restarts_it() {
    let Some((live, child, pid)) = mid_run(2) else {
        return;
    };
    let Live { ws, guard, bin, .. } = &live;
    // SAFETY: the server our harness child started (its pid from server.log).
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let (code, out) = output(child);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("exited mid-run (signal: 9"), "{out}");
    assert!(out.contains("harness run --resume"), "{out}");
    let run_dir = ws.run_dirs().pop().unwrap();
    let text = std::fs::read_to_string(run_dir.join("journal.jsonl")).unwrap();
    assert!(text.ends_with('\n'), "torn journal");
    let before = ws.journal(&run_dir);
    assert!(before.len() >= 2 && before.len() < 12, "{}", before.len());
    assert_no_errors(&before);

    let (code, out) = run(&mut cmd(ws, bin, &["--resume", "latest", "--no-cache"]));
    assert!(code == 0 || code == 1, "{out}");
    let after = ws.journal(&run_dir);
    assert_eq!(after.len(), 12, "{out}");
    assert_no_errors(&after);
    let mut keys: Vec<u64> = after
        .iter()
        .map(|r| r["instance"].as_u64().unwrap())
        .collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 12, "an instance was asked twice");
    assert_eq!(started_pids(&run_dir.join("server.log")).len(), 2);
    assert!(guard.survivors().is_empty());
}

#[test]
fn ctrl_c_stops_the_run_and_the_server() {
    let Some((live, child, pid)) = mid_run(1) else {
        return;
    };
    // SAFETY: our own child, the harness.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let (code, out) = output(child);
    assert_eq!(code, 130, "{out}");
    assert!(!alive(pid), "the server survived Ctrl-C");
    assert!(live.guard.survivors().is_empty());
}

#[test]
fn a_sigkilled_harness_leaves_no_server_behind() {
    let Some((live, mut child, pid)) = mid_run(1) else {
        return;
    };
    assert!(alive(pid));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        wait_until(Duration::from_secs(5), || !alive(pid)),
        "llama-server {pid} outlived the SIGKILLed harness"
    );
    assert!(live.guard.survivors().is_empty());
}

#[test]
fn a_bad_model_path_fails_fast_with_the_servers_own_message() {
    let Some(live) = live(Some(Path::new("models/missing.gguf")), 16) else {
        return;
    };
    let Live { ws, guard, .. } = &live;
    let started = Instant::now();
    let (code, out) = live.run_smol("1");
    assert_eq!(code, 3, "{out}");
    assert!(started.elapsed() < Duration::from_secs(30), "not fast");
    assert!(out.contains("exited during start-up"), "{out}");
    // llama-server's own words, with the path resolved against harness.toml's directory.
    assert!(out.contains("failed to open GGUF file"), "{out}");
    assert!(
        out.contains(&ws.path().join("models/missing.gguf").display().to_string()),
        "{out}"
    );
    assert!(guard.survivors().is_empty());
}
