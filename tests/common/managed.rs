//! Helpers for the managed-server tests: server pids from `server.log`,
//! liveness from /proc, and a guard that leaves no server behind.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The pids the harness logged as `[harness] started pid N` in `log`.
pub fn started_pids(log: &Path) -> Vec<i32> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            l.strip_prefix("[harness] started pid ")?
                .trim()
                .parse()
                .ok()
        })
        .collect()
}

/// Whether `pid` is a live (not zombie) process.
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit_once(") ").map(|(_, rest)| rest.chars().next());
            state != Some(Some('Z'))
        }
        Err(_) => false,
    }
}

/// Polls `done` every 50 ms until it holds or `timeout` passes; returns whether it held.
pub fn wait_until(timeout: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    done()
}

/// The `server.log` of each run under `results`.
pub fn server_logs(results: &Path) -> Vec<PathBuf> {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(results.join("runs"))
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path().join("server.log")))
                .filter(|p| p.exists())
                .collect()
        })
        .unwrap_or_default();
    logs.sort();
    logs
}

/// On drop (also when a test fails), SIGKILLs every server the harness logged
/// under `results` that is still alive, so a failing test leaves no orphan.
pub struct NoOrphans(pub PathBuf);

impl NoOrphans {
    /// Server pids logged under the results directory that are still alive:
    /// not logged as stopped, and still running the program the log started
    /// (a stopped server's pid may since name another test's process, which
    /// must never be killed for it).
    pub fn survivors(&self) -> Vec<i32> {
        server_logs(&self.0)
            .iter()
            .flat_map(|log| unstopped(log))
            .filter(|(pid, program)| alive(*pid) && runs(*pid, program))
            .map(|(pid, _)| pid)
            .collect()
    }
}

/// The pids `log` started and never logged as stopped, each with the file
/// name of the program its `starting:` line names.
fn unstopped(log: &Path) -> Vec<(i32, String)> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut program = String::new();
    let mut started = Vec::new();
    for line in text.lines() {
        if let Some(command) = line.strip_prefix("[harness] starting: ") {
            let first = command.split_whitespace().next().unwrap_or_default();
            program = first.rsplit('/').next().unwrap_or_default().to_owned();
        } else if let Some(pid) = line.strip_prefix("[harness] started pid ") {
            if let Ok(pid) = pid.trim().parse() {
                started.push((pid, program.clone()));
            }
        } else if let Some(rest) = line.strip_prefix("[harness] stopped pid ") {
            let pid: Option<i32> = rest.split_whitespace().next().and_then(|p| p.parse().ok());
            started.retain(|(p, _)| Some(*p) != pid);
        }
    }
    started
}

/// Whether `pid`'s command line names `program` (by file name) among its
/// first two words (a script runs under its interpreter).
fn runs(pid: i32, program: &str) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    cmdline
        .split(|&b| b == 0)
        .take(2)
        .map(|word| String::from_utf8_lossy(word).into_owned())
        .any(|word| word.rsplit('/').next() == Some(program))
}

impl Drop for NoOrphans {
    fn drop(&mut self) {
        for pid in self.survivors() {
            // SAFETY: a process our harness child started and logged.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// The real llama-server and SmolLM2 GGUF from `scripts/test.sh`
/// (`LLAMA_SERVER_BIN`, `SMOLLM2_MODEL`); `None` to skip, a failure under `HARNESS_E2E=1`.
pub fn llama_paths() -> Option<(PathBuf, PathBuf)> {
    let bin = super::e2e_var("LLAMA_SERVER_BIN")?;
    let model = super::e2e_var("SMOLLM2_MODEL")?;
    Some((bin.into(), model.into()))
}
