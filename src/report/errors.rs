//! Why records ended as errors, counted by cause and endpoint, so the
//! terminal can say `6 × connection refused (http://127.0.0.1:9/v1/...)`
//! instead of only how many failed. The raw error text stays in the journal
//! and the Markdown report; a cause is a short, stable phrase for it.
//!
//! The record's stored failure kind picks the cause. The message is read only
//! for the detail a kind does not hold: an HTTP error's status, a program's
//! exit, and a connection error's innermost reason (refused, reset, DNS).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use regex::Regex;

use crate::verify::FailureKind;

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
    /// Counts one record's request error of `kind`, `endpoint` being its pool endpoint.
    pub(super) fn add(&mut self, kind: Option<FailureKind>, error: &str, endpoint: Option<&str>) {
        let endpoint = endpoint.map(str::to_owned).or_else(|| url_in(error));
        let cause = cause_of(kind, error);
        *self.counts.entry((cause, endpoint)).or_default() += 1;
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

/// A short phrase for what went wrong, by the record's failure `kind`: the
/// status of an HTTP error, the exit of a program, the innermost reason of a
/// connection error, a fixed phrase for a timeout, a malformed body or a
/// missing recording, else the message's innermost reason.
pub(super) fn cause_of(kind: Option<FailureKind>, error: &str) -> String {
    match kind {
        Some(FailureKind::ProgramError) => program_cause(error),
        Some(FailureKind::ConnectionError) => connection_cause(error),
        Some(FailureKind::RateLimited | FailureKind::ServerError | FailureKind::ClientError) => {
            let status: String = (error.strip_prefix("HTTP ").unwrap_or_default().chars())
                .take_while(char::is_ascii_digit)
                .collect();
            format!("HTTP {status}")
        }
        // The user's own setup is at fault: the whole message names what to
        // fix (a model, a `command[N]`), so it is kept, not cut to its tail.
        Some(FailureKind::ConfigError) => crate::text::clip(error, 160),
        Some(FailureKind::Timeout) => "timed out".to_owned(),
        Some(FailureKind::MalformedResponse) => "malformed response".to_owned(),
        Some(FailureKind::NotRecorded) => "no recorded answer".to_owned(),
        _ => crate::text::clip(innermost(error), 60),
    }
}

/// A program's exit status: its stderr may say anything.
fn program_cause(error: &str) -> String {
    let rest = error.strip_prefix("program failed: ").unwrap_or(error);
    let what = match rest.split_once(" ended with ") {
        Some((_, status)) => status.split("; stderr: ").next().unwrap_or(status),
        None => innermost(rest),
    };
    format!("program: {}", crate::text::clip(what, 60))
}

/// The reason a connection failed, named alike whatever layer reported it.
fn connection_cause(error: &str) -> String {
    let lower = error.to_lowercase();
    let known = [
        ("connection refused", "connection refused"),
        ("connection reset", "connection reset"),
        ("dns error", "DNS lookup failed"),
        ("failed to lookup", "DNS lookup failed"),
        ("certificate", "TLS certificate rejected"),
    ];
    match known.iter().find(|(needle, _)| lower.contains(needle)) {
        Some((_, phrase)) => (*phrase).to_owned(),
        None => crate::text::clip(innermost(error), 60),
    }
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
        use FailureKind as K;
        let cases = [
            (K::ConnectionError, refused, "connection refused"),
            (K::ServerError, "HTTP 503: overloaded", "HTTP 503"),
            (K::RateLimited, "HTTP 429: slow down", "HTTP 429"),
            (K::Timeout, "timed out after 30s", "timed out"),
            (
                K::MalformedResponse,
                "malformed response: EOF while parsing",
                "malformed response",
            ),
            (
                K::NotRecorded,
                "no recorded answer: instance 3",
                "no recorded answer",
            ),
            (
                K::ConnectionError,
                "connection error: something: broken pipe (os error 32)",
                "broken pipe",
            ),
            (
                K::ProgramError,
                "program failed: `ocr` ended with exit status: 3; stderr: connection refused: x",
                "program: exit status: 3",
            ),
            (
                K::ProgramError,
                "program failed: cannot start `ocr` in /w: No such file or directory (os error 2)",
                "program: No such file or directory",
            ),
            // The kind decides, not the words: a model's text that looks like another cause.
            (
                K::ConfigError,
                "model `m`: HTTP 503 connection refused: command[1]",
                "model `m`: HTTP 503 connection refused: command[1]",
            ),
            (
                K::EpisodeTimeout,
                "the episode ran past max_episode_secs = 5",
                "the episode ran past max_episode_secs = 5",
            ),
            (
                K::ConfigError,
                "model `ocr`: `command[1]`, line 1 column 4: undefined value",
                "model `ocr`: `command[1]`, line 1 column 4: undefined value",
            ),
        ];
        for (kind, error, cause) in cases {
            assert_eq!(cause_of(Some(kind), error), cause, "{error}");
        }
        let mut tally = ErrorTally::default();
        for _ in 0..6 {
            tally.add(Some(K::ConnectionError), refused, None);
        }
        tally.add(
            Some(K::ServerError),
            "HTTP 503: busy",
            Some("http://b:8000/v1"),
        );
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
