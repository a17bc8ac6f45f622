//! A Model Context Protocol client on the official Rust SDK (`rmcp`): one
//! session with one server, over stdio (a program the harness starts, see
//! `stdio.rs`) or streamable HTTP. The wire follows MCP revision 2025-11-25
//! (the newest with the `initialize` handshake, which every released server
//! speaks).
//!
//! Every step is bounded: starting and `initialize` plus `tools/list` by the
//! start timeout, each `tools/call` by the call timeout, the bytes a server
//! may write by the gate. What goes wrong on the server's side is a
//! [`McpFault`] of a named [`FaultKind`]; a tool's own error (`isError`, or
//! a JSON-RPC error answer to `tools/call`) is a [`Reply`] the model reads.

mod stdio;

use std::path::{Path, PathBuf};

use crate::format::McpServer;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService, ServiceError};
use serde_json::{Map, Value};

use stdio::MAX_LINE;

/// Where a server is and how long it may take.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// The server's name, for messages.
    pub name: String,
    /// How it is reached.
    pub transport: Transport,
    /// Starting, `initialize` and `tools/list` together.
    pub start_timeout: Duration,
    /// One `tools/call`.
    pub call_timeout: Duration,
}

/// How a server is reached.
#[derive(Debug, Clone)]
pub(crate) enum Transport {
    /// A program speaking JSON-RPC on stdin and stdout.
    Stdio {
        /// The program and its arguments.
        argv: Vec<String>,
        /// Its whole environment.
        env: Vec<(String, String)>,
        /// Its working directory.
        cwd: PathBuf,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint.
        url: String,
        /// Headers sent with every request: name, value.
        headers: Vec<(String, String)>,
    },
}

/// What went wrong on a server's side, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FaultKind {
    /// It could not start, or did not answer `initialize` and `tools/list`
    /// in time, or answered them wrongly.
    Start,
    /// It exited (or its stream closed) during the session.
    Died,
    /// It wrote something that is not a JSON-RPC message.
    Malformed,
    /// It wrote more than a message or a session may hold.
    Flood,
    /// A call got no answer within the call timeout.
    Timeout,
    /// Any other failure of the protocol (an unexpected answer, a failed send).
    Protocol,
}

/// A server's failure: its kind and what happened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct McpFault {
    /// What kind of failure.
    pub kind: FaultKind,
    /// What happened, naming the server.
    pub message: String,
}

/// One tool a server lists.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct ToolInfo {
    /// Its name.
    pub name: String,
    /// What it does (may be empty).
    pub description: String,
    /// The JSON Schema of its arguments.
    pub input_schema: Value,
}

/// A `tools/call`'s answer as the server gave it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reply {
    /// The text of its text blocks (other blocks named by kind), in order.
    pub text: Vec<String>,
    /// Its structured content, when it has one.
    pub structured: Option<Value>,
    /// The tool reported an error (`isError`, or a JSON-RPC error answer).
    pub is_error: bool,
}

impl Target {
    /// How to reach the server `name` as `def` says: its program (relative
    /// to `cwd`) and environment, or its URL and headers (their values read
    /// from the environment now, and kept from every output as secrets).
    pub(crate) fn of(name: &str, def: &McpServer, cwd: &Path) -> Result<Target, McpFault> {
        let start = |message: String| McpFault {
            kind: FaultKind::Start,
            message: format!("MCP server `{name}`: {message}"),
        };
        let transport = match (&def.command, &def.url) {
            (Some(command), _) => {
                let mut env = Vec::new();
                for name in std::iter::once("PATH").chain(def.env.iter().map(String::as_str)) {
                    // The keys the harness asks models with never reach a server.
                    if crate::secrets::KNOWN_KEYS.contains(&name) {
                        continue;
                    }
                    if let Some(value) = crate::secrets::var(name) {
                        env.push((name.to_owned(), value));
                    }
                }
                let program = if command.contains('/') {
                    // Absolute: the server also runs in `cwd`, where a path
                    // relative to the harness's own folder would miss.
                    let path = cwd.join(command);
                    std::path::absolute(&path)
                        .unwrap_or(path)
                        .display()
                        .to_string()
                } else {
                    command.clone()
                };
                Transport::Stdio {
                    argv: std::iter::once(program)
                        .chain(def.args.iter().cloned())
                        .collect(),
                    env,
                    cwd: cwd.to_path_buf(),
                }
            }
            (None, Some(url)) => {
                let mut headers = Vec::new();
                for (header, var) in &def.headers {
                    let value = crate::secrets::var(var).ok_or_else(|| {
                        start(format!("header `{header}` names `{var}`, which is not set"))
                    })?;
                    crate::secrets::register(&value);
                    headers.push((header.clone(), value));
                }
                Transport::Http {
                    url: url.clone(),
                    headers,
                }
            }
            (None, None) => return Err(start("neither `command` nor `url`".into())),
        };
        let secs = |v: Option<u64>, d: u64| Duration::from_secs(v.unwrap_or(d));
        Ok(Target {
            name: name.to_owned(),
            transport,
            start_timeout: secs(
                def.start_timeout_secs,
                crate::format::mcp::DEFAULT_START_SECS,
            ),
            call_timeout: secs(def.call_timeout_secs, crate::format::mcp::DEFAULT_CALL_SECS),
        })
    }
}

/// A live session with one server; dropping it ends the session and kills
/// a stdio server's process tree.
pub(crate) struct Session {
    name: String,
    call_timeout: Duration,
    service: RunningService<RoleClient, ()>,
    faults: stdio::FaultSlot,
    child: Option<stdio::ServerChild>,
    /// How long starting took, `initialize` included.
    pub started_in: Duration,
}

impl Session {
    /// Starts (or connects to) the server and completes `initialize`, within
    /// the target's start timeout.
    pub(crate) async fn start(target: &Target) -> Result<Session, McpFault> {
        let began = Instant::now();
        let name = &target.name;
        let faults = stdio::FaultSlot::default();
        let start_fault = |message: String| McpFault {
            kind: FaultKind::Start,
            message: format!("MCP server `{name}`: {message}"),
        };
        let (serving, child) = match &target.transport {
            Transport::Stdio { argv, env, cwd } => {
                let (read, write, child) =
                    stdio::spawn(argv, env, cwd, &faults).map_err(|f| start_fault(f.message))?;
                (boxed(().serve((read, write))), Some(child))
            }
            Transport::Http { url, headers } => (
                http(url, headers).map_err(|f| start_fault(f.message))?,
                None,
            ),
        };
        let why = match tokio::time::timeout(target.start_timeout, serving).await {
            Ok(Ok(service)) => {
                return Ok(Session {
                    name: name.clone(),
                    call_timeout: target.call_timeout,
                    service,
                    faults,
                    child,
                    started_in: began.elapsed(),
                });
            }
            Ok(Err(e)) => format!("`initialize` failed: {e}"),
            Err(_) => format!(
                "no answer to `initialize` within {} s",
                target.start_timeout.as_secs()
            ),
        };
        // What the gate saw names the fault; a server that died is still one that did not start.
        Err(match seen(&faults, child.as_ref(), name).await {
            Some(fault) if fault.kind != FaultKind::Died => fault,
            Some(died) => start_fault(format!("{why}; {}", died.message)),
            None => start_fault(why),
        })
    }

    /// The stdio server's process id.
    #[cfg(test)]
    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(stdio::ServerChild::pid)
    }

    /// Every tool the server lists (all pages), within `timeout`.
    pub(crate) async fn tools(&self, timeout: Duration) -> Result<Vec<ToolInfo>, McpFault> {
        let listed = tokio::time::timeout(timeout, self.service.list_all_tools()).await;
        let tools = match listed {
            Ok(Ok(tools)) => tools,
            Ok(Err(e)) => return Err(self.fault(&e, "tools/list").await),
            Err(_) => {
                return Err(McpFault {
                    kind: FaultKind::Start,
                    message: format!(
                        "MCP server `{}`: no answer to `tools/list` within {} s",
                        self.name,
                        timeout.as_secs()
                    ),
                });
            }
        };
        Ok(tools
            .into_iter()
            .map(|t| ToolInfo {
                name: t.name.into_owned(),
                description: t.description.map(|d| d.into_owned()).unwrap_or_default(),
                input_schema: Value::Object((*t.input_schema).clone()),
            })
            .collect())
    }

    /// Calls `tool` with `arguments`: its reply (a tool's error included),
    /// or the server's fault.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<Reply, McpFault> {
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let called = tokio::time::timeout(self.call_timeout, self.service.call_tool(params)).await;
        match called {
            Ok(Ok(result)) => Ok(reply(&serde_json::to_value(&result).unwrap_or_default())),
            // The server answered the request with an error: the model reads it.
            Ok(Err(ServiceError::McpError(e))) => Ok(Reply {
                text: vec![e.message.into_owned()],
                structured: None,
                is_error: true,
            }),
            Ok(Err(e)) => Err(self.fault(&e, &format!("tools/call `{tool}`")).await),
            Err(_) => Err(seen(&self.faults, self.child.as_ref(), &self.name)
                .await
                .unwrap_or_else(|| McpFault {
                    kind: FaultKind::Timeout,
                    message: format!(
                        "MCP server `{}`: no answer to tools/call `{tool}` within {} s",
                        self.name,
                        self.call_timeout.as_secs()
                    ),
                })),
        }
    }

    /// Ends the session: the SDK's side first, then the process tree.
    pub(crate) async fn close(self) {
        let Session { service, child, .. } = self;
        let _ = tokio::time::timeout(Duration::from_secs(2), service.cancel()).await;
        drop(child);
    }

    /// The fault behind a failed request: what the gate or the process
    /// showed, else the SDK's error.
    async fn fault(&self, e: &ServiceError, what: &str) -> McpFault {
        seen(&self.faults, self.child.as_ref(), &self.name)
            .await
            .unwrap_or_else(|| {
                let kind = match e {
                    ServiceError::TransportClosed => FaultKind::Died,
                    ServiceError::Timeout { .. } => FaultKind::Timeout,
                    _ => FaultKind::Protocol,
                };
                McpFault {
                    kind,
                    message: format!("MCP server `{}`: {what} failed: {e}", self.name),
                }
            })
    }
}

/// What the gate recorded, else a stdio server that has exited, as a fault.
async fn seen(
    faults: &stdio::FaultSlot,
    child: Option<&stdio::ServerChild>,
    name: &str,
) -> Option<McpFault> {
    let held = faults.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if let Some(mut fault) = held {
        fault.message = format!("MCP server `{name}`: {}", fault.message);
        return Some(fault);
    }
    // The keeper reaps an exited server at once; give it that moment.
    let child = child?;
    for _ in 0..20 {
        if child.exited() {
            return Some(McpFault {
                kind: FaultKind::Died,
                message: format!(
                    "MCP server `{name}` exited; stderr: {}",
                    child.stderr_tail().await
                ),
            });
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    None
}

/// The streamable HTTP session's start.
fn http(url: &str, headers: &[(String, String)]) -> Result<StartFuture, McpFault> {
    let failed = |message: String| McpFault {
        kind: FaultKind::Start,
        message,
    };
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    crate::net::install_tls();
    let mut custom = std::collections::HashMap::new();
    for (name, value) in headers {
        let header = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| failed(format!("header `{name}`: {e}")))?;
        let value = reqwest::header::HeaderValue::from_str(value).map_err(|_| {
            failed(format!(
                "header `{name}`: its value is not a valid header value"
            ))
        })?;
        custom.insert(header, value);
    }
    let mut builder = reqwest::Client::builder();
    if crate::net::is_loopback(url) {
        builder = builder.no_proxy();
    }
    let client = builder
        .build()
        .map_err(|e| failed(format!("cannot make an HTTP client: {e}")))?;
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned())
        .custom_headers(custom)
        .max_sse_event_size(MAX_LINE);
    let transport = StreamableHttpClientTransport::with_client(client, config);
    Ok(boxed(().serve(transport)))
}

/// A session's start, either transport.
type StartFuture = std::pin::Pin<
    Box<
        dyn std::future::Future<
                Output = Result<
                    RunningService<RoleClient, ()>,
                    rmcp::service::ClientInitializeError,
                >,
            > + Send,
    >,
>;

/// Boxes a start future, so both transports have one type.
fn boxed(
    start: impl std::future::Future<
        Output = Result<RunningService<RoleClient, ()>, rmcp::service::ClientInitializeError>,
    > + Send
    + 'static,
) -> StartFuture {
    Box::pin(start)
}

/// A `CallToolResult` (as JSON, as the wire carries it) as a [`Reply`]:
/// text blocks as text, other blocks named by kind, an embedded text
/// resource by its text.
pub(crate) fn reply(result: &Value) -> Reply {
    let blocks = result.get("content").and_then(Value::as_array);
    let text = blocks
        .into_iter()
        .flatten()
        .map(|block| {
            let kind = block.get("type").and_then(Value::as_str).unwrap_or("?");
            let field = |k: &str| block.get(k).and_then(Value::as_str);
            match kind {
                "text" => field("text").unwrap_or_default().to_owned(),
                "resource" => match block.pointer("/resource/text").and_then(Value::as_str) {
                    Some(text) => text.to_owned(),
                    None => "[resource]".to_owned(),
                },
                "resource_link" => format!("[resource link {}]", field("uri").unwrap_or("?")),
                other => {
                    format!("[{other} {}]", field("mimeType").unwrap_or("")).replace(" ]", "]")
                }
            }
        })
        .collect();
    Reply {
        text,
        structured: result.get("structuredContent").cloned(),
        is_error: result.get("isError").and_then(Value::as_bool) == Some(true),
    }
}

#[cfg(test)]
mod tests;
