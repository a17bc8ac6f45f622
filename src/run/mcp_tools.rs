//! An episode's `[[mcp]]` servers: started (or borrowed and reset) before
//! its first turn, their tools offered beside the Rhai tools, the model's
//! calls of them routed to their server, their `final_state` read after the
//! last turn, and the sessions closed.
//!
//! A server's fault (it died, never answered, wrote garbage or too much, a
//! call timed out) ends the episode as a named failure; a tool's own error
//! (`isError`) is an error result the model reads, as a Rhai `throw` is.
//!
//! `reset` and `shared` servers live for the process, one per (spec,
//! server), and serve one episode at a time: the episode holds its lock
//! from start to end, so one episode's calls never interleave with another's.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Map, Value};
use tokio::sync::OwnedMutexGuard;

use crate::client::mcp::{FaultKind, McpFault, Reply, Session, Target};
use crate::format::{EpisodeLimits, McpCall, McpIsolation, Tool, ToolCall};
use crate::prompt::Message;
use crate::spec::Spec;
use crate::spec::agent::CallSite;
use crate::spec::mcp::McpSpec;
use crate::verify::FailureKind;

/// A failure that ends an episode: its kind and why.
pub(super) type Ended = (FailureKind, String);

/// The failure kind of a server's fault.
pub(super) fn failure(fault: &McpFault) -> Ended {
    let kind = match fault.kind {
        FaultKind::Start => FailureKind::McpStart,
        FaultKind::Died => FailureKind::McpDied,
        FaultKind::Malformed => FailureKind::McpMalformed,
        FaultKind::Flood => FailureKind::McpFlood,
        FaultKind::Timeout => FailureKind::McpTimeout,
        FaultKind::Protocol => FailureKind::McpError,
    };
    (kind, crate::secrets::redact(&fault.message).into_owned())
}

/// The session a server's episodes share: `None` until started, or after a fault.
type Slot = Arc<tokio::sync::Mutex<Option<Session>>>;

/// The run's `reset` and `shared` servers, by spec file and server name.
fn pooled(spec: &Spec, server: &McpSpec) -> Slot {
    static POOL: Mutex<Option<HashMap<String, Slot>>> = Mutex::new(None);
    let key = format!("{}\u{0}{}", spec.file.display(), server.name);
    let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
    Arc::clone(
        pool.get_or_insert_with(HashMap::new)
            .entry(key)
            .or_default(),
    )
}

/// A session an episode uses: its own, or a pooled one it holds the lock of.
enum Held {
    Own(Box<Session>),
    Pooled(OwnedMutexGuard<Option<Session>>),
}

impl Held {
    fn session(&self) -> &Session {
        match self {
            Held::Own(s) => s,
            Held::Pooled(guard) => guard.as_ref().expect("a held pool slot has a session"),
        }
    }

    /// After a fault: a pooled session is dropped (killed), so the next
    /// episode starts a fresh one.
    fn spoil(&mut self) {
        if let Held::Pooled(guard) = self {
            **guard = None;
        }
    }

    async fn close(self) {
        if let Held::Own(session) = self {
            session.close().await;
        }
    }
}

/// One server of an episode.
struct Live {
    server: McpSpec,
    held: Held,
}

/// A replayed episode's server results, as its transcript recorded them.
struct Recorded {
    /// Each server tool's results, in the order the episode called it.
    results: HashMap<String, VecDeque<String>>,
    /// The servers' final states (`state.mcp`).
    state: Option<Value>,
}

/// An episode's servers and the tools they offer.
pub(super) struct McpTools {
    live: Vec<Live>,
    /// Replayed: the recorded results stand in for the servers.
    recorded: Option<Recorded>,
    /// Tool name to its server's index in `live`.
    routes: BTreeMap<String, usize>,
    /// The tools offered to the model, in the servers' order.
    pub offered: Vec<Tool>,
}

/// Makes `call` on a session; a tool's error reply is a fault here: the
/// harness's own calls (`reset`, `final_state`) must succeed.
async fn own_call(
    session: &Session,
    server: &str,
    what: &str,
    call: &McpCall,
) -> Result<Reply, McpFault> {
    let reply = session.call(&call.tool, call.arguments.clone()).await?;
    if reply.is_error {
        return Err(McpFault {
            kind: FaultKind::Protocol,
            message: format!(
                "MCP server `{server}`: the {what} call `{}` failed: {}",
                call.tool,
                reply.text.join("\n")
            ),
        });
    }
    Ok(reply)
}

impl McpTools {
    /// Starts (or borrows and resets) the spec's servers and lists their
    /// tools; `None` for a spec without servers.
    pub(super) async fn open(spec: &Spec) -> Result<Option<McpTools>, Ended> {
        if spec.mcp().is_empty() {
            return Ok(None);
        }
        let rhai = rhai_names(spec);
        let mut tools = McpTools {
            live: Vec::new(),
            recorded: None,
            routes: BTreeMap::new(),
            offered: Vec::new(),
        };
        let targets = spec
            .mcp()
            .iter()
            .map(|server| Target::of(&server.name, &server.def, &server.cwd))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|f| failure(&f))?;
        // An episode's own servers start side by side: it waits for the
        // slowest, not for their sum. Pooled ones are taken one at a time,
        // in the spec's order, as every episode takes them (no deadlock).
        let own = futures_util::future::join_all(spec.mcp().iter().zip(&targets).map(
            |(server, target)| async move {
                if server.def.isolation() != McpIsolation::PerEpisode {
                    return None;
                }
                Some(Session::start(target).await)
            },
        ))
        .await;
        for ((server, target), started) in spec.mcp().iter().zip(&targets).zip(own) {
            let mut held = match started {
                Some(started) => Held::Own(Box::new(started.map_err(|f| failure(&f))?)),
                None => {
                    let mut guard = pooled(spec, server).lock_owned().await;
                    if guard.is_none() {
                        *guard = Some(Session::start(target).await.map_err(|f| failure(&f))?);
                    }
                    Held::Pooled(guard)
                }
            };
            if let Some(reset) = &server.def.reset {
                let done = own_call(held.session(), &server.name, "reset", reset).await;
                if let Err(fault) = done {
                    held.spoil();
                    return Err(failure(&fault));
                }
            }
            let listed = held.session().tools(target.start_timeout).await;
            let listed = match listed {
                Ok(listed) => listed,
                Err(fault) => {
                    held.spoil();
                    return Err(failure(&fault));
                }
            };
            let index = tools.live.len();
            for tool in listed.into_iter().filter(|t| server.offers(&t.name)) {
                let clash = if rhai.contains(&tool.name.as_str()) {
                    Some("a [[tools]] tool".to_owned())
                } else {
                    tools
                        .routes
                        .get(&tool.name)
                        .map(|&i| format!("a tool of server `{}`", tools.live[i].server.name))
                };
                if let Some(clash) = clash {
                    let why = format!(
                        "tool `{}` of MCP server `{}` has the name of {clash}",
                        crate::text::visible_line(&tool.name),
                        server.name
                    );
                    return Err((FailureKind::McpStart, why));
                }
                tools.routes.insert(tool.name.clone(), index);
                tools.offered.push(Tool {
                    name: tool.name,
                    description: tool.description,
                    parameters: tool.input_schema,
                });
            }
            for wanted in server.def.tools.iter().flatten() {
                if tools.routes.get(wanted) != Some(&index) {
                    let why = format!("MCP server `{}` lists no tool `{wanted}`", server.name);
                    return Err((FailureKind::McpStart, why));
                }
            }
            tools.live.push(Live {
                server: server.clone(),
                held,
            });
        }
        Ok(Some(tools))
    }

    /// A replayed episode's servers: the results `trajectory` recorded for
    /// every call of a tool that is not a `[[tools]]` one, and the servers'
    /// part of its final `state`; no server is started.
    pub(super) fn recorded(
        spec: &Spec,
        trajectory: &[Message],
        state: Option<&Value>,
    ) -> Option<McpTools> {
        if spec.mcp().is_empty() {
            return None;
        }
        let rhai = rhai_names(spec);
        let mut results: HashMap<String, VecDeque<String>> = HashMap::new();
        for message in trajectory
            .iter()
            .filter(|m| m.role == crate::prompt::Role::Tool)
        {
            let Some(name) = message.tool_name.as_deref().filter(|n| !rhai.contains(n)) else {
                continue;
            };
            results
                .entry(name.to_owned())
                .or_default()
                .push_back(message.content.clone());
        }
        let state = state.and_then(|s| s.get("mcp")).cloned();
        Some(McpTools {
            live: Vec::new(),
            recorded: Some(Recorded { results, state }),
            routes: BTreeMap::new(),
            offered: Vec::new(),
        })
    }

    /// Whether `name` is one of the servers' tools.
    pub(super) fn routes(&self, name: &str) -> bool {
        match &self.recorded {
            Some(recorded) => recorded.results.contains_key(name),
            None => self.routes.contains_key(name),
        }
    }

    /// Runs one call of a server's tool: the text the model reads (an error
    /// result included), or the server's fault that ends the episode.
    pub(super) async fn call(
        &mut self,
        call: &ToolCall,
        limits: &EpisodeLimits,
    ) -> Result<String, Ended> {
        let error = |why: String| {
            let why = crate::text::clip(&why, limits.error_bytes);
            Ok(serde_json::json!({ "error": why }).to_string())
        };
        if let Some(recorded) = &mut self.recorded {
            let result = recorded
                .results
                .get_mut(&call.name)
                .and_then(VecDeque::pop_front);
            return result.ok_or_else(|| {
                let why = format!("the transcript recorded no more results of `{}`", call.name);
                (FailureKind::NotRecorded, why)
            });
        }
        if let Some(why) = call.invalid_text() {
            return error(why);
        }
        let Some(&index) = self.routes.get(&call.name) else {
            return error(format!(
                "there is no tool `{}`",
                crate::text::visible_line(&call.name)
            ));
        };
        let Value::Object(arguments) = &call.arguments else {
            return error("the arguments must be a JSON object".into());
        };
        let live = &mut self.live[index];
        let reply = match live
            .held
            .session()
            .call(&call.name, arguments.clone())
            .await
        {
            Ok(reply) => reply,
            Err(fault) => {
                live.held.spoil();
                return Err(failure(&fault));
            }
        };
        let text = reply_text(&reply);
        if reply.is_error {
            return error(reply.text.join("\n"));
        }
        if text.len() > limits.result_bytes {
            return error(format!(
                "the result of `{}` is more than max_result_bytes = {} bytes",
                call.name, limits.result_bytes
            ));
        }
        Ok(text)
    }

    /// Reads each server's `final_state` into `state.mcp.<name>` and ends
    /// the sessions; the first fault, if any.
    pub(super) async fn finish(self, state: &mut Option<Value>) -> Option<Ended> {
        if let Some(Recorded {
            state: Some(mcp), ..
        }) = self.recorded
        {
            if let Some(Value::Object(map)) = state {
                map.insert("mcp".to_owned(), mcp);
            }
            return None;
        }
        let mut ended = None;
        for Live { server, mut held } in self.live {
            if let (Some(call), None) = (&server.def.final_state, &ended) {
                match own_call(held.session(), &server.name, "final_state", call).await {
                    Ok(reply) => {
                        let value = reply.structured.clone().unwrap_or_else(|| {
                            let text = reply.text.join("\n");
                            serde_json::from_str(&text).unwrap_or(Value::String(text))
                        });
                        put(state, &server.name, value);
                    }
                    Err(fault) => {
                        held.spoil();
                        ended = Some(failure(&fault));
                    }
                }
            }
            held.close().await;
        }
        ended
    }
}

/// The names of the spec's `[[tools]]` (Rhai) tools.
fn rhai_names(spec: &Spec) -> Vec<&str> {
    spec.def
        .tools
        .iter()
        .filter_map(|t| t.name.as_deref())
        .collect()
}

/// Sets `state.mcp.<name>` to `value`, making the maps on the way.
fn put(state: &mut Option<Value>, name: &str, value: Value) {
    let state = state.get_or_insert_with(|| Value::Object(Map::new()));
    if !state.is_object() {
        return;
    }
    let servers = state
        .as_object_mut()
        .expect("checked")
        .entry("mcp")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(servers) = servers {
        servers.insert(name.to_owned(), value);
    }
}

/// What a reply says to the model: its structured content as JSON when it
/// has one (a server sends the same as text too), else its text blocks.
fn reply_text(reply: &Reply) -> String {
    match &reply.structured {
        Some(value) => value.to_string(),
        None => reply.text.join("\n"),
    }
}

/// Runs one turn's `calls` in order: the servers' tools here, runs of Rhai
/// tools on a blocking thread as without servers; each call's result
/// message, the state after them, how they ended, and a server's fault.
pub(super) async fn run_calls(
    spec: &Arc<Spec>,
    mcp: &mut McpTools,
    calls: Vec<ToolCall>,
    state: Value,
    (at, deadline): (CallSite, Instant),
) -> (Vec<Message>, Value, super::rhai_tools::Ran) {
    let limits = spec
        .agent()
        .expect("an episode runs only with [agent]")
        .limits;
    let (mut state, mut ran, mut results) = (state, super::rhai_tools::Ran::default(), Vec::new());
    let mut rest = calls.into_iter().peekable();
    while rest.peek().is_some() {
        if Instant::now() >= deadline {
            ran.late = true;
            break;
        }
        let first = u32::try_from(results.len()).unwrap_or(u32::MAX);
        if let Some(call) = rest.next_if(|c| mcp.routes(&c.name)) {
            match mcp.call(&call, &limits).await {
                Ok(text) => results.push(Message::tool_result(&call, text)),
                Err(ended) => {
                    ran.fault = Some(ended);
                    break;
                }
            }
            continue;
        }
        let mut batch = Vec::new();
        while let Some(call) = rest.next_if(|c| !mcp.routes(&c.name)) {
            batch.push(call);
        }
        let site = CallSite { call: first, ..at };
        let (done, after, batch_ran) =
            super::rhai_tools::run_tools(spec, batch, state, (site, deadline)).await;
        results.extend(done);
        state = after;
        ran.too_deep = ran.too_deep.or(batch_ran.too_deep);
        if batch_ran.late {
            ran.late = true;
            break;
        }
    }
    (results, state, ran)
}
