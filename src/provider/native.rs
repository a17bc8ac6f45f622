//! What the three native wires (`anthropic`, `gemini`, `openai-responses`)
//! do alike: the key from the environment, one POST read under the size cap,
//! the body parsed, the system prompt taken out of the history, and the
//! providers' stop reasons in the words the rest of the harness reads
//! (OpenAI's `stop`, `length`, `tool_calls`).
//!
//! Each wire keeps its own request body and response parsing; none streams.

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::prompt::{Message, Role};

use super::body::{self, Cap};
use super::{ModelSetup, ProviderError, classify};

/// One model's connection: where to POST, with which headers, within which limits.
pub(super) struct Connection {
    http: reqwest::Client,
    /// The full URL requests go to.
    pub(super) endpoint: String,
    /// The model id sent (in the body or the URL).
    pub(super) model: String,
    timeout: Duration,
    max_response_bytes: u64,
}

impl Connection {
    /// The connection of `setup` to `endpoint`.
    pub(super) fn new(setup: &ModelSetup, http: reqwest::Client, endpoint: String) -> Connection {
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
    pub(super) async fn post(
        &self,
        headers: &[(&str, &str)],
        body: &Value,
    ) -> Result<(Vec<u8>, bool), ProviderError> {
        let mut builder = self
            .http
            .post(&self.endpoint)
            .timeout(self.timeout)
            .json(body);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let response = builder
            .send()
            .await
            .map_err(|e| classify(&e, self.timeout))?;
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
pub(super) fn api_key(
    setup: &ModelSetup,
    defaults: &[&str],
) -> Result<Option<String>, ProviderError> {
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

/// `bytes` as a `T`; what does not parse is a malformed response, quoted briefly.
pub(super) fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ProviderError> {
    serde_json::from_slice(bytes).map_err(|e| {
        ProviderError::Malformed(format!(
            "{e}: {}",
            crate::text::clip(&String::from_utf8_lossy(bytes), 200)
        ))
    })
}

/// The system messages' text, joined by blank lines (None without any), and
/// the other messages: Anthropic and Gemini take the system prompt apart.
pub(super) fn split_system(messages: &[Message]) -> (Option<String>, Vec<&Message>) {
    let system: Vec<&str> = messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.content.as_str())
        .collect();
    let rest = messages.iter().filter(|m| m.role != Role::System).collect();
    ((!system.is_empty()).then(|| system.join("\n\n")), rest)
}

/// A provider's stop reason in OpenAI's words where one means the same:
/// `stop`, `length`, `tool_calls`; any other is kept as the provider wrote it.
pub(super) fn finish_reason(raw: &str) -> String {
    match raw {
        // Anthropic `end_turn`/`stop_sequence`, Gemini `STOP`, Responses `completed`.
        "end_turn" | "stop_sequence" | "STOP" | "completed" => "stop",
        // Anthropic `max_tokens`, Gemini `MAX_TOKENS`, Responses `max_output_tokens`.
        "max_tokens" | "MAX_TOKENS" | "max_output_tokens" => "length",
        "tool_use" => "tool_calls",
        other => other,
    }
    .to_owned()
}

/// The error of a request this wire cannot carry: a configuration error, so
/// the answer is never scored as if the model had been held to it.
pub(super) fn cannot_carry(wire: &str, what: &str) -> ProviderError {
    ProviderError::Config(format!("the {wire} API cannot carry {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
