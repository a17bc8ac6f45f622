//! The τ² retail spec (`specs/tau2_retail.toml`) scored as τ²-bench
//! scores it, through the real CLI with scripted `exec` agents: one that
//! performs each task's gold actions passes every task; one that also changes
//! the customer's address fails every task as `wrong_state`; one
//! that does nothing passes exactly the tasks whose gold actions change
//! nothing. The gold state is replayed through the spec's own Rhai tools
//! when each answer is scored.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::common::root;
use crate::common::workspace::Workspace;
use crate::e2e_llama::copy_dir;

/// The spec, relative to the repository.
const SPEC: &str = "specs/tau2_retail.toml";

/// The tasks whose gold actions leave the database as it was: none, reads
/// only, or a transfer to a human.
const UNCHANGED: [&str; 6] = ["24", "57", "62", "65", "68", "50"];

/// A workspace with the spec, its data, and `exec` models: `gold`,
/// `wrong` and `idle` agents, and the `user` who stops at once.
fn workspace() -> Workspace {
    let ws = Workspace::new();
    ws.copy_spec("tau2_retail.toml");
    copy_dir(
        &root().join("specs/tau2_retail"),
        &ws.path().join("specs/tau2_retail"),
    );
    let script = root().join("tests/fixtures/exec/tau2_agent.py");
    let mut models = String::new();
    for mode in ["gold", "wrong", "idle", "user"] {
        models += &format!(
            "[models.{mode}]\nprovider = \"exec\"\ncommand = [\"python3\", \"{}\", \"{mode}\", \
             \"{{{{ spec_dir }}}}/tau2_retail/tasks.jsonl\", \"{{{{ id }}}}\"]\nconcurrency = 4\n\n",
            script.display()
        );
    }
    ws.write("harness.toml", &models);
    ws
}

/// Runs the spec with `agent` and the scripted user: the records by task id.
fn run(ws: &Workspace, agent: &str) -> BTreeMap<String, Value> {
    let args = [SPEC, "-m", agent, "--user-model", "exec:user"];
    let (_, out) = ws.run(&args);
    let records: BTreeMap<String, Value> = ws
        .last_journal()
        .into_iter()
        .filter(|r| r["model"] == agent)
        .map(|r| (task_of(ws, &r), r))
        .collect();
    assert_eq!(records.len(), 25, "{out}");
    records
}

/// The τ² task id of a record's instance (its row of tasks.jsonl).
fn task_of(ws: &Workspace, record: &Value) -> String {
    let tasks = std::fs::read_to_string(ws.path().join("specs/tau2_retail/tasks.jsonl")).unwrap();
    let line = tasks
        .lines()
        .nth(usize::try_from(record["instance"].as_u64().unwrap()).unwrap())
        .unwrap();
    let task: Value = serde_json::from_str(line).unwrap();
    task["id"].as_str().unwrap().to_owned()
}

/// A record's outcome of rule `name`.
fn rule<'r>(record: &'r Value, name: &str) -> &'r Value {
    record["rules"]
        .as_array()
        .and_then(|rules| rules.iter().find(|r| r["name"] == name))
        .unwrap_or_else(|| panic!("no rule `{name}` in {record:#}"))
}

#[test]
fn the_gold_actions_pass_every_task_and_a_wrong_one_fails_it() {
    let ws = workspace();
    for (task, record) in run(&ws, "gold") {
        assert_eq!(record["passed"], true, "{task}: {record:#}");
        assert_eq!(rule(&record, "communicated")["passed"], true, "{task}");
    }
    for (task, record) in run(&ws, "wrong") {
        assert_eq!(record["passed"], false, "{task}: {record:#}");
        assert_eq!(record["failure"], "wrong_state", "{task}: {record:#}");
        let detail = record["detail"].as_str().unwrap();
        assert!(
            detail.contains(".address.address1: \"1 Nowhere Road\" ≠"),
            "{task}: {detail}"
        );
    }
    let idle = run(&ws, "idle");
    let passed: Vec<&str> = idle
        .iter()
        .filter(|(_, r)| r["passed"] == true)
        .map(|(task, _)| task.as_str())
        .collect();
    let mut unchanged = UNCHANGED.to_vec();
    unchanged.sort_unstable();
    assert_eq!(passed, unchanged);
    // Saying nothing of what was to be said is reported, not failed.
    let silent = &idle["24"];
    assert_eq!(rule(silent, "communicated")["passed"], false, "{silent:#}");
    assert_eq!(rule(silent, "communicated")["failure"], "not_communicated");
    // A changed database names the first place it differs.
    let cancel = idle["90"]["detail"].as_str().unwrap();
    assert!(cancel.contains("state.orders[\"#W"), "{cancel}");
}
