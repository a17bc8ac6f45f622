//! One run of an `exec` model's program: a cleaned environment, its own
//! process group and, where the machine allows, its own cgroup
//! (`sandbox::Tree`), so that everything it started, `setsid` and double
//! forks included, is killed when its call ends, however it ends; the
//! request on stdin (a memory file written before the start, not a pipe:
//! a program may exit unread, and a write then would fail), stdout read up to a limit and the tail of stderr kept for the
//! error. The call ends when the program has exited and closed its output.
//! The group is killed after the leader is reaped too: its id cannot name
//! another group while a member lives.

use crate::output::errln;
use std::process::Stdio;
use std::sync::Once;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};

use super::ExecOptions;
use crate::provider::ProviderError;

/// The most stdout a program may write for one answer.
const MAX_STDOUT: usize = 16 << 20;

/// How much of the end of stderr an error keeps.
pub(super) const STDERR_TAIL: usize = 2048;

/// The environment a program gets: `PATH` (so it can find the programs it
/// runs), the `env` names the harness has (keys taken out of its
/// environment at start included), then `env_set`.
pub(super) fn environment(
    options: &ExecOptions,
    var: impl Fn(&str) -> Option<String>,
) -> Vec<(String, String)> {
    let mut out: std::collections::BTreeMap<String, String> = Default::default();
    for name in std::iter::once("PATH").chain(options.env.iter().map(String::as_str)) {
        if let Some(value) = var(name) {
            out.insert(name.to_owned(), value);
        }
    }
    for (k, v) in &options.env_set {
        out.insert(k.clone(), v.clone());
    }
    out.into_iter().collect()
}

/// Runs `argv` with `stdin`; its stdout, or why the call failed.
pub(super) async fn run(
    argv: &[String],
    options: &ExecOptions,
    stdin: &[u8],
    timeout: Duration,
) -> Result<Vec<u8>, ProviderError> {
    let input = crate::sandbox::memory_file(stdin)
        .map_err(|e| ProviderError::Program(format!("writing the request for it: {e}")))?;
    let tree = crate::sandbox::Tree::new();
    if !tree.holds() {
        warn_uncontained();
    }
    let mut command = tokio::process::Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .current_dir(&options.cwd)
        .env_clear()
        .envs(environment(options, crate::secrets::var))
        .stdin(Stdio::from(input))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let std_command = crate::sandbox::child_of_harness(command.as_std_mut());
    tree.enter_on_spawn(std_command);
    let mut child = command.spawn().map_err(|e| {
        ProviderError::Program(format!(
            "cannot start `{}` in {}: {e}",
            crate::text::visible_line(&argv[0]),
            options.cwd.display()
        ))
    })?;
    let group = Group(child.id().expect("a child not yet reaped has a pid") as i32);
    let talked = tokio::time::timeout(timeout, talk(&mut child)).await;
    // Whatever the program left running, in its group or its tree, dies
    // with the call: a background child after a successful exit included.
    drop(group);
    tree.kill();
    let Ok((out, err, status)) = talked else {
        let _ = child.kill().await;
        return Err(ProviderError::Timeout(timeout));
    };
    let status = status.map_err(|e| ProviderError::Program(format!("waiting for it: {e}")))?;
    let stdout = out.map_err(|e| ProviderError::Program(format!("reading its stdout: {e}")))?;
    if !status.success() {
        return Err(ProviderError::Program(format!(
            "`{}` ended with {status}; stderr: {}",
            crate::text::visible_line(&argv[0]),
            stderr_tail(&err)
        )));
    }
    stdout.ok_or_else(|| {
        ProviderError::Malformed(format!(
            "the program wrote more than {} MiB to stdout",
            MAX_STDOUT >> 20
        ))
    })
}

/// Reads the program's output to its end, and reaps it.
async fn talk(child: &mut tokio::process::Child) -> Talked {
    let (output, errors) = (
        child.stdout.take().expect("piped"),
        child.stderr.take().expect("piped"),
    );
    let (out, err) = tokio::join!(read_capped(output), read_tail(errors));
    let status = child.wait().await;
    (out, err, status)
}

/// Stdout (`None` past the cap), stderr's tail, and how the program ended.
type Talked = (
    std::io::Result<Option<Vec<u8>>>,
    Vec<u8>,
    std::io::Result<std::process::ExitStatus>,
);

/// Says once per process that programs' trees are only process groups here.
fn warn_uncontained() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        errln!(
            "warning: no cgroup can be made here (not root, or no writable cgroup hierarchy): \
             an exec program that leaves its process group (setsid) can outlive its call"
        );
    });
}

/// The program's process group, killed when the call ends, however it
/// ends. While a member lives the id cannot name another group; once all
/// are gone, only a wrap of the pid counter within the call could reuse it.
struct Group(i32);

impl Drop for Group {
    fn drop(&mut self) {
        // SAFETY: killpg only sends a signal, to a group this call started.
        unsafe { libc::killpg(self.0, libc::SIGKILL) };
    }
}

/// Stdout up to [`MAX_STDOUT`] (`None` past it), read to its end either way
/// so the program is never blocked on a full pipe.
async fn read_capped(mut pipe: impl AsyncRead + Unpin) -> std::io::Result<Option<Vec<u8>>> {
    let mut kept = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    let mut over = false;
    loop {
        let n = pipe.read(&mut chunk).await?;
        if n == 0 {
            return Ok((!over).then_some(kept));
        }
        if kept.len() + n > MAX_STDOUT {
            over = true;
            kept = Vec::new();
        }
        if !over {
            kept.extend_from_slice(&chunk[..n]);
        }
    }
}

/// The last [`STDERR_TAIL`] bytes of stderr.
async fn read_tail(mut pipe: impl AsyncRead + Unpin) -> Vec<u8> {
    let mut tail = Vec::new();
    let mut chunk = vec![0u8; 16 << 10];
    while let Ok(n) = pipe.read(&mut chunk).await {
        if n == 0 {
            break;
        }
        tail.extend_from_slice(&chunk[..n]);
        if tail.len() > 2 * STDERR_TAIL {
            tail.drain(..tail.len() - STDERR_TAIL);
        }
    }
    if tail.len() > STDERR_TAIL {
        tail.drain(..tail.len() - STDERR_TAIL);
    }
    tail
}

/// Stderr's tail as one escaped line: control characters (a terminal's
/// escape sequences) and newlines as visible text, `…` where it was cut.
pub(super) fn stderr_tail(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    if text.is_empty() {
        return "(empty)".to_owned();
    }
    let cut = if bytes.len() >= STDERR_TAIL {
        "…"
    } else {
        ""
    };
    format!("{cut}{}", crate::text::visible_line(text))
}
