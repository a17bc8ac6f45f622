//! A spec's `[[mcp]]` servers, checked at load: each has one way to be
//! reached, a unique name, and offers no tool named like a `[[tools]]` tool.
//! A server with a `name` and no way to be reached is one of the machine's
//! (`harness.toml`'s `[[mcp]]`): [`complete`] fills it in once the
//! configuration is read, and fails at the spec's table when there is none.
//! What a server actually lists is known only once it runs: `harness check`
//! and every episode check that again.

use std::path::{Path, PathBuf};

use crate::error::{Diagnostic, ErrorKind, Location};
use crate::format::locate::SourceMap;
use crate::format::{McpServer, SpecFile, key_path};

/// One `[[mcp]]` server, ready to start.
#[derive(Debug, Clone)]
pub(crate) struct McpSpec {
    /// Its name (`name`, else `mcp<n>`).
    pub name: String,
    /// The table as written.
    pub def: McpServer,
    /// The working directory of a stdio server: `cwd` under the spec's
    /// directory, else that directory.
    pub cwd: PathBuf,
    /// Where the table is, for errors found once the server runs.
    pub at: Location,
}

impl McpSpec {
    /// What the server is, for cache keys: its name and its command line
    /// or URL (never the values of its headers or environment).
    pub(crate) fn identity(&self) -> String {
        let def = &self.def;
        let place = match (&def.command, &def.url) {
            (Some(command), _) => std::iter::once(command.as_str())
                .chain(def.args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            (None, url) => url.clone().unwrap_or_default(),
        };
        format!("{}: {place}", self.name)
    }

    /// Whether the server offers `tool` to the model (its `tools` filter).
    pub(crate) fn offers(&self, tool: &str) -> bool {
        self.def
            .tools
            .as_ref()
            .is_none_or(|names| names.iter().any(|n| n == tool))
    }
}

/// Whether `server` says neither how to start it nor where it listens.
fn unreached(server: &McpServer) -> bool {
    server.command.is_none() && server.url.is_none()
}

/// Gives each server of `servers` that has no `command` or `url` the
/// machine's server of its name from `configured` (each with the directory
/// its relative paths start from); an error at the table for each that
/// `configured` lacks.
pub(super) fn complete(
    servers: &mut [McpSpec],
    configured: &[(McpServer, PathBuf)],
    errors: &mut Vec<Diagnostic>,
) {
    for server in servers.iter_mut().filter(|s| unreached(&s.def)) {
        let Some((machine, dir)) = configured
            .iter()
            .find(|(c, _)| c.name.as_deref() == Some(server.name.as_str()))
        else {
            errors.push(Diagnostic::new(
                ErrorKind::Invalid,
                server.at.clone(),
                format!(
                    "[[mcp]] server `{}` has no `command` or `url`, and harness.toml has no [[mcp]] server of that name",
                    server.name
                ),
            ));
            continue;
        };
        server.def.reached_as(machine);
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        server.cwd = machine
            .cwd
            .as_ref()
            .map_or_else(|| dir.to_path_buf(), |c| dir.join(c));
    }
}

impl super::Spec {
    /// Completes the `[[mcp]]` servers that name one of the machine's
    /// (`configured`: `harness.toml`'s, each with the directory its paths
    /// start from); every server left unreachable is an error at its table.
    pub(crate) fn complete_mcp(
        &mut self,
        configured: &[(McpServer, PathBuf)],
    ) -> Result<(), crate::error::Diagnostics> {
        let mut errors = Vec::new();
        complete(&mut self.mcp, configured, &mut errors);
        if errors.is_empty() {
            Ok(())
        } else {
            Err(crate::error::Diagnostics(errors))
        }
    }
}

/// Whether `name` is a usable server name: letters, digits, `_` and `-`.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The spec's servers, adding every problem found to `errors`.
pub(super) fn compile(
    def: &SpecFile,
    map: &SourceMap,
    spec_dir: &Path,
    errors: &mut Vec<Diagnostic>,
) -> Vec<McpSpec> {
    let at = |path: &[crate::format::locate::Key], message: String| {
        Diagnostic::new(ErrorKind::Invalid, map.locate(path), message)
    };
    if !def.mcp.is_empty() && def.agent.is_none() {
        errors.push(at(
            key_path!["mcp", 0],
            "[[mcp]] servers serve an episode's tool calls: add an [agent] table".into(),
        ));
    }
    let rhai: Vec<&str> = def.tools.iter().filter_map(|t| t.name.as_deref()).collect();
    let mut servers: Vec<McpSpec> = Vec::new();
    for (i, server) in def.mcp.iter().enumerate() {
        for (key, message) in server.problems() {
            if key.is_empty() && server.name.is_some() && unreached(server) {
                continue; // one of the machine's servers, completed later
            }
            errors.push(if key.is_empty() {
                at(key_path!["mcp", i], message)
            } else {
                at(key_path!["mcp", i, key], message)
            });
        }
        let name = server.name_at(i);
        if !valid_name(&name) {
            errors.push(at(
                key_path!["mcp", i, "name"],
                format!(
                    "server name `{name}` may hold only letters, digits, `_` and `-` (64 at most)"
                ),
            ));
        }
        if servers.iter().any(|s| s.name == name) {
            errors.push(at(
                key_path!["mcp", i, "name"],
                format!("two [[mcp]] servers are named `{name}`"),
            ));
        }
        for (j, tool) in server.tools.iter().flatten().enumerate() {
            if rhai.contains(&tool.as_str()) {
                errors.push(at(
                    key_path!["mcp", i, "tools", j],
                    format!("tool `{tool}` of server `{name}` has the name of a [[tools]] tool"),
                ));
            }
        }
        servers.push(McpSpec {
            name,
            def: server.clone(),
            cwd: server
                .cwd
                .as_ref()
                .map_or_else(|| spec_dir.to_path_buf(), |c| spec_dir.join(c)),
            at: map.locate(key_path!["mcp", i]),
        });
    }
    servers
}
