//! Parity with plain Python: the `code` rule's verdict on an honest program
//! is the one bare `python3` gives when the test is appended to it.
//!
//! Each file of `tests/fixtures/code_parity/` is a case: a program, then one
//! or more tests, each after a `# --- test ---` line, so the file as a whole
//! is the program with its tests appended. Its header records plain
//! Python's verdict (`# verdict: pass|fail`), and may name a program the
//! case shares with others (`# program: _squares.py`), which then goes
//! first. A case named `deviation_*`
//! is one of the documented deviations (`docs/sandbox.md`): it also names
//! (`# deviation: TEXT`) what the harness's failure says instead. A case
//! whose meaning `guard = true` changes names the failure it then gives
//! (`# guarded: TEXT`).
//!
//! Both directions are checked: bare `python3` must give the recorded
//! verdict, and `harness check` must agree with it on every other case, as
//! failing and as passing; and again under the guard, where the guarded
//! cases fail as they say.

use crate::common::{check_examples, python_suite, root};

const TEST: &str = "# --- test ---\n";

struct Case {
    name: String,
    /// The program with its tests appended, for bare `python3`.
    source: String,
    passes: bool,
    deviation: Option<String>,
    /// What the case's failure says under `guard = true`, if it fails there.
    guarded: Option<String>,
    program: String,
    tests: Vec<String>,
}

fn header<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines()
        .take_while(|l| l.starts_with('#'))
        .find_map(|l| l.strip_prefix(&format!("# {key}: ")))
}

fn cases() -> Vec<Case> {
    let dir = root().join("tests/fixtures/code_parity");
    python_suite(&dir, 50)
        .into_iter()
        .map(|path| {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let own = std::fs::read_to_string(&path).unwrap();
            let text = match header(&own, "program") {
                Some(shared) => std::fs::read_to_string(dir.join(shared)).unwrap() + own.as_str(),
                None => own.clone(),
            };
            let passes = match header(&own, "verdict") {
                Some("pass") => true,
                Some("fail") => false,
                other => panic!("{name}: `# verdict: pass|fail` expected, found {other:?}"),
            };
            let deviation = header(&own, "deviation").map(str::to_owned);
            let guarded = header(&own, "guarded").map(str::to_owned);
            assert_eq!(
                deviation.is_some(),
                name.starts_with("deviation_"),
                "{name}: a deviation is named deviation_* and says what fails"
            );
            let mut parts = text.split(TEST).map(str::to_owned);
            let program = parts.next().unwrap();
            let tests: Vec<String> = parts.collect();
            assert!(!tests.is_empty(), "{name}: no `{}`", TEST.trim());
            Case {
                name,
                source: text,
                passes,
                deviation,
                guarded,
                program,
                tests,
            }
        })
        .collect()
}

#[test]
fn bare_python_gives_the_recorded_verdicts() {
    let python = harness::python_interpreter().expect("a python3");
    let dir = tempfile::tempdir().unwrap();
    let wrong: Vec<String> = cases()
        .iter()
        .filter_map(|case| {
            let file = dir.path().join(format!("{}.py", case.name));
            std::fs::write(&file, &case.source).unwrap();
            let out = std::process::Command::new(&python.path)
                .arg(&file)
                .current_dir(dir.path())
                .output()
                .unwrap();
            let passed = out.status.success();
            (passed != case.passes).then(|| {
                let stderr = String::from_utf8_lossy(&out.stderr);
                format!("{}: python3 says passed={passed}: {stderr}", case.name)
            })
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// One spec holding every case as an example whose outcome must be plain
/// Python's, or the documented failure for a deviation (and, when `guard`,
/// for a guarded case).
fn spec(cases: &[Case], guard: bool) -> String {
    let mut text = String::from(
        "id = \"code_parity\"\nruns = 1\n\n[generate]\nscript = '#{ tests: [\"assert True\"] }'\n\n\
         [prompt]\nuser = \"Write the program.\"\n\n[[verify]]\nrule = \"code\"\ntests = \"tests\"\n\
         timeout_secs = 5\n",
    );
    text += &format!("guard = {guard}\n");
    for case in cases {
        let failure = case
            .deviation
            .as_ref()
            .or(case.guarded.as_ref().filter(|_| guard));
        let tests: Vec<toml::Value> = case
            .tests
            .iter()
            .map(|t| toml::Value::String(t.clone()))
            .collect();
        let response = format!("```python\n{}\n```", case.program);
        text += &format!(
            "\n[[example]]\nname = {}\nvars = {{ tests = {} }}\nresponse = {}\npasses = {}\n",
            toml::Value::String(case.name.clone()),
            toml::Value::Array(tests),
            toml::Value::String(response),
            case.passes && failure.is_none(),
        );
        if let Some(detail) = failure {
            text += &format!("detail = {}\n", toml::Value::String(detail.clone()));
        }
    }
    text
}

#[test]
fn the_harness_agrees_with_bare_python() {
    agrees(false);
}

#[test]
fn guarded_tests_deviate_only_where_the_cases_say() {
    agrees(true);
}

fn agrees(guard: bool) {
    let cases = cases();
    let deviations = cases.iter().filter(|c| c.deviation.is_some()).count();
    assert!(
        cases.len() - deviations >= 50,
        "{} cases without deviation",
        cases.len() - deviations
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("code_parity.toml");
    std::fs::write(&path, spec(&cases, guard)).unwrap();
    let (code, out) = check_examples(&path, &[]);
    assert_eq!(code, 0, "{out}");
    let n = cases.len();
    assert!(out.contains(&format!("{n}/{n} examples")), "{out}");
}
