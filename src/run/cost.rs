//! What answers cost: the tokens a server billed (reported, else estimated
//! with tiktoken's `cl100k_base`, which is embedded, so nothing is
//! downloaded) priced by the model's [`TokenPrice`].

use super::record::{Cost, Record};
use crate::client::Asked;
use crate::prompt::Message;
use crate::provider::{Billed, Completion, Price, TokenPrice};

/// Tokens a chat format adds per message (role and separators), and once
/// to prime the reply: OpenAI's published rule of thumb.
const PER_MESSAGE: u64 = 4;
const REPLY_PRIMER: u64 = 3;

/// Tokens of `text` by the estimating tokenizer.
pub(crate) fn text_tokens(text: &str) -> u64 {
    tiktoken_rs::cl100k_base_singleton()
        .encode_ordinary(text)
        .len() as u64
}

/// Estimated prompt tokens of a conversation: its texts plus the chat format's overhead.
pub fn prompt_tokens(messages: &[Message]) -> u64 {
    messages
        .iter()
        .map(|m| text_tokens(&m.content) + PER_MESSAGE)
        .sum::<u64>()
        + REPLY_PRIMER
}

/// The tokens one answer to `messages` was billed, and whether any count is
/// an estimate. One of several choices of a request gets its share of the
/// prompt and its own text's estimate: servers disagree on what their output
/// count of such a request covers.
pub(crate) fn billed(messages: &[Message], answer: &Completion) -> (Billed, bool) {
    let usage = &answer.usage;
    let choices = answer.shared.map_or(1, |s| u64::from(s.choices.max(1)));
    let (input, in_estimated) = match usage.tokens_in {
        Some(n) => (n.div_ceil(choices), false),
        None => (prompt_tokens(messages), true),
    };
    let thought = answer.reasoning.as_ref().map_or("", |r| r.text.as_str());
    // The reasoning is generated (and billed) too: an estimate counts it.
    let (output, reasoning, out_estimated) = match usage.tokens_out {
        Some(n) if answer.shared.is_none() => (n, usage.tokens_reasoning.unwrap_or(0), false),
        _ => {
            let reasoning = if thought.is_empty() {
                0
            } else {
                text_tokens(thought)
            };
            (text_tokens(&answer.text) + reasoning, reasoning, true)
        }
    };
    let cached_input = usage
        .tokens_cached
        .unwrap_or(0)
        .div_ceil(choices)
        .min(input);
    let tokens = Billed {
        input,
        cached_input,
        output,
        reasoning,
    };
    (tokens, in_estimated || out_estimated)
}

/// Rounds to a millionth of a millionth, the unit costs are summed in
/// ([`pico`]): far below any price, and sums then do not depend on order.
pub(crate) fn round(amount: f64) -> f64 {
    pico(amount) as f64 / 1e12
}

/// An amount in millionths of millionths of the currency.
pub(crate) fn pico(amount: f64) -> u64 {
    (amount.max(0.0) * 1e12).round() as u64
}

/// What `answers` to `messages` cost at `price`; whether any count was estimated.
pub(crate) fn answers_cost(
    price: &TokenPrice,
    messages: &[Message],
    answers: &[Completion],
) -> Cost {
    answers.iter().fold(Cost::default(), |total, answer| {
        let (tokens, estimated) = billed(messages, answer);
        total.plus(Cost {
            amount: price.cost(&tokens),
            saved: 0.0,
            estimated,
        })
    })
}

/// What an ask cost: its answer and every answer it rejected and asked
/// again. An answer from the response cache cost nothing and saved what it
/// would have cost; a failed request cost what its rejected answers did.
pub(crate) fn asked_cost(price: &TokenPrice, messages: &[Message], asked: &Asked) -> Cost {
    let answer = asked.result.as_ref().ok();
    let answers: Vec<Completion> = answer.into_iter().chain(&asked.rejected).cloned().collect();
    let live = answers_cost(price, messages, &answers);
    if asked.cached {
        Cost {
            amount: 0.0,
            saved: round(live.amount),
            estimated: live.estimated,
        }
    } else {
        Cost {
            amount: round(live.amount),
            ..live
        }
    }
}

/// What an ask cost at `price`: by its tokens or by its answers; `None` for
/// an hourly price, which the meter's clocks charge.
pub(crate) fn priced_cost(price: &Price, messages: &[Message], asked: &Asked) -> Option<Cost> {
    match price {
        Price::Tokens(p) => Some(asked_cost(p, messages, asked)),
        Price::PerCall(amount) => {
            let answers = asked.result.iter().count() + asked.rejected.len();
            let live = round(amount * answers as f64);
            let (amount, saved) = if asked.cached {
                (0.0, live)
            } else {
                (live, 0.0)
            };
            Some(Cost {
                amount,
                saved,
                estimated: false,
            })
        }
        Price::PerHour(_) => None,
    }
}

/// Tokens a journaled record used, for a token budget carried over by
/// `--resume`: the answer's (reported, else estimated) and its judge's
/// reported ones; an answer from the response cache used none.
pub(crate) fn record_tokens(r: &Record) -> u64 {
    let judge: u64 = r
        .rules
        .iter()
        .filter_map(|rule| rule.judge.as_ref())
        .map(|j| j.tokens_in.unwrap_or(0) + j.tokens_out.unwrap_or(0))
        .sum();
    let Some(response) = r.scored.response.as_deref().filter(|_| !r.cached) else {
        return judge;
    };
    let input = r
        .scored
        .tokens_in
        .unwrap_or_else(|| prompt_tokens(&r.messages));
    let output = r.scored.tokens_out.unwrap_or_else(|| text_tokens(response));
    input + output + judge
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Role;
    use crate::provider::{SharedUsage, Usage};

    const PRICE: TokenPrice = TokenPrice {
        input: 2.0,
        output: 8.0,
        cached_input: 0.5,
        reasoning: 8.0,
    };

    #[test]
    fn reported_usage_is_billed_as_reported() {
        let usage = Usage {
            tokens_in: Some(17),
            tokens_out: Some(5),
            tokens_cached: Some(4),
            tokens_reasoning: None,
        };
        let cost = answers_cost(&PRICE, &[], &[Completion::new("12", usage)]);
        assert!((cost.amount - 68e-6).abs() < 1e-15, "{cost:?}");
        assert!(!cost.estimated);
    }

    #[test]
    fn missing_usage_is_estimated_with_the_tokenizer() {
        let messages = [Message::text(Role::User, "What is the capital of France?")];
        // cl100k_base: 7 tokens, + 4 for the message, + 3 for the reply.
        assert_eq!(prompt_tokens(&messages), 14);
        let (tokens, estimated) = billed(&messages, &Completion::new("Paris", Usage::default()));
        assert_eq!((tokens.input, tokens.output, estimated), (14, 1, true));
    }

    #[test]
    fn choices_of_one_request_share_its_prompt() {
        let mut a = Completion::new(
            "hello world",
            Usage {
                tokens_in: Some(10),
                tokens_out: None,
                tokens_cached: None,
                tokens_reasoning: None,
            },
        );
        a.shared = Some(SharedUsage {
            choices: 2,
            tokens_out: Some(7),
        });
        let (tokens, estimated) = billed(&[], &a);
        assert_eq!((tokens.input, tokens.output, estimated), (5, 2, true));
    }

    #[test]
    fn rounding_is_to_a_pico_unit() {
        assert_eq!(pico(68e-6), 68_000_000);
        assert_eq!(round(0.1 + 0.2), 0.3);
    }

    #[test]
    fn a_per_call_price_bills_each_answer_and_nothing_else() {
        let asked = |result: Result<Completion, crate::provider::ProviderError>,
                     rejected: usize,
                     cached: bool| Asked {
            result,
            attempts: 1,
            latency: std::time::Duration::ZERO,
            cached,
            retries: Vec::new(),
            rejected: vec![Completion::new("x", Usage::default()); rejected],
            endpoint: None,
        };
        let ok = || {
            Ok(Completion::new(
                "a long answer of many tokens",
                Usage::default(),
            ))
        };
        let failed = || Err(crate::provider::ProviderError::Program("exit 3".into()));
        let cases = [
            (asked(ok(), 0, false), 0.25, 0.0),
            (asked(ok(), 2, false), 0.75, 0.0),
            (asked(failed(), 1, false), 0.25, 0.0),
            (asked(failed(), 0, false), 0.0, 0.0),
            (asked(ok(), 0, true), 0.0, 0.25),
        ];
        for (asked, amount, saved) in cases {
            let cost = priced_cost(&Price::PerCall(0.25), &[], &asked).unwrap();
            assert_eq!(
                (cost.amount, cost.saved, cost.estimated),
                (amount, saved, false)
            );
        }
        assert!(priced_cost(&Price::PerHour(1.0), &[], &asked(ok(), 0, false)).is_none());
    }
}
