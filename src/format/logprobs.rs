//! Log-probabilities as a server returns them, kept compactly and bounded:
//! a generated token's (`[request] logprobs = true`) and, for
//! `loglikelihood` scoring, each scored continuation's. Records, golden
//! transcripts and replay hold these types, and `[[example]]` writes them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The most tokens a response keeps log-probabilities for: a hostile or
/// runaway server cannot make a record huge.
pub(crate) const MAX_TOKENS: usize = 4_096;

/// The most alternatives kept per token (OpenAI's `top_logprobs` ceiling).
pub(crate) const MAX_TOP: usize = 20;

/// The most bytes of a token's text kept; longer ones are clipped.
const MAX_TOKEN_BYTES: usize = 256;

/// One token, its log-probability and the most likely alternatives at its
/// place, most likely first. Written as `{"t": "А", "lp": -0.1, "top":
/// [["А", -0.1], ["Б", -2.4]]}`: short keys, because a record may hold
/// thousands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenLogprob {
    /// The token's text.
    #[serde(rename = "t")]
    pub token: String,
    /// Its natural log-probability.
    #[serde(rename = "lp")]
    pub logprob: f64,
    /// The alternatives the server listed, `[text, logprob]`, most likely first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top: Vec<(String, f64)>,
}

impl TokenLogprob {
    /// A token as a wire gave it, bounded: its text clipped, at most
    /// [`MAX_TOP`] alternatives (the most likely), non-finite values made
    /// finite (a server's `-inf` stays a very unlikely token, not a record
    /// that cannot be written).
    pub(crate) fn bounded(token: &str, logprob: f64, mut top: Vec<(String, f64)>) -> TokenLogprob {
        top.sort_by(|a, b| b.1.total_cmp(&a.1));
        top.truncate(MAX_TOP);
        TokenLogprob {
            token: clip(token),
            logprob: finite(logprob),
            top: top
                .into_iter()
                .map(|(text, lp)| (clip(&text), finite(lp)))
                .collect(),
        }
    }

    /// Whether the token is the most likely at its place (lm-eval's
    /// `is_greedy`: no listed alternative is more likely).
    pub fn greedy(&self) -> bool {
        self.top.iter().all(|(_, lp)| *lp <= self.logprob)
    }
}

/// One scored continuation of a `loglikelihood` request: the summed
/// log-probability of its tokens after the context, whether each was the
/// most likely, and the tokens themselves for the drill-down.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Continuation {
    /// The sum of the continuation's token log-probabilities.
    pub logprob: f64,
    /// Every token of it was the most likely one (lm-eval's `is_greedy`).
    pub greedy: bool,
    /// The continuation's tokens.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tokens: Vec<TokenLogprob>,
}

impl Continuation {
    /// The continuation made of `tokens`: their sum and greediness.
    pub fn of(tokens: Vec<TokenLogprob>) -> Continuation {
        Continuation {
            logprob: tokens.iter().map(|t| t.logprob).sum(),
            greedy: tokens.iter().all(TokenLogprob::greedy),
            tokens,
        }
    }
}

/// What a response carried besides its text: the generated tokens'
/// log-probabilities, or the scored continuations of a `loglikelihood`
/// request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Logprobs {
    /// The generated tokens, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tokens: Vec<TokenLogprob>,
    /// One per scored continuation, in the request's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub continuations: Vec<Continuation>,
}

impl Logprobs {
    /// Nothing was returned.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty() && self.continuations.is_empty()
    }
}

fn clip(text: &str) -> String {
    if text.len() <= MAX_TOKEN_BYTES {
        return text.to_owned();
    }
    let mut end = MAX_TOKEN_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// JSON has no infinity: `-inf` (and NaN) become the lowest float, `+inf` 0.
fn finite(logprob: f64) -> f64 {
    match logprob {
        x if x.is_finite() => x,
        x if x == f64::INFINITY => 0.0,
        _ => f64::MIN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_written_compactly_and_reads_back() {
        let token = TokenLogprob::bounded("А", -0.1, vec![("Б".into(), -2.5), ("А".into(), -0.1)]);
        let text = serde_json::to_string(&token).unwrap();
        assert_eq!(text, r#"{"t":"А","lp":-0.1,"top":[["А",-0.1],["Б",-2.5]]}"#);
        assert_eq!(serde_json::from_str::<TokenLogprob>(&text).unwrap(), token);
    }

    #[test]
    fn bounds_hold_for_hostile_values() {
        let many: Vec<_> = (0..100).map(|i| (format!("t{i}"), -f64::from(i))).collect();
        let long = "x".repeat(10_000);
        let token = TokenLogprob::bounded(&long, f64::NEG_INFINITY, many);
        assert_eq!(token.top.len(), MAX_TOP);
        assert_eq!(token.top[0].0, "t0");
        assert_eq!(token.token.len(), MAX_TOKEN_BYTES);
        assert_eq!(token.logprob, f64::MIN);
        assert!(serde_json::to_string(&token).is_ok());
        assert_eq!(
            TokenLogprob::bounded("a", f64::NAN, vec![]).logprob,
            f64::MIN
        );
    }

    #[test]
    fn a_continuation_sums_its_tokens_and_is_greedy_only_when_each_token_is() {
        let greedy = TokenLogprob::bounded(" Paris", -0.5, vec![(" Paris".into(), -0.5)]);
        let not = TokenLogprob::bounded(".", -3.0, vec![(",".into(), -1.0), (".".into(), -3.0)]);
        let c = Continuation::of(vec![greedy.clone(), not]);
        assert_eq!(c.logprob, -3.5);
        assert!(!c.greedy);
        assert!(Continuation::of(vec![greedy]).greedy);
    }
}
