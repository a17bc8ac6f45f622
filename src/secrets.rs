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
pub(crate) const KNOWN_KEYS: [&str; 6] = [
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
];

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

/// Drops every secret-looking variable from what `command` inherits. The
/// CLI takes the keys out of the environment at start; any set since (or
/// by a library caller) is dropped here.
pub(crate) fn scrub_env(command: &mut std::process::Command) {
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if looks_secret(&name) {
            command.env_remove(name.as_ref());
        }
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

/// Query parameters whose values are credentials (compared without case):
/// Azure's `api-key`, signed URLs' `sig`, and the usual names.
const SECRET_PARAMS: [&str; 10] = [
    "api-key",
    "api_key",
    "apikey",
    "key",
    "token",
    "access_token",
    "sig",
    "signature",
    "password",
    "secret",
];

/// `url` as it may be shown or written: the credentials of its authority
/// (`user:pass@`) and the values of secret-looking query parameters
/// replaced by [`REDACTED`]. The request itself still goes to `url`; a URL
/// without either is returned as it is, so nothing keyed on it changes.
pub(crate) fn redact_url(url: &str) -> Cow<'_, str> {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return Cow::Borrowed(url);
    };
    let fragment = url[scheme_end..]
        .find('#')
        .map_or(url.len(), |h| scheme_end + h);
    let authority_end = url[scheme_end..fragment]
        .find(['/', '?'])
        .map_or(fragment, |e| scheme_end + e);
    let mut out = String::new();
    let mut from = 0;
    // The last `@` of the authority ends its userinfo (a raw `@` in a password
    // included). What is already redacted stays, so redacting twice changes nothing.
    if let Some(at) = url[scheme_end..authority_end]
        .rfind('@')
        .filter(|at| url[scheme_end..scheme_end + at] != *REDACTED)
    {
        out.push_str(&url[..scheme_end]);
        out.push_str(REDACTED);
        from = scheme_end + at;
    }
    if let Some(q) = url[authority_end..fragment].find('?') {
        let mut start = authority_end + q + 1;
        for pair in url[start..fragment].split(['&', ';']) {
            if let Some((name, value)) = pair.split_once('=')
                && !value.is_empty()
                && value != REDACTED
                && SECRET_PARAMS.iter().any(|p| p.eq_ignore_ascii_case(name))
            {
                let value = start + name.len() + 1;
                out.push_str(&url[from..value]);
                out.push_str(REDACTED);
                from = start + pair.len();
            }
            start += pair.len() + 1;
        }
    }
    if from == 0 {
        return Cow::Borrowed(url);
    }
    out.push_str(&url[from..]);
    Cow::Owned(out)
}

/// `text` with every `http://` or `https://` URL in it passed through
/// [`redact_url`]: an error that quotes the URL it was sending to (reqwest's
/// do), a journal line, a report. A URL ends at white space, a quote, a
/// backslash (of a JSON escape), a parenthesis or a brace (`[` and `]`
/// belong to IPv6 hosts and to what was redacted before), less the
/// punctuation of the sentence around it.
pub(crate) fn redact_urls(text: &str) -> Cow<'_, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    // ASCII lowercasing keeps every byte offset.
    let lower = text.to_ascii_lowercase();
    let mut out = String::new();
    let mut from = 0;
    let mut search = 0;
    while let Some(start) = [
        lower[search..].find("http://"),
        lower[search..].find("https://"),
    ]
    .into_iter()
    .flatten()
    .min()
    .map(|found| search + found)
    {
        let end = text[start..]
            .find(|c: char| c.is_whitespace() || "\"'`<>(){}\\".contains(c))
            .map_or(text.len(), |e| start + e);
        // Punctuation after a URL in a sentence (`URL: error`) is the sentence's.
        let url = text[start..end].trim_end_matches(['.', ',', ':', ';', '!', '?']);
        let end = start + url.len();
        if let Cow::Owned(clean) = redact_url(url) {
            out.push_str(&text[from..start]);
            out.push_str(&clean);
            from = end;
        }
        search = end;
    }
    if from == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[from..]);
    Cow::Owned(out)
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
    fn url_credentials_and_secret_parameters_are_redacted() {
        let cases = [
            ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
            (
                "http://user:pass@127.0.0.1:9/v1?api-key=SECRETSECRET",
                "http://[redacted]@127.0.0.1:9/v1?api-key=[redacted]",
            ),
            ("https://tok@h/v1", "https://[redacted]@h/v1"),
            ("http://u:p@ss@h/", "http://[redacted]@h/"),
            (
                "https://h/v1?x=1&API_KEY=abc&Token=t;sig=s&keep=2#frag?key=no",
                "https://h/v1?x=1&API_KEY=[redacted]&Token=[redacted];sig=[redacted]&keep=2#frag?key=no",
            ),
            (
                "https://h/?key=&access_token=a&signature=b&password=c&secret=d&apikey=e",
                "https://h/?key=&access_token=[redacted]&signature=[redacted]&password=[redacted]&secret=[redacted]&apikey=[redacted]",
            ),
            (
                "http://u:p@[::1]:8/v1?token=t",
                "http://[redacted]@[::1]:8/v1?token=[redacted]",
            ),
            ("https://h/p@th?monkey=1&key", "https://h/p@th?monkey=1&key"),
            ("https://h/#a?key=x", "https://h/#a?key=x"),
            ("https://u@h#f", "https://[redacted]@h#f"),
            ("not a url", "not a url"),
        ];
        for (url, shown) in cases {
            assert_eq!(redact_url(url), shown, "{url}");
        }
        assert!(matches!(redact_url("http://h/v1?a=b"), Cow::Borrowed(_)));
        // Redacting again changes nothing.
        for (url, _) in cases {
            let once = redact_url(url).into_owned();
            assert_eq!(redact_url(&once), once, "{url}");
            assert_eq!(
                redact_urls(&format!("at {once}: no")),
                format!("at {once}: no")
            );
        }
    }

    #[test]
    fn urls_inside_texts_are_redacted_where_they_stand() {
        let text = "error sending request for url (http://127.0.0.1:9/v1/chat/completions?api-key=SECRETSECRET): refused";
        assert_eq!(
            redact_urls(text),
            "error sending request for url (http://127.0.0.1:9/v1/chat/completions?api-key=[redacted]): refused"
        );
        let json = r#"{"endpoint":"http://u:pw@h:1/v1","error":"at HTTPS://h/?token=abc\"x\" and http://ok/"}"#;
        assert_eq!(
            redact_urls(json),
            r#"{"endpoint":"http://[redacted]@h:1/v1","error":"at HTTPS://h/?token=[redacted]\"x\" and http://ok/"}"#
        );
        assert_eq!(
            redact_urls("out (http://u:p@h/v1?key=k: refused, http://[::1]/?sig=s.)"),
            "out (http://[redacted]@h/v1?key=[redacted]: refused, http://[::1]/?sig=[redacted].)"
        );
        assert!(matches!(
            redact_urls("see http://ok/v1 and more"),
            Cow::Borrowed(_)
        ));
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
