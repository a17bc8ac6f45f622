//! `harness.toml`: named models, run defaults (which models, which
//! specs, how many instances: `config.yaml`'s `models_to_test`, `tests_to_run`,
//! `runs_per_test` of older setups), the judge slot, and what models cost
//! (`price`, `currency`, and a LiteLLM price file in [`prices`]), and the
//! MCP servers installed here ([`mcp`]). CLI flags override.

pub(crate) mod batch;
mod concurrency;
mod exec;
mod in_range;
mod limits;
mod mcp;
mod model;
pub(crate) mod prices;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub(crate) use concurrency::Concurrency;
pub(crate) use model::{BaseUrl, ModelConfig};

use crate::error::Diagnostic;
use crate::provider::model_ref::{DEFAULT_CONCURRENCY, managed_model_path};
use crate::provider::{ModelRefError, ModelSetup, ProviderKind};

/// The parsed configuration file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The currency of every price (default USD): only a label, never converted.
    #[serde(default = "default_currency")]
    pub currency: String,
    /// Run defaults.
    #[serde(default)]
    pub run: RunDefaults,
    /// Report defaults.
    #[serde(default)]
    pub report: ReportDefaults,
    /// Named models.
    #[serde(default)]
    pub models: BTreeMap<String, ModelConfig>,
    /// The judge model for rubric rules.
    pub judge: Option<JudgeConfig>,
    /// `[limits]`: the size cap of each kind of file read.
    #[serde(default)]
    pub limits: limits::FileCaps,
    /// `[[mcp]]`: MCP servers installed on this machine, which specs name.
    #[serde(default)]
    pub mcp: Vec<crate::format::McpServer>,
    /// Where the file was read from.
    #[serde(skip)]
    pub path: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            currency: default_currency(),
            run: RunDefaults::default(),
            report: ReportDefaults::default(),
            models: BTreeMap::new(),
            judge: None,
            limits: limits::FileCaps::default(),
            mcp: Vec::new(),
            path: None,
        }
    }
}

/// The currency prices are in unless `currency` says otherwise.
pub(crate) fn default_currency() -> String {
    "USD".to_owned()
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
    /// Instances per spec, 1 to 1,000,000 (overrides each spec's `runs`).
    pub runs: Option<u32>,
    /// The most a run may cost, in `currency`, 0 or more (`--max-cost` overrides).
    pub max_cost: Option<f64>,
    /// The most tokens a run may use, 1 or more (`--max-tokens-total` overrides).
    pub max_tokens_total: Option<u64>,
}

/// `[report]`: how reports are written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportDefaults {
    /// The language of every report (`en`, `ru`; `--lang` overrides; default: the locale's).
    pub language: Option<crate::text::Lang>,
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
        let text = match crate::files::read_text(path, crate::files::FileKind::Config) {
            Ok(t) => t,
            Err(e) if e.is_not_found() && !required => {
                return Ok(Config::default());
            }
            Err(e) => {
                return Err(Diagnostic::io(path, format!("cannot read config: {e}")));
            }
        };
        // `inf` and `nan` first: a key of the wrong type would name its type instead.
        in_range::finite(path, &text)?;
        // Located, with a did-you-mean for an unknown key or value (`effort = "hgih"`).
        let mut config: Config = toml::from_str(&text)
            .map_err(|e| crate::format::toml_diagnostic(path, &text, "", &e))?;
        in_range::in_range(path, &text, &config)?;
        mcp::check(path, &text, &config)?;
        config.path = Some(path.to_path_buf());
        // Every key the configuration names is a secret from now on, used or not.
        for var in config
            .models
            .values()
            .filter_map(|m| m.api_key_env.as_deref())
        {
            crate::secrets::register_env(var);
        }
        Ok(config)
    }

    /// Resolves a name from `[models]` or a `provider:model` reference.
    pub fn resolve_model(&self, name: &str) -> Result<ModelSetup, ModelError> {
        if let Some(table) = name.strip_prefix("exec:") {
            return match self.models.get(table) {
                Some(m) if m.provider == ProviderKind::Exec => self.resolve_model(table),
                _ => Err(ModelError::Reference {
                    error: ModelRefError::ExecNotDefined(table.to_owned()),
                    known: self.models.keys().cloned().collect(),
                }),
            };
        }
        let Some(m) = self.models.get(name) else {
            return ModelSetup::parse(name).map_err(|error| ModelError::Reference {
                error,
                known: self.models.keys().cloned().collect(),
            });
        };
        if m.provider == ProviderKind::Replay {
            return Err(ModelError::ReplayInConfig(name.to_owned()));
        }
        let mut spec = ModelSetup::new(m.provider, m.model.as_deref().unwrap_or(name));
        spec.name = name.to_owned();
        if m.provider.is_managed() {
            self.managed_settings(name, m, &mut spec)?;
        } else if m.server.is_some() {
            return Err(ModelError::ServerOptions(name.to_owned()));
        }
        let urls = m.base_url.as_ref().map(BaseUrl::urls).unwrap_or_default();
        if m.base_url.is_some() && urls.is_empty() {
            return Err(ModelError::EmptyPool(name.to_owned()));
        }
        spec.set_endpoints(urls);
        spec.api_key_env = m.api_key_env.clone();
        (spec.concurrency, spec.adaptive) = match m.concurrency {
            Some(Concurrency::Auto) => (
                m.max_concurrency
                    .unwrap_or(concurrency::DEFAULT_MAX_CONCURRENCY),
                true,
            ),
            Some(Concurrency::Fixed(n)) => (usize::try_from(n).unwrap_or(usize::MAX), false),
            None => (DEFAULT_CONCURRENCY, false),
        };
        spec.concurrency = spec.concurrency.max(1);
        spec.requests_per_minute = m.requests_per_minute;
        spec.timeout_secs = m.timeout_secs.unwrap_or(spec.timeout_secs);
        spec.max_retries = m.max_retries.unwrap_or(spec.max_retries);
        spec.options = m.options.clone();
        spec.stream = m.stream;
        spec.batch = m.batch.and_then(crate::provider::BatchConfig::setup);
        spec.max_n = m.max_n.unwrap_or(1).max(1);
        spec.max_prompts = m.max_prompts.unwrap_or(1).max(1);
        spec.price = m.price;
        spec.max_response_bytes = m.max_response_bytes.unwrap_or(spec.max_response_bytes);
        spec.reasoning = m.reasoning;
        exec::settings(name, m, self.dir(), &mut spec)?;
        Ok(spec)
    }

    /// The directory of this file (empty: the current directory).
    fn dir(&self) -> &Path {
        self.path
            .as_deref()
            .and_then(Path::parent)
            .unwrap_or(Path::new(""))
    }

    /// A managed model's file (relative to this config) and server options.
    fn managed_settings(
        &self,
        name: &str,
        m: &ModelConfig,
        spec: &mut ModelSetup,
    ) -> Result<(), ModelError> {
        if m.base_url.is_some() {
            return Err(ModelError::ManagedBaseUrl {
                name: name.to_owned(),
                provider: m.provider.prefix(),
            });
        }
        let base = self.dir();
        let model = Path::new(m.model.as_deref().unwrap_or(name));
        // A hub id (`Qwen/Qwen2.5-0.5B`) looks like a relative path: only files are joined.
        let model = if model.is_relative()
            && (m.provider == ProviderKind::LlamaCpp || base.join(model).exists())
        {
            base.join(model)
        } else {
            model.to_path_buf()
        };
        spec.model = managed_model_path(&model, m.provider).0;
        let mut server = m.server.clone().unwrap_or_default();
        server.resolve_paths(base);
        spec.server = Some(server);
        Ok(())
    }
}

/// Why a model name does not resolve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// Neither a name in `[models]` nor a valid reference.
    #[error("{error}{}", known_models(known))]
    Reference {
        /// Why it is no reference.
        error: ModelRefError,
        /// The names `[models]` defines.
        known: Vec<String>,
    },
    /// A `[models]` entry with provider `replay`.
    #[error("model `{0}`: replay models are given as replay:<name> on the command line")]
    ReplayInConfig(String),
    /// `[server]` options on a model whose server the harness does not run.
    #[error(
        "model `{0}`: [server] options are for the servers the harness runs (provider llamacpp or vllm)"
    )]
    ServerOptions(String),
    /// A `base_url` on a managed model.
    #[error(
        "model `{name}`: a {provider} model has no base_url: the harness starts its server on a free port"
    )]
    ManagedBaseUrl {
        /// The model's name.
        name: String,
        /// `llamacpp` or `vllm`.
        provider: &'static str,
    },
    /// An `exec` model's settings that do not fit.
    #[error("model `{name}`: {problem}")]
    Exec {
        /// The model's name.
        name: String,
        /// What is wrong.
        problem: String,
    },
    /// `base_url = []`.
    #[error("model `{0}`: base_url is an empty list: give one URL, or the replicas of a pool")]
    EmptyPool(String),
}

fn known_models(known: &[String]) -> String {
    if known.is_empty() {
        String::new()
    } else {
        format!(" (models in harness.toml: {})", known.join(", "))
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
        assert!(
            config
                .resolve_model("nope")
                .unwrap_err()
                .to_string()
                .contains("fast")
        );
    }

    #[test]
    fn prices_and_the_currency_reach_the_model_and_bad_prices_are_located() {
        let config: Config = toml::from_str(
            "currency = \"EUR\"\n[run]\nmax_cost = 2.5\n[models.m]\nprovider = \"openai\"\nprice = { per_hour = 1.5 }\n",
        )
        .unwrap();
        assert_eq!(
            (config.currency.as_str(), config.run.max_cost),
            ("EUR", Some(2.5))
        );
        let m = config.resolve_model("m").unwrap();
        assert_eq!(m.price, Some(crate::provider::Price::PerHour(1.5)));
        assert_eq!(Config::default().currency, "USD");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("harness.toml");
        let text = "[models.m]\nprovider = \"openai\"\nprice = { input = 1.0 }\n";
        std::fs::write(&path, text).unwrap();
        let e = Config::load(&path, true).unwrap_err();
        assert_eq!(e.location.line, 3, "{e}");
        assert!(e.message.contains("both `input` and `output`"), "{e}");
    }

    #[test]
    fn a_list_of_base_urls_is_a_pool() {
        let config: Config = toml::from_str(
            r#"
            [models.pool]
            provider = "openai"
            model = "smol"
            base_url = ["http://a:8000/v1/", "http://b:8000/v1"]
            [models.one]
            provider = "openai"
            base_url = ["http://a:8000/v1"]
            [models.none]
            provider = "openai"
            base_url = []
            "#,
        )
        .unwrap();
        let m = config.resolve_model("pool").unwrap();
        assert_eq!(m.pool, ["http://a:8000/v1", "http://b:8000/v1"]);
        assert_eq!(m.endpoints(), m.pool);
        let m = config.resolve_model("one").unwrap();
        assert!(m.pool.is_empty());
        assert_eq!(m.base_url.as_deref(), Some("http://a:8000/v1"));
        let e = config.resolve_model("none").unwrap_err().to_string();
        assert!(e.contains("empty list"), "{e}");
    }

    #[test]
    fn managed_models_resolve_paths_against_the_config_file() {
        let mut config: Config = toml::from_str(
            r#"
            [models.smol]
            provider = "llamacpp"
            model = "models/smol.gguf"
            concurrency = 2
            [models.smol.server]
            ctx_size = 2048
            threads = 1
            chat_template = "templates/chat.jinja"
            binary = "bin/llama-server"
            extra_args = ["--seed", "1"]
            [models.hub]
            provider = "vllm"
            model = "Qwen/Qwen2.5-0.5B-Instruct"
            [models.bad]
            provider = "llamacpp"
            base_url = "http://127.0.0.1:1/v1"
            [models.odd]
            provider = "openai"
            server = { threads = 1 }
            "#,
        )
        .unwrap();
        config.path = Some(PathBuf::from("/etc/h/harness.toml"));
        let m = config.resolve_model("smol").unwrap();
        assert_eq!(m.model, "/etc/h/models/smol.gguf");
        let server = m.server.unwrap();
        assert_eq!(
            server.chat_template.as_deref(),
            Some(Path::new("/etc/h/templates/chat.jinja"))
        );
        assert_eq!(
            server.binary.as_deref(),
            Some(Path::new("/etc/h/bin/llama-server"))
        );
        assert_eq!((server.ctx_size, server.threads), (Some(2048), Some(1)));
        let m = config.resolve_model("hub").unwrap();
        assert_eq!(m.model, "Qwen/Qwen2.5-0.5B-Instruct");
        assert!(
            config
                .resolve_model("bad")
                .unwrap_err()
                .to_string()
                .contains("free port")
        );
        assert!(
            config
                .resolve_model("odd")
                .unwrap_err()
                .to_string()
                .contains("llamacpp or vllm")
        );
    }
}
