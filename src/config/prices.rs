//! `--prices FILE`: token prices from LiteLLM's
//! `model_prices_and_context_window.json`, the table many users already
//! keep: per model, `input_cost_per_token`, `output_cost_per_token`,
//! `cache_read_input_token_cost` and `output_cost_per_reasoning_token` (in
//! currency per token). Read from disk
//! only; the harness never fetches it.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Deserializer};

use crate::error::{Diagnostic, ErrorKind, Location};
use crate::provider::{ModelSetup, PER_MILLION, Price, TokenPrice};

/// One entry; every other key of LiteLLM's format is ignored.
#[derive(Deserialize)]
struct Entry {
    #[serde(default, deserialize_with = "per_token")]
    input_cost_per_token: Option<f64>,
    #[serde(default, deserialize_with = "per_token")]
    output_cost_per_token: Option<f64>,
    #[serde(default, deserialize_with = "per_token")]
    cache_read_input_token_cost: Option<f64>,
    #[serde(default, deserialize_with = "per_token")]
    output_cost_per_reasoning_token: Option<f64>,
}

/// A price per token: a finite number of 0 or more, or null.
fn per_token<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let value = Option::<f64>::deserialize(d)?;
    match value {
        Some(v) if !v.is_finite() || v < 0.0 => Err(serde::de::Error::custom(format!(
            "a price per token is a number of 0 or more, not {v}"
        ))),
        other => Ok(other),
    }
}

/// The token prices of a LiteLLM price file, by its model keys.
#[derive(Debug, Clone, Default)]
pub(crate) struct PriceTable {
    prices: BTreeMap<String, TokenPrice>,
}

impl PriceTable {
    /// Reads `path`; a syntax error or a bad price names its line and column.
    pub(crate) fn read(path: &Path) -> Result<PriceTable, Diagnostic> {
        let text = crate::files::read_text(path, crate::files::FileKind::Prices)
            .map_err(|e| Diagnostic::io(path, format!("cannot read the price file: {e}")))?;
        PriceTable::parse(path, &text)
    }

    /// Parses the text of a price file read from `path`.
    pub(crate) fn parse(path: &Path, text: &str) -> Result<PriceTable, Diagnostic> {
        let entries: BTreeMap<String, Entry> = serde_json::from_str(text).map_err(|e| {
            let location = Location {
                file: path.to_path_buf(),
                line: e.line().max(1),
                column: e.column().max(1),
            };
            Diagnostic::new(ErrorKind::Invalid, location, format!("price file: {e}"))
                .with_source(text)
                .with_help("the format is LiteLLM's model_prices_and_context_window.json")
        })?;
        // Entries without both sides (embeddings, images, the sample entry) price no chat.
        let prices = entries
            .into_iter()
            .filter_map(|(key, e)| {
                let (input, output) = (e.input_cost_per_token?, e.output_cost_per_token?);
                let price = TokenPrice {
                    input: input * PER_MILLION,
                    output: output * PER_MILLION,
                    cached_input: e.cache_read_input_token_cost.unwrap_or(input) * PER_MILLION,
                    reasoning: e.output_cost_per_reasoning_token.unwrap_or(output) * PER_MILLION,
                };
                Some((key, price))
            })
            .collect();
        Ok(PriceTable { prices })
    }

    /// Models priced by the file.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.prices.len()
    }

    /// The price of `model`, found under its name, its model id, or
    /// `<provider>/<model id>` (LiteLLM's keys for most non-OpenAI models).
    pub(crate) fn lookup(&self, model: &ModelSetup) -> Option<Price> {
        let prefixed = format!("{}/{}", model.provider.prefix(), model.model);
        [model.name.as_str(), model.model.as_str(), prefixed.as_str()]
            .iter()
            .find_map(|key| self.prices.get(*key))
            .map(|p| Price::Tokens(*p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ProviderKind;

    const FILE: &str = r#"{
    "sample_spec": {
        "max_tokens": "LEGACY parameter",
        "input_cost_per_token": 0.0,
        "output_cost_per_token": 0.0,
        "litellm_provider": "one of https://docs.litellm.ai/docs/providers"
    },
    "gpt-4o-mini": {
        "max_input_tokens": 128000,
        "input_cost_per_token": 1.5e-07,
        "output_cost_per_token": 6e-07,
        "cache_read_input_token_cost": 7.5e-08,
        "mode": "chat"
    },
    "ollama/qwen3:8b": {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0},
    "text-embedding-3-small": {"input_cost_per_token": 2e-08, "mode": "embedding"}
}"#;

    #[test]
    fn litellm_entries_become_prices_per_million() {
        let table = PriceTable::parse(Path::new("p.json"), FILE).unwrap();
        assert_eq!(table.len(), 3);
        let Some(Price::Tokens(p)) =
            table.lookup(&ModelSetup::new(ProviderKind::OpenAi, "gpt-4o-mini"))
        else {
            panic!("gpt-4o-mini is priced");
        };
        assert!((p.input - 0.15).abs() < 1e-9 && (p.output - 0.6).abs() < 1e-9);
        assert!((p.cached_input - 0.075).abs() < 1e-9);
        let local = ModelSetup::new(ProviderKind::Ollama, "qwen3:8b");
        assert!(matches!(table.lookup(&local), Some(Price::Tokens(p)) if p.output == 0.0));
        let embedding = ModelSetup::new(ProviderKind::OpenAi, "text-embedding-3-small");
        assert_eq!(table.lookup(&embedding), None);
    }

    #[test]
    fn bad_files_name_the_line_and_column() {
        let bad = "{\n  \"m\": {\"input_cost_per_token\": -1.0, \"output_cost_per_token\": 1.0}\n}";
        let e = PriceTable::parse(Path::new("p.json"), bad).unwrap_err();
        assert_eq!(e.location.line, 2, "{e}");
        assert!(e.message.contains("0 or more"), "{e}");
        let e = PriceTable::parse(Path::new("p.json"), "{\n\"m\": {,}}").unwrap_err();
        assert_eq!((e.location.line, e.location.column), (2, 7), "{e}");
    }
}
