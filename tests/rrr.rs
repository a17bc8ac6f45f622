//! The RRR benchmark end to end against a fake Ollama server: both row shapes
//! load with the shipped spec, the request carries the spec's options and the
//! JSON schema as `format`, invalid answers are re-asked up to 3 times, and
//! the reports break accuracy down by split, with the RRR CSV per model.

use std::fs;
use std::path::Path;

use crate::common::fake_server::{FakeServer, Reply};
use crate::common::{harness, report, root, run};
use serde_json::{Value, json};

/// A workspace with the shipped RRR spec and schemas, and `rows(split)` as each split's file.
fn workspace(rows: impl Fn(&str) -> String) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for sub in ["specs", "schemas", "datasets/rrr_ru"] {
        fs::create_dir_all(d.join(sub)).unwrap();
    }
    fs::copy(root().join("specs/rrr.toml"), d.join("specs/rrr.toml")).unwrap();
    fs::copy(
        root().join("schemas/route.schema.json"),
        d.join("schemas/route.schema.json"),
    )
    .unwrap();
    for split in ["routes_3", "routes_5", "routes_7", "routes_9"] {
        fs::write(
            d.join(format!("datasets/rrr_ru/{split}.jsonl")),
            rows(split),
        )
        .unwrap();
    }
    dir
}

fn show_all(dir: &Path) -> String {
    let (code, out) = run(harness(dir).args(["show", "specs/rrr.toml", "-n", "100", "--json"]));
    assert_eq!(code, 0, "{out}");
    out
}

#[test]
fn published_and_original_export_shapes_load_alike() {
    let fixture =
        |name: &str| fs::read_to_string(root().join("tests/fixtures/datasets").join(name)).unwrap();
    let published = show_all(workspace(|_| fixture("rrr_published.jsonl")).path());
    let export = show_all(workspace(|_| fixture("rrr_export.jsonl")).path());
    assert_eq!(published, export);
    let first: Value = serde_json::from_str(published.lines().next().unwrap()).unwrap();
    assert_eq!(first["vars"]["answer_id"], 2198);
    assert_eq!(first["vars"]["split"], "routes_3");
    let messages = first["messages"].as_array().unwrap();
    assert_eq!(
        messages.len(),
        3,
        "system prompt, then the two dialogue turns"
    );
    let system = messages[0]["content"].as_str().unwrap();
    assert!(
        system.ends_with("Маршруты:\n3519 - Прекращение диалога ввиду неадекватности абонента\n4630 - Информация о графике работы организации\n2198 - Информация об адресе организации"),
        "{system}"
    );
    assert_eq!(
        messages[1],
        json!({"role": "assistant", "content": "Здравствуйте! Как я могу вам помочь?"})
    );
    assert_eq!(
        messages[2],
        json!({"role": "user", "content": "Где находится ваш офис?"})
    );
}

/// One row whose user turn carries a marker the fake server answers by.
fn row(kind: &str, split: &str, n: usize) -> String {
    let routes: Vec<Value> = (1..=n)
        .map(|i| json!({"route_id": 100 + i, "description": format!("Маршрут {i}")}))
        .collect();
    let row = json!({
        "messages": [{"role": "user", "content": format!("[{kind}] вопрос из {split}")}],
        "routes": routes,
        "answer_id": 101,
    });
    row.to_string() + "\n"
}

/// A: right, inside a think block; B: prose first, right when asked again;
/// C: never satisfies the schema; D: valid but wrong.
fn reply(prompt: &str, attempt: usize) -> Reply {
    let text = if prompt.starts_with("[A]") {
        "<think>Похоже на маршрут 1.</think>{\"reasoning\": \"Маршрут 1.\", \"route_id\": 101}"
            .to_owned()
    } else if prompt.starts_with("[B]") && attempt == 0 {
        "Думаю, это маршрут 101.".to_owned()
    } else if prompt.starts_with("[B]") {
        "{\"reasoning\": \"Маршрут 1.\", \"route_id\": 101}".to_owned()
    } else if prompt.starts_with("[C]") {
        "{\"route_id\": \"101\"}".to_owned()
    } else {
        "{\"reasoning\": \"Маршрут 2.\", \"route_id\": 102}".to_owned()
    };
    Reply::Text(text)
}

#[test]
fn a_run_reports_accuracy_per_split_and_writes_the_rrr_csv() {
    let dir = workspace(|split| {
        let (kinds, n): (&[&str], usize) = match split {
            "routes_3" => (&["A", "B", "C"], 3),
            "routes_5" => (&["A", "B"], 5),
            "routes_7" => (&["A", "D"], 7),
            _ => (&["C"], 9),
        };
        kinds.iter().map(|k| row(k, split, n)).collect()
    });
    let fake = FakeServer::start(|r| reply(&r.prompt, r.attempt));
    let (code, out) = run(harness(dir.path())
        .args([
            "run",
            "specs/rrr.toml",
            "-m",
            "ollama:llama3.1:8b-instruct-q4_K_M",
        ])
        .args([
            "--no-progress",
            "--format",
            "json",
            "--format",
            "csv",
            "--golden",
            "golden",
        ])
        .env("OLLAMA_HOST", fake.host_port()));
    assert_eq!(code, 0, "{out}");

    // The spec's request: its options, the schema as `format`, the dialogue after the system prompt.
    let requests = fake.requests();
    let first = &requests[0].body;
    assert_eq!(first["options"]["temperature"], 0.1);
    assert_eq!(first["options"]["num_ctx"], 1000);
    assert_eq!(first["options"]["num_predict"], 1000);
    assert_eq!(
        first["format"]["required"],
        json!(["reasoning", "route_id"])
    );
    assert_eq!(first["messages"][0]["role"], "system");
    // 8 instances; B asked twice, each C three times.
    assert_eq!(requests.len(), 8 + 2 + 2 * 2, "{out}");

    // Re-asks: B needed two asks, C used all three and stays invalid.
    let runs = dir.path().join("results/runs");
    let run_dir = fs::read_dir(&runs).unwrap().next().unwrap().unwrap().path();
    let journal = fs::read_to_string(run_dir.join("journal.jsonl")).unwrap();
    for line in journal.lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        let kind = &r["vars"]["messages"][0]["content"].as_str().unwrap()[..3];
        let want = match kind {
            "[B]" => (2, true, None),
            "[C]" => (3, false, Some("schema_mismatch")),
            "[D]" => (1, false, Some("wrong_value")),
            _ => (1, true, None),
        };
        let got = (
            r["attempts"].as_u64().unwrap(),
            r["passed"].as_bool().unwrap(),
            r["failure"].as_str(),
        );
        assert_eq!(got, want, "{kind}: {r}");
    }

    // Terminal: the per-split table after the summary.
    let lines: Vec<&str> = out.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains(" by split "))
        .expect("a per-split table");
    insta::assert_snapshot!("rrr_terminal_by_split", lines[at..at + 4].join("\n"));

    let file = |prefix: &str, ext: &str| report(&dir.path().join("results"), prefix, ext);
    // The RRR CSV: times vary from run to run, everything else is exact.
    let rrr = file("rrr_llama3.1_8b-instruct-q4_K_M_", "csv");
    let stable: Vec<String> = rrr
        .lines()
        .map(|l| {
            let mut cells: Vec<&str> = l.split(',').collect();
            assert!(
                cells.iter().all(|c| !c.is_empty()),
                "every column filled: {l}"
            );
            if cells[10] != "avg_response_time" {
                assert!(cells[10].parse::<f64>().is_ok(), "{l}");
                cells[10] = "<seconds>";
            }
            cells.join(",")
        })
        .collect();
    insta::assert_snapshot!("rrr_csv", stable.join("\n"));

    let md = file("report_", "md");
    assert!(md.contains("## Results by Group"), "{md}");
    assert!(md.contains("| **llama3.1:8b-instruct-q4_K_M** | 66.7% ±36.5 (2/3) | 100.0% ±32.9 (2/2) | 50.0% ±40.5 (1/2) | 0.0% ±39.7 (0/1) |"), "{md}");
    let csv = file("report_", "csv");
    assert!(csv.contains(",split=routes_5,,"), "{csv}");
    let report: Value = serde_json::from_str(&file("report_", "json")).unwrap();
    let cell = &report["models"][0]["specs"][0];
    assert_eq!(cell["groups"]["split"]["routes_9"]["valid"], 0);
    assert_eq!(cell["groups"]["split"]["routes_3"]["passed"], 2);
}
