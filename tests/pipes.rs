//! Closed pipes end printing, never the harness: a reader that stops after
//! one line (`harness ... | head -1`), a standard error nobody reads, and
//! children that exit without reading what they were given. The harness
//! keeps Rust's SIGPIPE handling, so each of these is an `EPIPE` it must
//! take calmly: exit 0, no message, and a run's files complete.

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::common::workspace::Workspace;
use crate::common::{check_examples, harness, root};

/// What a command did when its stdout reader left after one line.
struct Cut {
    code: Option<i32>,
    first_line: String,
    stderr: String,
}

/// Runs `cmd`, reads one line of its stdout and closes the pipe, as
/// `| head -1` does, then waits for it to end.
fn cut_after_one_line(cmd: &mut Command) -> Cut {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        stderr.read_to_string(&mut text).unwrap();
        text
    });
    let mut first_line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first_line)
        .unwrap();
    // The reader is dropped here: the rest of stdout goes into a closed pipe.
    let status = child.wait().unwrap();
    Cut {
        code: status.code(),
        first_line,
        stderr: errors.join().unwrap(),
    }
}

/// A workspace with `exec_sums` answered by `echo`, a program that exits
/// without reading the request on its stdin.
fn echo_workspace() -> Workspace {
    let ws = Workspace::new();
    ws.copy_fixture("exec/sums.toml");
    ws.write(
        "harness.toml",
        "[models.deaf]\nprovider = \"exec\"\ncommand = [\"echo\", \"{{ answer }}\"]\nconcurrency = 4\n",
    );
    ws
}

/// The run's files are whole: every record in the journal, the reports
/// written to their end.
fn assert_complete(ws: &Workspace, records: usize, context: &str) {
    let journal = ws.last_journal();
    assert_eq!(journal.len(), records, "{context}");
    assert!(journal.iter().all(|r| r["passed"] == true), "{context}");
    let reports: Vec<PathBuf> = std::fs::read_dir(ws.path().join("results/reports"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let read = |ext: &str| {
        let file = reports.iter().find(|p| p.extension().unwrap() == ext);
        std::fs::read_to_string(file.unwrap_or_else(|| panic!("a .{ext} report: {context}")))
            .unwrap()
    };
    assert!(read("md").contains("deaf"), "{context}");
    assert!(read("html").trim_end().ends_with("</html>"), "{context}");
}

#[test]
fn show_into_a_closed_pipe_exits_quietly() {
    // 50 instances with their tools print far more than a pipe holds, so
    // the harness surely writes into the closed pipe.
    let cut =
        cut_after_one_line(harness(&root()).args(["show", "specs/bfcl_multiple.toml", "-n", "50"]));
    assert_eq!(cut.code, Some(0), "{}", cut.stderr);
    assert!(
        cut.first_line.contains("bfcl_multiple/0"),
        "{}",
        cut.first_line
    );
    assert_eq!(cut.stderr, "");
}

#[test]
fn run_into_a_closed_pipe_finishes_its_files() {
    let ws = echo_workspace();
    let cut = cut_after_one_line(&mut ws.run_cmd(&["specs/", "-m", "deaf", "--runs", "40"]));
    assert_eq!(cut.code, Some(0), "{}", cut.stderr);
    assert!(cut.first_line.contains("model"), "{}", cut.first_line);
    for bad in ["error", "panicked", "pipe"] {
        assert!(!cut.stderr.to_lowercase().contains(bad), "{}", cut.stderr);
    }
    assert_complete(&ws, 40, &cut.stderr);
}

#[test]
fn run_with_stderr_closed_finishes_and_reports() {
    let ws = echo_workspace();
    // Progress on: its plain lines go to stderr too.
    let run = ["run", "specs/", "-m", "deaf", "--runs", "40"];
    let mut child = harness(ws.path())
        .args(run)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Closed before the harness says a word there: its first line
    // (`run <id> → <dir>`) already meets EPIPE.
    drop(child.stderr.take());
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("report: "), "{stdout}");
    assert_complete(&ws, 40, &stdout);
}

#[test]
fn code_that_closes_its_descriptors_is_judged() {
    // The program closes its stdin, then every descriptor it has (its
    // output and the checker's channel among them); each is judged as a
    // failure or a pass, and `check` goes on to the end.
    let spec = root().join("tests/fixtures/code/closes_descriptors.toml");
    let (code, out) = check_examples(&spec, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("2/2 examples"), "{out}");
}
