//! Limits cases: records (see `tests/limits.rs`). Values nested past the
//! depth limit where they enter (a model's arguments, spec data, agent
//! state) and journals read back whole: no record is ever dropped, so the
//! counts a run prints are the records every report, `report`, `--resume`
//! and `merge` use.

use std::time::Duration;

use serde_json::Value;

use super::{Capped, capped};
use crate::common::fake_server::{FakeCall, FakeServer, Reply, Request};
use crate::common::harness;
use crate::common::workspace::{Workspace, fake_workspace};

/// Every case ends within this, in a debug build.
const WALL: Duration = Duration::from_secs(60);

/// Three instances, each answered by one call of `f`; the verdict passes
/// any answer, so only a limit can fail one.
const DEEP_ARGS_SPEC: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/specs/deep_args.toml"
));

/// Arguments nested `depth` levels deep: an object holding arrays.
fn nested_arguments(depth: usize) -> String {
    format!(
        "{{\"n\": {}1{}}}",
        "[".repeat(depth - 1),
        "]".repeat(depth - 1)
    )
}

/// A model that answers instance 1 with arguments nested 126 deep (under
/// serde_json's 128, so they parse, and past the 64 a value may have).
fn nests_on_instance_1(request: &Request) -> Reply {
    let arguments = if request.prompt.contains("n = 1.") {
        nested_arguments(126)
    } else {
        "{\"n\": 0}".to_owned()
    };
    Reply::Calls(String::new(), vec![FakeCall::new("f", &arguments)])
}

/// `harness ARGS` in `ws`, capped.
fn harness_capped(ws: &Workspace, args: &[&str]) -> Capped {
    capped(harness(ws.path()).args(args), WALL)
}

/// `harness run ARGS --results results --no-progress`, capped.
fn run_capped(ws: &Workspace, args: &[&str]) -> Capped {
    capped(&mut ws.run_cmd(args), WALL)
}

/// The run ids under `results/runs`, oldest first.
fn run_ids(ws: &Workspace) -> Vec<String> {
    ws.run_dirs()
        .iter()
        .map(|d| d.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

/// The newest Markdown report's text.
fn newest_markdown(ws: &Workspace) -> String {
    crate::common::report(&ws.path().join("results"), "", "md")
}

/// Asserts the output of `what` shows 66.7%, never 100%, and the newest
/// Markdown report (the one it wrote) counts the 3 instances at 66.7%.
fn assert_two_of_three(what: &str, text: &str, ws: &Workspace) {
    assert!(text.contains("66.7"), "{what} does not show 66.7%:\n{text}");
    assert!(!text.contains("100.0%"), "{what} shows 100%:\n{text}");
    let markdown = newest_markdown(ws);
    assert!(
        markdown.contains("Instances: 3;") && markdown.contains("66.7%"),
        "{what}'s report:\n{markdown}"
    );
}

/// A model nesting its arguments 126 deep on 1 of 3 instances fails that
/// instance as `too_deep`: 66.7%, in the printed count, the summary and
/// report, `harness report`, `--resume` and `merge`.
#[test]
fn arguments_nested_126_deep_fail_their_instance_everywhere() {
    let fake = FakeServer::start(nests_on_instance_1);
    let ws = fake_workspace(&fake, "deep_args.toml", DEEP_ARGS_SPEC);
    let ran = run_capped(&ws, &["specs", "-m", "fake"]);
    ran.expect_code(0).expect_output("3 records written");
    assert_two_of_three("the run", &ran.out, &ws);
    let journal = ws.last_journal();
    assert_eq!(journal.len(), 3, "{journal:#?}");
    let deep = journal.iter().find(|r| r["instance"] == 1).unwrap();
    assert_eq!(deep["failure"], "too_deep", "{deep:#}");
    assert_eq!(deep["passed"], false);
    let call = &deep["trajectory"][0]["tool_calls"][0];
    assert!(
        call["invalid"]
            .as_str()
            .unwrap()
            .contains("nest 126 levels deep"),
        "{call:#}"
    );
    let id = run_ids(&ws).pop().unwrap();

    let reported = harness_capped(&ws, &["report", "--results", "results", &id]);
    reported.expect_code(0);
    assert_two_of_three("`harness report`", &reported.out, &ws);

    let asked = fake.count();
    let resumed = run_capped(&ws, &["--resume", &id]);
    resumed.expect_code(0);
    assert_eq!(
        fake.count(),
        asked,
        "a resume asks nothing: {}",
        resumed.out
    );
    assert_two_of_three("`--resume`", &resumed.out, &ws);

    for shard in ["0/2", "1/2"] {
        let args = ["specs", "-m", "fake", "--run-id", "sh", "--shard", shard];
        run_capped(&ws, &args).expect_code(0);
    }
    let shards = [
        "results/runs/sh-shard-0-of-2",
        "results/runs/sh-shard-1-of-2",
    ];
    let merged = harness_capped(
        &ws,
        &["merge", "--results", "results", shards[0], shards[1]],
    );
    merged.expect_code(0).expect_output("(3 records)");
    assert_two_of_three("`merge`", &merged.out, &ws);
    // A shard's line that cannot be read fails the merge by its line.
    let shard = ws.path().join(shards[0]).join("journal.jsonl");
    let text = std::fs::read_to_string(&shard).unwrap();
    std::fs::write(&shard, format!("{{\"model\":\n{text}")).unwrap();
    let merged = harness_capped(
        &ws,
        &["merge", "--results", "results", shards[0], shards[1]],
    );
    merged
        .expect_code(2)
        .expect_output("sh-shard-0-of-2/journal.jsonl, line 1: it is not a record");
}

/// What is done to a journal before it is read back, and what reading says.
struct Tampered {
    name: &'static str,
    /// The journal's new text, from its lines.
    edit: fn(&[&str]) -> String,
    /// `harness report`'s exit code.
    code: i32,
    /// What its output must say.
    says: &'static str,
}

/// A line nested 140 deep: deeper than serde_json reads by default, as an
/// older harness could write; read back now, never skipped.
fn deeper_than_serde_default(lines: &[&str]) -> String {
    let record: Value = serde_json::from_str(lines[0]).unwrap();
    let mut deep = Value::from(1);
    for _ in 0..140 {
        deep = Value::Array(vec![deep]);
    }
    let mut record = record;
    record["vars"]["deep"] = deep;
    // serde_json's writer recurses as deep as its reader: fine at 140.
    format!("{}\n{}\n{}\n", record, lines[1], lines[2])
}

/// Journals read back whole: a line deeper than serde_json's default
/// limit is read; a line that cannot be read fails `report`, `--resume`
/// and `merge` with its file and line; only a torn last line is skipped.
#[test]
fn journals_are_read_back_whole_or_fail_by_line() {
    let fake = FakeServer::start(nests_on_instance_1);
    let ws = fake_workspace(&fake, "deep_args.toml", DEEP_ARGS_SPEC);
    run_capped(&ws, &["specs", "-m", "fake", "--run-id", "r"]).expect_code(0);
    let journal_path = ws.path().join("results/runs/r/journal.jsonl");
    let original = std::fs::read_to_string(&journal_path).unwrap();
    let cases = [
        Tampered {
            name: "a line deeper than serde_json's default",
            edit: deeper_than_serde_default,
            code: 0,
            says: "66.7",
        },
        Tampered {
            name: "a torn last line",
            edit: |l| format!("{}\n{}\n{}", l[0], l[1], &l[2][..l[2].len() / 2]),
            code: 0,
            says: "50.0",
        },
        Tampered {
            name: "a broken line in the middle",
            edit: |l| format!("{}\n{{\"model\": \n{}\n", l[0], l[2]),
            code: 2,
            says: "journal.jsonl, line 2: it is not a record",
        },
        Tampered {
            name: "a line nested past what any harness writes",
            edit: |l| {
                let deep = format!("{}{}", "[".repeat(5_000), "]".repeat(5_000));
                format!("{}\n{deep}\n{}\n", l[0], l[2])
            },
            code: 2,
            says: "line 2: it nests 5000 levels deep",
        },
    ];
    // The failing record in the middle, so tearing the last leaves one pass of two.
    let mut lines: Vec<&str> = original.lines().collect();
    lines.sort_by_key(|l| l.contains("\"too_deep\""));
    lines.swap(1, 2);
    for case in &cases {
        std::fs::write(&journal_path, (case.edit)(&lines)).unwrap();
        let reported = harness_capped(&ws, &["report", "--results", "results", "r"]);
        assert_eq!(
            reported.code,
            Some(case.code),
            "{}:\n{}",
            case.name,
            reported.out
        );
        reported.expect_output(case.says);
        if case.code == 2 {
            let resumed = run_capped(&ws, &["--resume", "r"]);
            resumed.expect_code(2).expect_output(case.says);
        }
    }
}

/// A spec whose own data nests too deep: the files it writes, and where and
/// what `check` and `run` say (exit 2, located).
struct DeepData {
    name: &'static str,
    /// The spec's lines between its prompt and its rule.
    spec: String,
    /// Other files: (path in the workspace, text).
    files: Vec<(&'static str, String)>,
    /// What the error says, and its location.
    says: [&'static str; 2],
}

/// `[[[...1...]]]` nested `n` deep, as JSON or TOML text.
fn nested(n: usize) -> String {
    format!("{}1{}", "[".repeat(n), "]".repeat(n))
}

/// Spec data nested past the limit (`[data]`, generated variables, dataset
/// rows, a `map` result) is an error at its place, exit 2, at check and at
/// run: never an instance dropped when its records are read back.
#[test]
fn spec_data_nested_too_deep_is_a_located_error() {
    let cases = [
        DeepData {
            name: "[data]",
            spec: format!("[data]\nx = {}\n[generate]\nscript = '#{{ x: 1 }}'", nested(70)),
            files: vec![],
            says: [
                "`data.x` nests 70 levels deep, deeper than the 64 levels",
                "--> specs/deep.toml:7:5",
            ],
        },
        DeepData {
            name: "generated variables",
            spec: "[generate]\nscript = 'let v = 1; for i in 0..200 { v = [v]; } #{ v: v }'"
                .into(),
            files: vec![],
            says: [
                "instance 0: the map of instance variables nests 201 levels deep",
                "--> specs/deep.toml:7:10",
            ],
        },
        DeepData {
            name: "a dataset row",
            spec: "[dataset]\npath = \"rows.jsonl\"".into(),
            files: vec![(
                "specs/rows.jsonl",
                format!("{{\"q\": 1}}\n{{\"q\": {}}}\n", nested(200)),
            )],
            says: ["row 2 nests 201 levels deep", "--> specs/rows.jsonl:2:1"],
        },
        DeepData {
            name: "a dataset map",
            spec: "[dataset]\npath = \"rows.jsonl\"\nmap = 'let v = 1; for i in 0..100 { v = [v]; } #{ v: v }'".into(),
            files: vec![("specs/rows.jsonl", "{\"q\": 1}\n".into())],
            says: [
                "map on the row at specs/rows.jsonl:1 returned a map that nests 101 levels deep",
                "--> specs/deep.toml:8:7",
            ],
        },
    ];
    for case in cases {
        let fake = FakeServer::healthy();
        let spec = format!(
            "id = \"deep\"\nruns = 2\n\n[prompt]\nuser = \"Hi\"\n{}\n\n[[verify]]\nrule = \"regex\"\npattern = \".\"\n",
            case.spec
        );
        let ws = fake_workspace(&fake, "deep.toml", &spec);
        for (path, text) in &case.files {
            ws.write(path, text);
        }
        let checked = harness_capped(&ws, &["check", "specs/deep.toml"]);
        assert_eq!(checked.code, Some(2), "{}: {}", case.name, checked.out);
        for says in case.says {
            assert!(checked.out.contains(says), "{}: {}", case.name, checked.out);
        }
        let ran = run_capped(&ws, &["specs", "-m", "fake"]);
        assert_eq!(ran.code, Some(2), "{}: {}", case.name, ran.out);
        assert!(ran.out.contains(case.says[0]), "{}: {}", case.name, ran.out);
        assert_eq!(fake.count(), 0, "{}: nothing is asked", case.name);
    }
}

/// An agent whose `note` tool chains the state one level deeper per call
/// (an undo log), and whose `deep_loop` nests it 8,000 levels in one call.
const UNDO_SPEC: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/specs/undo.toml"
));

/// The model turn a request asks for: the assistant messages it holds.
fn turn(request: &Request) -> usize {
    let messages = request.body["messages"].as_array().unwrap();
    messages.iter().filter(|m| m["role"] == "assistant").count()
}

/// 1,000 notes a turn for five turns, then the deep loop and `submit`.
fn undo_clerk(request: &Request) -> Reply {
    let call = |name: &str| FakeCall::new(name, "{}");
    match turn(request) {
        0..5 => Reply::Calls(String::new(), vec![call("note"); 1000]),
        _ => Reply::Calls("Done.".into(), vec![call("deep_loop"), call("submit")]),
    }
}

/// State nested deeper every call (5,000 calls of an undo chain) or 8,000
/// levels in one call: each call past the limit is an error result for the
/// model, the state unchanged; the episode goes on, the record fails as
/// `too_deep`, its journal stays small, and `--resume` finishes.
#[test]
fn state_nested_past_the_limit_is_refused_call_by_call() {
    let fake = FakeServer::start(undo_clerk);
    let ws = fake_workspace(&fake, "undo.toml", UNDO_SPEC);
    let ran = run_capped(&ws, &["specs", "-m", "fake", "--run-id", "u"]);
    ran.expect_code(0).expect_output("1 records written");
    assert_eq!(fake.count(), 6);
    let record = &ws.last_journal()[0];
    assert_eq!(record["failure"], "too_deep", "{}", record["detail"]);
    let results: Vec<&str> = record["trajectory"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(results.len(), 5_002);
    // The state map is level 1 and each note one more: the 64th note is refused.
    assert_eq!(results[62], r#"{"ok":true}"#);
    assert!(
        results[63].contains("the state `note` leaves would nest 65 levels deep")
            && results[63].contains("the state is unchanged"),
        "{}",
        results[63]
    );
    assert_eq!(results[4_999], results[63], "every later note alike");
    // A debug build's loop may reach the script's time limit first.
    let looped = results[5_000];
    assert!(
        looped.contains("levels deep") || looped.contains("time limit"),
        "{looped}"
    );
    assert_eq!(results[5_001], "true", "submit ran after the refusals");
    let mut depth = 0;
    let mut log = &record["state"]["log"];
    while log.is_object() {
        depth += 1;
        log = &log["prev"];
    }
    assert_eq!(depth, 63, "the state as the last accepted note left it");
    let journal = ws.path().join("results/runs/u/journal.jsonl");
    let bytes = std::fs::metadata(&journal).unwrap().len();
    assert!(bytes < 3 << 20, "journal of {bytes} bytes");

    let resumed = run_capped(&ws, &["--resume", "u"]);
    resumed.expect_code(0);
    assert_eq!(fake.count(), 6, "the resume asks nothing: {}", resumed.out);
}
