//! `[dataset]` specs through the real binary: every format loads the same
//! rows, selection is seeded and capped, and every bad input names its file,
//! line and field.

use std::fs;
use std::path::Path;

use crate::common::parquet_file::{self, ParquetRow};
use crate::common::{harness, root, run};
use serde_json::{Value, json};

/// A workspace with the format fixtures next to the spec.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for entry in fs::read_dir(root().join("tests/fixtures/datasets")).unwrap() {
        let path = entry.unwrap().path();
        fs::copy(&path, dir.path().join(path.file_name().unwrap())).unwrap();
    }
    dir
}

/// Writes `spec.toml` reading `dataset` (the `[dataset]` table's body).
fn spec(dir: &Path, dataset: &str) {
    let text = format!(
        "runs = 10\n[dataset]\n{dataset}\n[prompt]\nuser = \"{{{{ q }}}}\"\n\n[[verify]]\nrule = \"exact\"\nexpected = \"answer\"\n"
    );
    fs::write(dir.join("spec.toml"), text).unwrap();
}

/// `harness show --json` of every instance: (exit code, instances, output).
fn show(dir: &Path, extra_args: &[&str]) -> (i32, Vec<Value>, String) {
    let (code, out) = run(harness(dir)
        .args(["show", "spec.toml", "-n", "100", "--json"])
        .args(extra_args));
    let lines = out
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (code, lines, out)
}

/// The instances of `dir/spec.toml`, which must load (`what` names it in failures).
fn loaded(dir: &Path, what: &str) -> Vec<Value> {
    let (code, instances, out) = show(dir, &[]);
    assert_eq!(code, 0, "{what}: {out}");
    instances
}

/// The instances of a `spec.toml` reading `dataset`, which must load.
fn load(dir: &Path, dataset: &str) -> Vec<Value> {
    spec(dir, dataset);
    loaded(dir, dataset)
}

fn vars(instances: &[Value]) -> Vec<Value> {
    instances.iter().map(|i| i["vars"].clone()).collect()
}

fn expected_rows() -> Vec<Value> {
    vec![
        json!({"q": "Сколько будет 2 + 2?", "answer": 4, "topic": "math"}),
        json!({"q": "Столица Франции?", "answer": "Париж", "topic": "geo"}),
        json!({"q": "Сколько ног у паука?", "answer": 8, "topic": "bio"}),
    ]
}

#[test]
fn every_text_format_and_its_gzip_load_the_same_rows() {
    let dir = workspace();
    for dataset in [
        "path = \"rows.jsonl\"",
        "path = \"rows.jsonl.gz\"",
        "path = \"rows.json\"",
        "path = \"rows.json.gz\"",
        "path = \"rows_object.json\"\nkey = \"data\"",
        "path = \"rows.csv\"",
        "path = \"rows.data\"\nformat = \"jsonl\"",
    ] {
        if dataset.contains("rows.data") {
            fs::copy(dir.path().join("rows.jsonl"), dir.path().join("rows.data")).unwrap();
        }
        let instances = load(dir.path(), dataset);
        assert_eq!(vars(&instances), expected_rows(), "{dataset}");
        assert_eq!(instances[1]["messages"][0]["content"], "Столица Франции?");
    }
}

#[test]
fn parquet_rows_with_nested_lists_load() {
    let dir = workspace();
    let rows = [
        ParquetRow {
            q: "Сколько будет 2 + 2?",
            answer: 4,
            topic: "math",
            tags: &["счёт", "лёгкое"],
        },
        ParquetRow {
            q: "Сколько ног у паука?",
            answer: 8,
            topic: "bio",
            tags: &["животные"],
        },
    ];
    parquet_file::write(&dir.path().join("rows.parquet"), &rows);
    let instances = load(dir.path(), "path = \"rows.parquet\"");
    assert_eq!(
        vars(&instances),
        vec![
            json!({"q": "Сколько будет 2 + 2?", "answer": 4, "topic": "math", "tags": ["счёт", "лёгкое"]}),
            json!({"q": "Сколько ног у паука?", "answer": 8, "topic": "bio", "tags": ["животные"]}),
        ]
    );
}

#[test]
fn filter_sample_limit_fields_and_generate_shape_the_instances() {
    let dir = workspace();
    let instances = load(
        dir.path(),
        "path = \"rows.jsonl\"\nfilter = 'row.topic != \"geo\"'\nfields = { q = \"q\", answer = [\"missing\", \"answer\"] }",
    );
    assert_eq!(
        vars(&instances),
        vec![
            json!({"q": "Сколько будет 2 + 2?", "answer": 4}),
            json!({"q": "Сколько ног у паука?", "answer": 8}),
        ]
    );

    // A seeded sample is the same on every load and changes with the seed.
    spec(dir.path(), "path = \"rows.jsonl\"\nsample = 2");
    let (_, a, _) = show(dir.path(), &[]);
    let (_, b, _) = show(dir.path(), &[]);
    assert_eq!((a.len(), vars(&a)), (2, vars(&b)));
    let differs = (1..20).any(|seed| {
        let (_, c, _) = show(dir.path(), &["--seed", &seed.to_string()]);
        vars(&c) != vars(&a)
    });
    assert!(differs, "no seed changed the sample");

    // limit after filter; a [generate] script post-processes each row.
    fs::write(
        dir.path().join("spec.toml"),
        "runs = 10\n[dataset]\npath = \"rows.jsonl\"\nlimit = 2\n[generate]\nscript = '#{ q: row.q, answer: row.answer, n: index * 10 }'\n[prompt]\nuser = \"{{ q }} ({{ n }})\"\n[[verify]]\nrule = \"exact\"\nexpected = \"answer\"\n",
    )
    .unwrap();
    let instances = loaded(dir.path(), "limit and [generate]");
    assert_eq!(instances.len(), 2);
    assert_eq!(
        instances[1]["messages"][0]["content"],
        "Столица Франции? (10)"
    );
}

#[test]
fn splits_interleave_and_runs_caps_them_evenly() {
    let dir = workspace();
    fs::create_dir(dir.path().join("data")).unwrap();
    for split in ["a", "b"] {
        let rows: String = (0..3)
            .map(|i| format!("{{\"q\": \"{split}{i}\", \"answer\": {i}}}\n"))
            .collect();
        fs::write(dir.path().join(format!("data/{split}.jsonl")), rows).unwrap();
    }
    let instances = load(
        dir.path(),
        "path = \"data/{split}.jsonl\"\nsplits = [\"a\", \"b\"]",
    );
    let order: Vec<(&str, &str)> = instances
        .iter()
        .map(|i| {
            (
                i["vars"]["q"].as_str().unwrap(),
                i["vars"]["split"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            ("a0", "a"),
            ("b0", "b"),
            ("a1", "a"),
            ("b1", "b"),
            ("a2", "a"),
            ("b2", "b")
        ]
    );
    // `runs` below the row count keeps the first instances, so both splits stay represented.
    let text = fs::read_to_string(dir.path().join("spec.toml")).unwrap();
    fs::write(
        dir.path().join("spec.toml"),
        text.replace("runs = 10", "runs = 4"),
    )
    .unwrap();
    let (code, out) = run(harness(dir.path()).args(["check", "spec.toml", "--golden", "g"]));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("4 instances"), "{out}");
}

#[test]
fn history_turns_follow_the_system_prompt() {
    let dir = workspace();
    fs::write(
        dir.path().join("spec.toml"),
        "[dataset]\npath = \"rrr_published.jsonl\"\n[prompt]\nhistory = \"messages\"\nsystem = \"Маршруты: {{ routes | length }}\"\n[[verify]]\nrule = \"exact\"\nexpected = \"answer_id\"\n",
    )
    .unwrap();
    let instances = loaded(dir.path(), "history");
    assert_eq!(
        instances[2]["messages"],
        json!([
            {"role": "system", "content": "Маршруты: 3"},
            {"role": "user", "content": "Спасибо, всё понятно."},
            {"role": "assistant", "content": "Рады помочь! Остались вопросы?"},
            {"role": "user", "content": "Нет, до свидания."},
        ])
    );
}

/// Loads `spec.toml` with `check` and returns the output, which must be a failure (exit 2).
fn fails(dir: &Path) -> String {
    let (code, out) = run(harness(dir).args(["check", "spec.toml", "--golden", "g"]));
    assert_eq!(code, 2, "{out}");
    out
}

/// Bad inputs and what `check` must say: (file, contents, `[dataset]` extra,
/// expected fragments separated by |).
const BAD_ROWS: [(&str, &str, &str, &str); 19] = [
    (
        "bad.jsonl",
        "{\"q\": \"a\", \"answer\": 1}\n{\"q\": \"b\", \"answer\": 2}\n{\"q\": \"c\" \"answer\": 3}\n",
        "",
        "bad.jsonl:3:11|error[dataset]: row is not valid JSON: expected `,` or `}`\n",
    ),
    (
        "bad.jsonl",
        "{\"q\": \"a\", \"answer\": 1}\n[1, 2]\n",
        "",
        "bad.jsonl:2:1|row 2: a row must be a JSON object, not a list",
    ),
    (
        "bad.jsonl",
        "{\"q\": \"a\", \"answer\": 1}\n{\"q\": \"b\", \"ans\": 2}\n",
        "fields = { q = \"q\", answer = \"answer\" }",
        "bad.jsonl:2:1|row 2: field `answer` (for variable `answer`) is missing; the row has: ans, q",
    ),
    (
        "bad.json",
        "[\n  {\"q\": \"a\", \"answer\": 1},\n  \"oops\"\n]\n",
        "",
        "bad.json:3:1|row 3: a row must be a JSON object, not a string",
    ),
    (
        "bad.json",
        "{\"rows\": [], \"more\": []}",
        "",
        "bad.json:1:1|set `key` to the list of rows (lists: more, rows)",
    ),
    (
        "bad.json",
        "{\"rows\": []}",
        "key = \"data\"",
        "bad.json:1:1|the object has no key `data` (it has: rows)",
    ),
    (
        "bad.json",
        "[{\"q\": 1,}]",
        "",
        "bad.json:1:10|not valid JSON",
    ),
    (
        "bad.csv",
        "q,answer\na,1\nb,2,3\n",
        "",
        "bad.csv:3:1|bad CSV",
    ),
    (
        "bad.csv",
        "q,q\na,1\n",
        "",
        "bad.csv:1:1|the header names column `q` twice",
    ),
    (
        "bad.parquet",
        "not parquet at all",
        "",
        "bad.parquet:1:1|not a readable Parquet file",
    ),
    (
        "bad.jsonl.gz",
        "not gzip",
        "",
        "bad.jsonl.gz:1:1|cannot unpack gzip",
    ),
    (
        "bad.txt",
        "x",
        "",
        "spec.toml:3:8|cannot tell the format of",
    ),
    (
        "bad.jsonl",
        "{\"q\": \"a\", \"answer\": 1}\n",
        "filter = 'row.q.len()'",
        "spec.toml:4:10|[dataset] filter on the row at bad.jsonl:1 must return true or false, but it returned i64",
    ),
    (
        "bad.jsonl",
        "{\"q\": \"a\", \"answer\": 1}\n",
        "filter = 'row.missing == 1'",
        "spec.toml:4:15|filter on the row at bad.jsonl:1: Property not found: missing",
    ),
    (
        "bad.jsonl",
        "{\"q\": \"a\", \"answer\": 1}\n",
        "filter = 'row.q =='",
        "spec.toml:4:19|Script is incomplete",
    ),
    (
        "bad.jsonl",
        "{\"q\": \"a\", \"answer\": 1}\n",
        "filter = 'false'",
        "spec.toml:2:1|no rows left after `filter`, `sample` and `limit`",
    ),
    (
        "bad.jsonl",
        "{\"q\": \"a\", \"answer\": 1}\n",
        "map = '42'",
        "spec.toml:4:7|[dataset] map on the row at bad.jsonl:1 must return a map of instance variables",
    ),
    (
        "bad.jsonl",
        "{\"q\": \"a\", \"answer\": 1}\n",
        "split = \"x\"\nsplits = [\"y\"]",
        "use `split` (one) or `splits` (several), not both",
    ),
    (
        "bad.jsonl",
        "{\"q\": \"a\", \"answer\": 1}\n",
        "splits = [\"x\", \"y\"]",
        "several splits need `{split}` in `path`",
    ),
];

#[test]
fn bad_rows_name_their_file_line_and_field() {
    let dir = workspace();
    let d = dir.path();
    for (file, contents, extra, want) in BAD_ROWS {
        fs::write(d.join(file), contents).unwrap();
        spec(d, &format!("path = \"{file}\"\n{extra}"));
        let out = fails(d);
        for fragment in want.split('|') {
            assert!(
                out.contains(fragment),
                "{file} with {extra:?}: expected `{fragment}` in:\n{out}"
            );
        }
    }
}

#[test]
fn missing_files_hub_paths_and_history_errors() {
    let dir = workspace();
    let d = dir.path();
    spec(d, "path = \"nowhere.jsonl\"");
    let out = fails(d);
    assert!(
        out.contains("spec.toml:3:8") && out.contains("cannot read"),
        "{out}"
    );

    spec(d, "path = \"data/{split}.jsonl\"");
    assert!(fails(d).contains("`path` has `{split}` but no `split` or `splits` is given"));

    spec(d, "path = \"hf://owner/name\"");
    assert!(fails(d).contains("an hf:// dataset needs `split"));

    spec(d, "path = \"hf://owner/../x\"\nsplit = \"train\"");
    assert!(fails(d).contains("is not `hf://owner/name`"));

    // History turns are checked: only user and assistant, each naming its row and turn.
    fs::write(
        d.join("h.jsonl"),
        "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"answer\": 1}\n{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"system\", \"content\": \"b\"}], \"answer\": 2}\n",
    )
    .unwrap();
    fs::write(
        d.join("spec.toml"),
        "[dataset]\npath = \"h.jsonl\"\n[prompt]\nhistory = \"messages\"\n[[verify]]\nrule = \"exact\"\nexpected = \"answer\"\n",
    )
    .unwrap();
    let out = fails(d);
    assert!(
        out.contains("h.jsonl:2:1")
            && out.contains("instance 1: history `messages`: turn 1: role `system` is not allowed (only user and assistant)"),
        "{out}"
    );
}
