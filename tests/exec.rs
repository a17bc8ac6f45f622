//! Programs as models (`exec:`), through the real binary: the fixture
//! program `tests/fixtures/exec/model.py` answers as text or as JSON with
//! usage, echoes its stdin and environment, fails with hostile stderr, or
//! sleeps past its timeout. Every call is counted in `calls.log` of the
//! workspace (the program runs in the directory of harness.toml). Shown: the
//! cache (a rerun makes 0 calls, a changed command asks again), `per_call`
//! prices and a budget that stops the run, `--resume`, golden record and
//! replay, a program as the judge, and, when Tesseract is installed, three
//! real OCR lines.

use std::time::{Duration, Instant};

use crate::common::workspace::Workspace;
use crate::common::{root, run};
use serde_json::Value;

/// A workspace with `specs/<spec>` and `model.py` of the fixtures and
/// `models` as harness.toml.
fn workspace(spec: &str, models: &str) -> Workspace {
    let ws = Workspace::new();
    ws.copy_fixture(&format!("exec/{spec}"));
    let fixture = root().join("tests/fixtures/exec/model.py");
    std::fs::copy(fixture, ws.path().join("model.py")).unwrap();
    ws.write("harness.toml", models);
    ws
}

/// `[models.NAME]` running model.py in `mode` with the templated `arg`.
fn model(name: &str, mode: &str, arg: &str, extra: &str) -> String {
    let python = python();
    format!(
        "[models.{name}]\nprovider = \"exec\"\ncommand = [\"{python}\", \"model.py\", \"{mode}\", \"{arg}\"]\n{extra}\n"
    )
}

/// The interpreter itself, not a launcher (pyenv's shim adds variables of its own).
fn python() -> String {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Calls the program has had.
fn calls(ws: &Workspace) -> usize {
    std::fs::read_to_string(ws.path().join("calls.log"))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

fn of<'a>(journal: &'a [Value], model: &str) -> Vec<&'a Value> {
    journal.iter().filter(|r| r["model"] == model).collect()
}

#[test]
fn answers_are_checked_priced_and_cached_and_a_changed_command_asks_again() {
    let models = model("texty", "text", "{{ answer }}", "")
        + model(
            "jsony",
            "json",
            "The sum is {{ answer }}.",
            "price = { per_call = 0.25 }",
        )
        .as_str();
    let ws = workspace("sums.toml", &models);
    let run = ["specs/", "-m", "exec:texty", "-m", "jsony"];
    let out = ws.run_ok(&run);
    assert_eq!(calls(&ws), 8, "{out}");
    let journal = ws.last_journal();
    assert_eq!(journal.len(), 8);
    assert!(journal.iter().all(|r| r["passed"] == true), "{journal:#?}");
    for r in of(&journal, "jsony") {
        assert_eq!(
            (r["tokens_in"].as_u64(), r["tokens_out"].as_u64()),
            (Some(11), Some(2))
        );
        assert_eq!(r["cost"]["amount"], 0.25, "{r:#}");
    }
    for r in of(&journal, "texty") {
        // The final newline is not part of the answer.
        let answer = r["instance"].as_u64().unwrap() + 1;
        assert_eq!(r["response"], answer.to_string(), "{r:#}");
        assert_eq!(r["attempts"], 1, "{r:#}");
    }

    // Again: every answer from the cache, none asked, the price saved.
    ws.run_ok(&run);
    assert_eq!(calls(&ws), 8);
    let journal = ws.last_journal();
    assert!(journal.iter().all(|r| r["cached"] == true), "{journal:#?}");
    assert!(
        of(&journal, "jsony")
            .iter()
            .all(|r| r["cost"]["saved"] == 0.25)
    );

    // Another command line is another question.
    let changed = models.replace("The sum is", "It is");
    ws.write("harness.toml", &changed);
    ws.run_ok(&run);
    assert_eq!(calls(&ws), 12);
}

#[test]
fn the_program_reads_the_request_and_only_the_environment_it_is_given() {
    let models = model("echo", "stdin", "{{ lang }}", "")
        + model(
            "env",
            "env",
            "-",
            "env = [\"LANG\", \"HARNESS_TEST_UNSET\"]\nenv_set = { MODE = \"strict\" }",
        )
        .as_str();
    let ws = workspace("sums.toml", &models);
    let mut cmd = ws.run_cmd(&["specs/", "-m", "echo", "-m", "env", "--runs", "1"]);
    cmd.env("OPENAI_API_KEY", "sk-fake-0123456789abcdef")
        .env("LANG", "C.UTF-8");
    let (code, out) = run(&mut cmd);
    assert_eq!(code, 0, "{out}");
    let journal = ws.last_journal();
    let echo = &of(&journal, "echo")[0];
    let stdin: Value = serde_json::from_str(echo["response"].as_str().unwrap()).unwrap();
    assert_eq!(stdin["model"], "echo", "{stdin:#}");
    assert_eq!(stdin["messages"][0]["content"], "0 + 1 = ?");
    assert_eq!(stdin["vars"]["answer"], 1);
    let argv = serde_json::json!([python(), "model.py", "stdin", "ru"]);
    assert_eq!(stdin["argv"], argv);
    assert_eq!(
        (stdin["max_tokens"].as_u64(), stdin["temperature"].as_f64()),
        (Some(1024), Some(0.0))
    );
    let env = &of(&journal, "env")[0];
    let names: Vec<String> = serde_json::from_str(env["response"].as_str().unwrap()).unwrap();
    // The run's environment held an API key and more: the program got none of it.
    assert_eq!(names, ["LANG", "MODE", "PATH"], "{out}");
}

#[test]
fn a_failing_or_hanging_program_becomes_an_error_record_with_escaped_stderr() {
    let models = model("broken", "fail", "{{ expr }}", "")
        + model("slow", "sleep", "30", "timeout_secs = 1").as_str();
    let ws = workspace("sums.toml", &models);
    let started = Instant::now();
    let (code, out) = ws.run(&["specs/", "-m", "broken", "-m", "slow", "--runs", "2"]);
    assert_eq!(code, 4, "errors end the run with exit 4:\n{out}");
    // Two timeouts of 1 s each at 4 calls at once, no retries: well under 30 s.
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(
        calls(&ws),
        4,
        "no retries: a program that failed fails alike"
    );
    assert!(!out.contains('\x1b') && !out.contains('\u{202e}'), "{out}");
    let journal = ws.last_journal();
    for r in of(&journal, "broken") {
        assert_eq!(r["failure"], "program_error", "{r:#}");
        let error = r["error"].as_str().unwrap();
        assert!(
            error.contains("ended with exit status: 3; stderr: …"),
            "{error}"
        );
        assert!(
            error.contains("\\u001B[2J\\u001B[31mboom\\u202E\\u0007 "),
            "{error}"
        );
        assert!(!error.contains('\x1b') && !error.contains('\n'), "{error}");
        assert!(
            error.len() < 2600,
            "clipped to the tail: {} bytes",
            error.len()
        );
    }
    for r in of(&journal, "slow") {
        assert_eq!(r["failure"], "timeout", "{r:#}");
    }
}

#[test]
fn a_per_call_budget_stops_the_run_and_resume_finishes_it() {
    let models = model(
        "paid",
        "text",
        "{{ answer }}",
        "price = { per_call = 1.0 }\nconcurrency = 1",
    );
    let ws = workspace("sums.toml", &models);
    let (code, out) = ws.run(&["specs/", "-m", "paid", "--max-cost", "2.5"]);
    assert_eq!(code, 5, "the budget's exit code:\n{out}");
    assert_eq!((calls(&ws), ws.last_journal().len()), (2, 2), "{out}");
    let (code, out) = ws.run(&["--resume", "latest", "--max-cost", "10"]);
    assert_eq!(code, 0, "{out}");
    let journal = ws.last_journal();
    assert_eq!((calls(&ws), journal.len()), (4, 4), "{out}");
    let spent: f64 = journal
        .iter()
        .map(|r| r["cost"]["amount"].as_f64().unwrap())
        .sum();
    assert_eq!(spent, 4.0);
}

#[test]
fn golden_transcripts_record_a_program_and_replay_it_without_it() {
    let ws = workspace("sums.toml", &model("texty", "json", "{{ answer }}", ""));
    ws.run_ok(&["specs/", "-m", "texty", "--bless"]);
    let transcript = ws.path().join("golden/exec_sums/texty.jsonl");
    assert_eq!(
        std::fs::read_to_string(&transcript)
            .unwrap()
            .lines()
            .count(),
        4
    );
    std::fs::remove_file(ws.path().join("model.py")).unwrap();
    ws.run_ok(&["specs/", "-m", "replay:texty"]);
    assert_eq!(calls(&ws), 4, "the replay runs no program");
    let journal = ws.last_journal();
    assert_eq!(journal.len(), 4);
    let replayed = |r: &Value| r["passed"] == true && r["tokens_in"] == 11;
    assert!(journal.iter().all(replayed), "{journal:?}");
}

#[test]
fn a_program_judges_with_the_instance_it_judges() {
    let models = model("m", "text", "{{ topic }}", "")
        + model("j", "judge", "{{ topic }}: {{ model }}", "").as_str();
    let ws = Workspace::new();
    ws.copy_spec("rubric_quality.toml")
        .copy_spec("rubrics/quality_5.toml");
    std::fs::copy(
        root().join("tests/fixtures/exec/model.py"),
        ws.path().join("model.py"),
    )
    .unwrap();
    ws.write("harness.toml", &models);
    let args = [
        "specs/rubric_quality.toml",
        "-m",
        "m",
        "--judge",
        "exec:j",
        "--runs",
        "2",
    ];
    let out = ws.run_ok(&args);
    assert_eq!(calls(&ws), 4, "{out}");
    for r in ws.last_journal() {
        let judge = &r["rules"][0]["judge"];
        let reasoning = format!("{}: j", r["vars"]["topic"].as_str().unwrap());
        assert_eq!(
            (judge["level"].as_f64(), &judge["reasoning"][0]),
            (Some(4.0), &Value::from(reasoning)),
            "{r:#}"
        );
        assert_eq!(r["score"], 0.75);
    }
    ws.run_ok(&args);
    assert_eq!(calls(&ws), 4, "judgements come from the cache too");
}

#[test]
fn tesseract_reads_three_lines_exactly() {
    let found = std::process::Command::new("tesseract")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("skipped: `tesseract` is not on PATH (Debian: tesseract-ocr, -eng, -rus)");
        return;
    }
    let spec = root().join("tests/fixtures/exec/ocr_lines.toml");
    let ws = Workspace::new();
    ws.write(
        "harness.toml",
        r#"[models.tesseract]
provider = "exec"
command = ["tesseract", "{{ images[0] }}", "-", "-l", "{% if lang == 'ru' %}rus{% else %}eng{% endif %}", "--psm", "7"]
concurrency = 2
"#,
    );
    let out = ws.run_ok(&[spec.to_str().unwrap(), "-m", "exec:tesseract"]);
    let journal = ws.last_journal();
    assert_eq!(journal.len(), 3, "{out}");
    for r in &journal {
        assert_eq!(r["response"], r["vars"]["text"], "{r:#}");
        assert_eq!(r["passed"], true);
    }
}

/// A program that exits without reading its stdin (`echo`) is asked 40
/// times: every answer is recorded. The request is a file, not a pipe, so
/// the harness never writes into a pipe the program closed (and if it did,
/// the write would fail with EPIPE: SIGPIPE is ignored, see `pipes`).
#[test]
fn a_program_that_never_reads_its_stdin_answers_every_instance() {
    let models = "[models.deaf]\nprovider = \"exec\"\ncommand = [\"echo\", \"{{ answer }}\"]\nconcurrency = 4\n";
    let ws = workspace("sums.toml", models);
    let (code, out) = ws.run(&["specs/", "-m", "deaf", "--runs", "40"]);
    assert_eq!(code, 0, "{out}");
    let journal = ws.last_journal();
    assert_eq!(journal.len(), 40, "{out}");
    assert!(journal.iter().all(|r| r["passed"] == true), "{out}");
}

#[test]
fn two_runs_started_in_one_second_keep_their_own_folders_and_reports() {
    let models = model("texty", "text", "{{ answer }}", "")
        + model("jsony", "json", "The sum is {{ answer }}.", "").as_str();
    let ws = workspace("sums.toml", &models);
    // Started just after a second begins, so both read the same clock second.
    let into_second = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_millis();
    std::thread::sleep(Duration::from_millis(u64::from(1_050 - into_second)));
    let children: Vec<_> = ["texty", "jsony"]
        .map(|m| {
            let mut cmd = ws.run_cmd(&["specs/", "-m", m, "--format", "json"]);
            cmd.stdout(std::process::Stdio::piped());
            cmd.stderr(std::process::Stdio::piped());
            (m, cmd.spawn().unwrap())
        })
        .into_iter()
        .collect();
    let mut reports = Vec::new();
    for (model, child) in children {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{model}: {stdout}{stderr}");
        let path = stdout
            .lines()
            .find_map(|l| l.strip_prefix("report: "))
            .expect("a report path is printed");
        reports.push((model, ws.path().join(path)));
    }
    let dirs = ws.run_dirs();
    assert_eq!(dirs.len(), 2, "{dirs:?}");
    let stamp = |p: &std::path::Path| p.file_name().unwrap().to_string_lossy()[..15].to_owned();
    assert_eq!(
        stamp(&dirs[0]),
        stamp(&dirs[1]),
        "the runs started in one second"
    );
    assert!(dirs.iter().all(|d| ws.journal(d).len() == 4), "{dirs:?}");
    assert_ne!(reports[0].1, reports[1].1);
    for ((model, report), other) in reports.iter().zip(["jsony", "texty"]) {
        let text = std::fs::read_to_string(report).unwrap();
        assert!(text.contains(&format!("`{model}`")), "{text}");
        assert!(!text.contains(&format!("`{other}`")), "{text}");
        // The JSON report beside it, and the raw file, are this run's too.
        let json = std::fs::read_to_string(report.with_extension("json")).unwrap();
        assert!(json.contains(model) && !json.contains(other), "{json}");
    }
    let raw: Vec<_> = std::fs::read_dir(ws.path().join("results/raw"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(raw.len(), 2, "{raw:?}");
}

#[test]
fn the_summary_takes_the_columns_it_is_given_even_through_a_pipe() {
    let ws = workspace("sums.toml", &model("texty", "text", "{{ answer }}", ""));
    ws.run_ok(&["specs/", "-m", "texty"]);
    let widest = |columns: Option<&str>| {
        let mut cmd = crate::common::harness(ws.path());
        cmd.args(["report", "latest", "--results", "results"]);
        match columns {
            Some(c) => cmd.env("COLUMNS", c),
            None => cmd.env_remove("COLUMNS"),
        };
        let (code, out) = run(&mut cmd);
        assert_eq!(code, 0, "{out}");
        out.lines().map(|l| l.chars().count()).max().unwrap()
    };
    // (COLUMNS, the widest line it allows)
    for (columns, at_most) in [(None, 80), (Some("junk"), 80), (Some("10"), 80)] {
        assert!(widest(columns) <= at_most, "{columns:?}");
    }
    assert!(widest(Some("200")) > 80);
}

/// A command naming a variable no instance sets: `harness check` points at
/// the argument in harness.toml, and a run's error causes name it whole.
#[test]
fn an_unknown_variable_in_a_command_is_found_by_check_and_named_by_a_run() {
    let models = model("typo", "text", "{{ answr }}", "")
        + model("fine", "text", "{{ answer }}", "").as_str();
    let ws = workspace("sums.toml", &models);
    let check = |extra: &[&str]| {
        let mut cmd = crate::common::harness(ws.path());
        cmd.args(["check", "specs/", "--bless"]).args(extra);
        run(&mut cmd)
    };
    let (code, out) = check(&["-m", "typo", "-m", "fine"]);
    assert_eq!(code, 2, "{out}");
    // model(...) writes `[models.typo]` on line 1 and its command on line 3.
    assert!(out.contains("harness.toml:3:"), "{out}");
    assert!(
        out.contains(
            "model `typo`, spec `exec_sums`: `command[3]` names variable `answr`, which instance 0 does not set"
        ),
        "{out}"
    );
    assert!(out.contains("did you mean `answer`?"), "{out}");
    assert_eq!(
        out.matches("command[").count(),
        1,
        "one error, not one per instance: {out}"
    );
    // Without a model named, `[run] models` is checked: none here.
    let (code, out) = check(&[]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = check(&["-m", "fine"]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = check(&["-m", "nosuch"]);
    assert_eq!(code, 2, "{out}");

    let (code, out) = ws.run(&["specs/", "-m", "typo"]);
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("4 × model `typo`: `command[3]` names variable `answr`"),
        "{out}"
    );
}
