//! API keys the harness was configured with, and their removal from anything
//! it writes or prints: journals, reports, golden files, errors, logs.
//!
//! Keys are registered where they are read (the OpenAI client, the hub
//! download, the CLI for every `api_key_env` of `harness.toml`); the wire
//! layer scrubs every answer and error text as it arrives, and the journal
//! writer and the CLI scrub again before anything reaches a file or a terminal.
//!
//! The keys themselves live here too, in memory only: the CLI takes every
//! variable that looks like a credential out of the process environment at
//! start (see `environ.rs`) and hands it to [`hold`]; the harness reads its
//! keys through [`var`], and a program gets one only when it is passed by
//! name (an `exec` model's `env`, vLLM's `HF_TOKEN`).
//!
//! A leaf: it imports nothing from the rest of the crate.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::RwLock;

/// What a key is replaced with.
pub(crate) const REDACTED: &str = "[redacted]";

/// Values shorter than this are not treated as keys: redacting `abc` from
/// every text would garble output, and no real API key is that short.
pub(crate) const MIN_LEN: usize = 8;

static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Registers `value` as a secret, unless it is too short to be one.
pub(crate) fn register(value: &str) {
    let value = value.trim();
    if value.chars().count() < MIN_LEN {
        return;
    }
    let mut secrets = SECRETS.write().unwrap_or_else(|e| e.into_inner());
    // The JSON-escaped spelling too, for keys with quotes or backslashes in journal lines.
    let escaped = serde_json::to_string(value).unwrap_or_default();
    for form in [value, escaped.trim_matches('"')] {
        if !secrets.iter().any(|s| s == form) {
            secrets.push(form.to_owned());
        }
    }
    // Longest first, so a key containing another is replaced whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
}

/// Registers the value of environment variable `name`, when it is set
/// (held here or still in the environment).
pub(crate) fn register_env(name: &str) {
    if let Some(value) = var(name) {
        register(&value);
    }
}

/// Variables taken out of the environment: name to value.
static HELD: RwLock<BTreeMap<String, String>> = RwLock::new(BTreeMap::new());

/// Keeps `value` of variable `name`, taken out of the environment, in
/// memory, and registers it as a secret.
pub(crate) fn hold(name: &str, value: &str) {
    register(value);
    let mut held = HELD.write().unwrap_or_else(|e| e.into_inner());
    held.insert(name.to_owned(), value.to_owned());
}

/// The value of variable `name`: held here when it was taken out of the
/// environment, else the environment's. Every read of a key goes through this.
pub(crate) fn var(name: &str) -> Option<String> {
    let held = HELD.read().unwrap_or_else(|e| e.into_inner());
    match held.get(name) {
        Some(value) => Some(value.clone()),
        None => std::env::var(name).ok(),
    }
}

/// Keys the harness itself reads, whatever their names look like.
pub(crate) const KNOWN_KEYS: [&str; 3] = ["OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"];

/// Whether a variable's name says it holds a credential (`*_KEY*`,
/// `*_TOKEN*`, `*SECRET*`, `*PASSWORD*`, `*PASSWD*`, `*CREDENTIAL*`, `TOKEN`),
/// or names a key the harness reads. Such variables are taken out of the
/// environment at start; wide on purpose, since taking one costs nothing
/// (a program still gets it when its model's `env` names it).
pub(crate) fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    KNOWN_KEYS.contains(&upper.as_str())
        || upper == "TOKEN"
        || [
            "_KEY",
            "_TOKEN",
            "SECRET",
            "PASSWORD",
            "PASSWD",
            "CREDENTIAL",
        ]
        .iter()
        .any(|s| upper.contains(s))
}

/// `text` with every registered secret replaced by [`REDACTED`].
pub(crate) fn redact(text: &str) -> Cow<'_, str> {
    let secrets = SECRETS.read().unwrap_or_else(|e| e.into_inner());
    let mut out = Cow::Borrowed(text);
    for secret in secrets.iter() {
        if out.contains(secret.as_str()) {
            out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_keys_vanish_and_short_values_stay() {
        register("sk-test-0123456789");
        register("short");
        assert_eq!(
            redact("HTTP 401: bad key sk-test-0123456789 (short)"),
            "HTTP 401: bad key [redacted] (short)"
        );
        assert!(matches!(redact("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn held_keys_are_read_and_redacted() {
        hold("HARNESS_UNIT_TEST_API_KEY", "held-key-value-0123");
        assert_eq!(
            var("HARNESS_UNIT_TEST_API_KEY").as_deref(),
            Some("held-key-value-0123")
        );
        assert_eq!(redact("x held-key-value-0123 y"), "x [redacted] y");
        assert_eq!(var("HARNESS_UNIT_TEST_UNSET_VARIABLE"), None);
    }

    #[test]
    fn credential_names_are_recognized() {
        for name in [
            "OPENAI_API_KEY",
            "HF_TOKEN",
            "HUGGING_FACE_HUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "DB_PASSWORD",
            "GITHUB_TOKEN",
            "my_api_key",
            "CLIENT_SECRET_FILE",
        ] {
            assert!(looks_secret(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "CUDA_VISIBLE_DEVICES",
            "LD_LIBRARY_PATH",
            "TOKENIZERS_PARALLELISM",
            "OPENAI_BASE_URL",
        ] {
            assert!(!looks_secret(name), "{name}");
        }
    }
}
