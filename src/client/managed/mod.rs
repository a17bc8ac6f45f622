//! Managed local inference: the harness starts a model server itself, waits
//! until it is ready, hands out its OpenAI-compatible base URL, and stops it.
//!
//! ```text
//! let setup = ModelSetup::parse("llamacpp:models/smollm2.gguf")?;
//! let server = ManagedServer::start(&setup, "results/runs/x/server.log".as_ref()).await?;
//! let url = server.base_url(); // http://127.0.0.1:<port>/v1, for an `openai` client
//! // ... requests ...
//! server.stop(); // SIGTERM, up to 10 s, SIGKILL; dropping it does the same
//! ```
//!
//! `llamacpp` runs `llama-server`, `vllm` runs `vllm serve`; both on a free
//! port of 127.0.0.1 picked by the harness, in their own process group, with
//! a parent-death signal, output appended to the log (see [`process`]).
//!
//! Imports go down only: `provider` (the model's configuration).

mod llamacpp;
pub(crate) mod process;
mod vllm;

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::provider::model_ref::DEFAULT_READY_TIMEOUT_SECS;
use crate::provider::{ModelSetup, ProviderKind, ServerOptions};
use process::ServerProcess;

/// Log lines quoted in start-up and crash errors.
const QUOTED_LINES: usize = 20;

/// Why a managed server could not serve.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ManagedError {
    /// The model's provider is not a managed kind.
    #[error("model `{0}` is not a managed model (llamacpp or vllm)")]
    NotManaged(String),
    /// No executable was found.
    #[error(
        "cannot find `{binary}`: looked in {searched}; set `binary` under [models.<name>.server] in harness.toml"
    )]
    BinaryNotFound {
        /// The executable's name.
        binary: &'static str,
        /// Where it was looked for.
        searched: String,
    },
    /// The process could not be started, or its log not written.
    #[error("cannot start {binary}: {source}")]
    Spawn {
        /// The executable.
        binary: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The process exited before it was ready.
    #[error("{server} exited during start-up ({status}); last lines of {log}:\n{lines}")]
    ExitedDuringStartup {
        /// Which server, for which model.
        server: String,
        /// How it exited.
        status: String,
        /// The log file.
        log: String,
        /// Its last lines.
        lines: String,
    },
    /// The process did not become ready in time (it has been stopped).
    #[error(
        "{server} was not ready after {secs} s (ready_timeout_secs); last lines of {log}:\n{lines}"
    )]
    NotReady {
        /// Which server, for which model.
        server: String,
        /// The timeout.
        secs: f64,
        /// The log file.
        log: String,
        /// Its last lines.
        lines: String,
    },
}

/// A started, ready server; stopped on [`ManagedServer::stop`] or drop.
pub(crate) struct ManagedServer {
    process: ServerProcess,
    base_url: String,
    label: String,
}

/// A handle that tells when a running server has died (for the runner).
#[derive(Clone)]
pub(crate) struct ServerWatch {
    exit: watch::Receiver<Option<ExitStatus>>,
    label: String,
    log: PathBuf,
    log_offset: u64,
}

/// A bound-then-released loopback port; the server binds it right after.
fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind(("127.0.0.1", 0))?
        .local_addr()?
        .port())
}

/// `serve` (the server's leading arguments naming the model) and a listener
/// on loopback at `port`: a server the harness starts is never reachable
/// from another machine.
fn on_loopback(serve: [String; 2], port: u16) -> Vec<String> {
    let [verb, model] = serve;
    let listen = [
        "--host".into(),
        "127.0.0.1".into(),
        "--port".into(),
        port.to_string(),
    ];
    [verb, model].into_iter().chain(listen).collect()
}

/// Appends `flag value` when `value` is set.
fn push_flag(args: &mut Vec<String>, flag: &str, value: Option<impl std::fmt::Display>) {
    if let Some(value) = value {
        args.extend([flag.to_owned(), value.to_string()]);
    }
}

/// `args` followed by the chat template (under the server's own flag) and the
/// user's `extra_args`, which come last so they can override the harness's.
fn with_template_and_extra(
    mut args: Vec<String>,
    template_flag: &str,
    options: &ServerOptions,
) -> Vec<String> {
    let template = options.chat_template.as_deref().map(Path::display);
    push_flag(&mut args, template_flag, template);
    args.extend(options.extra_args.iter().cloned());
    args
}

/// `name` in a `PATH` directory, when executable there.
fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

impl ManagedServer {
    /// Starts the server `spec` names (`llamacpp` or `vllm`, options from
    /// `spec.server`) on a free loopback port, output appended to `log_path`,
    /// and waits until it answers its readiness endpoint. Dropping the future
    /// stops a server still starting. A port taken between choosing and
    /// binding it is retried with another.
    pub(crate) async fn start(
        setup: &ModelSetup,
        log_path: &Path,
    ) -> Result<ManagedServer, ManagedError> {
        let options = setup.server.clone().unwrap_or_default();
        let (binary, ready_path, keep_env): (PathBuf, &str, &[&str]) = match setup.provider {
            ProviderKind::LlamaCpp => (llamacpp::find_binary(&options)?, llamacpp::READY_PATH, &[]),
            ProviderKind::Vllm => (
                vllm::find_binary(&options)?,
                vllm::READY_PATH,
                vllm::KEEP_ENV,
            ),
            _ => return Err(ManagedError::NotManaged(setup.name.clone())),
        };
        let label = format!(
            "{} for model `{}`",
            binary
                .file_name()
                .unwrap_or(binary.as_os_str())
                .to_string_lossy(),
            setup.name
        );
        let timeout = crate::provider::model_ref::timeout(
            options
                .ready_timeout_secs
                .unwrap_or(DEFAULT_READY_TIMEOUT_SECS),
        );
        let spawn_error = |source| ManagedError::Spawn {
            binary: binary.display().to_string(),
            source,
        };
        let mut attempt = 0;
        loop {
            attempt += 1;
            let port = free_port().map_err(spawn_error)?;
            let args = match setup.provider {
                ProviderKind::Vllm => vllm::args(setup, &options, port),
                _ => llamacpp::args(setup, &options, port),
            };
            let process =
                ServerProcess::spawn(&binary, &args, keep_env, log_path).map_err(spawn_error)?;
            let root = format!("http://127.0.0.1:{port}");
            match wait_ready(&process, &format!("{root}{ready_path}"), timeout).await {
                Ok(()) => {
                    return Ok(ManagedServer {
                        process,
                        base_url: format!("{root}/v1"),
                        label,
                    });
                }
                Err(Startup::Exited(status)) => {
                    let lines = process.last_log_lines(QUOTED_LINES);
                    let lower = lines.to_ascii_lowercase();
                    if attempt < 3
                        && (lower.contains("address already in use")
                            || lower.contains("couldn't bind"))
                    {
                        continue;
                    }
                    return Err(ManagedError::ExitedDuringStartup {
                        server: label,
                        status: status.to_string(),
                        log: log_path.display().to_string(),
                        lines,
                    });
                }
                Err(Startup::TimedOut) => {
                    let mut process = process;
                    process.stop();
                    return Err(ManagedError::NotReady {
                        server: label,
                        secs: timeout.as_secs_f64(),
                        log: log_path.display().to_string(),
                        lines: process.last_log_lines(QUOTED_LINES),
                    });
                }
            }
        }
    }

    /// The OpenAI-compatible base URL, `http://127.0.0.1:<port>/v1`.
    pub(crate) fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The server's process id (and process group id).
    pub(crate) fn pid(&self) -> i32 {
        self.process.pid()
    }

    /// A handle that resolves when the server dies.
    pub(crate) fn watch(&self) -> ServerWatch {
        ServerWatch {
            exit: self.process.exit_watch(),
            label: self.label.clone(),
            log: self.process.log_path().to_path_buf(),
            log_offset: self.process.log_offset(),
        }
    }

    /// Stops the server: SIGTERM, up to 10 s, SIGKILL. Blocks until it is gone.
    pub(crate) fn stop(mut self) -> Option<ExitStatus> {
        self.process.stop()
    }
}

enum Startup {
    Exited(ExitStatus),
    TimedOut,
}

/// Polls `url` until it answers 200, the process exits, or `timeout` passes.
async fn wait_ready(process: &ServerProcess, url: &str, timeout: Duration) -> Result<(), Startup> {
    crate::net::install_tls();
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(5))
        .build()
        .expect("a plain HTTP client builds");
    let mut exit = process.exit_watch();
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = process.exit_status() {
            return Err(Startup::Exited(status));
        }
        if let Ok(response) = client.get(url).send().await
            && response.status().is_success()
        {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(Startup::TimedOut);
        }
        // Sleep, but wake at once when the process exits: a bad model path fails fast.
        let _ = tokio::time::timeout(Duration::from_millis(200), exit.changed()).await;
    }
}

/// A managed server that exited mid-run: which, how, and the end of its log.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{server} exited mid-run ({status}); last lines of {}:\n{lines}", log.display())]
pub(crate) struct ServerDeath {
    /// Which server, for which model.
    pub server: String,
    /// How it exited.
    pub status: String,
    /// Its log file.
    pub log: PathBuf,
    /// The log's last lines.
    pub lines: String,
}

impl ServerWatch {
    /// Resolves when the server has exited, with what the user is told.
    pub(crate) async fn died(&self) -> ServerDeath {
        let mut exit = self.exit.clone();
        let status = match exit.wait_for(|s| s.is_some()).await {
            Ok(s) => s.map_or_else(|| "unknown status".to_owned(), |s| s.to_string()),
            Err(_) => "its keeper stopped".to_owned(),
        };
        ServerDeath {
            server: self.label.clone(),
            status,
            log: self.log.clone(),
            lines: process::last_lines(&self.log, self.log_offset, QUOTED_LINES),
        }
    }

    /// Whether the server has exited.
    pub(crate) fn has_died(&self) -> bool {
        self.exit.borrow().is_some()
    }

    /// Whether the server exits within `grace` (a failed request may beat the
    /// exit notice by a moment: the sockets close before the process is reaped).
    pub(crate) async fn dies_within(&self, grace: Duration) -> bool {
        tokio::time::timeout(grace, self.died()).await.is_ok()
    }
}
