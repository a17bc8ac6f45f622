//! `--unsandboxed`: the program still gets an empty environment (no API
//! key), and the run's manifest and every report say that its code ran
//! without isolation; a sandboxed run says what confined it.

use crate::common::fake_server::{FakeServer, Reply};
use crate::common::workspace::{Workspace, model_toml};
use crate::common::{harness, root, run};

const KEYS: [(&str, &str); 2] = [
    ("OPENAI_API_KEY", "sk-fake-unsandboxed-0123456789"),
    ("HF_TOKEN", "hf_fake_unsandboxed_0123456789"),
];

const ANSWER: &str = "```python
import os
def names():
    return sorted(os.environ)
def values():
    return sorted(os.environ.values())
```";

#[test]
fn the_environment_is_empty_with_and_without_the_sandbox() {
    for extra in [&[][..], &["--unsandboxed"][..]] {
        let golden = tempfile::tempdir().unwrap();
        let mut cmd = harness(&root());
        cmd.envs(KEYS)
            .args(extra)
            .arg("check")
            .arg(root().join("tests/fixtures/code/environment.toml"))
            .arg("--bless")
            .arg("--golden")
            .arg(golden.path());
        let (code, out) = run(&mut cmd);
        assert_eq!(code, 0, "{extra:?}:\n{out}");
        assert!(out.contains("1/1 examples"), "{extra:?}:\n{out}");
    }
}

/// `harness [--unsandboxed] run` of the environment spec: (output, plan.json,
/// the Markdown report, the JSON report).
fn run_environment(unsandboxed: bool) -> (String, serde_json::Value, String, String) {
    let fake = FakeServer::start(|_| Reply::Text(ANSWER.into()));
    let ws = Workspace::new();
    ws.copy_fixture("code/environment.toml");
    ws.write(
        "harness.toml",
        &model_toml("m", "openai", "m", &fake.openai_base(), ""),
    );
    let mut cmd = ws.run_cmd(&["specs/environment.toml", "-m", "m", "--format", "json"]);
    cmd.envs(KEYS);
    if unsandboxed {
        cmd.arg("--unsandboxed");
    }
    let (code, out) = run(&mut cmd);
    assert_eq!(code, 0, "{out}");
    assert_eq!(ws.last_journal()[0]["passed"], true, "{out}");
    let dir = ws.run_dirs().pop().unwrap();
    let plan = std::fs::read_to_string(dir.join("plan.json")).unwrap();
    let report = |ext: &str| {
        let reports = ws.path().join("results/reports");
        let file = std::fs::read_dir(&reports)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|x| x == ext))
            .unwrap();
        std::fs::read_to_string(file).unwrap()
    };
    (
        out,
        serde_json::from_str(&plan).unwrap(),
        report("md"),
        report("json"),
    )
}

#[test]
fn an_unsandboxed_run_says_so_everywhere() {
    let (out, plan, markdown, json) = run_environment(true);
    assert_eq!(plan["sandbox"]["isolated"], false, "{plan:#}");
    assert!(out.contains("WITHOUT isolation"), "the warning: {out}");
    assert!(
        out.contains("sandbox: NOT isolated"),
        "the terminal report: {out}"
    );
    assert!(markdown.contains("NOT isolated"), "{markdown}");
    assert!(json.contains("NOT isolated"), "{json}");
}

#[test]
fn a_sandboxed_run_records_what_confined_it() {
    let (out, plan, markdown, _) = run_environment(false);
    assert_eq!(plan["sandbox"]["isolated"], true, "{plan:#}");
    assert!(out.contains("sandbox: isolated"), "{out}");
    assert!(markdown.contains("isolated (namespaces"), "{markdown}");
    assert!(markdown.contains("process-tree limits: "), "{markdown}");
    // Where cgroups bound the tree, the manifest names the version and controllers.
    if let Some(limits) = plan["sandbox"]["tree_limits"].as_str() {
        assert!(limits.starts_with("cgroup v"), "{plan:#}");
    }
}
