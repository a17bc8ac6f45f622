//! One run of an `exec` model's program: a cleaned environment, its own
//! process group (so a timeout reaches whatever it forked), the request on
//! stdin (a memory file written before the start, not a pipe: the harness
//! dies of SIGPIPE on a closed pipe, and a program may exit unread), stdout read up to a limit and the tail of stderr kept for the
//! error. The call ends when the program has exited and closed its output;
//! at the timeout the whole group is killed before the child is reaped, so
//! the group id cannot have been reused by then.

use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};

use super::ExecOptions;
use crate::provider::ProviderError;

/// The most stdout a program may write for one answer.
const MAX_STDOUT: usize = 16 << 20;

/// How much of the end of stderr an error keeps.
pub(super) const STDERR_TAIL: usize = 2048;

/// The environment a program gets: `PATH` (so it can find the programs it
/// runs), the `env` names the harness has, then `env_set`.
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
    let mut command = tokio::process::Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .current_dir(&options.cwd)
        .env_clear()
        .envs(environment(options, |n| std::env::var(n).ok()))
        .stdin(Stdio::from(input))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let std_command = command.as_std_mut().process_group(0);
    // SAFETY: prctl and getppid are async-signal-safe; nothing allocates here.
    let parent = unsafe { libc::getpid() };
    unsafe {
        std_command.pre_exec(move || {
            // A harness killed outright takes the program along.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    let mut child = command.spawn().map_err(|e| {
        ProviderError::Program(format!(
            "cannot start `{}` in {}: {e}",
            crate::text::visible_line(&argv[0]),
            options.cwd.display()
        ))
    })?;
    let mut group = Group(Some(
        child.id().expect("a child not yet reaped has a pid") as i32
    ));
    let (output, errors) = (
        child.stdout.take().expect("piped"),
        child.stderr.take().expect("piped"),
    );
    let talk = async {
        let (out, err) = tokio::join!(read_capped(output), read_tail(errors));
        let status = child.wait().await;
        group.0 = None;
        (out, err, status)
    };
    let (out, err, status) = match tokio::time::timeout(timeout, talk).await {
        Ok(done) => done,
        Err(_) => {
            group.kill();
            let _ = child.wait().await;
            return Err(ProviderError::Timeout(timeout));
        }
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

/// The program's process group until its leader is reaped: killed when the
/// call ends before that (a timeout, a run interrupted mid-call). While the
/// leader is not reaped its id cannot name another group.
struct Group(Option<i32>);

impl Group {
    fn kill(&mut self) {
        if let Some(pgid) = self.0.take() {
            // SAFETY: killpg only sends a signal, to a group this call started.
            unsafe { libc::killpg(pgid, libc::SIGKILL) };
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
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
