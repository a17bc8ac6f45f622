//! The shipped BFCL specs against BFCL's own AST checker, through the real
//! binary: one `exec` model per kind of answer in
//! `datasets/bfcl/reference.jsonl` prints, for each row, that answer's
//! calls (`cat` of a file this test writes); `harness run` judges them with
//! the specs' `[[verify]]` as shipped, and every record's verdict must be
//! BFCL's. The 28 probes of `probes.jsonl` run the same way, through copies
//! of the specs over the probes' rows. Beside it, `harness check` names a
//! malformed example episode at its place.

use std::collections::BTreeMap;
use std::fs;

use serde_json::{Map, Value, json};

use crate::common::root;
use crate::common::workspace::Workspace;

const CATEGORIES: [(&str, &str); 5] = [
    ("simple_python", "bfcl_simple"),
    ("multiple", "bfcl_multiple"),
    ("parallel", "bfcl_parallel"),
    ("parallel_multiple", "bfcl_parallel_multiple"),
    ("irrelevance", "bfcl_irrelevance"),
];

fn lines(file: &str) -> Vec<Map<String, Value>> {
    fs::read_to_string(root().join("datasets/bfcl").join(file))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// What the exec program prints for a BFCL answer `[{name: {arg: value}}]`.
fn stdout(answer: &Value) -> String {
    let calls: Vec<Value> = answer
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .flatten()
        .map(|(name, arguments)| json!({"name": name, "arguments": arguments}))
        .collect();
    json!({"text": "", "tool_calls": calls}).to_string()
}

/// The workspace: the specs and their data, the probes as datasets of
/// spec copies (`probes_<spec>`), and an answer file per (kind, row id).
fn workspace(answers: &[Map<String, Value>], ids: &[String]) -> Workspace {
    let ws = Workspace::new();
    fs::create_dir_all(ws.path().join("datasets/bfcl")).unwrap();
    for (category, spec) in CATEGORIES {
        ws.copy_spec(&format!("{spec}.toml"));
        let data = format!("datasets/bfcl/{category}.jsonl");
        fs::copy(root().join(&data), ws.path().join(&data)).unwrap();
        let probes: Vec<String> = lines("probes.jsonl")
            .into_iter()
            .filter(|p| p["category"] == category)
            .map(|p| Value::Object(p).to_string())
            .collect();
        if probes.is_empty() {
            continue;
        }
        ws.write(
            &format!("datasets/bfcl/probes_{category}.jsonl"),
            &(probes.join("\n") + "\n"),
        );
        let text = fs::read_to_string(root().join(format!("specs/{spec}.toml"))).unwrap();
        let text = text
            .replace(
                &format!("{category}.jsonl"),
                &format!("probes_{category}.jsonl"),
            )
            .replace(
                &format!("id = \"{spec}\""),
                &format!("id = \"probes_{spec}\""),
            )
            .replace("runs = 50", &format!("runs = {}", probes.len()));
        ws.write(&format!("specs/probes_{spec}.toml"), &text);
    }
    let mut models = String::new();
    let mut kinds: Vec<&str> = answers
        .iter()
        .map(|a| a["kind"].as_str().unwrap())
        .collect();
    kinds.sort();
    kinds.dedup();
    for kind in &kinds {
        let dir = ws.path().join("answers").join(kind);
        fs::create_dir_all(&dir).unwrap();
        for id in ids {
            fs::write(
                dir.join(format!("{id}.json")),
                r#"{"text": "no answer of this kind"}"#,
            )
            .unwrap();
        }
        // `cat FILE` never reads its stdin, which the harness must survive
        // (the request is a memory file, not a pipe).
        models += &format!(
            r#"[models.{kind}]
provider = "exec"
command = ["cat", "answers/{kind}/{{{{ id }}}}.json"]
concurrency = 8

"#
        );
    }
    for a in answers {
        let file = ws.path().join(format!(
            "answers/{}/{}.json",
            a["kind"].as_str().unwrap(),
            a["id"].as_str().unwrap()
        ));
        fs::write(file, stdout(&a["answer"])).unwrap();
    }
    ws.write("harness.toml", &models);
    ws
}

#[test]
fn every_verdict_of_the_bfcl_specs_is_bfcls() {
    let mut answers = lines("reference.jsonl");
    for mut probe in lines("probes.jsonl") {
        probe.insert("kind".into(), json!("probe"));
        answers.push(probe);
    }
    let mut ids: Vec<String> = CATEGORIES
        .iter()
        .flat_map(|(category, _)| lines(&format!("{category}.jsonl")))
        .chain(lines("probes.jsonl"))
        .map(|row| row["id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    let ws = workspace(&answers, &ids);
    // One run per spec, with the models that have answers for its rows.
    let mut journal = Vec::new();
    let mut out = String::new();
    for (category, spec) in CATEGORIES {
        for (spec, kind_of) in [
            (spec.to_owned(), category),
            (format!("probes_{spec}"), "probe"),
        ] {
            if !ws.path().join(format!("specs/{spec}.toml")).is_file() {
                continue;
            }
            let mut kinds: Vec<&str> = answers
                .iter()
                .filter(|a| {
                    a["category"] == category && (kind_of == "probe") == (a["kind"] == "probe")
                })
                .map(|a| a["kind"].as_str().unwrap())
                .collect();
            kinds.sort();
            kinds.dedup();
            let mut args = vec![format!("specs/{spec}.toml")];
            for kind in kinds {
                args.extend(["-m".to_owned(), format!("exec:{kind}")]);
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            out += &ws.run(&args).1;
            journal.extend(ws.last_journal());
        }
    }
    let verdicts: BTreeMap<(String, String), bool> = journal
        .iter()
        .map(|r| {
            let id = r["vars"]["id"].as_str().unwrap_or_default().to_owned();
            (
                (r["model"].as_str().unwrap().to_owned(), id),
                r["passed"] == true,
            )
        })
        .collect();
    let mut disagree = Vec::new();
    for a in &answers {
        let (kind, id) = (a["kind"].as_str().unwrap(), a["id"].as_str().unwrap());
        match verdicts.get(&(kind.to_owned(), id.to_owned())) {
            Some(passed) if Some(*passed) == a["valid"].as_bool() => {}
            got => disagree.push(format!("{kind} {id}: BFCL {}, harness {got:?}", a["valid"])),
        }
    }
    let agree = answers.len() - disagree.len();
    eprintln!(
        "harness run: {agree} / {} verdicts agree with BFCL ({} records)",
        answers.len(),
        journal.len()
    );
    assert!(answers.len() > 2_000, "{}", answers.len());
    assert!(
        disagree.is_empty(),
        "{} disagreements:\n{}\n\n{out}",
        disagree.len(),
        disagree.join("\n")
    );
}

/// An example's episode is checked before it is judged: one turn of
/// `tool_calls` or a `trajectory`, not both, and only assistant turns and
/// tool results in it; each error at its place in the file.
#[test]
fn malformed_example_episodes_are_named_at_their_place() {
    let spec = |example: &str| {
        format!(
            "id = \"e\"\ntitle = \"e\"\nruns = 1\n[prompt]\nuser = \"q\"\n\n[[verify]]\nrule = \"tool_used\"\ntools = [\"f\"]\n\n[[example]]\nvars = {{}}\npasses = true\n{example}\n"
        )
    };
    let cases = [
        (
            "tool_calls = [{ name = \"f\" }]\ntrajectory = [{ role = \"assistant\" }]",
            "e.toml:15:14",
            "`tool_calls` (one turn) or `trajectory` (an episode), not both",
        ),
        (
            "trajectory = [{ role = \"assistant\" }, { role = \"user\", content = \"hi\" }]",
            "e.toml:14:",
            "an episode's messages are `assistant` turns and `tool` results",
        ),
    ];
    for (example, at, message) in cases {
        let ws = Workspace::new();
        ws.write("specs/e.toml", &spec(example));
        let (code, out) = crate::common::run(crate::common::harness(ws.path()).args([
            "check",
            "specs/e.toml",
            "--golden",
            "golden",
        ]));
        assert_ne!(code, 0, "{out}");
        assert!(
            out.contains(at) && out.contains(message),
            "{example}:\n{out}"
        );
    }
}
