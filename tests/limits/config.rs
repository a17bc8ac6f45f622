//! Limits cases: config (see `tests/limits.rs`). Numbers out of range in
//! `harness.toml` and in specs (`inf`, `nan`, `1e300`, negative, zero,
//! integers past their type) end in a located exit 2, never a panic, a hang
//! or a silent 1 ms; credentials in a `base_url` reach no file and no output.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::capped;
use crate::common::fake_server::{FakeServer, Reply};
use crate::common::harness;
use crate::common::workspace::Workspace;

/// A bad number is refused before anything runs: seconds at most.
const WALL: Duration = Duration::from_secs(30);

/// What an infinite or NaN number's error says.
const NOT_FINITE: &str = "not a finite number";

/// The line and 1-based column of the last occurrence of `needle` in `text`.
fn position(text: &str, needle: &str) -> String {
    let at = text
        .rfind(needle)
        .unwrap_or_else(|| panic!("{needle:?} in {text}"));
    let line = text[..at].matches('\n').count() + 1;
    let column = at - text[..at].rfind('\n').map_or(0, |n| n + 1) + 1;
    format!("{line}:{column}")
}

/// Runs `cmd` capped and checks it ends in exit 2 naming `file:LINE:COL` of
/// `bad` and saying `says`.
fn refused(mut cmd: Command, file: &str, text: &str, bad: &str, says: &str) {
    let at = format!("{file}:{}", position(text, bad));
    capped(&mut cmd, WALL)
        .expect_code(2)
        .expect_output(&at)
        .expect_output(says);
}

#[test]
fn config_numbers_out_of_range_are_located_exit_2() {
    // (the lines of `[models.m]` after its provider, the value's text, what the error says)
    let cases: &[(&str, &str, &str)] = &[
        ("timeout_secs = inf", "inf", NOT_FINITE),
        ("timeout_secs = -inf", "-inf", NOT_FINITE),
        ("timeout_secs = nan", "nan", NOT_FINITE),
        ("timeout_secs = 1e300", "1e300", "above 0 and at most 86400"),
        ("timeout_secs = 1e999", "1e999", NOT_FINITE),
        ("timeout_secs = -5", "-5", "above 0 and at most 86400"),
        ("timeout_secs = 0", "0", "timeout_secs = 0 is out of range"),
        ("requests_per_minute = 0", "0", "from 1 to 1000000"),
        ("concurrency = 0", "0", "from 1 to 1024"),
        ("concurrency = 100000000", "100000000", "from 1 to 1024"),
        ("max_retries = 4000000000", "4000000000", "from 0 to 100"),
        ("max_n = 0", "0", "from 1 to 128"),
        ("max_n = 5000000000", "5000000000", "u32"),
        ("concurrency = -3", "-3", "or \"auto\""),
        ("concurrency = \"fast\"", "\"fast\"", "or \"auto\""),
        (
            "concurrency = \"auto\"\nmax_concurrency = 0",
            "0",
            "from 1 to 1024",
        ),
        (
            "concurrency = 4\nmax_concurrency = 16",
            "16",
            "ceiling of concurrency = \"auto\"",
        ),
        ("options = { temperature = nan }", "nan", NOT_FINITE),
        ("options = { top_p = 0 }", "0", "top_p = 0 is out of range"),
        (
            "options = { extra_body = { a = [1.0, inf] } }",
            "inf",
            NOT_FINITE,
        ),
        (
            "server = { ready_timeout_secs = 1e300 }",
            "1e300",
            "at most 86400",
        ),
        (
            "server = { gpu_memory_utilization = -1 }",
            "-1",
            "above 0 and at most 1",
        ),
        ("price = { per_call = inf }", "inf", NOT_FINITE),
    ];
    for (line, bad, says) in cases {
        let ws = Workspace::new();
        let text = format!(
            "[models.m]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n{line}\n"
        );
        ws.write("harness.toml", &text);
        refused(ws.run_cmd(&["-m", "m"]), "harness.toml", &text, bad, says);
    }
}

#[test]
fn exec_timeouts_and_run_numbers_out_of_range_are_located_exit_2() {
    // On exec models `nan`, `-1` and `0` once ran as a 1 ms limit.
    let exec = "[models.e]\nprovider = \"exec\"\ncommand = [\"cat\"]\n";
    let cases: &[(String, &str, &str)] = &[
        (format!("{exec}timeout_secs = nan\n"), "nan", NOT_FINITE),
        (format!("{exec}timeout_secs = -1\n"), "-1", "out of range"),
        (format!("{exec}timeout_secs = 0\n"), "0", "out of range"),
        (format!("{exec}timeout_secs = inf\n"), "inf", NOT_FINITE),
        ("[run]\nruns = 0\n".into(), "0", "from 1 to 1000000"),
        ("[run]\nmax_cost = nan\n".into(), "nan", NOT_FINITE),
        ("[run]\nmax_cost = -1\n".into(), "-1", "of 0 or more"),
        ("[run]\nmax_tokens_total = 0\n".into(), "0", "of 1 or more"),
        (
            "[run]\nruns = 99999999999999999999\n".into(),
            "99999999999999999999",
            "",
        ),
    ];
    for (text, bad, says) in cases {
        let ws = Workspace::new();
        ws.write("harness.toml", text);
        refused(ws.run_cmd(&["-m", "e"]), "harness.toml", text, bad, says);
    }
}

/// A spec that checks clean; cases append to it.
const SPEC: &str = r#"id = "s"
runs = 2

[prompt]
user = "Say 4."

[[verify]]
rule = "exact"
value = "4"

[[example]]
vars = {}
response = "4"
passes = true
"#;

#[test]
fn spec_numbers_out_of_range_are_located_exit_2() {
    let ws = Workspace::new();
    ws.write("specs/s.toml", SPEC);
    let check = ["check", "specs/s.toml", "--bless", "--golden", "golden"];
    capped(harness(ws.path()).args(check), WALL).expect_code(0);
    // (what replaces or follows a part of SPEC, the bad value's text, what the error says)
    let cases: &[(&str, &str, &str, &str)] = &[
        ("runs = 2", "runs = inf", "inf", NOT_FINITE),
        ("runs = 2", "runs = 5000000000", "5000000000", "u32"),
        ("runs = 2", "runs = 2000000", "2000000", "from 1 to 1000000"),
        (
            "runs = 2",
            "runs = 2\n[data]\nx = { y = nan }",
            "nan",
            NOT_FINITE,
        ),
        (
            "runs = 2",
            "runs = 2\n[request]\ntemperature = nan",
            "nan",
            NOT_FINITE,
        ),
        (
            "runs = 2",
            "runs = 2\n[request]\ntop_p = 1e999",
            "1e999",
            NOT_FINITE,
        ),
        (
            "runs = 2",
            "runs = 2\n[request]\nattempts = 1000",
            "1000",
            "from 1 to 100",
        ),
        (
            "runs = 2",
            "runs = 2\n[request]\nnum_ctx = 0",
            "0",
            "of 1 or more",
        ),
        ("runs = 2", "runs = 2\n[request]\nseed = -1", "-1", "u64"),
        (
            "runs = 2",
            "runs = 2\n[sampling]\nn = 1000000",
            "1000000",
            "from 1 to 1000",
        ),
        (
            "runs = 2",
            "runs = 2\n[golden]\ninstances = 0",
            "0",
            "at least 1",
        ),
        (
            "passes = true",
            "passes = true\nscore = 1.5",
            "1.5",
            "from 0 to 1",
        ),
        (
            "passes = true",
            "passes = true\ntimeout_secs = -1",
            "-1",
            "at most 3600",
        ),
        (
            "value = \"4\"",
            "value = \"4\"\nweight = 1e300",
            "1e300",
            "at most 1000000",
        ),
        (
            "value = \"4\"",
            "value = \"4\"\nweight = -inf",
            "-inf",
            NOT_FINITE,
        ),
    ];
    for (part, replacement, bad, says) in cases {
        let text = SPEC.replacen(part, replacement, 1);
        ws.write("specs/s.toml", &text);
        let mut cmd = harness(ws.path());
        cmd.args(check);
        refused(cmd, "specs/s.toml", &text, bad, says);
    }
}

#[test]
fn judge_and_code_numbers_out_of_range_are_located_exit_2() {
    let ws = Workspace::new();
    let judge = "[[verify]]\nrule = \"judge\"\nrubric = [{ level = 1, name = \"bad\", criteria = \"x\" }, { level = 5, name = \"good\", criteria = \"y\" }]\n";
    let cases: &[(String, &str, &str)] = &[
        (
            format!("{judge}temperature = 9\n"),
            "9",
            "temperature = 9 is out of range",
        ),
        (
            format!("{judge}max_tokens = 0\n"),
            "0",
            "max_tokens = 0 is out of range",
        ),
        (
            format!("{judge}attempts = 0\n"),
            "0",
            "attempts = 0 is out of range",
        ),
        (
            judge.replace("level = 5", "level = 9223372036854775807"),
            "[{",
            "level 9223372036854775807 is out of range",
        ),
        (
            "[[verify]]\nrule = \"code\"\ntests = \"assert True\"\nmemory_mb = 17592186044416\n"
                .into(),
            "17592186044416",
            "memory_mb must be at least 16 and at most 1048576",
        ),
    ];
    for (rule, bad, says) in cases {
        let text = format!("runs = 1\n[prompt]\nuser = \"x\"\n{rule}");
        ws.write("specs/j.toml", &text);
        let mut cmd = harness(ws.path());
        cmd.args(["check", "specs/j.toml"]);
        refused(cmd, "specs/j.toml", &text, bad, says);
    }
}

/// A password and a query key that must show nowhere.
const PASSWORD: &str = "pa55word";
const QUERY_KEY: &str = "SECRETSECRET";

/// `base` (`http://127.0.0.1:PORT/v1`) with credentials in it.
fn with_credentials(base: &str) -> String {
    let rest = base.strip_prefix("http://").expect("an http URL");
    format!("http://user:{PASSWORD}@{rest}?api-key={QUERY_KEY}")
}

/// Panics when a file under `dir` holds a secret (bytes: the cache too).
fn assert_no_secret_in_files(dir: &Path) {
    for path in crate::common::files_under(dir) {
        let bytes = std::fs::read(&path).unwrap();
        for secret in [PASSWORD, QUERY_KEY] {
            let found = bytes.windows(secret.len()).any(|w| w == secret.as_bytes());
            assert!(!found, "{secret} is in {}", path.display());
        }
    }
}

fn assert_no_secret_in(out: &str) {
    for secret in [PASSWORD, QUERY_KEY] {
        assert!(!out.contains(secret), "{secret} is in the output:\n{out}");
    }
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn url_credentials_reach_no_file_and_no_output_yet_the_request_uses_them() {
    let fake = FakeServer::start(|_| Reply::Correct);
    let ws = Workspace::new();
    ws.copy_spec("t06_mathematics.toml");
    let url = with_credentials(&fake.openai_base());
    ws.write(
        "harness.toml",
        &format!("[models.m]\nprovider = \"openai\"\nmodel = \"fake\"\nbase_url = \"{url}\"\n"),
    );
    let args = [
        "specs/t06_mathematics.toml",
        "-m",
        "m",
        "--runs",
        "2",
        "--format",
        "json",
        "--format",
        "csv",
        "--format",
        "junit",
    ];
    let run = capped(&mut ws.run_cmd(&args), WALL);
    run.expect_code(0);
    let asked = fake.requests();
    assert_eq!(asked.len(), 2, "{}", run.out);
    assert!(
        asked
            .iter()
            .all(|r| r.path == format!("/v1/chat/completions?api-key={QUERY_KEY}")),
        "the request goes to the URL as written: {:?}",
        asked.iter().map(|r| &r.path).collect::<Vec<_>>()
    );
    assert_no_secret_in(&run.out);
    let plan = std::fs::read_to_string(ws.run_dirs()[0].join("plan.json")).unwrap();
    assert!(plan.contains("http://[redacted]@127.0.0.1:"), "{plan}");
    assert!(plan.contains("api-key=[redacted]"), "{plan}");
    // A resume takes the credentials from harness.toml again.
    let resumed = capped(&mut ws.run_cmd(&["--resume", "latest"]), WALL);
    resumed.expect_code(0);
    assert_no_secret_in(&resumed.out);
    assert_no_secret_in_files(&ws.path().join("results"));
    // Without them in harness.toml the resume says why it cannot go on.
    ws.write("harness.toml", "");
    capped(&mut ws.run_cmd(&["--resume", "latest"]), WALL)
        .expect_code(2)
        .expect_output("without the credentials");
}

#[test]
fn url_credentials_in_connection_errors_reach_no_file_and_no_output() {
    let ws = Workspace::new();
    ws.copy_spec("t06_mathematics.toml");
    let one = with_credentials(&format!("http://127.0.0.1:{}/v1", closed_port()));
    let pool = [
        with_credentials(&format!("http://127.0.0.1:{}/v1", closed_port())),
        with_credentials(&format!("http://127.0.0.1:{}/v1", closed_port())),
    ];
    ws.write(
        "harness.toml",
        &format!(
            "[models.one]\nprovider = \"openai\"\nbase_url = \"{one}\"\nmax_retries = 0\n\
             [models.pool]\nprovider = \"openai\"\nbase_url = [\"{}\", \"{}\"]\nmax_retries = 1\n",
            pool[0], pool[1]
        ),
    );
    for model in ["one", "pool"] {
        let args = [
            "specs/t06_mathematics.toml",
            "-m",
            model,
            "--runs",
            "2",
            "--no-cache",
        ];
        let run = capped(&mut ws.run_cmd(&args), WALL);
        run.expect_code(4).expect_output("api-key=[redacted]");
        assert_no_secret_in(&run.out);
        assert!(!run.out.contains("[redacted][redacted]"), "{}", run.out);
    }
    assert_no_secret_in_files(&ws.path().join("results"));
}

#[test]
fn synth_pipeline_numbers_out_of_range_are_located_exit_2_before_any_request() {
    let shipped = std::fs::read_to_string(crate::common::root().join("pipelines/synth_qa.toml"))
        .expect("the shipped pipeline");
    // (a line of the shipped pipeline, what replaces it, the bad value's text, what the error says)
    let cases: &[(&str, &str, &str, &str)] = &[
        ("temperature = 0.7", "temperature = 9", "9", "from 0 to 2"),
        ("top_p = 0.95", "top_p = inf", "inf", NOT_FINITE),
        ("batch_size = 4", "batch_size = 0", "0", "from 1 to 1000"),
        ("num_pairs = 25", "num_pairs = 1e999", "1e999", NOT_FINITE),
        ("threshold = 0.9", "threshold = nan", "nan", NOT_FINITE),
        ("threshold = 1.0 ", "threshold = 0 ", "0", "from 1 to 10"),
        ("max_tokens = 256", "max_tokens = 0", "0", "of 1 or more"),
    ];
    for (line, replacement, bad, says) in cases {
        let ws = Workspace::new();
        ws.write("doc.txt", "A document worth a question.\n");
        let text = shipped.replacen(line, replacement, 1);
        assert_ne!(text, shipped, "{line} is in the shipped pipeline");
        ws.write("p.toml", &text);
        let mut cmd = harness(ws.path());
        let model = "openai:m@http://127.0.0.1:9/v1";
        cmd.args(["synth", "doc.txt", "-m", model, "-o", "out.jsonl"])
            .args(["--pipeline", "p.toml", "--no-progress"]);
        // The value that replaced the line: `position` finds the last `bad`.
        let start = text.find(replacement).unwrap() + replacement.rfind(bad).unwrap();
        let at = position(&text[..start + bad.len()], bad);
        capped(&mut cmd, WALL)
            .expect_code(2)
            .expect_output(&format!("p.toml:{at}"))
            .expect_output(says);
        assert!(
            !ws.path().join("out.synth").exists(),
            "{replacement}: work began"
        );
    }
}
