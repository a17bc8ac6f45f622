//! `harness.toml`: named models, run defaults (the TZ's `models_to_test`,
//! `tests_to_run`, `runs_per_test`) and the judge slot. CLI flags override.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{Diagnostic, ErrorKind, Location};
use crate::provider::model_ref::{DEFAULT_CONCURRENCY, ModelOptions};
use crate::provider::{ModelSpec, ProviderKind};

/// The parsed configuration file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Run defaults.
    #[serde(default)]
    pub run: RunDefaults,
    /// Named models.
    #[serde(default)]
    pub models: BTreeMap<String, ModelConfig>,
    /// The judge model for rubric rules.
    pub judge: Option<JudgeConfig>,
    /// Where the file was read from.
    #[serde(skip)]
    pub path: Option<PathBuf>,
}

/// `[run]`: what `harness run` does with no arguments.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunDefaults {
    /// Models to test: names from `[models]` or references.
    #[serde(default)]
    pub models: Vec<String>,
    /// Specs to run: ids or paths (default: everything under `specs/`).
    #[serde(default)]
    pub specs: Vec<String>,
    /// Instances per spec (overrides each spec's `runs`).
    pub runs: Option<u32>,
}

/// `[models.<name>]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// `ollama` or `openai`.
    pub provider: ProviderKind,
    /// The model id sent to the server (default: the table name).
    pub model: Option<String>,
    /// Server base URL.
    pub base_url: Option<String>,
    /// Environment variable holding the API key; the key itself never goes in a file.
    pub api_key_env: Option<String>,
    /// Requests in flight (default 4).
    pub concurrency: Option<usize>,
    /// Requests-per-minute ceiling.
    pub requests_per_minute: Option<u32>,
    /// Per-request timeout in seconds (default 300).
    pub timeout_secs: Option<f64>,
    /// Retries for retryable errors (default 4).
    pub max_retries: Option<u32>,
    /// Request defaults for this model.
    #[serde(default)]
    pub options: ModelOptions,
    /// Stream responses (Ollama; default false).
    #[serde(default)]
    pub stream: bool,
    /// Samples per request via OpenAI's `n` (default 1; llama-server allows up to its slot count).
    pub max_n: Option<u32>,
}

/// `[judge]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeConfig {
    /// A name from `[models]` or a reference.
    pub model: String,
}

impl Config {
    /// Reads `path`; a missing default file is an empty config.
    pub fn load(path: &Path, required: bool) -> Result<Config, Diagnostic> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => {
                return Ok(Config::default());
            }
            Err(e) => {
                return Err(Diagnostic::new(
                    ErrorKind::Io,
                    Location::file_start(path),
                    format!("cannot read config: {e}"),
                ));
            }
        };
        let mut config: Config = toml::from_str(&text).map_err(|e| {
            let loc = e.span().map_or_else(
                || Location::file_start(path),
                |s| Location::from_offset(path, &text, s.start),
            );
            Diagnostic::new(ErrorKind::Toml, loc, e.message().trim_end().to_owned())
                .with_source(&text)
        })?;
        config.path = Some(path.to_path_buf());
        Ok(config)
    }

    /// Resolves a name from `[models]` or a `provider:model` reference.
    pub fn resolve_model(&self, name: &str) -> Result<ModelSpec, String> {
        let Some(m) = self.models.get(name) else {
            return ModelSpec::parse(name).map_err(|e| {
                if self.models.is_empty() {
                    e
                } else {
                    format!(
                        "{e} (models in harness.toml: {})",
                        self.models.keys().cloned().collect::<Vec<_>>().join(", ")
                    )
                }
            });
        };
        if m.provider == ProviderKind::Replay {
            return Err(format!(
                "model `{name}`: replay models are given as replay:<name> on the command line"
            ));
        }
        let mut spec = ModelSpec::new(m.provider, m.model.as_deref().unwrap_or(name));
        spec.name = name.to_owned();
        spec.base_url = m
            .base_url
            .clone()
            .map(|u| u.trim_end_matches('/').to_owned());
        spec.api_key_env = m.api_key_env.clone();
        spec.concurrency = m.concurrency.unwrap_or(DEFAULT_CONCURRENCY).max(1);
        spec.requests_per_minute = m.requests_per_minute;
        spec.timeout_secs = m.timeout_secs.unwrap_or(spec.timeout_secs);
        spec.max_retries = m.max_retries.unwrap_or(spec.max_retries);
        spec.options = m.options.clone();
        spec.stream = m.stream;
        spec.max_n = m.max_n.unwrap_or(1).max(1);
        Ok(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_models_resolve_with_their_settings() {
        let config: Config = toml::from_str(
            r#"
            [run]
            models = ["fast"]
            runs = 3
            [models.fast]
            provider = "openai"
            model = "gpt-4o-mini"
            api_key_env = "MY_KEY"
            concurrency = 8
            options = { temperature = 0.2 }
            "#,
        )
        .unwrap();
        let m = config.resolve_model("fast").unwrap();
        assert_eq!(
            (m.name.as_str(), m.model.as_str(), m.concurrency),
            ("fast", "gpt-4o-mini", 8)
        );
        assert_eq!(m.options.temperature, Some(0.2));
        assert!(config.resolve_model("ollama:x").is_ok());
        assert!(config.resolve_model("nope").unwrap_err().contains("fast"));
    }
}
