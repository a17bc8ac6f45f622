//! `harness check` of a spec's `[[mcp]]` servers: each is started once
//! (within its start timeout), or its listing recalled from an earlier
//! check ([`super::listings`]); its tools are validated (names an API
//! accepts, argument schemas that are JSON Schemas of objects, no name
//! taken twice), and a `shared` server is flagged as not isolated.

use std::time::{Duration, SystemTime};

use super::listings::{self, Listing};
use crate::client::mcp::{McpFault, Session, Target, ToolInfo};
use crate::error::{Diagnostic, ErrorKind};
use crate::format::McpIsolation;
use crate::spec::Spec;
use crate::spec::mcp::McpSpec;

/// What checking the servers found: errors, warnings, and each server's
/// offered tools (for `show`).
#[derive(Debug, Default)]
pub(crate) struct ServersCheck {
    /// Servers that failed or list bad tools.
    pub errors: Vec<Diagnostic>,
    /// Servers that work but keep no isolation.
    pub warnings: Vec<Diagnostic>,
    /// Each server that started (now or for an earlier check): its name,
    /// start time and offered tools.
    pub servers: Vec<Started>,
}

/// A server that started, now or in an earlier check.
#[derive(Debug)]
pub(crate) struct Started {
    /// Its name.
    pub name: String,
    /// How long it took to start and answer `initialize`.
    pub took: Duration,
    /// The tools it offers to the spec.
    pub tools: Vec<ToolInfo>,
    /// Whether an earlier check's listing was used instead of starting it.
    pub remembered: bool,
}

/// Whether a check may use a listing an earlier check kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Listings {
    /// Use a kept listing when one matches ([`listings`]).
    Remembered,
    /// Start every server.
    Fresh,
}

/// Whether `name` is a tool name every wire accepts: 1 to 64 of
/// `[A-Za-z0-9_-]` (OpenAI's rule, narrower than MCP's own).
fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The problem of one listed tool, if any.
fn tool_problem(tool: &ToolInfo) -> Option<String> {
    let name = crate::text::visible_line(&tool.name);
    if !valid_tool_name(&tool.name) {
        return Some(format!(
            "tool `{name}`: a name must be 1 to 64 letters, digits, `_` or `-`"
        ));
    }
    if tool.input_schema.get("type").and_then(|t| t.as_str()) != Some("object") {
        return Some(format!(
            "tool `{name}`: its inputSchema is not of type \"object\""
        ));
    }
    if let Err(e) = jsonschema::meta::validate(&tool.input_schema) {
        return Some(format!(
            "tool `{name}`: its inputSchema is not a JSON Schema: {e}"
        ));
    }
    None
}

/// Starts each of `spec`'s servers once (or recalls what an earlier check
/// found, with [`Listings::Remembered`]) and checks what it lists.
pub(crate) fn check_servers(spec: &Spec, use_kept: Listings) -> ServersCheck {
    let mut found = ServersCheck::default();
    if spec.mcp().is_empty() {
        return found;
    }
    let source = spec.source_map().source();
    let located = |server: &McpSpec, message: String| {
        Diagnostic::new(ErrorKind::Invalid, server.at.clone(), message).with_source(source)
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            let server = &spec.mcp()[0];
            found
                .errors
                .push(located(server, format!("cannot start MCP servers: {e}")));
            return found;
        }
    };
    let mut taken: Vec<(String, String)> = spec
        .def
        .tools
        .iter()
        .filter_map(|t| t.name.clone())
        .map(|n| (n, "a [[tools]] tool".to_owned()))
        .collect();
    // The servers start side by side: a check waits for the slowest to
    // answer, not for their sum (an interpreter's imports can take a second).
    let kept_dir = listings::dir();
    let now = SystemTime::now();
    let listed: Vec<Result<(Listing, bool), McpFault>> = runtime.block_on(
        futures_util::future::join_all(spec.mcp().iter().map(|server| {
            let kept_dir = &kept_dir;
            async move {
                let target = Target::of(&server.name, &server.def, &server.cwd)?;
                let kept = listings::path(kept_dir, &target);
                if use_kept == Listings::Remembered
                    && let Some(listing) = kept.as_deref().and_then(|p| listings::recall(p, now))
                {
                    return Ok((listing, true));
                }
                let session = Session::start(&target).await?;
                let started = session.started_in;
                let tools = session.tools(target.start_timeout).await;
                session.close().await;
                let listing = Listing {
                    listed_at: listings::unix_secs(now),
                    started_ms: u64::try_from(started.as_millis()).unwrap_or(u64::MAX),
                    tools: tools?,
                };
                if let Some(kept) = &kept {
                    listings::keep(kept, &listing);
                }
                Ok((listing, false))
            }
        })),
    );
    for (server, listed) in spec.mcp().iter().zip(listed) {
        if server.def.isolation() == McpIsolation::Shared {
            let why = format!(
                "MCP server `{}` is shared: episodes are not isolated, one sees what another changed",
                server.name
            );
            found.warnings.push(located(server, why));
        }
        let (listing, remembered) = match listed {
            Ok(listed) => listed,
            Err(fault) => {
                let message = crate::secrets::redact(&fault.message).into_owned();
                found.errors.push(located(server, message));
                continue;
            }
        };
        let offered: Vec<ToolInfo> = (listing.tools.into_iter())
            .filter(|t| server.offers(&t.name))
            .collect();
        for wanted in server.def.tools.iter().flatten() {
            if !offered.iter().any(|t| &t.name == wanted) {
                let why = format!("MCP server `{}` lists no tool `{wanted}`", server.name);
                found.errors.push(located(server, why));
            }
        }
        for tool in &offered {
            if let Some(why) = tool_problem(tool) {
                found.errors.push(located(
                    server,
                    format!("MCP server `{}`: {why}", server.name),
                ));
            }
            if let Some((_, owner)) = taken.iter().find(|(n, _)| n == &tool.name) {
                let why = format!(
                    "tool `{}` of MCP server `{}` has the name of {owner}",
                    crate::text::visible_line(&tool.name),
                    server.name
                );
                found.errors.push(located(server, why));
            }
            taken.push((
                tool.name.clone(),
                format!("a tool of server `{}`", server.name),
            ));
        }
        found.servers.push(Started {
            name: server.name.clone(),
            took: Duration::from_millis(listing.started_ms),
            tools: offered,
            remembered,
        });
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_need_names_and_object_schemas() {
        let tool = |name: &str, schema: serde_json::Value| ToolInfo {
            name: name.into(),
            description: String::new(),
            input_schema: schema,
        };
        let object = serde_json::json!({"type": "object"});
        let cases = [
            (tool("read_graph", object.clone()), None),
            (tool("a b", object.clone()), Some("a name must")),
            (tool("", object.clone()), Some("a name must")),
            (
                tool("f", serde_json::json!({"type": "string"})),
                Some("not of type"),
            ),
            (
                tool("f", serde_json::json!({"type": "object", "properties": 3})),
                Some("not a JSON Schema"),
            ),
        ];
        for (tool, says) in cases {
            let got = tool_problem(&tool);
            match says {
                None => assert_eq!(got, None, "{}", tool.name),
                Some(says) => assert!(got.as_deref().is_some_and(|g| g.contains(says)), "{got:?}"),
            }
        }
    }
}
