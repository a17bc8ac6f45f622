//! A stdio MCP server's process: started as the harness starts every other
//! program (a cleaned environment, its own process group, the parent-death
//! signal, a cgroup where the machine allows), forked from a keeper thread
//! that lives until the server is reaped (Linux ties the parent-death
//! signal to the forking thread), and killed with its whole tree when the
//! session is dropped.
//!
//! Between the server's stdout and the SDK sits a gate: it passes on one
//! JSON-RPC message per line, and closes the stream at the first line that
//! is not one (`malformed`), that is longer than a message may be, or once
//! the server has written more than a session may (`flood`). A closed stream
//! ends every request in flight, so a hostile server ends the episode at
//! once instead of at a timeout.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::sync::watch;

use super::{FaultKind, McpFault};

/// The longest line (one JSON-RPC message) a server may write.
pub(crate) const MAX_LINE: usize = 32 << 20;

/// The most a server may write to stdout in one session.
pub(crate) const MAX_TOTAL: usize = 256 << 20;

/// The end of stderr kept for errors.
const STDERR_TAIL: usize = 2048;

/// What a gate or a reaped process learned about a server: the first fault.
pub(super) type FaultSlot = Arc<Mutex<Option<McpFault>>>;

/// Keeps the first fault only: later ones follow from it.
pub(super) fn note(slot: &FaultSlot, kind: FaultKind, message: String) {
    let mut held = slot.lock().unwrap_or_else(|e| e.into_inner());
    held.get_or_insert(McpFault { kind, message });
}

/// A running server process; dropping it kills its group and its tree.
pub(super) struct ServerChild {
    pid: i32,
    tree: crate::sandbox::Tree,
    exited: watch::Receiver<bool>,
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_closed: watch::Receiver<bool>,
}

impl ServerChild {
    /// The server's process id (its process group's too).
    #[cfg(test)]
    pub(super) fn pid(&self) -> u32 {
        self.pid.unsigned_abs()
    }

    /// Whether the server has exited (and been reaped).
    pub(super) fn exited(&self) -> bool {
        *self.exited.borrow()
    }

    /// The end of what the server wrote to stderr, as one escaped line;
    /// read to its close when that comes within a moment (it exited).
    pub(super) async fn stderr_tail(&self) -> String {
        let mut closed = self.stderr_closed.clone();
        let _ = tokio::time::timeout(Duration::from_millis(200), closed.wait_for(|c| *c)).await;
        let held = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        let text = String::from_utf8_lossy(&held);
        let text = text.trim();
        if text.is_empty() {
            "(empty)".to_owned()
        } else {
            crate::text::visible_line(text)
        }
    }
}

impl Drop for ServerChild {
    fn drop(&mut self) {
        // SAFETY: killpg only sends a signal, to the group this session
        // started; while its leader is unreaped the id names no other group.
        unsafe { libc::killpg(self.pid, libc::SIGKILL) };
        self.tree.kill();
    }
}

/// Starts `argv` in `cwd` with `env` only; the transport's two ends for
/// the SDK (the gated stdout, the server's stdin) and the process.
pub(super) fn spawn(
    argv: &[String],
    env: &[(String, String)],
    cwd: &std::path::Path,
    faults: &FaultSlot,
) -> Result<(DuplexStream, tokio::process::ChildStdin, ServerChild), McpFault> {
    let failed = |message: String| McpFault {
        kind: FaultKind::Start,
        message,
    };
    let tree = crate::sandbox::Tree::new();
    let mut command = std::process::Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .current_dir(cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    crate::sandbox::child_of_harness(&mut command);
    tree.enter_on_spawn(&mut command);
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let (exited_tx, exited) = watch::channel(false);
    std::thread::Builder::new()
        .name("mcp-keeper".into())
        .spawn(move || match command.spawn() {
            Err(e) => drop(started_tx.send(Err(e))),
            Ok(mut child) => {
                let pipes = (child.stdin.take(), child.stdout.take(), child.stderr.take());
                let _ = started_tx.send(Ok((child.id(), pipes)));
                let _ = child.wait();
                exited_tx.send_replace(true);
            }
        })
        .map_err(|e| failed(format!("cannot start a keeper thread: {e}")))?;
    let shown = crate::text::visible_line(&argv[0]);
    let (pid, pipes) = started_rx
        .recv()
        .map_err(|_| failed("the keeper thread died".to_owned()))?
        .map_err(|e| failed(format!("cannot start `{shown}` in {}: {e}", cwd.display())))?;
    let pid = i32::try_from(pid).map_err(|_| failed(format!("pid {pid} out of range")))?;
    let (stderr_done, stderr_closed) = watch::channel(false);
    let child_guard = ServerChild {
        pid,
        tree,
        exited,
        stderr: Arc::default(),
        stderr_closed,
    };
    let (Some(stdin), Some(stdout), Some(stderr)) = pipes else {
        return Err(failed("the server's pipes were not made".to_owned()));
    };
    let io = |e: std::io::Error| failed(format!("cannot watch the server's pipes: {e}"));
    let stdin = tokio::process::ChildStdin::from_std(stdin).map_err(io)?;
    let stdout = tokio::process::ChildStdout::from_std(stdout).map_err(io)?;
    let stderr = tokio::process::ChildStderr::from_std(stderr).map_err(io)?;
    let tail = Arc::clone(&child_guard.stderr);
    tokio::spawn(async move {
        keep_tail(stderr, tail).await;
        stderr_done.send_replace(true);
    });
    let (sdk_end, gate_end) = tokio::io::duplex(64 << 10);
    tokio::spawn(gate(stdout, gate_end, Arc::clone(faults)));
    Ok((sdk_end, stdin, child_guard))
}

/// Keeps the last [`STDERR_TAIL`] bytes of stderr in `tail`, read to its end.
async fn keep_tail(mut pipe: impl AsyncRead + Unpin, tail: Arc<Mutex<Vec<u8>>>) {
    let mut chunk = vec![0u8; 8 << 10];
    while let Ok(n) = pipe.read(&mut chunk).await {
        if n == 0 {
            break;
        }
        let mut held = tail.lock().unwrap_or_else(|e| e.into_inner());
        held.extend_from_slice(&chunk[..n]);
        if held.len() > STDERR_TAIL {
            let cut = held.len() - STDERR_TAIL;
            held.drain(..cut);
        }
    }
}

/// Passes the server's messages on to the SDK, one checked line at a
/// time, until its stdout ends or a fault closes the stream.
async fn gate(mut from: impl AsyncRead + Unpin, mut to: DuplexStream, faults: FaultSlot) {
    let mut line = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    let mut total = 0usize;
    loop {
        let n = match from.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        total += n;
        if total > MAX_TOTAL {
            let why = format!("the server wrote more than {} MiB", MAX_TOTAL >> 20);
            return note(&faults, FaultKind::Flood, why);
        }
        let mut rest = &chunk[..n];
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            line.extend_from_slice(&rest[..end]);
            rest = &rest[end + 1..];
            if let Err((kind, why)) = check_line(&line) {
                return note(&faults, kind, why);
            }
            if !line.iter().all(u8::is_ascii_whitespace) {
                line.push(b'\n');
                if to.write_all(&line).await.is_err() {
                    return; // the session is gone
                }
            }
            line.clear();
        }
        line.extend_from_slice(rest);
        if line.len() > MAX_LINE {
            let why = format!(
                "a message ran past {} MiB without a newline",
                MAX_LINE >> 20
            );
            return note(&faults, FaultKind::Flood, why);
        }
    }
}

/// Whether one line is a JSON-RPC 2.0 message (or a batch of them); blank
/// lines pass.
pub(super) fn check_line(line: &[u8]) -> Result<(), (FaultKind, String)> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    let shown =
        || crate::text::visible_line(&String::from_utf8_lossy(&line[..line.len().min(120)]));
    let value: serde_json::Value = serde_json::from_slice(line).map_err(|e| {
        let why = format!(
            "the server wrote a line that is not JSON ({e}): {}",
            shown()
        );
        (FaultKind::Malformed, why)
    })?;
    let one = |v: &serde_json::Value| v.get("jsonrpc").and_then(|j| j.as_str()) == Some("2.0");
    let fine = match &value {
        serde_json::Value::Array(items) => !items.is_empty() && items.iter().all(one),
        other => one(other),
    };
    if fine {
        Ok(())
    } else {
        let why = format!(
            "the server wrote JSON that is not a JSON-RPC 2.0 message: {}",
            shown()
        );
        Err((FaultKind::Malformed, why))
    }
}
