//! Limits cases: children (see `tests/limits.rs`). Ctrl-C cancels an agent's
//! looping tool calls within a second and exits 130, at once on a second
//! Ctrl-C, with a journal `--resume` finishes; an `exec` program finds no
//! key in its own environment or in any ancestor's `/proc/<pid>/environ`,
//! while the harness still authenticates with it; and nothing a program
//! starts (`setsid`, a double fork, a background child) outlives its call,
//! whether it succeeds, fails, times out or is cut short by Ctrl-C.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{capped, capped_with, pid_alive};
use crate::common::fake_server::{FakeCall, FakeServer, Reply};
use crate::common::workspace::{Workspace, model_toml};

/// An agent whose `spin` tool loops until the script's time limit (1 s of CPU).
const SPIN_AGENT: &str = r##"
id = "spin_agent"
title = "Tools that loop"
runs = 3

[generate]
script = '#{ n: index, state: #{ calls: 0 } }'

[prompt]
user = "Task {{ n }}: call spin, then submit."

[agent]
max_turns = 3
end = { tool = "submit" }
max_operations = 50000000

[[tools]]
name = "spin"
description = "Spins."
script = "let x = 0; loop { x += 1; }"

[[tools]]
name = "submit"
description = "Ends the work."
script = "#{ ok: true }"

[[verify]]
rule = "final_state"
expr = "true"
"##;

/// Calls of `spin` in one turn: about 30 s of scripts when nothing cancels them.
const SPINS: usize = 30;

/// Sends SIGINT to `pid`.
fn interrupt(pid: i32) {
    // SAFETY: signalling the harness this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
}

/// Waits up to 20 s for `ready`.
fn wait_for(what: &str, ready: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ready() {
        assert!(Instant::now() < deadline, "{what} never happened");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Every line of the journal at `path`: complete and parseable.
fn journal_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "a torn line:\n{text}"
    );
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn ctrl_c_cancels_looping_tool_calls_at_once() {
    let calm = Arc::new(AtomicBool::new(false));
    let script_calm = calm.clone();
    // Task 0 submits; the others spin, until the resume.
    let fake = FakeServer::start(move |r| {
        if script_calm.load(Ordering::SeqCst) || r.prompt.starts_with("Task 0") {
            Reply::Calls(String::new(), vec![FakeCall::new("submit", "{}")])
        } else {
            Reply::Calls(String::new(), vec![FakeCall::new("spin", "{}"); SPINS])
        }
    });
    let ws = Workspace::new();
    ws.write("specs/spin.toml", SPIN_AGENT);
    ws.fake_model(&fake, "timeout_secs = 10\nconcurrency = 1");
    let mut sent = None;
    let out = capped_with(
        &mut ws.run_cmd(&["specs/spin.toml", "-m", "fake", "--no-cache"]),
        Duration::from_secs(60),
        |pid| {
            // Task 1's turn is answered: its spins are running.
            wait_for("task 1's request", || fake.count() >= 2);
            std::thread::sleep(Duration::from_millis(300));
            sent = Some(Instant::now());
            interrupt(pid);
        },
    );
    let took = sent.unwrap().elapsed();
    out.expect_code(130).expect_output("--resume");
    assert!(
        took < Duration::from_secs(1),
        "exit {took:?} after Ctrl-C:\n{}",
        out.out
    );
    let run_dir = ws.run_dirs().pop().unwrap();
    let first = journal_lines(&run_dir.join("journal.jsonl"));
    assert_eq!(first.len(), 1, "task 0 finished before Ctrl-C");

    calm.store(true, Ordering::SeqCst);
    let resumed = capped(
        &mut ws.run_cmd(&["--resume", "latest", "--no-cache"]),
        Duration::from_secs(60),
    );
    resumed.expect_code(0);
    let records = journal_lines(&run_dir.join("journal.jsonl"));
    assert_eq!(records.len(), 3, "{}", resumed.out);
    assert_eq!(&records[..1], &first[..]);
}

/// A stand-in for `vllm serve` that ignores SIGTERM and never gets ready:
/// stopping it takes the whole grace of 10 s.
const STUBBORN_SERVER: &str = "#!/bin/sh\ntrap '' TERM\nexec sleep 300\n";

#[test]
fn a_second_ctrl_c_exits_at_once() {
    let fake = FakeServer::healthy();
    let ws = Workspace::new();
    ws.write("specs/sums.toml", SUMS);
    ws.write("stubborn.sh", STUBBORN_SERVER);
    let script = ws.path().join("stubborn.sh");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let config = format!(
        "{}[models.stubborn]\nprovider = \"vllm\"\nmodel = \"org/tiny\"\n\
         [models.stubborn.server]\nbinary = \"{}\"\nready_timeout_secs = 60\n",
        model_toml("fake", "openai", "fake-model", &fake.openai_base(), ""),
        script.display()
    );
    ws.write("harness.toml", &config);
    let mut cmd = ws.run_cmd(&[
        "specs/sums.toml",
        "-m",
        "fake",
        "-m",
        "stubborn",
        "--runs",
        "3",
    ]);
    let mut second = None;
    let out = capped_with(&mut cmd, Duration::from_secs(60), |pid| {
        // The fixed model's part is done and journaled before the managed one starts.
        let log = || ws.run_dirs().pop().map(|d| d.join("server.log"));
        wait_for("the stubborn server", || {
            log().is_some_and(|l| !crate::common::managed::started_pids(&l).is_empty())
        });
        interrupt(pid);
        // The first Ctrl-C stops the server gracefully: SIGTERM, then its grace.
        std::thread::sleep(Duration::from_secs(1));
        assert_eq!(
            // SAFETY: signal 0 only asks whether the process exists.
            unsafe { libc::kill(pid, 0) },
            0,
            "it did not wait for the server"
        );
        second = Some(Instant::now());
        interrupt(pid);
    });
    let took = second.unwrap().elapsed();
    out.expect_code(130);
    assert!(
        took < Duration::from_secs(1),
        "exit {took:?} after the second Ctrl-C"
    );
    let run_dir = ws.run_dirs().pop().unwrap();
    assert_eq!(journal_lines(&run_dir.join("journal.jsonl")).len(), 3);
    // The server died with the harness (its parent-death signal).
    let servers = crate::common::managed::started_pids(&run_dir.join("server.log"));
    assert!(
        crate::common::managed::wait_until(Duration::from_secs(2), || {
            !servers.iter().any(|&p| pid_alive(p))
        }),
        "the server outlived the harness"
    );
}

/// The keys of [`programs_see_no_secret`]: (variable, value). The first
/// looks like a key, the second is one only because `api_key_env` names
/// it, the third is passed to the program by its `env`.
fn canaries() -> [(&'static str, String); 3] {
    let stamp = format!(
        "{}{}",
        std::process::id(),
        std::time::SystemTime::UNIX_EPOCH
            .elapsed()
            .unwrap()
            .as_nanos()
    );
    [
        ("HARNESS_CANARY_API_KEY", format!("canary-one-{stamp}")),
        ("FAKE_AUTH", format!("canary-two-{stamp}")),
        ("HARNESS_SNOOP_TOKEN", format!("canary-three-{stamp}")),
    ]
}

/// Dumps its own environment and every ancestor's `/proc/<pid>/environ`,
/// then answers with the harness's environment reversed (past redaction).
const SNOOP: &str = r#"
env > own.env
: > ancestors.env
p=$PPID
while [ "$p" -gt 1 ]; do
  cat "/proc/$p/environ" >> ancestors.env
  printf '\n' >> ancestors.env
  p=$(sed -n 's/^PPid:[[:space:]]*//p' "/proc/$p/status")
done
tr '\0' '\n' < "/proc/$PPID/environ" | rev
"#;

const SUMS: &str = r#"
id = "sums"
title = "Sums"
runs = 1

[generate]
script = '#{ expr: `${index} + 1`, answer: index + 1 }'

[prompt]
user = "{{ expr }} = ?"

[[verify]]
rule = "numeric"
extract = "last_number"
expected = "answer"
"#;

/// Every file under `dir`, read lossily, with its path.
fn files_under(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            out.push((path.display().to_string(), text));
        }
    }
    out
}

#[test]
fn programs_see_no_secret() {
    let canaries = canaries();
    let fake = FakeServer::healthy();
    let ws = Workspace::new();
    ws.write("specs/sums.toml", SUMS);
    ws.write("snoop.sh", SNOOP);
    let config = format!(
        "[models.snoop]\nprovider = \"exec\"\ncommand = [\"sh\", \"snoop.sh\"]\n\
         env = [\"HARNESS_SNOOP_TOKEN\"]\n\n{}",
        model_toml(
            "fake",
            "openai",
            "fake-model",
            &fake.openai_base(),
            "api_key_env = \"FAKE_AUTH\"\ntimeout_secs = 5"
        )
    );
    ws.write("harness.toml", &config);
    let mut cmd = ws.run_cmd(&["specs/sums.toml", "-m", "snoop", "-m", "fake"]);
    for (name, value) in &canaries {
        cmd.env(name, value);
    }
    let out = capped(&mut cmd, Duration::from_secs(60));
    out.expect_code(0);

    // The program did read the harness's environment block and its ancestors'.
    let ancestors = std::fs::read_to_string(ws.path().join("ancestors.env")).unwrap();
    assert!(ancestors.contains("NO_COLOR=1"), "{ancestors}");
    // Its own environment holds the key its `env` names, and no other.
    let own = std::fs::read_to_string(ws.path().join("own.env")).unwrap();
    assert!(
        own.contains(&format!("HARNESS_SNOOP_TOKEN={}", canaries[2].1)),
        "{own}"
    );
    // The harness still sends the key its `api_key_env` names.
    let sent: Vec<Option<String>> = fake
        .requests()
        .into_iter()
        .map(|r| r.authorization)
        .collect();
    assert_eq!(sent, [Some(format!("Bearer {}", canaries[1].1))]);
    let journal = ws.last_journal();
    let snooped = journal.iter().find(|r| r["model"] == "snoop").unwrap();
    assert!(
        snooped["response"].as_str().unwrap().contains("1=ROLOC_ON"),
        "{snooped:#}"
    );

    let mut places = files_under(&ws.path().join("results"));
    places.push(("the terminal".into(), out.out.clone()));
    places.push(("an ancestor's environ".into(), ancestors));
    for (i, (name, value)) in canaries.iter().enumerate() {
        let reversed: String = value.chars().rev().collect();
        for (place, text) in &places {
            assert!(!text.contains(value.as_str()), "{name} in {place}");
            assert!(!text.contains(&reversed), "{name} reversed in {place}");
        }
        if i < 2 {
            assert!(
                !own.contains(value.as_str()),
                "{name} in the program's environment"
            );
        }
    }
}

/// A program that starts `sleep 300` by `how` and writes its pid to `left.pid`.
fn leaves(how: &str, then: &str) -> String {
    let quiet = "</dev/null >/dev/null 2>&1";
    let start = match how {
        "setsid" => format!("setsid sleep 300 {quiet} & echo $! > left.pid"),
        "double fork" => format!("setsid sh -c 'sleep 300 {quiet} & echo $! > left.pid' {quiet}"),
        _ => format!("sleep 300 {quiet} & echo $! > left.pid"),
    };
    format!("{start}\n{then}\n")
}

/// Whether the harness runs as root: only root can make the cgroups that
/// hold a program that left its process group.
fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// One way a program leaves a child behind, and how its call ends.
struct Leaver {
    case: &'static str,
    /// `setsid`, `double fork` (into a new session) or `background`.
    how: &'static str,
    /// What the program does after starting its child.
    then: &'static str,
    timeout_secs: u32,
    /// Ctrl-C once the child started.
    ctrl_c: bool,
    /// The harness's exit code.
    code: i32,
    /// The record's failure (none when Ctrl-C leaves no record).
    failure: Option<&'static str>,
}

/// A program that leaves a child in a new session and succeeds: the row
/// the others differ from.
const SETSID_SUCCEEDS: Leaver = Leaver {
    case: "setsid, success",
    how: "setsid",
    then: "echo 1",
    timeout_secs: 10,
    ctrl_c: false,
    code: 0,
    failure: None,
};

const LEAVERS: [Leaver; 6] = [
    SETSID_SUCCEEDS,
    Leaver {
        case: "double fork, success",
        how: "double fork",
        ..SETSID_SUCCEEDS
    },
    Leaver {
        case: "background child, success",
        how: "background",
        ..SETSID_SUCCEEDS
    },
    Leaver {
        case: "setsid, failure",
        then: "exit 3",
        code: 4,
        failure: Some("program_error"),
        ..SETSID_SUCCEEDS
    },
    Leaver {
        case: "setsid, timeout",
        then: "sleep 30",
        timeout_secs: 1,
        code: 4,
        failure: Some("timeout"),
        ..SETSID_SUCCEEDS
    },
    Leaver {
        case: "setsid, Ctrl-C",
        then: "sleep 30",
        ctrl_c: true,
        code: 130,
        ..SETSID_SUCCEEDS
    },
];

#[test]
fn programs_leave_nothing_behind() {
    for leaver in &LEAVERS {
        let Leaver {
            case,
            how,
            then,
            timeout_secs: timeout,
            ctrl_c,
            code,
            failure,
        } = *leaver;
        if how != "background" && !is_root() {
            eprintln!("skipping {case}: only root can hold a program in a cgroup here");
            continue;
        }
        let ws = Workspace::new();
        ws.write("specs/sums.toml", SUMS);
        ws.write("leave.sh", &leaves(how, then));
        ws.write(
            "harness.toml",
            &format!(
                "[models.leaver]\nprovider = \"exec\"\ncommand = [\"sh\", \"leave.sh\"]\ntimeout_secs = {timeout}\n"
            ),
        );
        let pid_file = ws.path().join("left.pid");
        let read_pid =
            || -> Option<i32> { std::fs::read_to_string(&pid_file).ok()?.trim().parse().ok() };
        let mut cmd: Command = ws.run_cmd(&["specs/sums.toml", "-m", "leaver", "--no-cache"]);
        let out = capped_with(&mut cmd, Duration::from_secs(60), |pid| {
            if ctrl_c {
                wait_for("the program's child", || read_pid().is_some());
                interrupt(pid);
            }
        });
        out.expect_code(code);
        let left = read_pid().unwrap_or_else(|| panic!("{case}: no pid written:\n{}", out.out));
        assert!(
            !pid_alive(left),
            "{case}: pid {left} outlived its call:\n{}",
            out.out
        );
        if !ctrl_c {
            let journal = ws.last_journal();
            assert_eq!(journal.len(), 1, "{case}");
            assert_eq!(
                journal[0]["failure"].as_str(),
                failure,
                "{case}: {:#}",
                journal[0]
            );
        }
    }
}
