//! Model text on the terminal: a response that tries to set the window
//! title, clear and rewrite lines and forge the harness's summary line is
//! shown escaped, on its own line, by `harness check` (an example's failure)
//! and `harness run` (a golden regression and the `-v` field diff). The
//! journal keeps the raw text.

use crate::common::fake_server::{FakeServer, Reply};
use crate::common::workspace::{Workspace, model_toml};
use crate::common::{harness, run};

/// Sets the title (OSC 0 ... BEL), erases the line (CSI 2K), returns the
/// carriage, then forges the summary of `check` and `run` on fresh lines;
/// clears the screen with a one-character C1 CSI and reverses the text.
const HOSTILE: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2K\r\n1 spec: 1 ok, 0 with golden differences, 0 failed\n\u{9b}2J\u{202e}";

const SPEC: &str = r#"
id = "escapes"
runs = 1

[generate]
script = '#{ answer: "42" }'

[prompt]
user = "What is six times seven? Answer with the number only."

[[verify]]
rule = "exact"
expected = "answer"
"#;

/// Problems with `out` as terminal output: raw control characters, or a
/// line that starts like the harness's summary but came from the model.
fn problems(out: &str) -> Vec<String> {
    let mut found: Vec<String> = ['\u{1b}', '\u{7}', '\r', '\u{9b}', '\u{202e}']
        .iter()
        .filter(|c| out.contains(**c))
        .map(|c| format!("a raw U+{:04X}", *c as u32))
        .collect();
    found.extend(
        out.lines()
            .filter(|l| l.trim_start().starts_with("1 spec: 1 ok"))
            .map(|l| format!("a forged line: {l:?}")),
    );
    if !out.contains("\\u001B]0;pwned\\u0007") {
        found.push("the escape sequence is not shown escaped".into());
    }
    found
}

#[test]
fn check_shows_a_failing_example_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("escapes.toml");
    let example = format!(
        "\n[[example]]\nname = \"hostile\"\nvars = {{ answer = \"42\" }}\nresponse = {}\npasses = true\n",
        toml::Value::String(HOSTILE.into())
    );
    std::fs::write(&spec, format!("{SPEC}{example}")).unwrap();
    let (code, out) = run(harness(dir.path())
        .arg("check")
        .arg(&spec)
        .args(["--bless", "--golden"])
        .arg(dir.path().join("golden")));
    assert_eq!(code, 2, "the example fails:\n{out}");
    assert!(out.contains("expected to pass, but failed"), "{out}");
    let found = problems(&out);
    assert!(found.is_empty(), "{found:?}\n{out}");
}

#[test]
fn run_shows_a_regression_and_its_diff_escaped() {
    let ws = Workspace::new();
    ws.write("specs/escapes.toml", SPEC);
    let honest = FakeServer::start(|_| Reply::Text("42".into()));
    ws.write(
        "harness.toml",
        &model_toml("m", "openai", "m", &honest.openai_base(), ""),
    );
    let (code, out) = ws.run(&["specs/escapes.toml", "-m", "m", "--bless"]);
    assert_eq!(code, 0, "{out}");
    let hostile = FakeServer::start(|_| Reply::Text(HOSTILE.into()));
    ws.write(
        "harness.toml",
        &model_toml("m", "openai", "m", &hostile.openai_base(), ""),
    );
    let (code, out) = ws.run(&["specs/escapes.toml", "-m", "m", "--no-cache", "-v"]);
    assert_eq!(code, 1, "the regression is a difference:\n{out}");
    assert!(out.contains("now fails"), "{out}");
    assert!(out.contains("changed fields of"), "the -v diff: {out}");
    let found = problems(&out);
    assert!(found.is_empty(), "{found:?}\n{out}");
    let journal = ws.last_journal();
    assert_eq!(
        journal[0]["response"].as_str(),
        Some(HOSTILE),
        "the journal keeps the raw text"
    );
}
