//! What a model costs: per million tokens (`price = { input, output,
//! cached_input, reasoning }`), per hour of its server (`price = { per_hour }`) or per
//! answer of a program (`price = { per_call }`), in the run's currency. Pure arithmetic: the run layer decides which tokens count.

use serde::{Deserialize, Serialize};

/// Tokens in the unit prices are quoted for.
pub(crate) const PER_MILLION: f64 = 1_000_000.0;

/// A model's price: `price = { ... }` of a `[models.X]` table.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawPrice", into = "RawPrice")]
pub enum Price {
    /// Billed by the token.
    Tokens(TokenPrice),
    /// Billed by the hour of the server's wall time: a GPU box.
    PerHour(f64),
    /// Billed per answer, whatever its length: an `exec` program, a paid API by the call.
    PerCall(f64),
}

/// Prices per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenPrice {
    /// Prompt tokens.
    pub input: f64,
    /// Generated tokens.
    pub output: f64,
    /// Prompt tokens the provider served from its prompt cache (default: `input`).
    pub cached_input: f64,
    /// Generated tokens the model spent reasoning (default: `output`).
    pub reasoning: f64,
}

/// Token counts of one answer, as billed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Billed {
    /// Prompt tokens, the cached ones included.
    pub input: u64,
    /// Of `input`, those read from the provider's prompt cache.
    pub cached_input: u64,
    /// Generated tokens, the reasoning ones included.
    pub output: u64,
    /// Of `output`, those spent reasoning (0 where the server did not say).
    pub reasoning: u64,
}

impl Billed {
    /// Prompt and generated tokens together.
    pub fn total(&self) -> u64 {
        self.input + self.output
    }
}

impl TokenPrice {
    /// What `tokens` cost at these prices.
    pub fn cost(&self, tokens: &Billed) -> f64 {
        let cached = tokens.cached_input.min(tokens.input);
        let fresh = tokens.input - cached;
        let reasoning = tokens.reasoning.min(tokens.output);
        let answer = tokens.output - reasoning;
        (fresh as f64 * self.input
            + cached as f64 * self.cached_input
            + answer as f64 * self.output
            + reasoning as f64 * self.reasoning)
            / PER_MILLION
    }

    /// The most one token can cost: a worst case priced every token at it.
    pub fn highest(&self) -> f64 {
        self.input.max(self.output).max(self.reasoning)
    }

    /// The most one generated token can cost: answer or reasoning.
    pub fn highest_output(&self) -> f64 {
        self.output.max(self.reasoning)
    }
}

/// The table as written: every key optional, checked by [`Price::try_from`].
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPrice {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    input: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    output: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cached_input: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reasoning: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    per_hour: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    per_call: Option<f64>,
}

/// Why a price table is not a price.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PriceError {
    /// A negative, infinite or NaN amount.
    #[error("price `{key}` is {value}: a price is a finite amount of 0 or more")]
    Amount {
        /// The key.
        key: &'static str,
        /// Its value.
        value: f64,
    },
    /// Two kinds of price together.
    #[error(
        "a price is per token (input, output, cached_input, reasoning), per hour (per_hour) or per call (per_call), one of them"
    )]
    Both,
    /// A token price without its input or output side.
    #[error("a token price needs both `input` and `output` (per million tokens)")]
    Incomplete,
}

impl TryFrom<RawPrice> for Price {
    type Error = PriceError;

    fn try_from(raw: RawPrice) -> Result<Price, PriceError> {
        let keys = [
            ("input", raw.input),
            ("output", raw.output),
            ("cached_input", raw.cached_input),
            ("reasoning", raw.reasoning),
            ("per_hour", raw.per_hour),
            ("per_call", raw.per_call),
        ];
        for (key, value) in keys {
            if let Some(value) = value.filter(|v| !v.is_finite() || *v < 0.0) {
                return Err(PriceError::Amount { key, value });
            }
        }
        let tokens = [raw.input, raw.output, raw.cached_input, raw.reasoning]
            .iter()
            .any(Option::is_some);
        let kinds = [tokens, raw.per_hour.is_some(), raw.per_call.is_some()];
        if kinds.iter().filter(|k| **k).count() > 1 {
            return Err(PriceError::Both);
        }
        if let Some(amount) = raw.per_call {
            return Ok(Price::PerCall(amount));
        }
        match (raw.per_hour, tokens, raw.input, raw.output) {
            (Some(_), true, _, _) => Err(PriceError::Both),
            (Some(rate), false, _, _) => Ok(Price::PerHour(rate)),
            (None, _, Some(input), Some(output)) => Ok(Price::Tokens(TokenPrice {
                input,
                output,
                cached_input: raw.cached_input.unwrap_or(input),
                reasoning: raw.reasoning.unwrap_or(output),
            })),
            _ => Err(PriceError::Incomplete),
        }
    }
}

impl From<Price> for RawPrice {
    fn from(price: Price) -> RawPrice {
        match price {
            Price::PerHour(rate) => RawPrice {
                per_hour: Some(rate),
                ..RawPrice::default()
            },
            Price::PerCall(amount) => RawPrice {
                per_call: Some(amount),
                ..RawPrice::default()
            },
            Price::Tokens(p) => RawPrice {
                input: Some(p.input),
                output: Some(p.output),
                cached_input: Some(p.cached_input),
                reasoning: Some(p.reasoning),
                ..RawPrice::default()
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Price, toml::de::Error> {
        #[derive(Deserialize)]
        struct Holder {
            price: Price,
        }
        toml::from_str::<Holder>(text).map(|h| h.price)
    }

    #[test]
    fn tables_become_prices_or_say_why_not() {
        let p = parse("price = { input = 0.15, output = 0.60 }").unwrap();
        assert_eq!(
            p,
            Price::Tokens(TokenPrice {
                input: 0.15,
                output: 0.60,
                cached_input: 0.15,
                reasoning: 0.60,
            })
        );
        let thinking = parse("price = { input = 1.0, output = 4.0, reasoning = 8.0 }").unwrap();
        assert!(matches!(thinking, Price::Tokens(p) if p.reasoning == 8.0));
        let e = parse("a = 1\nprice = { input = 1.0, output = 4.0, reasoning = -8.0 }")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`reasoning` is -8") && e.contains("line 2"),
            "{e}"
        );
        assert_eq!(
            parse("price = { per_hour = 2.5 }").unwrap(),
            Price::PerHour(2.5)
        );
        assert_eq!(
            parse("price = { per_call = 0.002 }").unwrap(),
            Price::PerCall(0.002)
        );
        for mixed in [
            "price = { per_hour = 2.5, input = 1.0 }",
            "price = { per_call = 1.0, per_hour = 2.5 }",
            "price = { per_call = 1.0, input = 1.0, output = 1.0 }",
        ] {
            let e = parse(mixed).unwrap_err().to_string();
            assert!(e.contains("one of them"), "{mixed}: {e}");
        }
        assert!(
            parse("price = { input = 1.0 }")
                .unwrap_err()
                .to_string()
                .contains("both `input`")
        );
        assert!(
            parse("price = { input = -1.0, output = 1.0 }")
                .unwrap_err()
                .to_string()
                .contains("0 or more")
        );
        assert!(
            parse("price = { inptu = 1.0 }")
                .unwrap_err()
                .to_string()
                .contains("inptu")
        );
        // The span of the bad table survives the conversion: line 2.
        let e = parse("a = 1\nprice = { per_hour = -2.0 }")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2"), "{e}");
    }

    #[test]
    fn cached_prompt_tokens_cost_the_cached_price() {
        let p = TokenPrice {
            input: 2.0,
            output: 8.0,
            cached_input: 0.5,
            reasoning: 8.0,
        };
        let billed = Billed {
            input: 17,
            cached_input: 4,
            output: 5,
            reasoning: 0,
        };
        // 13 × 2 + 4 × 0.5 + 5 × 8 = 68 per million.
        assert!((p.cost(&billed) - 68e-6).abs() < 1e-15);
        assert_eq!(p.highest(), 8.0);
    }

    #[test]
    fn reasoning_tokens_cost_their_own_price_within_the_output() {
        let p = TokenPrice {
            input: 1.0,
            output: 4.0,
            cached_input: 1.0,
            reasoning: 10.0,
        };
        let billed = |output, reasoning| Billed {
            input: 0,
            cached_input: 0,
            output,
            reasoning,
        };
        // 20 answer tokens × 4 + 80 reasoning tokens × 10 = 880 per million.
        assert!((p.cost(&billed(100, 80)) - 880e-6).abs() < 1e-15);
        // A server claiming more reasoning than output bills the output alone.
        assert!((p.cost(&billed(10, 50)) - 100e-6).abs() < 1e-15);
        assert_eq!((p.highest(), p.highest_output()), (10.0, 10.0));
    }
}
