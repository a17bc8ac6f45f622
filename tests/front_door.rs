//! The newcomer's first commands: `harness new ID` writes a starter spec that
//! `harness check` accepts at once (its golden instances included), refuses
//! ids that cannot name files and never overwrites a spec; `harness
//! completions SHELL` prints a completion script naming every subcommand.

use crate::common::workspace::Workspace;

/// Runs `harness ARGS` in the workspace: (exit code, output).
fn harness(ws: &Workspace, args: &[&str]) -> (i32, String) {
    crate::common::run(crate::common::harness(ws.path()).args(args))
}

/// Runs `harness ARGS`, which must exit 0: its output.
fn harness_ok(ws: &Workspace, args: &[&str]) -> String {
    let (code, out) = harness(ws, args);
    assert_eq!(code, 0, "harness {args:?}:\n{out}");
    out
}

#[test]
fn new_writes_a_starter_spec_that_checks_at_once() {
    let ws = Workspace::new();
    let out = harness_ok(&ws, &["new", "t42_sums"]);
    assert!(out.contains("specs/t42_sums.toml"), "{out}");
    assert!(out.contains("2/2 examples hold"), "{out}");

    let spec = std::fs::read_to_string(ws.path().join("specs/t42_sums.toml")).unwrap();
    assert!(spec.contains("id = \"t42_sums\""), "{spec}");
    assert!(spec.contains("passes = true") && spec.contains("passes = false"));
    // No schemas/ beside specs/: the editor hint would point nowhere.
    assert!(!spec.starts_with("#:schema"), "{spec}");
    assert!(ws.path().join("golden/t42_sums").is_dir());

    let check = harness_ok(&ws, &["check", "specs/t42_sums.toml"]);
    assert!(check.contains("1 spec: 1 ok"), "{check}");
}

/// `check -v` prints what each example actually got, held or not, so a
/// spec author reads the real failure text and score.
#[test]
fn check_verbose_shows_each_examples_verdict_score_and_detail() {
    let ws = Workspace::new();
    harness_ok(&ws, &["new", "t42_sums"]);
    let path = ws.path().join("specs/t42_sums.toml");
    let mut spec = std::fs::read_to_string(&path).unwrap();
    // An example whose expectation is wrong: its problem and its verdict both show.
    spec += "\n[[example]]\nname = \"expects the wrong words\"\nvars = { a = 2, b = 3, answer = 5 }\nresponse = \"six\"\npasses = false\ndetail = \"ZZZ\"\n";
    std::fs::write(&path, spec).unwrap();
    let (code, out) = harness(&ws, &["check", "-v", "specs/t42_sums.toml"]);
    assert_eq!(code, 2, "{out}");
    insta::assert_snapshot!(out);
    let (code, quiet) = harness(&ws, &["check", "specs/t42_sums.toml"]);
    assert_eq!(code, 2, "{quiet}");
    assert!(!quiet.contains("score"), "{quiet}");
}

#[test]
fn new_keeps_the_schema_hint_where_the_schema_is() {
    let ws = Workspace::new();
    std::fs::create_dir(ws.path().join("schemas")).unwrap();
    ws.write("schemas/spec.schema.json", "{}");
    harness_ok(&ws, &["new", "hinted"]);
    let spec = std::fs::read_to_string(ws.path().join("specs/hinted.toml")).unwrap();
    assert!(spec.starts_with("#:schema ../schemas/spec.schema.json\n"));
}

#[test]
fn new_refuses_bad_ids_and_existing_specs() {
    let ws = Workspace::new();
    let cases: [(&str, &str); 3] = [
        ("../escape", "cannot be a spec id"),
        ("two words", "cannot be a spec id"),
        ("", "cannot be a spec id"),
    ];
    for (id, want) in cases {
        let (code, out) = harness(&ws, &["new", id]);
        assert_eq!(code, 2, "`{id}`: {out}");
        assert!(out.contains(want), "`{id}`: {out}");
    }
    ws.write("specs/taken.toml", "# mine\n");
    let (code, out) = harness(&ws, &["new", "taken"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("exists"), "{out}");
    let kept = std::fs::read_to_string(ws.path().join("specs/taken.toml")).unwrap();
    assert_eq!(kept, "# mine\n");
}

#[test]
fn completions_name_every_subcommand_in_each_shell() {
    let ws = Workspace::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = harness_ok(&ws, &["completions", shell]);
        for command in ["run", "check", "report", "show", "new", "completions"] {
            assert!(out.contains(command), "{shell}: no `{command}` in:\n{out}");
        }
    }
    let (code, out) = harness(&ws, &["completions", "tcsh"]);
    assert_eq!(code, 2, "{out}");
}
