//! Crash safety: SIGKILL the harness mid-run, then `--resume latest`
//! completes the plan with exactly one record per instance, keeps every
//! record written before the kill byte for byte, and asks the server only
//! for what was missing. The cache is off in both invocations so resume
//! cannot hide a repeated request behind a cache hit.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::fake_server::{FakeServer, Reply};
use crate::common::workspace::{Workspace, interrupt_after};
use crate::common::{run, spawn_quiet};
use serde_json::Value;

const RUNS: u64 = 20;
const CONCURRENCY: usize = 2;

fn setup(fake: &FakeServer) -> Workspace {
    let settings = format!("concurrency = {CONCURRENCY}\nmax_retries = 0\ntimeout_secs = 10");
    Workspace::with_fake("t06_mathematics.toml", fake, &settings)
}

/// `harness run` of t06 on `fake` with `runs` instances (`extra` appended), not started yet.
fn t06(ws: &Workspace, runs: u64, extra: &[&str]) -> Command {
    let runs = runs.to_string();
    let args = ["specs/t06_mathematics.toml", "-m", "fake", "--runs", &runs];
    ws.run_cmd(&[&args[..], extra].concat())
}

/// A healthy server and a workspace whose t06 run of `runs` instances has finished.
fn finished_run(runs: u64) -> (FakeServer, Workspace) {
    let fake = FakeServer::healthy();
    let ws = setup(&fake);
    let (code, out) = run(&mut t06(&ws, runs, &[]));
    assert_eq!(code, 0, "{out}");
    (fake, ws)
}

/// The complete lines of a journal file (a torn last line excluded).
fn complete_lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n')
        .filter(|l| l.ends_with('\n'))
        .collect()
}

fn user_prompt(record: &Value) -> String {
    record["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn counts<I: IntoIterator<Item = String>>(items: I) -> BTreeMap<String, usize> {
    let mut map = BTreeMap::new();
    for i in items {
        *map.entry(i).or_default() += 1;
    }
    map
}

#[test]
fn sigkill_then_resume_completes_the_plan_exactly_once() {
    let fake = FakeServer::start(|_| Reply::slow(150, Reply::Correct));
    let ws = setup(&fake);
    let mut child = spawn_quiet(&mut t06(&ws, RUNS, &["--no-cache"]));

    // Wait for a few records, then kill: the run is mid-flight (20 × 150 ms / 2 ≈ 1.5 s).
    let deadline = Instant::now() + Duration::from_secs(15);
    let journal_path = loop {
        let path = ws.run_dirs().last().map(|d| d.join("journal.jsonl"));
        let lines = path
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .map_or(0, |t| complete_lines(&t).len());
        if lines >= 4 {
            break path.unwrap();
        }
        assert!(Instant::now() < deadline, "no records appeared");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before the kill"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    child.kill().unwrap(); // SIGKILL on Unix: no handler runs.
    child.wait().unwrap();
    let asked_before = fake.count();
    let snapshot = std::fs::read_to_string(&journal_path).unwrap();
    let kept = complete_lines(&snapshot);
    assert!(
        kept.len() < RUNS as usize,
        "the kill came too late to test anything"
    );
    // Work lost with the process: requests in flight at the kill, never more than the limit.
    assert!(
        asked_before - kept.len() <= CONCURRENCY,
        "{asked_before} requests but only {} records before the kill",
        kept.len()
    );
    let kept_text: String = kept.concat();

    // A torn line, as a kill in the middle of a write would leave, must be dropped on resume.
    std::fs::write(
        &journal_path,
        format!("{kept_text}{{\"model\":\"fake\",\"spec\":\"t06_ma"),
    )
    .unwrap();

    let (code, out) = ws.run(&["--resume", "latest", "--no-cache"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(ws.run_dirs().len(), 1, "resume continues the same run");

    let final_text = std::fs::read_to_string(&journal_path).unwrap();
    assert!(
        final_text.starts_with(&kept_text),
        "records written before the kill changed"
    );
    let records: Vec<Value> = complete_lines(&final_text)
        .iter()
        .map(|l| serde_json::from_str(l).expect("every journal line is a record"))
        .collect();
    assert!(final_text.ends_with('\n'));
    let instances: Vec<u64> = records
        .iter()
        .map(|r| r["instance"].as_u64().unwrap())
        .collect();
    let unique: BTreeSet<u64> = instances.iter().copied().collect();
    assert_eq!(
        instances.len(),
        RUNS as usize,
        "one record per instance: {instances:?}"
    );
    assert_eq!(
        unique,
        (0..RUNS).collect(),
        "no instance missing or repeated"
    );
    assert!(
        records
            .iter()
            .all(|r| r["passed"] == true && r["cached"] == false)
    );

    // Resume asked for exactly the instances missing from the journal, once each.
    let missing = counts(records[kept.len()..].iter().map(user_prompt));
    let asked_on_resume = counts(
        fake.requests()[asked_before..]
            .iter()
            .map(|r| r.prompt.clone()),
    );
    assert_eq!(asked_on_resume, missing);
    assert!(
        fake.count() <= RUNS as usize + CONCURRENCY,
        "{} requests",
        fake.count()
    );

    // Resuming a complete run asks nothing and writes nothing.
    let (code, out) = ws.run(&["--resume", "latest", "--no-cache"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("0 records written"), "{out}");
    assert_eq!(fake.count(), asked_before + missing.values().sum::<usize>());
    assert_eq!(std::fs::read_to_string(&journal_path).unwrap(), final_text);
}

#[test]
fn sigint_stops_cleanly_and_resume_finishes() {
    let fake = FakeServer::start(|_| Reply::slow(150, Reply::Correct));
    let ws = setup(&fake);
    // Ctrl-C: the harness keeps what finished and exits 130 with a resume hint.
    let (code, text) = interrupt_after(&mut t06(&ws, RUNS, &["--no-cache"]), &fake, 4);
    assert_eq!(code, Some(130), "{text}");
    assert!(text.contains("--resume"), "{text}");
    let first = ws.last_journal();
    assert!(
        !first.is_empty() && first.len() < RUNS as usize,
        "{} records",
        first.len()
    );

    let (code, out) = ws.run(&["--resume", "latest", "--no-cache"]);
    assert_eq!(code, 0, "{out}");
    let records = ws.last_journal();
    let unique: BTreeSet<u64> = records
        .iter()
        .map(|r| r["instance"].as_u64().unwrap())
        .collect();
    assert_eq!(
        (records.len(), unique),
        (RUNS as usize, (0..RUNS).collect())
    );
    assert_eq!(
        &records[..first.len()],
        &first[..],
        "records before Ctrl-C unchanged"
    );
    assert!(
        fake.count() <= RUNS as usize + CONCURRENCY,
        "{} requests",
        fake.count()
    );
}

/// Run ids are `YYYYMMDD_HHMMSS`, suffixed `-2`, `-3`, ... when several start
/// in the same second; `--resume latest` must pick the newest, `-10` over `-9`.
#[test]
fn resume_latest_picks_the_newest_of_many_runs_in_one_second() {
    let (_fake, ws) = finished_run(2);
    let original = ws.run_dirs().pop().unwrap();
    let plan: Value =
        serde_json::from_str(&std::fs::read_to_string(original.join("plan.json")).unwrap())
            .unwrap();
    let journal = std::fs::read_to_string(original.join("journal.jsonl")).unwrap();
    // Nine complete runs -2..-10 in one (future) second; only the newest, -10, lacks a record.
    for n in 2..=10 {
        let id = format!("20990101_000000-{n}");
        let dir = ws.path().join("results/runs").join(&id);
        std::fs::create_dir_all(&dir).unwrap();
        let mut plan = plan.clone();
        plan["run_id"] = Value::String(id);
        std::fs::write(dir.join("plan.json"), plan.to_string()).unwrap();
        let lines = if n == 10 {
            &journal[..journal.find('\n').unwrap() + 1]
        } else {
            &journal[..]
        };
        std::fs::write(dir.join("journal.jsonl"), lines).unwrap();
    }
    let (code, out) = ws.run(&["--resume", "latest"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("run 20990101_000000-10 "),
        "`latest` must be the run started last (-10), got:\n{out}"
    );
}

/// A line no record parses from, mid-journal: `--resume` refuses with the
/// journal's path and the line's number (exit 2) instead of skipping it (a
/// record skipped is a score changed), and loses nothing: the file stays as
/// it was. Without the line, as the message says, the resume completes.
#[test]
fn a_bad_line_mid_journal_fails_the_resume_by_line_and_loses_nothing() {
    let (_fake, ws) = finished_run(6);
    let journal_path = ws.run_dirs().pop().unwrap().join("journal.jsonl");
    let text = std::fs::read_to_string(&journal_path).unwrap();
    let lines = complete_lines(&text);
    // Two records, a line no Record parses from, three records; the sixth is left to resume.
    let damaged = [&lines[..2], &["{\"not\": \"a record\"}\n"], &lines[2..5]].concat();
    std::fs::write(&journal_path, damaged.concat()).unwrap();

    let (code, out) = ws.run(&["--resume", "latest"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("journal.jsonl, line 3: it is not a record"),
        "{out}"
    );
    let kept = std::fs::read_to_string(&journal_path).unwrap();
    assert_eq!(kept, damaged.concat(), "the journal is untouched");

    std::fs::write(&journal_path, lines[..5].concat()).unwrap();
    let (code, out) = ws.run(&["--resume", "latest"]);
    assert_eq!(code, 0, "{out}");
    let instances: BTreeSet<u64> = ws
        .last_journal()
        .iter()
        .filter_map(|r| r["instance"].as_u64())
        .collect();
    assert_eq!(
        instances,
        (0..6).collect(),
        "records lost on resume:\n{out}"
    );
}
