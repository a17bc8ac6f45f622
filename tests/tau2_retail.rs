//! The τ² retail spec (`specs/tau2_retail.toml`) scored as τ²-bench
//! scores it, through the real CLI with scripted `exec` agents: one that
//! performs each task's gold actions passes every task; one that also changes
//! the customer's address fails every task as `wrong_state`; one
//! that does nothing passes exactly the tasks whose gold actions change
//! nothing. The gold state is replayed through the spec's own Rhai tools
//! when each answer is scored. And the golden conversations of the two CI
//! models, re-asked live through llama-server.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::common::workspace::Workspace;
use crate::common::{copy_dir, golden_lines, harness, root};
use crate::e2e_llama::{Live, assert_all_cached, journal, live_long};

/// The spec, relative to the repository.
pub(crate) const SPEC: &str = "specs/tau2_retail.toml";

/// The tasks whose gold actions leave the database as it was: none, reads
/// only, or a transfer to a human.
const UNCHANGED: [&str; 6] = ["24", "57", "62", "65", "68", "50"];

/// A workspace with the spec, its data, and `exec` models: `gold`,
/// `wrong` and `idle` agents, and the `user` who stops at once.
fn workspace() -> Workspace {
    let ws = Workspace::new();
    // Room for the longest gold list (5 actions) and the reply after it.
    let spec = std::fs::read_to_string(root().join(SPEC)).unwrap();
    ws.write(SPEC, &spec.replace("max_turns = 3", "max_turns = 8"));
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
fn episodes(ws: &Workspace, agent: &str) -> BTreeMap<String, Value> {
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
    for (task, record) in episodes(&ws, "gold") {
        assert_eq!(record["passed"], true, "{task}: {record:#}");
        assert_eq!(rule(&record, "communicated")["passed"], true, "{task}");
    }
    for (task, record) in episodes(&ws, "wrong") {
        assert_eq!(record["passed"], false, "{task}: {record:#}");
        assert_eq!(record["failure"], "wrong_state", "{task}: {record:#}");
        let detail = record["detail"].as_str().unwrap();
        assert!(
            detail.contains(".address.address1: \"1 Nowhere Road\" ≠"),
            "{task}: {detail}"
        );
    }
    let idle = episodes(&ws, "idle");
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

/// A golden conversation (SmolLM2 as the agent, Gemma 3 as the customer,
/// through llama-server `--jinja`: both models' templates in one
/// conversation) re-asked live: it equals its golden one, turn by turn, and
/// a rerun asks nothing. One task (`--runs 10` keeps the subset's instance
/// 9): every turn sends about 5,600 prompt tokens, most of a minute on CI's
/// two cores (a conversation for each model took 332 s), and one
/// conversation proves the point; `main_job` replays all four. On the
/// servers with long slots (`live_long`).
#[test]
fn golden_conversations_reproduce_live_and_rerun_from_cache() {
    let Some(Live { dir, _servers, .. }) = live_long() else {
        return;
    };
    let id = "tau2_retail";
    copy_dir(
        &root().join("golden").join(id),
        &dir.path().join("golden").join(id),
    );
    let args = [
        "run",
        SPEC,
        "-m",
        "smollm2",
        "--no-progress",
        "-v",
        "--golden-subset",
        "--allow-errors",
        "--runs",
        "10",
    ];
    let (code, out) = crate::common::run(harness(dir.path()).args(args));
    // 1: the golden's other answers are "only in golden"; what was asked
    // is compared line by line below.
    assert!(code == 0 || code == 1, "{out}");
    let records = journal(dir.path());
    assert_eq!(records.len(), 1, "one task: {out}");
    let said = records[0]["trajectory"]
        .as_array()
        .map_or(0, |t| t.iter().filter(|m| m["role"] == "user").count());
    assert!(
        said > 1,
        "Gemma 3, the customer, answered more than once: {out}"
    );
    golden_lines::assert_as_golden(&records, &dir.path().join("golden"), "live conversations");
    let (code, out) = crate::common::run(harness(dir.path()).args(args));
    assert!(code == 0 || code == 1, "{out}");
    assert_all_cached(dir.path(), records.len(), &out);
}
