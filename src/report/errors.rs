//! Why records ended as errors, counted by cause and endpoint, so the
//! terminal can say `6 × connection refused (http://127.0.0.1:9/v1/...)`
//! instead of only how many failed. The raw error text stays in the journal
//! and the Markdown report; a cause is a short, stable phrase of it.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use regex::Regex;

/// One cause of failed records and how many records it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorCause {
    /// A short phrase: `connection refused`, `HTTP 503`, `timed out`, ...
    pub cause: String,
    /// The endpoint the error names (a pool's endpoint, or the request's URL).
    pub endpoint: Option<String>,
    /// Records that ended so.
    pub count: u64,
}

/// Counts of error records by (cause, endpoint).
#[derive(Debug, Default)]
pub(super) struct ErrorTally {
    counts: BTreeMap<(String, Option<String>), u64>,
}

impl ErrorTally {
    /// Counts one record's request error, `endpoint` being its pool endpoint.
    pub(super) fn add(&mut self, error: &str, endpoint: Option<&str>) {
        let endpoint = endpoint.map(str::to_owned).or_else(|| url_in(error));
        *self.counts.entry((cause_of(error), endpoint)).or_default() += 1;
    }

    /// The causes, most records first (then by cause and endpoint).
    pub(super) fn finish(self) -> Vec<ErrorCause> {
        let mut out: Vec<ErrorCause> = self
            .counts
            .into_iter()
            .map(|((cause, endpoint), count)| ErrorCause {
                cause,
                endpoint,
                count,
            })
            .collect();
        out.sort_by_key(|c| std::cmp::Reverse(c.count));
        out
    }
}

/// The URL an error message names in parentheses, as reqwest writes it.
fn url_in(error: &str) -> Option<String> {
    static URL: OnceLock<Regex> = OnceLock::new();
    let re = URL.get_or_init(|| Regex::new(r"\((https?://[^)\s]+)\)").expect("valid regex"));
    re.captures(error).map(|c| c[1].to_owned())
}

/// A short phrase for what went wrong: the innermost reason of a connection
/// error, the status of an HTTP error, or the error's kind.
pub(super) fn cause_of(error: &str) -> String {
    // A program's stderr may say anything: its exit status is the cause.
    if let Some(rest) = error.strip_prefix("program failed: ") {
        let status = rest.split_once(" ended with ").map(|(_, s)| s);
        let what = match status {
            Some(status) => status.split("; stderr: ").next().unwrap_or(status),
            None => innermost(rest),
        };
        return format!("program: {}", crate::text::clip(what, 60));
    }
    // A command that does not render: which model and argument is the cause.
    if error.starts_with("model `") && error.contains("`command[") {
        return crate::text::clip(error, 160);
    }
    let lower = error.to_lowercase();
    let known = [
        ("connection refused", "connection refused"),
        ("connection reset", "connection reset"),
        ("dns error", "DNS lookup failed"),
        ("failed to lookup", "DNS lookup failed"),
        ("certificate", "TLS certificate rejected"),
        ("not started: the run's budget", "not started: over budget"),
    ];
    if let Some((_, phrase)) = known.iter().find(|(needle, _)| lower.contains(needle)) {
        return (*phrase).to_owned();
    }
    if let Some(rest) = error.strip_prefix("HTTP ") {
        let status: String = rest.chars().take_while(char::is_ascii_digit).collect();
        return format!("HTTP {status}");
    }
    for kind in ["timed out", "malformed response", "no recorded answer"] {
        if lower.starts_with(kind) {
            return kind.to_owned();
        }
    }
    crate::text::clip(innermost(error), 60)
}

/// The innermost reason: the text after the last `: `, without `(os error N)`.
fn innermost(error: &str) -> &str {
    let inner = error.rsplit(": ").next().unwrap_or(error);
    inner.split(" (os error").next().unwrap_or(inner).trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_are_short_and_endpoints_found() {
        let refused = "connection error: error sending request for url (http://127.0.0.1:9/v1/chat/completions): client error (Connect): tcp connect error: Connection refused (os error 111)";
        let cases = [
            (refused, "connection refused"),
            ("HTTP 503: overloaded", "HTTP 503"),
            ("timed out after 30s", "timed out"),
            (
                "malformed response: EOF while parsing",
                "malformed response",
            ),
            ("no recorded answer: instance 3", "no recorded answer"),
            (
                "connection error: something: broken pipe (os error 32)",
                "broken pipe",
            ),
            (
                "program failed: `ocr` ended with exit status: 3; stderr: connection refused: x",
                "program: exit status: 3",
            ),
            (
                "program failed: cannot start `ocr` in /w: No such file or directory (os error 2)",
                "program: No such file or directory",
            ),
            (
                "model `ocr`: `command[1]`, line 1 column 4: undefined value",
                "model `ocr`: `command[1]`, line 1 column 4: undefined value",
            ),
        ];
        for (error, cause) in cases {
            assert_eq!(cause_of(error), cause, "{error}");
        }
        let mut tally = ErrorTally::default();
        for _ in 0..6 {
            tally.add(refused, None);
        }
        tally.add("HTTP 503: busy", Some("http://b:8000/v1"));
        let causes = tally.finish();
        assert_eq!(causes.len(), 2);
        assert_eq!(causes[0].count, 6);
        assert_eq!(
            causes[0].endpoint.as_deref(),
            Some("http://127.0.0.1:9/v1/chat/completions")
        );
        assert_eq!(causes[1].endpoint.as_deref(), Some("http://b:8000/v1"));
    }
}
