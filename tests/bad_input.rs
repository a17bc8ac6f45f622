//! Bad input gets a clear error and exit 2, and leaves nothing behind:
//! numeric flags out of range, `show --start` past a dataset's end, a plan
//! whose golden subset selects no instance, a failing `check` (the golden
//! folder stays as it was). And when every request fails, the terminal says
//! why: the most common causes with their endpoints.

use std::fs;

use crate::common::workspace::Workspace;
use crate::common::{harness, root, run};

/// A spec with a 12-row dataset.
const DATASET_SPEC: &str = r#"id = "rows"
[dataset]
path = "rows.jsonl"
[prompt]
user = "{{ q }}"
[[verify]]
rule = "contains"
expected = "a"
"#;

/// A spec whose only example fails.
const FAILING_SPEC: &str = include_str!("fixtures/specs/failing.toml");

#[test]
fn numeric_flags_out_of_range_exit_2_with_a_message() {
    let ws = Workspace::new();
    ws.copy_spec("t06_mathematics.toml");
    let cases: &[(&[&str], &str)] = &[
        (&["run", "specs/", "--runs", "0"], "0 is not in 1..=1000000"),
        (
            &["run", "specs/", "--runs", "5000000"],
            "is not in 1..=1000000",
        ),
        (&["run", "specs/", "--runs=-3"], "--runs"),
        (
            &["run", "specs/", "--max-tokens-total", "0"],
            "--max-tokens-total",
        ),
        (&["run", "specs/", "--max-cost=-1"], "not an amount"),
        (
            &["show", "specs/t06_mathematics.toml", "-n", "0"],
            "--count",
        ),
        (&["synth", "--threshold", "11"], "from 1 to 10"),
        (&["synth", "--num-pairs", "0"], "--num-pairs"),
    ];
    // synth's other arguments are valid: only the flag under test is not.
    let synth = ["x.txt", "-m", "m", "-o", "o.jsonl"];
    for (args, says) in cases {
        let args: Vec<&str> = match args.split_first() {
            Some((&"synth", flag)) => [&["synth"][..], &synth, flag].concat(),
            _ => args.to_vec(),
        };
        let (code, out) = run(harness(ws.path()).args(&args));
        assert_eq!(code, 2, "{args:?}: {out}");
        assert!(out.contains(says), "{args:?} should say {says}: {out}");
    }
    assert!(!ws.path().join("results").exists(), "nothing was run");
}

#[test]
fn show_past_a_datasets_end_names_its_size() {
    let ws = Workspace::new();
    ws.write("specs/rows.toml", DATASET_SPEC);
    let rows: String = (0..12)
        .map(|i| format!("{{\"q\": \"q{i}\", \"a\": \"{i}\"}}\n"))
        .collect();
    ws.write("specs/rows.jsonl", &rows);
    let (code, out) = run(harness(ws.path()).args(["show", "specs/rows.toml", "--start", "50"]));
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("--start 50 is past the end: the dataset has 12 instances, 0 to 11"),
        "{out}"
    );
    let (code, out) = run(harness(ws.path()).args(["show", "specs/rows.toml", "--start", "11"]));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("rows/11"), "{out}");
}

#[test]
fn a_plan_selecting_no_instance_names_the_golden_subset() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, out) = run(harness(&root())
        .args([
            "run",
            "specs/aime.toml",
            "-m",
            "replay:smollm2",
            "--runs",
            "2",
        ])
        .arg("--results")
        .arg(tmp.path()));
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("the plan selects no instance"), "{out}");
    assert!(out.contains("golden subset (instances 8, 26)"), "{out}");
    assert!(out.contains("use --runs 27 or more"), "{out}");
    assert!(!tmp.path().join("runs").exists(), "no run was started");
}

#[test]
fn a_failing_check_leaves_the_golden_folder_as_it_was() {
    let ws = Workspace::new();
    ws.write("specs/failing.toml", FAILING_SPEC);
    for golden in ["fresh", "existing"] {
        if golden == "existing" {
            fs::create_dir_all(ws.path().join("existing/other")).unwrap();
            fs::write(ws.path().join("existing/other/instances.jsonl"), "{}\n").unwrap();
        }
        let before = listing(&ws.path().join(golden));
        let (code, out) =
            run(harness(ws.path()).args(["check", "specs/failing.toml", "--golden", golden]));
        assert_eq!(code, 2, "{out}");
        assert!(out.contains("expected to pass, but failed"), "{out}");
        assert_eq!(listing(&ws.path().join(golden)), before, "{golden}: {out}");
    }
}

/// Every path under `dir`, sorted (empty when it does not exist).
fn listing(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let path = e.unwrap().path();
            out.push(path.strip_prefix(dir).unwrap().display().to_string());
            if path.is_dir() {
                stack.push(path);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn failed_requests_show_their_causes_and_endpoint() {
    let ws = Workspace::new();
    ws.copy_spec("t06_mathematics.toml");
    // Nothing listens on port 9 of loopback: every request is refused.
    let (code, out) = run(harness(ws.path()).env("COLUMNS", "80").args([
        "run",
        "specs/",
        "-m",
        "openai:dead@http://127.0.0.1:9/v1",
        "--runs",
        "3",
        "--no-progress",
    ]));
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("3 of 3 answers are errors"), "{out}");
    assert!(
        out.contains("  3 × connection refused (http://127.0.0.1:9/v1/chat/completions)"),
        "{out}"
    );
    let wide: Vec<&str> = out.lines().filter(|l| l.chars().count() > 80).collect();
    assert!(wide.is_empty(), "lines past 80 columns: {wide:#?}");
}
