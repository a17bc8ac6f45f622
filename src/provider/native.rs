//! What the three native wires (`anthropic`, `gemini`, `openai-responses`)
//! do alike: the key from the environment, one POST read under the size cap,
//! the body parsed, the system prompt taken out of the history, and the
//! providers' stop reasons in the words the rest of the harness reads
//! (OpenAI's `stop`, `length`, `tool_calls`).
//!
//! Each wire module keeps its own request body and response parsing; the
//! client here picks them by [`Api`]. None streams. Default base URLs:
//! `https://api.anthropic.com/v1`, `https://generativelanguage.googleapis.com/v1beta`,
//! and for Responses the `openai:` one.

use std::time::Duration;

use serde_json::Value;

use super::body::{self, Cap};
use super::model_ref::join_url;
use super::native_wire::cannot_carry;
use super::tool_wire::WireNames;
use super::{ChatRequest, Completion, ModelSetup, ProviderError, ProviderKind, classify};
use super::{anthropic, gemini, responses};

/// Which native API a client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Api {
    /// Anthropic's Messages API.
    Anthropic,
    /// Google's Gemini API.
    Gemini,
    /// OpenAI's Responses API.
    Responses,
}

/// A client for one model on one of the native APIs: its connection and
/// the headers every request carries (the key, Anthropic's API version).
pub(crate) struct NativeClient {
    api: Api,
    pub(super) connection: Connection,
    pub(super) headers: Vec<(&'static str, String)>,
}

/// The default base URL of a native provider's API.
pub(crate) fn default_base_url(kind: ProviderKind) -> String {
    match kind {
        ProviderKind::Anthropic => "https://api.anthropic.com/v1".to_owned(),
        ProviderKind::Gemini => "https://generativelanguage.googleapis.com/v1beta".to_owned(),
        _ => super::openai_default_base_url(),
    }
}

impl NativeClient {
    /// The client `setup.provider` names, its key read from the environment;
    /// a provider that is no native API is a config error.
    pub(crate) fn new(
        setup: &ModelSetup,
        http: reqwest::Client,
    ) -> Result<NativeClient, ProviderError> {
        let (api, path, keys, header) = match setup.provider {
            ProviderKind::Anthropic => (
                Api::Anthropic,
                "/messages".to_owned(),
                &["ANTHROPIC_API_KEY"][..],
                "x-api-key",
            ),
            ProviderKind::Gemini => (
                Api::Gemini,
                // `models/gemini-x` and `gemini-x` name the same model.
                format!(
                    "/models/{}:generateContent",
                    setup.model.trim_start_matches("models/")
                ),
                &["GEMINI_API_KEY", "GOOGLE_API_KEY"][..],
                "x-goog-api-key",
            ),
            ProviderKind::OpenAiResponses => (
                Api::Responses,
                "/responses".to_owned(),
                &["OPENAI_API_KEY"][..],
                "authorization",
            ),
            other => {
                return Err(ProviderError::Config(format!(
                    "`{}` is not a native API",
                    other.prefix()
                )));
            }
        };
        let mut headers = Vec::new();
        if api == Api::Anthropic {
            headers.push(("anthropic-version", anthropic::API_VERSION.to_owned()));
        }
        if let Some(key) = api_key(setup, keys)? {
            let bearer = api == Api::Responses;
            headers.push((header, if bearer { format!("Bearer {key}") } else { key }));
        }
        let base = (setup.base_url.clone()).unwrap_or_else(|| default_base_url(setup.provider));
        Ok(NativeClient {
            api,
            connection: Connection::new(setup, http, join_url(&base, &path)),
            headers,
        })
    }

    /// Sends one request.
    pub(crate) async fn complete(
        &self,
        request: &ChatRequest,
    ) -> Result<Completion, ProviderError> {
        Ok(self.complete_n(request, 1).await?.remove(0))
    }

    /// Whether one request can ask for several answers (Gemini's `candidateCount`).
    pub(crate) fn supports_n(&self) -> bool {
        self.api == Api::Gemini
    }

    /// Sends one request for `n` answers; more than one from an API without
    /// `n` is a config error.
    pub(crate) async fn complete_n(
        &self,
        request: &ChatRequest,
        n: u32,
    ) -> Result<Vec<Completion>, ProviderError> {
        if request.logprobs.is_some() {
            return Err(ProviderError::NoLogprobs(format!(
                "the {} wire asks for no log-probabilities here: `logprobs` and the \
                 `first_token` choices need an OpenAI-compatible or Ollama server",
                self.wire_name()
            )));
        }
        if n > 1 && !self.supports_n() {
            return Err(cannot_carry(
                self.wire_name(),
                "several answers per request (`n`)",
            ));
        }
        let body = self.body(request, n)?;
        let headers: Vec<(&str, &str)> = (self.headers.iter())
            .map(|(name, value)| (*name, value.as_str()))
            .collect();
        let (bytes, spent) = self.connection.post(&headers, &body).await?;
        let names = WireNames::new(&request.tools);
        let mut answers = match self.api {
            Api::Anthropic => vec![anthropic::completion(&bytes, &names)?],
            Api::Gemini => gemini::completions(&bytes, &names)?,
            Api::Responses => vec![responses::completion(&bytes, &names)?],
        };
        for answer in &mut answers {
            answer.allowance_spent = spent;
        }
        Ok(answers)
    }

    /// The API's name, for errors.
    pub(crate) fn wire_name(&self) -> &'static str {
        match self.api {
            Api::Anthropic => "Anthropic",
            Api::Gemini => "Gemini",
            Api::Responses => "OpenAI Responses",
        }
    }

    /// Whether this client speaks Anthropic's Messages API.
    pub(crate) fn is_anthropic(&self) -> bool {
        self.api == Api::Anthropic
    }

    /// The request body for `n` answers, in this API's form.
    pub(super) fn body(&self, request: &ChatRequest, n: u32) -> Result<Value, ProviderError> {
        let model = &self.connection.model;
        let mut body = match self.api {
            Api::Anthropic => anthropic::request_body(model, request)?,
            Api::Gemini => gemini::request_body(request, n)?,
            Api::Responses => responses::request_body(model, request)?,
        };
        let wire = match self.api {
            Api::Anthropic => super::ProviderKind::Anthropic,
            Api::Gemini => super::ProviderKind::Gemini,
            Api::Responses => super::ProviderKind::OpenAiResponses,
        };
        super::reasoning_setting::add_to_body(wire, &request.reasoning, &mut body)?;
        Ok(body)
    }
}

/// One model's connection: where to POST, within which limits.
pub(super) struct Connection {
    pub(super) http: reqwest::Client,
    /// The full URL requests go to.
    pub(super) endpoint: String,
    /// The model id sent (in the body or the URL).
    model: String,
    pub(super) timeout: Duration,
    pub(super) max_response_bytes: u64,
}

impl Connection {
    /// The connection of `setup` to `endpoint`.
    fn new(setup: &ModelSetup, http: reqwest::Client, endpoint: String) -> Connection {
        Connection {
            http,
            endpoint,
            model: setup.model.clone(),
            timeout: super::model_ref::timeout(setup.timeout_secs),
            max_response_bytes: setup.max_response_bytes,
        }
    }

    /// POSTs `body` with `headers` (the key among them) and returns the
    /// response body, and whether its rate-limit headers say the allowance is
    /// spent. An error status is [`ProviderError::Status`] with its
    /// `Retry-After`, whatever the provider's error body says.
    async fn post(
        &self,
        headers: &[(&str, &str)],
        body: &Value,
    ) -> Result<(Vec<u8>, bool), ProviderError> {
        let request = headers.iter().fold(
            self.http
                .post(&self.endpoint)
                .timeout(self.timeout)
                .json(body),
            |request, (name, value)| request.header(*name, *value),
        );
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) => return Err(classify(&e, self.timeout)),
        };
        let cap = Cap::new(self.max_response_bytes, self.timeout);
        if !response.status().is_success() {
            return Err(body::error_status(response, cap).await);
        }
        let spent = super::allowance_spent(response.headers());
        Ok((body::read(response, cap).await?, spent))
    }
}

/// The API key: from the model's `api_key_env` when set (an error when that
/// variable is unset), else from the first of `defaults` that is set. Read
/// through `secrets` (the CLI took keys out of the environment) and registered
/// there, so no answer, error or file ever shows it.
fn api_key(setup: &ModelSetup, defaults: &[&str]) -> Result<Option<String>, ProviderError> {
    let found = match &setup.api_key_env {
        Some(name) => Some(
            crate::secrets::var(name)
                .filter(|k| !k.is_empty())
                .ok_or_else(|| {
                    ProviderError::Config(format!(
                        "model `{}`: environment variable {name} (api_key_env) is not set",
                        setup.name
                    ))
                })?,
        ),
        None => defaults
            .iter()
            .find_map(|name| crate::secrets::var(name).filter(|k| !k.is_empty())),
    };
    if let Some(key) = &found {
        crate::secrets::register(key);
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::{Message, Role};
    use crate::provider::native_wire::{finish_reason, split_system};

    #[test]
    fn references_and_configs_name_the_native_apis() {
        for (reference, kind) in [
            (
                "anthropic:claude-x@http://127.0.0.1:9/v1",
                ProviderKind::Anthropic,
            ),
            (
                "gemini:gemini-x@http://127.0.0.1:9/v1beta",
                ProviderKind::Gemini,
            ),
            (
                "openai-responses:gpt-x@http://127.0.0.1:9/v1",
                ProviderKind::OpenAiResponses,
            ),
        ] {
            let m = ModelSetup::parse(reference).unwrap();
            assert_eq!(m.provider, kind);
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                kind.prefix(),
                "configs name it so"
            );
            assert!(
                m.base_url
                    .is_some_and(|u| u.starts_with("http://127.0.0.1:9/v1"))
            );
        }
    }

    #[test]
    fn stop_reasons_take_openai_words() {
        for (raw, want) in [
            ("end_turn", "stop"),
            ("stop_sequence", "stop"),
            ("STOP", "stop"),
            ("completed", "stop"),
            ("max_tokens", "length"),
            ("MAX_TOKENS", "length"),
            ("max_output_tokens", "length"),
            ("tool_use", "tool_calls"),
            ("SAFETY", "SAFETY"),
            ("refusal", "refusal"),
        ] {
            assert_eq!(finish_reason(raw), want, "{raw}");
        }
    }

    #[test]
    fn system_messages_are_taken_apart_in_order() {
        let messages = vec![
            Message::text(Role::System, "a"),
            Message::text(Role::User, "q"),
            Message::text(Role::System, "b"),
        ];
        let (system, rest) = split_system(&messages);
        assert_eq!(system.as_deref(), Some("a\n\nb"));
        assert_eq!(rest.len(), 1);
        assert_eq!(split_system(&messages[1..2]).0, None);
    }

    #[test]
    fn a_named_key_variable_that_is_unset_is_a_config_error() {
        let mut setup = ModelSetup::new(super::super::ProviderKind::Anthropic, "m");
        setup.api_key_env = Some("HARNESS_NATIVE_TEST_UNSET_KEY".into());
        let err = api_key(&setup, &["ANTHROPIC_API_KEY"]).unwrap_err();
        assert!(
            err.to_string().contains("HARNESS_NATIVE_TEST_UNSET_KEY"),
            "{err}"
        );
        setup.api_key_env = None;
        assert_eq!(
            api_key(&setup, &["HARNESS_NATIVE_TEST_UNSET_KEY"]).unwrap(),
            None
        );
    }
}
