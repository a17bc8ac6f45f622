//! The `[[mcp]]` tables: Model Context Protocol servers whose tools join an
//! `[agent]` episode's, started as a program on stdio or reached over
//! streamable HTTP.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Seconds a server may take to start and answer `initialize` by default.
pub(crate) const DEFAULT_START_SECS: u64 = 20;

/// Seconds one `tools/call` may take by default.
pub(crate) const DEFAULT_CALL_SECS: u64 = 60;

/// The range of both timeouts, in seconds.
pub(crate) const TIMEOUT_RANGE: std::ops::RangeInclusive<u64> = 1..=3_600;

/// `[[mcp]]`: one MCP server; its tools (all, or those `tools` names) are
/// offered to the model beside the `[[tools]]` tables' own.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpServer {
    /// The server's name in errors, `check` and `final_state` (default
    /// `mcp1`, `mcp2`, ... by position).
    pub name: Option<String>,
    /// The program of a stdio server (found on `PATH` when it has no `/`);
    /// exactly one of `command` and `url`.
    pub command: Option<String>,
    /// The program's arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment variables the program gets from the harness's own (besides
    /// `PATH` and `HOME`); API keys never reach it, whatever is listed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// The program's working directory, relative to the spec (default: the
    /// spec's directory).
    pub cwd: Option<String>,
    /// The endpoint of a streamable HTTP server; exactly one of `command` and `url`.
    pub url: Option<String>,
    /// HTTP headers sent to `url`, each the name of an environment variable
    /// holding its value: `{ Authorization = "MY_TOKEN" }`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// The server's tools offered to the model (default: every tool it lists).
    pub tools: Option<Vec<String>>,
    /// How episodes are kept apart: `per_episode` (default; a fresh server
    /// process each), `reset` (one server, the `reset` call before each
    /// episode, episodes one at a time) or `shared` (one server, no reset:
    /// `check` warns that episodes are not isolated).
    pub isolation: Option<McpIsolation>,
    /// The call made before each episode with `isolation = "reset"`.
    pub reset: Option<McpCall>,
    /// A call made after each episode; its result becomes
    /// `state.mcp.<name>` for `final_state` rules.
    pub final_state: Option<McpCall>,
    /// Seconds the server may take to start and answer `initialize` and
    /// `tools/list` (1 to 3,600, default 20); past them the episode ends as `mcp_start`.
    pub start_timeout_secs: Option<u64>,
    /// Seconds one `tools/call` may take (1 to 3,600, default 60); past them
    /// the episode ends as `mcp_timeout`.
    pub call_timeout_secs: Option<u64>,
}

/// How an `[[mcp]]` server's state is kept apart between episodes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum McpIsolation {
    /// A fresh server process (or HTTP session) for every episode.
    #[default]
    PerEpisode,
    /// One server for the run; its `reset` call runs before each episode.
    Reset,
    /// One server for the run, never reset: episodes may see each other's changes.
    Shared,
}

/// A tool call the harness makes itself (`reset`, `final_state`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpCall {
    /// The server's tool.
    pub tool: String,
    /// Its arguments (default `{}`).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub arguments: Map<String, Value>,
}

impl McpServer {
    /// The server's name: its `name`, else `mcp<i + 1>` for the `i`th table.
    pub(crate) fn name_at(&self, i: usize) -> String {
        self.name.clone().unwrap_or_else(|| format!("mcp{}", i + 1))
    }

    /// `isolation` or its default.
    pub(crate) fn isolation(&self) -> McpIsolation {
        self.isolation.unwrap_or_default()
    }

    /// Takes how to reach the server from `machine` (a `harness.toml`
    /// table): its program, arguments, environment and directory, or its URL
    /// and headers, and each timeout this table leaves unset.
    pub(crate) fn reached_as(&mut self, machine: &McpServer) {
        self.command.clone_from(&machine.command);
        self.args.clone_from(&machine.args);
        self.env.clone_from(&machine.env);
        self.cwd.clone_from(&machine.cwd);
        self.url.clone_from(&machine.url);
        self.headers.clone_from(&machine.headers);
        self.start_timeout_secs = self.start_timeout_secs.or(machine.start_timeout_secs);
        self.call_timeout_secs = self.call_timeout_secs.or(machine.call_timeout_secs);
    }

    /// Every problem of the table as written: (key, message), the key
    /// relative to the table (`""`: the table itself).
    pub(crate) fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        match (&self.command, &self.url) {
            (None, None) => out.push((
                "",
                "an [[mcp]] server needs `command` (a stdio program) or `url` (streamable HTTP)"
                    .to_owned(),
            )),
            (Some(_), Some(_)) => out.push((
                "url",
                "an [[mcp]] server has either `command` or `url`, not both".to_owned(),
            )),
            (Some(command), None) if command.trim().is_empty() => {
                out.push(("command", "`command` is empty".to_owned()));
            }
            (None, Some(url)) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    out.push((
                        "url",
                        format!("`url` must start with http:// or https://, not `{url}`"),
                    ));
                }
                for (key, set) in [
                    ("args", !self.args.is_empty()),
                    ("env", !self.env.is_empty()),
                    ("cwd", self.cwd.is_some()),
                ] {
                    if set {
                        out.push((
                            key,
                            format!("`{key}` is for a stdio server (`command`), not a `url`"),
                        ));
                    }
                }
            }
            _ => {}
        }
        if self.command.is_some() && !self.headers.is_empty() {
            out.push((
                "headers",
                "`headers` are for a `url` server, not a stdio `command`".to_owned(),
            ));
        }
        match (self.isolation(), &self.reset) {
            (McpIsolation::Reset, None) => out.push((
                "isolation",
                "isolation = \"reset\" needs a `reset = { tool = \"...\" }` call".to_owned(),
            )),
            (McpIsolation::PerEpisode | McpIsolation::Shared, Some(_)) => out.push((
                "reset",
                "`reset` runs only with isolation = \"reset\"".to_owned(),
            )),
            _ => {}
        }
        for (key, value) in [
            ("start_timeout_secs", self.start_timeout_secs),
            ("call_timeout_secs", self.call_timeout_secs),
        ] {
            if let Some(v) = value
                && !TIMEOUT_RANGE.contains(&v)
            {
                out.push((key, format!("{key} = {v} is outside 1 to 3,600")));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(toml_text: &str) -> McpServer {
        toml::from_str(toml_text).expect("a valid table")
    }

    #[test]
    fn problems_name_the_key_at_fault() {
        let cases: [(&str, &[&str]); 8] = [
            ("command = \"srv\"", &[]),
            ("url = \"http://127.0.0.1:1/mcp\"", &[]),
            ("args = [\"x\"]", &[""]),
            ("command = \"srv\"\nurl = \"http://h/\"", &["url"]),
            ("url = \"ftp://h/\"\ncwd = \"x\"", &["url", "cwd"]),
            ("command = \"srv\"\nheaders = { A = \"B\" }", &["headers"]),
            ("command = \"srv\"\nisolation = \"reset\"", &["isolation"]),
            (
                "command = \"srv\"\nreset = { tool = \"wipe\" }\ncall_timeout_secs = 0",
                &["reset", "call_timeout_secs"],
            ),
        ];
        for (text, keys) in cases {
            let got: Vec<&str> = server(text).problems().iter().map(|p| p.0).collect();
            assert_eq!(got, keys, "{text}");
        }
    }

    #[test]
    fn names_default_by_position() {
        assert_eq!(server("command = \"a\"").name_at(1), "mcp2");
        assert_eq!(server("name = \"kg\"\ncommand = \"a\"").name_at(0), "kg");
    }
}
