//! The golden review loop, driven through the real binary: new → pending
//! file → bless → unchanged → change shows a diff → review accepts/rejects.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use crate::common::{harness, run};

const SPEC: &str = r#"
seed = 1
runs = 3
[generate]
script = '#{ a: rng.int(1, 9), b: rng.int(1, 9) }'
[prompt]
user = "{{ a }} + {{ b }} = ?"
[[verify]]
rule = "numeric"
expected = "a"
[[example]]
vars = { a = 3 }
response = "3"
passes = true
"#;

fn setup() -> tempfile::TempDir {
    setup_with("sum", SPEC)
}

/// A workspace with one spec, `specs/<name>.toml`.
fn setup_with(name: &str, spec: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("specs")).unwrap();
    fs::write(dir.path().join(format!("specs/{name}.toml")), spec).unwrap();
    dir
}

/// `harness check specs EXTRA...` in `dir`: (exit code, output).
fn check(dir: &Path, extra: &[&str]) -> (i32, String) {
    run(harness(dir).args(["check", "specs"]).args(extra))
}

/// A workspace whose golden file is blessed, then whose spec changed (another seed).
fn blessed_then_changed() -> tempfile::TempDir {
    let dir = setup();
    check(dir.path(), &["--bless"]);
    fs::write(
        dir.path().join("specs/sum.toml"),
        SPEC.replace("seed = 1", "seed = 2"),
    )
    .unwrap();
    dir
}

#[test]
fn new_spec_is_reported_and_blessing_makes_it_pass() {
    let dir = setup();
    let (code, out) = check(dir.path(), &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("NEW") && out.contains("no golden file yet"),
        "{out}"
    );
    assert!(dir.path().join("golden/sum/instances.jsonl.new").exists());

    let (code, out) = check(dir.path(), &["--bless"]);
    assert_eq!(code, 0, "{out}");
    assert!(!dir.path().join("golden/sum/instances.jsonl.new").exists());
    let golden = fs::read_to_string(dir.path().join("golden/sum/instances.jsonl")).unwrap();
    assert_eq!(golden.lines().count(), 3);
    assert!(golden.contains(r#""id":"sum/0""#), "{golden}");

    let (code, out) = check(dir.path(), &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("golden unchanged"), "{out}");
}

#[test]
fn a_changed_spec_prints_a_diff_and_ci_writes_no_pending_file() {
    let dir = blessed_then_changed();

    let (code, out) = run(harness(dir.path())
        .args(["check", "specs"])
        .env("CI", "true"));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("DIFF") && out.contains("@@"), "{out}");
    assert!(
        out.lines().any(|l| l.starts_with('-')) && out.lines().any(|l| l.starts_with('+')),
        "{out}"
    );
    assert!(
        !dir.path().join("golden/sum/instances.jsonl.new").exists(),
        "CI must not write .new files"
    );
}

#[test]
fn review_accepts_and_rejects_pending_changes() {
    let dir = blessed_then_changed();
    let golden = dir.path().join("golden/sum/instances.jsonl");
    let before = fs::read_to_string(&golden).unwrap();

    // Reject: the golden file stays, the pending file goes.
    check(dir.path(), &[]);
    let out = review(dir.path(), "r\n");
    assert!(out.contains("1 rejected"), "{out}");
    assert_eq!(fs::read_to_string(&golden).unwrap(), before);
    assert!(!dir.path().join("golden/sum/instances.jsonl.new").exists());

    // Accept: the pending content becomes the golden file and check passes.
    check(dir.path(), &[]);
    let out = review(dir.path(), "a\n");
    assert!(out.contains("1 accepted"), "{out}");
    assert_ne!(fs::read_to_string(&golden).unwrap(), before);
    let (code, out) = check(dir.path(), &[]);
    assert_eq!(code, 0, "{out}");
}

fn review(cwd: &Path, answers: &str) -> String {
    let mut child = harness(cwd)
        .arg("review")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(answers.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn one_broken_spec_does_not_stop_the_others() {
    let dir = setup();
    fs::write(dir.path().join("specs/broken.toml"), "runs = \"many\"\n").unwrap();
    let (code, out) = check(dir.path(), &["--bless"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("FAIL  broken.toml") || out.contains("broken.toml"),
        "{out}"
    );
    assert!(
        out.contains("sum") && out.contains("1 ok") || out.contains("golden written"),
        "{out}"
    );
    assert!(dir.path().join("golden/sum/instances.jsonl").exists());
}

#[test]
fn a_changed_instance_shows_the_fields_that_changed() {
    // The second version adds a variable, words its prompt otherwise and
    // makes one instance fewer.
    let v1 = SPEC.replace(
        "{{ a }} + {{ b }} = ?",
        "A shop sells {{ a }} apples and {{ b }} pears. How many fruits does it sell? Answer with one number.",
    );
    let dir = setup_with("fruit", &v1);
    let spec = dir.path().join("specs/fruit.toml");
    check(dir.path(), &["--bless"]);
    let v2 = v1
        .replace("runs = 3", "runs = 2")
        .replace("b: rng.int(1, 9) }", "b: rng.int(1, 9), unit: \"kg\" }")
        .replace("How many fruits", "How many {{ unit }} of fruit");
    fs::write(&spec, v2).unwrap();
    let (code, out) = run(harness(dir.path())
        .args(["check", "specs"])
        .env("CI", "true"));
    assert_eq!(code, 1, "{out}");
    let diff: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("---"))
        .take_while(|l| !l.is_empty() && !l.starts_with("1 spec"))
        .collect();
    insta::assert_snapshot!(diff.join("\n"));
}
