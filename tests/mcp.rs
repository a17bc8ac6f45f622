//! `[[mcp]]` servers as an episode's tools, through the real CLI, against the
//! hostile stdio server `tests/fixtures/mcp/hostile.py` and the fake OpenAI
//! server playing the model: calls routed to the server and their results
//! (structured, text, `isError`) in the trajectory, the server's final state
//! read back into `state.mcp`, a rerun that asks nothing, every server fault
//! ending its episode as a named failure, a SIGKILLed harness taking its
//! server along; live, the real npm and PyPI servers (`mcp_check.rs`: what
//! `harness check` says of servers).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::fake_server::{FakeCall, FakeServer, Reply};
use crate::common::workspace::Workspace;
use crate::common::{root, spawn_quiet};

/// A spec whose episode offers the hostile server's tools (`filter`: a
/// `tools = [...]` line, or none for all),
/// with `extra` lines in its `[[mcp]]` table.
pub(crate) fn spec(filter: &str, extra: &str) -> String {
    let server = root().join("tests/fixtures/mcp/hostile.py");
    format!(
        r#"
runs = 1
[prompt]
user = "Сложи 2 и 3 и запомни ответ."
[agent]
max_turns = 6
end = {{ tool = "submit" }}
[[tools]]
name = "submit"
parameters = {{ type = "object", properties = {{ answer = {{ type = "string" }} }} }}
script = "args.answer"
[[mcp]]
name = "hostile"
command = "python3"
args = ["{}"]
{filter}
call_timeout_secs = 2
start_timeout_secs = 5
final_state = {{ tool = "recall" }}
{extra}
[[verify]]
rule = "final_state"
expr = 'state.mcp.hostile.notes == ["5"]'
"#,
        server.display()
    )
}

/// A model that calls `add`, `fail`, `remember` and `submit`, one a turn.
pub(crate) fn agent(request: &crate::common::fake_server::Request) -> Reply {
    let call = |name: &str, arguments: Value| FakeCall::new(name, &arguments.to_string());
    let calls = match crate::agent::turn(request) {
        0 => vec![call("add", json!({"a": 2, "b": 3}))],
        1 => vec![call("fail", json!({}))],
        2 => vec![call("remember", json!({"note": "5"}))],
        _ => vec![call("submit", json!({"answer": "5"}))],
    };
    Reply::Calls(String::new(), calls)
}

#[test]
fn an_episode_calls_the_servers_tools_and_reads_its_final_state() {
    let fake = FakeServer::start(agent);
    let ws = Workspace::new();
    ws.fake_model(&fake, "timeout_secs = 10").write(
        "specs/mcp.toml",
        &spec(r#"tools = ["add", "fail", "remember", "recall"]"#, ""),
    );
    let out = ws.run_ok(&["specs/mcp.toml", "-m", "fake"]);
    assert_eq!(fake.count(), 4, "{out}");
    let requests = fake.requests();
    let offered: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["submit", "add", "fail", "remember", "recall"]);
    let record = &ws.last_journal()[0];
    assert_eq!(record["passed"], true, "{record:#}");
    let messages = record["trajectory"].as_array().unwrap();
    let tool = |m: &&Value| m["role"] == "tool";
    let results: Vec<&str> = (messages.iter().filter(tool))
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        results,
        [
            r#"{"sum":5}"#,
            r#"{"error":"it failed on purpose"}"#,
            "kept",
            "\"5\""
        ]
    );
    assert_eq!(record["state"]["mcp"]["hostile"], json!({"notes": ["5"]}));
    // A rerun asks the model nothing: every turn's key (the servers' tools included) is cached.
    ws.run_ok(&["specs/mcp.toml", "-m", "fake"]);
    assert_eq!(fake.count(), 4);
    // Another server (its command line) with the same tools makes other keys.
    let other = spec(r#"tools = ["add", "fail", "remember", "recall"]"#, "").replacen(
        "hostile.py\"]",
        "hostile.py\", \"--other\"]",
        1,
    );
    ws.write("specs/mcp.toml", &other);
    ws.run_ok(&["specs/mcp.toml", "-m", "fake"]);
    assert_eq!(fake.count(), 8);
}

#[test]
fn a_blessed_episode_replays_with_no_server() {
    let fake = FakeServer::start(agent);
    let ws = Workspace::new();
    let filter = r#"tools = ["add", "fail", "remember", "recall"]"#;
    ws.fake_model(&fake, "timeout_secs = 10")
        .write("specs/mcp.toml", &spec(filter, ""));
    ws.run_ok(&["specs/mcp.toml", "-m", "fake", "--bless"]);
    let recorded = ws.last_journal().remove(0);
    // The server is gone: a replay must not need it.
    let gone = spec(filter, "").replace("command = \"python3\"", "command = \"/nonexistent/mcp\"");
    ws.write("specs/mcp.toml", &gone);
    ws.run_ok(&["specs/mcp.toml", "-m", "replay:fake"]);
    assert_eq!(fake.count(), 4, "the replay asks nothing");
    let replayed = ws.last_journal().remove(0);
    for field in ["trajectory", "state", "passed"] {
        assert_eq!(replayed[field], recorded[field], "{field}");
    }
}

#[test]
fn server_faults_end_episodes_as_named_failures() {
    // (the tool the model calls, `[[mcp]]` extra lines, failure, detail)
    let cases = [
        ("crash", "", "mcp_died", "crashing on purpose"),
        ("garbage", "", "mcp_malformed", "not JSON"),
        ("flood", "", "mcp_flood", "MiB"),
        ("hang", "", "mcp_timeout", "within 2 s"),
        (
            "add",
            "isolation = \"reset\"\nreset = { tool = \"nope\" }",
            "mcp_error",
            "reset",
        ),
        (
            "recall",
            "args = [\"-c\", \"import time; time.sleep(60)\"]",
            "mcp_start",
            "initialize",
        ),
    ];
    for (tool, extra, failure, detail) in cases {
        let fake = FakeServer::start(move |_| {
            Reply::Calls(String::new(), vec![FakeCall::new(tool, "{}")])
        });
        let ws = Workspace::new();
        let text = spec("", extra).replace("start_timeout_secs = 5\n", "start_timeout_secs = 2\n");
        // The last case's own `args` runs a server that never answers.
        let text = if extra.starts_with("args") {
            text.replacen("args = [", "# args = [", 1)
        } else {
            text
        };
        ws.fake_model(&fake, "timeout_secs = 10")
            .write("specs/mcp.toml", &text);
        let began = Instant::now();
        let (code, out) = ws.run(&["specs/mcp.toml", "-m", "fake"]);
        // 4: an episode that never asked the model is an error, not an answer.
        assert!([0, 1, 4].contains(&code), "{tool}: {out}");
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "{tool} took {:?}",
            began.elapsed()
        );
        let record = &ws.last_journal()[0];
        assert_eq!(record["failure"], failure, "{tool}: {record:#}");
        let said = record["detail"]
            .as_str()
            .or(record["error"].as_str())
            .unwrap_or_default();
        assert!(said.contains(detail), "{tool}: {record:#}");
    }
}

/// Whether `pid` runs: it exists and is not a zombie waiting for a reaper.
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat.rsplit_once(") ").map(|(_, rest)| rest.chars().next());
        state != Some(Some('Z'))
    })
}

#[test]
fn sigkill_of_the_harness_leaves_no_server() {
    let fake = FakeServer::start(|_| Reply::Hang);
    let ws = Workspace::new();
    let pidfile = ws.path().join("server.pid");
    let text = spec("", "").replacen(
        "hostile.py\"]",
        &format!("hostile.py\", \"--pidfile\", \"{}\"]", pidfile.display()),
        1,
    );
    ws.fake_model(&fake, "timeout_secs = 60")
        .write("specs/mcp.toml", &text);
    let mut child = spawn_quiet(&mut ws.run_cmd(&["specs/mcp.toml", "-m", "fake"]));
    let deadline = Instant::now() + Duration::from_secs(20);
    // The model is asked only once the server is up: then the episode is mid-way.
    while fake.count() == 0 {
        assert!(
            Instant::now() < deadline,
            "the episode never asked the model"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(running(pid), "the server is not running");
    child.kill().unwrap();
    child.wait().unwrap();
    let gone = Instant::now() + Duration::from_secs(5);
    while running(pid) {
        assert!(Instant::now() < gone, "server {pid} outlived the harness");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The real servers' paths from `scripts/mcp-servers.sh paths`: `None`
/// (the test is skipped) where they are not installed, except under
/// `HARNESS_E2E`, where `scripts/test.sh` installed them.
fn real_servers() -> Option<std::collections::BTreeMap<String, String>> {
    let out = std::process::Command::new(root().join("scripts/mcp-servers.sh"))
        .arg("paths")
        .output()
        .unwrap();
    if !out.status.success() {
        assert!(
            std::env::var_os("HARNESS_E2E").is_none(),
            "scripts/mcp-servers.sh ensure has not run"
        );
        eprintln!("skipped: the MCP servers are not installed (scripts/mcp-servers.sh ensure)");
        return None;
    }
    let text = String::from_utf8(out.stdout).unwrap();
    let pairs = text.lines().filter_map(|l| l.split_once('='));
    Some(pairs.map(|(k, v)| (k.to_owned(), v.to_owned())).collect())
}

/// A one-instance episode asking `user`, up to `max_turns`, ended by a
/// Rhai `submit`: the start of the live specs.
fn prelude(user: &str, max_turns: u32) -> String {
    format!(
        "runs = 1\n[prompt]\nuser = \"{user}\"\n[agent]\nmax_turns = {max_turns}\n\
         end = {{ tool = \"submit\" }}\n[[tools]]\nname = \"submit\"\n\
         parameters = {{ type = \"object\", properties = {{}} }}\nscript = \"true\""
    )
}

#[test]
fn the_real_npm_and_pypi_servers_serve_an_episode() {
    let Some(paths) = real_servers() else { return };
    let ws = Workspace::new();
    let memory = ws.path().join("memory.jsonl");
    let spec = format!(
        r#"{prelude}
[[mcp]]
name = "memory"
command = "node"
args = ["{memory_bin}"]
env = ["MEMORY_FILE_PATH"]
tools = ["create_entities", "read_graph"]
final_state = {{ tool = "read_graph" }}
[[mcp]]
name = "everything"
command = "node"
args = ["{everything_bin}"]
tools = ["get-sum"]
[[mcp]]
name = "ledger"
command = "{python}"
args = ["{ledger}"]
final_state = {{ tool = "list_expenses" }}
[[verify]]
rule = "final_state"
expr = 'state.mcp.memory.entities[0].name == "Анна" && state.mcp.ledger.total == 120.0'
"#,
        prelude = prelude(
            "Запомни: Анна любит чай. Сложи 2 и 3. Запиши расход: чай, 120 рублей.",
            5
        ),
        memory_bin = paths["MCP_MEMORY_BIN"],
        everything_bin = paths["MCP_EVERYTHING_BIN"],
        python = paths["MCP_PYTHON"],
        ledger = root().join("scripts/mcp/ledger_server.py").display(),
    );
    let fake = FakeServer::start(|request| {
        let call = |name: &str, arguments: Value| FakeCall::new(name, &arguments.to_string());
        let entity = json!({"name": "Анна", "entityType": "person", "observations": ["любит чай"]});
        let calls = match crate::agent::turn(request) {
            0 => vec![call("create_entities", json!({ "entities": [entity] }))],
            1 => vec![call("get-sum", json!({"a": 2, "b": 3}))],
            2 => vec![call("add_expense", json!({"item": "чай", "amount": 120}))],
            _ => vec![call("submit", json!({}))],
        };
        Reply::Calls(String::new(), calls)
    });
    ws.fake_model(&fake, "timeout_secs = 30")
        .write("specs/live.toml", &spec);
    let mut run = ws.run_cmd(&["specs/live.toml", "-m", "fake"]);
    run.env("MEMORY_FILE_PATH", &memory);
    let (code, out) = crate::common::run(&mut run);
    let record = &ws.last_journal()[0];
    assert_eq!(
        (code, &record["passed"]),
        (0, &json!(true)),
        "{out}\n{record:#}"
    );
    let sum = &record["trajectory"][3]["content"];
    assert!(sum.as_str().unwrap().contains('5'), "{record:#}");
    assert!(std::fs::read_to_string(&memory).unwrap().contains("Анна"));
}

/// A child process this test started, killed (by its PID) and reaped when dropped.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_streamable_http_server_serves_an_episode() {
    let Some(paths) = real_servers() else { return };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = spawn_quiet(
        std::process::Command::new("node")
            .args([paths["MCP_EVERYTHING_BIN"].as_str(), "streamableHttp"])
            .env("PORT", port.to_string()),
    );
    // Ended however the test ends.
    let _server = KillOnDrop(server);
    let up = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < up,
            "server-everything did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let prelude = prelude("Сложи 2 и 3.", 3);
    let spec = format!(
        r#"{prelude}
[[mcp]]
name = "everything"
url = "http://127.0.0.1:{port}/mcp"
headers = {{ X-Harness-Test = "MCP_TEST_HEADER" }}
tools = ["get-sum"]
[[verify]]
rule = "tool_used"
tools = ["get-sum"]
"#
    );
    let fake = FakeServer::start(|request| {
        let calls = match crate::agent::turn(request) {
            0 => vec![FakeCall::new("get-sum", r#"{"a": 2, "b": 3}"#)],
            _ => vec![FakeCall::new("submit", "{}")],
        };
        Reply::Calls(String::new(), calls)
    });
    let ws = Workspace::new();
    ws.fake_model(&fake, "timeout_secs = 30")
        .write("specs/http.toml", &spec);
    let mut run = ws.run_cmd(&["specs/http.toml", "-m", "fake"]);
    run.env("MCP_TEST_HEADER", "hello");
    let (code, out) = crate::common::run(&mut run);
    assert!(!ws.run_dirs().is_empty(), "{out}");
    let record = &ws.last_journal()[0];
    assert_eq!(
        (code, &record["passed"]),
        (0, &json!(true)),
        "{out}\n{record:#}"
    );
    let sum = record["trajectory"][1]["content"].as_str().unwrap();
    assert!(sum.contains('5'), "{record:#}");
}
