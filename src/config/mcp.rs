//! `harness.toml`'s `[[mcp]]` tables: MCP servers named once per machine,
//! where they are installed, for specs to name. A spec's `[[mcp]]` with a
//! `name` and neither `command` nor `url` takes how to reach the server
//! (program, arguments, environment, directory, or URL and headers, and the
//! timeouts it does not set) from here; what the episodes do with it (which
//! tools, isolation, reset, final state) stays the spec's.

use std::path::{Path, PathBuf};

use crate::error::{Diagnostic, ErrorKind, Location};
use crate::format::McpServer;
use crate::format::locate::{Key, SourceMap};

use super::Config;

/// Keys that say what a spec's episodes do with a server, not where it is.
const SPEC_ONLY: [&str; 4] = ["tools", "isolation", "reset", "final_state"];

/// Fails at the first `[[mcp]]` table of `config` (read from `path`) that
/// has no `name`, names a server twice, cannot be reached as written, or
/// holds a key that belongs in a spec.
pub(super) fn check(path: &Path, text: &str, config: &Config) -> Result<(), Diagnostic> {
    let Some((key, problem)) = problems(&config.mcp).into_iter().next() else {
        return Ok(());
    };
    let at = SourceMap::parse(path, text)
        .map_or_else(|_| Location::file_start(path), |map| map.locate(&key));
    Err(Diagnostic::new(ErrorKind::Invalid, at, problem).with_source(text))
}

/// Every problem of `servers`, each with the path of its key.
fn problems(servers: &[McpServer]) -> Vec<(Vec<Key<'static>>, String)> {
    let mut found = Vec::new();
    for (i, server) in servers.iter().enumerate() {
        let at = |key: &'static str| {
            let mut path = vec![Key::Name("mcp"), Key::Index(i)];
            if !key.is_empty() {
                path.push(Key::Name(key));
            }
            path
        };
        match &server.name {
            None => found.push((
                at(""),
                "an [[mcp]] server of harness.toml needs a `name`, which specs use".to_owned(),
            )),
            Some(name) if servers[..i].iter().any(|s| s.name.as_ref() == Some(name)) => {
                found.push((
                    at("name"),
                    format!("two [[mcp]] servers are named `{name}`"),
                ));
            }
            Some(_) => {}
        }
        let spec_only = [
            server.tools.is_some(),
            server.isolation.is_some(),
            server.reset.is_some(),
            server.final_state.is_some(),
        ];
        for (key, set) in SPEC_ONLY.into_iter().zip(spec_only) {
            if set {
                found.push((
                    at(key),
                    format!("`{key}` says what a spec's episodes do: set it in the spec's [[mcp]]"),
                ));
            }
        }
        for (key, message) in server.problems() {
            found.push((at(key), message));
        }
    }
    found
}

impl Config {
    /// The `[[mcp]]` servers, each with the directory its relative paths
    /// start from (this file's).
    pub fn mcp_servers(&self) -> Vec<(McpServer, PathBuf)> {
        let dir = self.dir().to_path_buf();
        self.mcp.iter().map(|s| (s.clone(), dir.clone())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_name_the_key_at_fault() {
        let cases: [(&str, &[&str]); 5] = [
            ("[[mcp]]\nname = \"m\"\ncommand = \"srv\"", &[]),
            ("[[mcp]]\ncommand = \"srv\"", &[""]),
            ("[[mcp]]\nname = \"m\"", &[""]),
            (
                "[[mcp]]\nname = \"m\"\nurl = \"http://h/\"\n[[mcp]]\nname = \"m\"\nurl = \"http://h/\"",
                &["name"],
            ),
            (
                "[[mcp]]\nname = \"m\"\ncommand = \"srv\"\ntools = [\"a\"]\nisolation = \"shared\"",
                &["tools", "isolation"],
            ),
        ];
        for (text, keys) in cases {
            let config: Config = toml::from_str(text).expect("parses");
            let got: Vec<String> = problems(&config.mcp)
                .into_iter()
                .map(|(path, _)| match path.get(2) {
                    Some(Key::Name(k)) => (*k).to_owned(),
                    _ => String::new(),
                })
                .collect();
            assert_eq!(got, keys, "{text}");
        }
    }

    #[test]
    fn a_bad_table_is_located() {
        let text = "[[mcp]]\nname = \"m\"\ncommand = \"srv\"\n\n[[mcp]]\ncommand = \"b\"\ntools = [\"a\"]\n";
        let config: Config = toml::from_str(text).expect("parses");
        let e = check(Path::new("harness.toml"), text, &config).unwrap_err();
        assert_eq!(e.location.line, 5, "{e:?}");
    }
}
