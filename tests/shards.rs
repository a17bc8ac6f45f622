//! `harness run --shard` and `harness merge` over the shipped specs, replayed
//! offline in a fresh copy of the repository: four shards merged give the
//! unsharded run's verdicts per key and its report numbers; a merge refuses
//! overlaps and other plans, names what is missing by shard, and completes
//! once the missing part is resumed; `--shard auto` reads Slurm's and a
//! Kubernetes Indexed Job's variables.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::golden_lines::{departures as golden_departures, journal_lines};
use crate::common::{fresh_copy, harness, run};

/// Each record's verdict by key: everything but timing and attempts.
pub(crate) fn verdicts(journal: &Path) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for line in fs::read_to_string(journal).unwrap().lines() {
        let mut r: Value = serde_json::from_str(line).unwrap();
        let key = format!(
            "{} {} {} {}",
            r["model"], r["spec"], r["instance"], r["sample"]
        );
        let r = r.as_object_mut().unwrap();
        for volatile in [
            "latency_ms",
            "attempts",
            "judge_attempts",
            "cached",
            "retries",
        ] {
            r.remove(volatile);
        }
        assert!(
            out.insert(key.clone(), Value::Object(r.clone())).is_none(),
            "{key} twice"
        );
    }
    out
}

/// The newest report with `ext` under `results/reports`, its date and run
/// lines dropped (the only lines that name when or which run).
pub(crate) fn report_numbers(results: &Path, ext: &str) -> String {
    let mut reports: Vec<PathBuf> = fs::read_dir(results.join("reports"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("report_") && name.ends_with(ext)
        })
        .collect();
    reports.sort();
    let text = fs::read_to_string(reports.last().expect("a report")).unwrap();
    text.lines()
        .filter(|l| !l.contains("**Date and time:**") && !l.contains("**Runs:**"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn shard_dirs(results: &Path, id: &str, count: u32) -> Vec<String> {
    (0..count)
        .map(|i| {
            results
                .join(format!("runs/{id}-shard-{i}-of-{count}"))
                .display()
                .to_string()
        })
        .collect()
}

#[test]
fn four_shards_merge_into_exactly_the_unsharded_run() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = fresh_copy(tmp.path());
    let (code, out) = run(harness(&repo).args(["run", "--no-progress", "--run-id", "whole"]));
    assert_eq!(code, 0, "{out}");
    let whole = verdicts(&repo.join("results/runs/whole/journal.jsonl"));
    let whole_report = report_numbers(&repo.join("results"), ".md");

    let mut sizes = Vec::new();
    for i in 0..4 {
        let shard = format!("{i}/4");
        let (code, out) = run(harness(&repo).args([
            "run",
            "--no-progress",
            "--run-id",
            "job",
            "--shard",
            &shard,
            "--results",
            "sharded",
        ]));
        assert_eq!(code, 0, "{out}");
        assert!(out.contains(&format!("shard {i}/4 of plan ")), "{out}");
        let dir = repo.join(format!("sharded/runs/job-shard-{i}-of-4"));
        let plan: Value =
            serde_json::from_str(&fs::read_to_string(dir.join("plan.json")).unwrap()).unwrap();
        assert_eq!(plan["shard"], serde_json::json!({"index": i, "count": 4}));
        assert!(
            plan["plan_hash"].as_str().is_some_and(|h| h.len() == 16),
            "{plan}"
        );
        sizes.push(verdicts(&dir.join("journal.jsonl")).len());
        // The live golden check asks one shard and compares it itself (a
        // shard leaves the comparison to the merge): replayed, it departs
        // from no golden line, and a changed answer is caught.
        let mut records = journal_lines(&dir.join("journal.jsonl"));
        assert_eq!(
            golden_departures(&records, &repo.join("golden")),
            Vec::<String>::new()
        );
        records[0]["response"] = Value::from("changed");
        let departures = golden_departures(&records, &repo.join("golden"));
        assert_eq!(departures.len(), 1, "{departures:?}");
        assert!(
            departures[0].contains(r#""response":"changed""#),
            "{departures:?}"
        );
    }
    assert_eq!(sizes.iter().sum::<usize>(), whole.len(), "{sizes:?}");
    let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
    // Balanced: every spec's keys are dealt round-robin, so shards differ by
    // at most one key per (model, spec) pair.
    assert!(max - min <= 24, "unbalanced shards: {sizes:?}");

    let mut merge = harness(&repo);
    merge
        .args(["merge", "--results", "sharded"])
        .args(shard_dirs(&repo.join("sharded"), "job", 4));
    let (code, out) = run(&mut merge);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(&format!("({} records)", whole.len())), "{out}");
    let merged = verdicts(&repo.join("sharded/runs/job/journal.jsonl"));
    assert_eq!(merged.len(), whole.len());
    for (key, verdict) in &whole {
        assert_eq!(merged.get(key), Some(verdict), "{key}");
    }
    assert_eq!(report_numbers(&repo.join("sharded"), ".md"), whole_report);
    let merged_plan: Value =
        serde_json::from_str(&fs::read_to_string(repo.join("sharded/runs/job/plan.json")).unwrap())
            .unwrap();
    assert!(merged_plan.get("shard").is_none(), "{merged_plan}");
}

#[test]
fn a_merge_refuses_overlaps_and_other_plans_and_resumes_what_is_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = fresh_copy(tmp.path());
    let spec = "specs/t06_mathematics.toml";
    for (id, shard, runs) in [
        ("a", "0/2", None),
        ("a", "1/2", None),
        ("b", "0/2", Some("3")),
    ] {
        let mut cmd = harness(&repo);
        cmd.args([
            "run",
            spec,
            "--no-progress",
            "--run-id",
            id,
            "--shard",
            shard,
        ]);
        if let Some(runs) = runs {
            cmd.args(["--runs", runs]);
        }
        let (code, out) = run(&mut cmd);
        assert_eq!(code, 0, "{out}");
    }
    let results = repo.join("results");
    let [a0, a1] = [0, 1].map(|i| shard_dirs(&results, "a", 2)[i].clone());
    let b0 = shard_dirs(&results, "b", 2)[0].clone();
    let (code, out) = run(harness(&repo).args(["merge", &a0, &a0]));
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("are both shard 0/2"), "{out}");
    let (code, out) = run(harness(&repo).args(["merge", &a1, &b0]));
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("cannot merge"), "{out}");

    let (code, out) = run(harness(&repo).args(["merge", &a0]));
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("shard 1/2: ") && out.contains("not given"),
        "{out}"
    );
    assert!(!results.join("runs/a").exists(), "nothing merged");

    // A shard cut short (its last answers lost): the merge names them and how to finish.
    let journal = PathBuf::from(&a1).join("journal.jsonl");
    let text = fs::read_to_string(&journal).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let kept = lines.len() / 2;
    fs::write(&journal, lines[..kept].join("\n") + "\n").unwrap();
    let (code, out) = run(harness(&repo).args(["merge", &a0, &a1]));
    assert_eq!(code, 1, "{out}");
    let missing = lines.len() - kept;
    assert!(
        out.contains(&format!("shard 1/2: {missing} missing")),
        "{out}"
    );
    let resume = format!(
        "harness run --results {} --resume a-shard-1-of-2",
        results.display()
    );
    assert!(out.contains(&resume), "{out}");
    let (code, out) =
        run(harness(&repo).args(["run", "--resume", "a-shard-1-of-2", "--no-progress"]));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(&format!("{missing} records written")), "{out}");
    let (code, out) = run(harness(&repo).args(["merge", &a0, &a1]));
    assert_eq!(code, 0, "{out}");

    let (code, out) =
        run(harness(&repo).args(["merge", &results.join("runs/a").display().to_string()]));
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("not a shard"), "{out}");
}

/// `--shard` text, the scheduler's variables, and the run directory or a part of the error.
type AutoCase<'a> = (&'a str, &'a [(&'a str, &'a str)], Result<&'a str, &'a str>);

#[test]
fn shard_auto_reads_slurm_and_kubernetes_variables() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = fresh_copy(tmp.path());
    let cases: &[AutoCase] = &[
        (
            "auto",
            &[
                ("SLURM_ARRAY_TASK_ID", "3"),
                ("SLURM_ARRAY_TASK_MIN", "2"),
                ("SLURM_ARRAY_TASK_MAX", "3"),
            ],
            Ok("slurm-shard-1-of-2"),
        ),
        (
            "auto/3",
            &[("JOB_COMPLETION_INDEX", "2")],
            Ok("k8s-shard-2-of-3"),
        ),
        (
            "auto",
            &[("JOB_COMPLETION_INDEX", "0")],
            Err("give it as --shard auto/N"),
        ),
        (
            "auto",
            &[],
            Err("neither SLURM_ARRAY_TASK_ID nor JOB_COMPLETION_INDEX"),
        ),
        ("2/2", &[], Err("expected I/N")),
    ];
    for (shard, vars, want) in cases {
        let id = match want {
            Ok(dir) => dir.split("-shard").next().unwrap(),
            Err(_) => "bad",
        };
        let mut cmd = harness(&repo);
        cmd.args([
            "run",
            "specs/t06_mathematics.toml",
            "--no-progress",
            "--run-id",
            id,
            "--shard",
            shard,
        ]);
        for var in [
            "SLURM_ARRAY_TASK_ID",
            "SLURM_ARRAY_TASK_MIN",
            "SLURM_ARRAY_TASK_MAX",
            "SLURM_ARRAY_TASK_COUNT",
            "JOB_COMPLETION_INDEX",
        ] {
            cmd.env_remove(var);
        }
        cmd.envs(vars.iter().copied());
        let (code, out) = run(&mut cmd);
        match want {
            Ok(dir) => {
                assert_eq!(code, 0, "{shard} {vars:?}: {out}");
                assert!(
                    repo.join("results/runs")
                        .join(dir)
                        .join("journal.jsonl")
                        .is_file(),
                    "{out}"
                );
            }
            Err(message) => {
                assert_eq!(code, 2, "{shard} {vars:?}: {out}");
                assert!(out.contains(message), "{shard} {vars:?}: {out}");
            }
        }
    }
}
