//! The tools a stdio MCP server listed, remembered between checks: checking
//! a spec again (the editing loop) need not start its servers again, which
//! can take a second each (an interpreter's imports).
//!
//! A listing is kept under the harness's cache directory, in a file named
//! by the hash of everything that could change what the server lists: its
//! command line, working directory and environment (hashed, never stored),
//! and the size and time of each file the command line and environment
//! name, with the files beside each one (a wrapper's script). It is used
//! for at most [`MAX_AGE`]: a server a package manager fetches anew (`npx
//! -y`) may change with nothing local changing. Only listings that came
//! from a server that started are kept; a failing server is started again
//! by every check. HTTP servers are always asked: they run anyway.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::client::mcp::{Target, ToolInfo, Transport};
use crate::files::FileKind;

/// How long a remembered listing is used.
pub(crate) const MAX_AGE: Duration = Duration::from_secs(3600);

/// The most files beside a named file that are looked at: past it, the
/// folder is a system one (`/usr/bin`), not a server's own.
const MAX_SIBLINGS: usize = 64;

/// Bumped when what a key covers changes.
const KEY_VERSION: u32 = 1;

/// A server's listing as a check found it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Listing {
    /// When the server listed its tools, in seconds since the Unix epoch.
    pub listed_at: u64,
    /// How long it took to start and answer `initialize`, in milliseconds.
    pub started_ms: u64,
    /// The tools it listed.
    pub tools: Vec<ToolInfo>,
}

/// Where listings are kept: `HARNESS_CACHE`, else `~/.cache/harness`, then
/// `mcp-listings`.
pub(crate) fn dir() -> PathBuf {
    crate::files::cache_root().join("mcp-listings")
}

/// The file a stdio `target`'s listing is kept in under `dir`; `None` for
/// an HTTP server.
pub(crate) fn path(dir: &Path, target: &Target) -> Option<PathBuf> {
    let Transport::Stdio { argv, env, cwd } = &target.transport else {
        return None;
    };
    let mut hasher = Sha256::new();
    let mut put = |part: &[u8]| {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    };
    put(&KEY_VERSION.to_le_bytes());
    put(env!("CARGO_PKG_VERSION").as_bytes());
    put(cwd.as_os_str().as_encoded_bytes());
    for arg in argv {
        put(arg.as_bytes());
    }
    let mut env = env.clone();
    env.sort();
    for (name, value) in &env {
        put(name.as_bytes());
        put(value.as_bytes());
    }
    for file in named_files(argv, &env, cwd) {
        put(file.as_bytes());
    }
    let hex: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Some(dir.join(format!("{hex}.json")))
}

/// The listing kept at `path`, if there is one younger than [`MAX_AGE`].
pub(crate) fn recall(path: &Path, now: SystemTime) -> Option<Listing> {
    let bytes = crate::files::read_bounded(path, FileKind::Manifest).ok()?;
    let listing: Listing = serde_json::from_slice(&bytes).ok()?;
    let age = unix_secs(now).checked_sub(listing.listed_at)?;
    (age < MAX_AGE.as_secs()).then_some(listing)
}

/// Keeps `listing` at `path`. A cache that cannot be written costs the next
/// check a start, nothing else, so errors are dropped.
pub(crate) fn keep(path: &Path, listing: &Listing) {
    if let Some(parent) = path.parent()
        && std::fs::create_dir_all(parent).is_ok()
        && let Ok(bytes) = serde_json::to_vec(listing)
    {
        let _ = crate::files::write_atomic(path, &bytes);
    }
}

/// Seconds since the Unix epoch.
pub(crate) fn unix_secs(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// One line per file the command line and environment name (the program
/// found on `PATH`, arguments and values that are paths to files), with its
/// size and modification time, and those of the files beside it unless its
/// folder holds more than [`MAX_SIBLINGS`].
fn named_files(argv: &[String], env: &[(String, String)], cwd: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    let path_var = env.iter().find(|(n, _)| n == "PATH").map(|(_, v)| v);
    if let Some(program) = argv.first().filter(|p| !p.contains('/'))
        && let Some(found) = path_var.and_then(|p| on_path(program, p))
    {
        // A program on PATH is a system one: its folder is not its own.
        lines.extend(stamp(&found));
    }
    let named = argv.iter().chain(env.iter().map(|(_, v)| v));
    for text in named.filter(|t| t.contains('/')) {
        let file = cwd.join(text);
        let Some(line) = stamp(&file) else {
            continue;
        };
        lines.push(line);
        let Some(folder) = file.parent() else {
            continue;
        };
        let Ok(entries) = std::fs::read_dir(folder) else {
            continue;
        };
        let mut beside: Vec<PathBuf> = entries
            .take(MAX_SIBLINGS + 1)
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        if beside.len() > MAX_SIBLINGS {
            continue;
        }
        beside.sort();
        lines.extend(beside.iter().filter_map(|p| stamp(p)));
    }
    lines
}

/// The first `program` in the folders of `path_var`.
fn on_path(program: &str, path_var: &str) -> Option<PathBuf> {
    std::env::split_paths(path_var)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// A regular file's path, size and modification time (nanoseconds), as
/// one line; `None` for anything else. One `stat` a file.
fn stamp(file: &Path) -> Option<String> {
    let meta = std::fs::metadata(file).ok().filter(|m| m.is_file())?;
    let modified = (meta.modified().ok())
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    Some(format!("{}\t{}\t{modified}", file.display(), meta.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(argv: &[&str], env: &[(&str, &str)], cwd: &Path) -> Target {
        Target {
            name: "s".into(),
            transport: Transport::Stdio {
                argv: argv.iter().map(|a| a.to_string()).collect(),
                env: env
                    .iter()
                    .map(|(n, v)| (n.to_string(), v.to_string()))
                    .collect(),
                cwd: cwd.to_path_buf(),
            },
            start_timeout: Duration::from_secs(1),
            call_timeout: Duration::from_secs(1),
        }
    }

    #[test]
    fn a_key_changes_with_what_the_server_could_read() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        std::fs::create_dir(cwd.join("srv")).unwrap();
        std::fs::write(cwd.join("srv/wrapper"), "#!/bin/sh\n").unwrap();
        std::fs::write(cwd.join("srv/server.py"), "tools = 1\n").unwrap();
        let key = |argv: &[&str], env: &[(&str, &str)]| path(cwd, &target(argv, env, cwd));
        let base = key(&["srv/wrapper"], &[("TOKEN", "a")]);
        assert!(base.is_some());
        assert_eq!(base, key(&["srv/wrapper"], &[("TOKEN", "a")]));
        assert_ne!(base, key(&["srv/wrapper", "-v"], &[("TOKEN", "a")]));
        assert_ne!(base, key(&["srv/wrapper"], &[("TOKEN", "b")]));
        // The script beside the wrapper changes: a new key.
        std::fs::write(cwd.join("srv/server.py"), "tools = 22\n").unwrap();
        assert_ne!(base, key(&["srv/wrapper"], &[("TOKEN", "a")]));
        // An environment value naming a file counts that file too.
        std::fs::write(cwd.join("index.js"), "1").unwrap();
        let before = key(&["node"], &[("BIN", "./index.js")]);
        std::fs::write(cwd.join("index.js"), "22").unwrap();
        assert_ne!(before, key(&["node"], &[("BIN", "./index.js")]));
        // Values are hashed, never written.
        let file = base.unwrap();
        assert!(!file.display().to_string().contains("TOKEN"));
    }

    #[test]
    fn http_servers_are_not_remembered() {
        let target = Target {
            name: "h".into(),
            transport: Transport::Http {
                url: "http://127.0.0.1:1/mcp".into(),
                headers: Vec::new(),
            },
            start_timeout: Duration::from_secs(1),
            call_timeout: Duration::from_secs(1),
        };
        assert_eq!(path(Path::new("/tmp"), &target), None);
    }

    #[test]
    fn a_listing_is_recalled_until_it_is_too_old() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("deep/k.json");
        let now = SystemTime::now();
        let listing = Listing {
            listed_at: unix_secs(now),
            started_ms: 12,
            tools: vec![ToolInfo {
                name: "echo".into(),
                description: "Echoes.".into(),
                input_schema: serde_json::json!({"type": "object"}),
            }],
        };
        keep(&file, &listing);
        let recalled = recall(&file, now).unwrap();
        assert_eq!(recalled.tools, listing.tools);
        assert!(recall(&file, now + MAX_AGE).is_none());
        std::fs::write(&file, "{not json").unwrap();
        assert!(recall(&file, now).is_none());
    }
}
