//! API keys the harness was configured with, and their removal from anything
//! it writes or prints: journals, reports, golden files, errors, logs.
//!
//! Keys are registered where they are read (the OpenAI client, the hub
//! download, the CLI for every `api_key_env` of `harness.toml`); the wire
//! layer scrubs every answer and error text as it arrives, and the journal
//! writer and the CLI scrub again before anything reaches a file or a terminal.
//!
//! A leaf: it imports nothing from the rest of the crate.

use std::borrow::Cow;
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

/// Registers the value of environment variable `name`, when it is set.
pub(crate) fn register_env(name: &str) {
    if let Ok(value) = std::env::var(name) {
        register(&value);
    }
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
}
