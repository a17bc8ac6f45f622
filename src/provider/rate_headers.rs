//! Rate-limit headers, as hosted APIs send them with every answer: how much
//! of the allowance is left. None left means the next request in the window
//! would be refused, so the adaptive concurrency can slow down before a 429.
//!
//! OpenAI (and servers copying it): `x-ratelimit-remaining-requests`,
//! `x-ratelimit-remaining-tokens`. Anthropic:
//! `anthropic-ratelimit-requests-remaining`,
//! `anthropic-ratelimit-tokens-remaining` (and its `input-`/`output-`
//! forms). Limits, reset times and unknown names are not read.

/// Whether any remaining-allowance header of `headers` is at zero.
pub(crate) fn allowance_spent(headers: &reqwest::header::HeaderMap) -> bool {
    headers
        .iter()
        .any(|(name, value)| is_remaining(name.as_str()) && value.to_str().is_ok_and(is_zero))
}

/// A header that counts what is left of an allowance (names come lowercase).
fn is_remaining(name: &str) -> bool {
    name.starts_with("x-ratelimit-remaining-")
        || (name.starts_with("anthropic-ratelimit-") && name.ends_with("-remaining"))
}

/// `0` (or `0.0`): a count or an amount of nothing. Anything unreadable is not.
fn is_zero(value: &str) -> bool {
    value.trim().parse::<f64>().is_ok_and(|v| v == 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

    #[test]
    fn only_a_remaining_allowance_at_zero_is_spent() {
        let spent = [
            "x-ratelimit-remaining-requests: 0",
            "x-ratelimit-remaining-tokens:  0 ",
            "X-RateLimit-Remaining-Requests: 0",
            "anthropic-ratelimit-requests-remaining: 0",
            "anthropic-ratelimit-output-tokens-remaining: 0.0",
        ];
        let not_spent = [
            "x-ratelimit-remaining-requests: 1",
            "x-ratelimit-remaining-requests: soon",
            "x-ratelimit-limit-requests: 0",
            "anthropic-ratelimit-requests-limit: 0",
            "anthropic-ratelimit-requests-reset: 0",
            "retry-after: 0",
        ];
        let header = |line: &'static str| {
            let (name, value) = line.split_once(": ").expect("name: value");
            let mut headers = HeaderMap::new();
            headers.insert(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_static(value),
            );
            headers
        };
        for line in spent {
            assert!(allowance_spent(&header(line)), "{line}");
        }
        for line in not_spent {
            assert!(!allowance_spent(&header(line)), "{line}");
        }
        let mut both = HeaderMap::new();
        both.insert(
            "x-ratelimit-remaining-requests",
            HeaderValue::from_static("7"),
        );
        both.insert(
            "x-ratelimit-remaining-tokens",
            HeaderValue::from_static("0"),
        );
        assert!(allowance_spent(&both), "tokens spent is enough");
        assert!(!allowance_spent(&HeaderMap::new()));
    }
}
