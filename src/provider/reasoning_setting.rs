//! A request's reasoning setting on each wire, and which keys a wire
//! cannot carry.
//!
//! | key | `openai` | `llamacpp` | `vllm` | `ollama` |
//! |---|---|---|---|---|
//! | `effort` | `reasoning_effort` | `chat_template_kwargs.reasoning_effort` | `reasoning_effort` | `think: "low"…` |
//! | `budget_tokens` | — | `reasoning_budget_tokens` | — | — |
//! | `enabled` | — | `chat_template_kwargs.enable_thinking` | `chat_template_kwargs.enable_thinking` | `think: true/false` |
//!
//! | key | `openai-responses` | `anthropic` | `gemini` |
//! |---|---|---|---|
//! | `effort` | `reasoning.effort` (with `summary: "auto"`) | — | — |
//! | `budget_tokens` | — | `thinking.budget_tokens` | `thinkingConfig.thinkingBudget` |
//! | `enabled` | — | `thinking.type` (`enabled` needs a budget) | `thinkingBudget: 0` / `includeThoughts` |
//!
//! A key a wire has no field for is refused (see [`unsupported`]) before
//! any request is sent, never dropped: a sweep over a setting the server
//! never saw would measure nothing. `replay` answers from transcripts and
//! takes any setting.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{ModelSetup, ProviderKind};
use crate::prompt::ReasoningSetting;

/// One cell of a sweep: a model run with one value of one reasoning key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepCell {
    /// The swept model's own name (the cell's is `base [key=value]`).
    pub base: String,
    /// The key swept: `effort`, `budget_tokens` or `enabled`.
    pub key: String,
    /// The value of this cell, as written on the command line.
    pub value: String,
    /// The setting this cell sends: that key alone.
    pub setting: ReasoningSetting,
}

impl ModelSetup {
    /// The reasoning a request of this model sends for a spec whose
    /// `[request] reasoning` is `spec`: a sweep cell's key over the spec's,
    /// the spec's over the model's own (per key).
    pub(crate) fn reasoning_for(&self, spec: ReasoningSetting) -> ReasoningSetting {
        let setting = spec.over(self.reasoning);
        match &self.sweep {
            Some(cell) => cell.setting.over(setting),
            None => setting,
        }
    }
}

/// Why `wire` cannot carry a key of `setting`: the key, and what to do.
pub(crate) fn unsupported(
    wire: ProviderKind,
    setting: &ReasoningSetting,
) -> Option<(&'static str, String)> {
    if let Some(contradiction) = setting.contradiction() {
        return Some(contradiction);
    }
    let refused: &[&'static str] = match wire {
        ProviderKind::Replay | ProviderKind::LlamaCpp => &[],
        ProviderKind::OpenAi => &["budget_tokens", "enabled"],
        ProviderKind::Vllm | ProviderKind::Ollama => &["budget_tokens"],
        ProviderKind::Exec => &["effort", "budget_tokens", "enabled"],
        ProviderKind::OpenAiResponses => &["budget_tokens", "enabled"],
        ProviderKind::Anthropic | ProviderKind::Gemini => &["effort"],
    };
    if wire == ProviderKind::Anthropic
        && setting.enabled == Some(true)
        && setting.budget_tokens.is_none()
    {
        return Some((
            "enabled",
            "reasoning `enabled = true` on an `anthropic` model needs `budget_tokens`: \
             Anthropic's thinking takes a budget of 1024 tokens or more"
                .to_owned(),
        ));
    }
    let key = setting.keys().into_iter().find(|k| refused.contains(k))?;
    let why = match (wire, key) {
        (ProviderKind::OpenAi | ProviderKind::OpenAiResponses, "enabled") => {
            "the OpenAI wire has no switch for thinking (its reasoning models always think): \
             set `effort`, or use the `llamacpp`/`vllm` providers, whose chat templates take `enable_thinking`"
        }
        (ProviderKind::Anthropic | ProviderKind::Gemini, _) => {
            "this API takes a thinking budget, not an effort: set `budget_tokens`"
        }
        (ProviderKind::OpenAi | ProviderKind::OpenAiResponses | ProviderKind::Vllm, _) => {
            "this wire has no thinking budget: use `effort`, or a `llamacpp` model \
             (llama-server's `reasoning_budget_tokens`)"
        }
        (ProviderKind::Ollama, _) => {
            "Ollama has no thinking budget (`think` takes true, false or an effort): use `effort` or `enabled`"
        }
        _ => "an `exec` program gets no reasoning setting: set it in its command instead",
    };
    Some((
        key,
        format!(
            "reasoning `{key}` cannot be sent to a `{}` model: {why}",
            wire.prefix()
        ),
    ))
}

/// Adds `setting` to an OpenAI-compatible `body` for `wire`. With an
/// `effort` on OpenAI itself, `max_tokens` becomes `max_completion_tokens`:
/// OpenAI's reasoning models refuse `max_tokens`, and the limit there counts
/// the reasoning too. Other servers (vLLM, llama.cpp) keep `max_tokens`,
/// which every build of theirs reads.
fn openai_fields(wire: ProviderKind, setting: &ReasoningSetting, map: &mut Map<String, Value>) {
    let effort = setting.effort.map(|e| json!(e.name()));
    let mut kwargs = Map::new();
    if let Some(enabled) = setting.enabled {
        kwargs.insert("enable_thinking".into(), json!(enabled));
    }
    match wire {
        ProviderKind::LlamaCpp => {
            if let Some(effort) = effort {
                kwargs.insert("reasoning_effort".into(), effort);
            }
            if let Some(budget) = setting.budget_tokens {
                map.insert("reasoning_budget_tokens".into(), json!(budget));
            }
        }
        _ => {
            if let Some(effort) = effort {
                map.insert("reasoning_effort".into(), effort);
                if wire == ProviderKind::OpenAi
                    && let Some(limit) = map.remove("max_tokens")
                {
                    map.insert("max_completion_tokens".into(), limit);
                }
            }
        }
    }
    if !kwargs.is_empty() {
        // Into the model's own `extra_body` kwargs, if any: both hold.
        let entry = map
            .entry("chat_template_kwargs")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(existing) = entry.as_object_mut() {
            existing.extend(kwargs);
        } else {
            *entry = Value::Object(kwargs);
        }
    }
}

/// Adds `setting` to a native API's `body`: Responses `reasoning`,
/// Anthropic `thinking` (without `temperature`, which Anthropic refuses
/// beside thinking), Gemini `generationConfig.thinkingConfig`.
fn native_fields(wire: ProviderKind, setting: &ReasoningSetting, map: &mut Map<String, Value>) {
    match wire {
        ProviderKind::OpenAiResponses => {
            if let Some(effort) = setting.effort {
                let reasoning = json!({"effort": effort.name(), "summary": "auto"});
                map.insert("reasoning".into(), reasoning);
            }
        }
        ProviderKind::Anthropic => {
            let thinking = match (setting.enabled, setting.budget_tokens) {
                (Some(false), _) => json!({"type": "disabled"}),
                (_, Some(budget)) => json!({"type": "enabled", "budget_tokens": budget}),
                (_, None) => return,
            };
            if thinking["type"] == "enabled" {
                map.remove("temperature");
            }
            map.insert("thinking".into(), thinking);
        }
        _ => {
            let mut config = Map::new();
            if setting.enabled == Some(false) {
                config.insert("thinkingBudget".into(), json!(0));
            } else {
                if let Some(budget) = setting.budget_tokens {
                    config.insert("thinkingBudget".into(), json!(budget));
                }
                if setting.enabled == Some(true) {
                    config.insert("includeThoughts".into(), json!(true));
                }
            }
            let generation = map
                .entry("generationConfig")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(generation) = generation.as_object_mut() {
                generation.insert("thinkingConfig".into(), Value::Object(config));
            }
        }
    }
}

/// Adds `setting` to an Ollama `/api/chat` body as `think`: an effort when
/// one is set (Ollama's levels for the models that take them), else the switch.
fn ollama_fields(setting: &ReasoningSetting, map: &mut Map<String, Value>) {
    let think = match (setting.effort, setting.enabled) {
        (Some(effort), _) => json!(effort.name()),
        (None, Some(enabled)) => json!(enabled),
        (None, None) => return,
    };
    map.insert("think".into(), think);
}

/// Adds `setting` to a request `body` of `wire`, in that wire's fields; an
/// empty setting adds nothing, one the wire cannot carry is an error.
pub(crate) fn add_to_body(
    wire: ProviderKind,
    setting: &ReasoningSetting,
    body: &mut Value,
) -> Result<(), super::ProviderError> {
    if setting.is_empty() {
        return Ok(());
    }
    refuse(wire, setting)?;
    let Some(map) = body.as_object_mut() else {
        return Ok(());
    };
    match wire {
        ProviderKind::Ollama => ollama_fields(setting, map),
        ProviderKind::Anthropic | ProviderKind::Gemini | ProviderKind::OpenAiResponses => {
            native_fields(wire, setting, map);
        }
        _ => openai_fields(wire, setting, map),
    }
    Ok(())
}

/// The request-time guard: `check` and `run` refuse such a setting first,
/// so this fires only for a request built some other way.
fn refuse(wire: ProviderKind, setting: &ReasoningSetting) -> Result<(), super::ProviderError> {
    match unsupported(wire, setting) {
        Some((_, why)) => Err(super::ProviderError::Config(why)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setting(text: &str) -> ReasoningSetting {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn each_wire_carries_its_keys_in_its_own_fields() {
        let base = json!({"model": "m", "max_tokens": 64,
                          "chat_template_kwargs": {"custom": 1}});
        // (wire, setting, the body's fields after)
        let cases = [
            (
                ProviderKind::OpenAi,
                "effort = \"high\"",
                json!({"model": "m", "max_completion_tokens": 64, "reasoning_effort": "high",
                       "chat_template_kwargs": {"custom": 1}}),
            ),
            (
                ProviderKind::Vllm,
                "effort = \"low\"\nenabled = true",
                json!({"model": "m", "max_tokens": 64, "reasoning_effort": "low",
                       "chat_template_kwargs": {"custom": 1, "enable_thinking": true}}),
            ),
            (
                ProviderKind::LlamaCpp,
                "effort = \"medium\"\nbudget_tokens = 32\nenabled = true",
                json!({"model": "m", "max_tokens": 64, "reasoning_budget_tokens": 32,
                       "chat_template_kwargs": {"custom": 1, "enable_thinking": true,
                                                "reasoning_effort": "medium"}}),
            ),
            (ProviderKind::LlamaCpp, "", base.clone()),
        ];
        for (wire, text, want) in cases {
            let mut body = base.clone();
            add_to_body(wire, &setting(text), &mut body).unwrap();
            assert_eq!(body, want, "{wire:?} {text}");
        }
        for (text, think) in [
            ("enabled = false", json!(false)),
            ("effort = \"low\"\nenabled = true", json!("low")),
        ] {
            let mut body = json!({"model": "m"});
            add_to_body(ProviderKind::Ollama, &setting(text), &mut body).unwrap();
            assert_eq!(body["think"], think, "{text}");
        }
    }

    #[test]
    fn native_apis_take_their_own_fields() {
        let generation = json!({"maxOutputTokens": 64});
        // (wire, setting, the body after)
        let cases = [
            (
                ProviderKind::OpenAiResponses,
                "effort = \"high\"",
                json!({"reasoning": {"effort": "high", "summary": "auto"}, "temperature": 0.0}),
            ),
            (
                ProviderKind::Anthropic,
                "budget_tokens = 2048",
                json!({"thinking": {"type": "enabled", "budget_tokens": 2048}}),
            ),
            (
                ProviderKind::Anthropic,
                "enabled = false",
                json!({"thinking": {"type": "disabled"}, "temperature": 0.0}),
            ),
            (
                ProviderKind::Gemini,
                "budget_tokens = 512\nenabled = true",
                json!({"generationConfig": {"maxOutputTokens": 64, "thinkingConfig":
                    {"thinkingBudget": 512, "includeThoughts": true}}, "temperature": 0.0}),
            ),
            (
                ProviderKind::Gemini,
                "enabled = false",
                json!({"generationConfig": {"maxOutputTokens": 64,
                    "thinkingConfig": {"thinkingBudget": 0}}, "temperature": 0.0}),
            ),
        ];
        for (wire, text, want) in cases {
            let mut body = json!({"temperature": 0.0});
            if wire == ProviderKind::Gemini {
                body["generationConfig"] = generation.clone();
            }
            add_to_body(wire, &setting(text), &mut body).unwrap();
            assert_eq!(body, want, "{wire:?} {text}");
        }
    }

    #[test]
    fn a_key_a_wire_cannot_carry_is_named_never_dropped() {
        // (wire, setting, the key refused)
        let cases = [
            (ProviderKind::OpenAi, "effort = \"low\"", None),
            (
                ProviderKind::OpenAi,
                "budget_tokens = 10",
                Some("budget_tokens"),
            ),
            (ProviderKind::OpenAi, "enabled = true", Some("enabled")),
            (ProviderKind::Vllm, "enabled = false", None),
            (
                ProviderKind::Vllm,
                "budget_tokens = 10",
                Some("budget_tokens"),
            ),
            (ProviderKind::Ollama, "effort = \"high\"", None),
            (
                ProviderKind::Ollama,
                "budget_tokens = 10",
                Some("budget_tokens"),
            ),
            (
                ProviderKind::LlamaCpp,
                "budget_tokens = 10\nenabled = true",
                None,
            ),
            (
                ProviderKind::LlamaCpp,
                "budget_tokens = 10\nenabled = false",
                Some("budget_tokens"),
            ),
            (ProviderKind::Exec, "enabled = true", Some("enabled")),
            (
                ProviderKind::Replay,
                "budget_tokens = 10\neffort = \"low\"",
                None,
            ),
            (
                ProviderKind::OpenAiResponses,
                "budget_tokens = 10",
                Some("budget_tokens"),
            ),
            (ProviderKind::Anthropic, "effort = \"low\"", Some("effort")),
            (ProviderKind::Anthropic, "enabled = true", Some("enabled")),
            (
                ProviderKind::Anthropic,
                "enabled = true\nbudget_tokens = 1024",
                None,
            ),
            (ProviderKind::Gemini, "effort = \"high\"", Some("effort")),
        ];
        for (wire, text, key) in cases {
            let found = unsupported(wire, &setting(text));
            assert_eq!(found.as_ref().map(|(k, _)| *k), key, "{wire:?} {text}");
            let mut body = json!({"model": "m"});
            let sent = add_to_body(wire, &setting(text), &mut body);
            assert_eq!(sent.is_err(), key.is_some(), "{wire:?} {text}");
        }
    }
}
