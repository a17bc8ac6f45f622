//! `reasoning = { effort, budget_tokens, enabled }`: how much a model thinks
//! before it answers, as a spec's `[request]` and a model's configuration
//! write it. One shape for both, so a sweep (`--sweep reasoning.effort=...`)
//! and every wire mapping read the same three keys.
//!
//! Which keys a wire can carry is the provider layer's to say; this file only
//! holds the values and how two settings combine.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A reasoning setting; every key optional, unset keys fall through to the
/// next setting (see [`ReasoningSetting::over`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReasoningSetting {
    /// How hard the model thinks: `low`, `medium` or `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<Effort>,
    /// The most tokens the model may spend thinking, at least 1 and at most
    /// the request's `max_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u32>,
    /// Whether the model thinks at all (a chat template's `enable_thinking`,
    /// Ollama's `think`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

/// A reasoning effort, as the APIs that take one name it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    /// Little thinking: fast and cheap.
    Low,
    /// The APIs' usual default.
    Medium,
    /// The most thinking the API offers under this name.
    High,
}

impl Effort {
    /// Every effort, lowest first.
    pub const ALL: [Effort; 3] = [Effort::Low, Effort::Medium, Effort::High];

    /// The name specs and wires use: `low`, `medium`, `high`.
    pub fn name(self) -> &'static str {
        match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        }
    }

    /// The effort named `name`, if any.
    pub fn parse(name: &str) -> Option<Effort> {
        Effort::ALL.into_iter().find(|e| e.name() == name)
    }
}

/// The keys of a reasoning setting, in the order they are written.
pub(crate) const REASONING_KEYS: [&str; 3] = ["effort", "budget_tokens", "enabled"];

impl ReasoningSetting {
    /// Whether no key is set: such a setting sends nothing and keys no cache.
    pub fn is_empty(&self) -> bool {
        *self == ReasoningSetting::default()
    }

    /// This setting with `default`'s keys where this one leaves them unset:
    /// per key, so a spec's `effort` and a model's `budget_tokens` both hold.
    #[must_use]
    pub fn over(self, default: ReasoningSetting) -> ReasoningSetting {
        ReasoningSetting {
            effort: self.effort.or(default.effort),
            budget_tokens: self.budget_tokens.or(default.budget_tokens),
            enabled: self.enabled.or(default.enabled),
        }
    }

    /// The keys this setting sets, in [`REASONING_KEYS`] order.
    pub fn keys(&self) -> Vec<&'static str> {
        let set = [
            self.effort.is_some(),
            self.budget_tokens.is_some(),
            self.enabled.is_some(),
        ];
        REASONING_KEYS
            .into_iter()
            .zip(set)
            .filter_map(|(key, set)| set.then_some(key))
            .collect()
    }

    /// What is wrong with this setting whatever the wire: a budget of no
    /// tokens or above `max_tokens` (the key named `limit`), thinking turned
    /// off with an effort or a budget. Each: the key to fix, and why.
    pub fn problems(&self, max_tokens: Option<u32>, limit: &str) -> Vec<(&'static str, String)> {
        let mut found = Vec::new();
        match (self.budget_tokens, max_tokens) {
            (Some(0), _) => found.push((
                "budget_tokens",
                "budget_tokens must be at least 1".to_owned(),
            )),
            (Some(budget), Some(max)) if budget > max => found.push((
                "budget_tokens",
                format!(
                    "reasoning budget_tokens = {budget} is larger than {limit} = {max}: \
                     the answer would never get a token"
                ),
            )),
            _ => {}
        }
        found.extend(self.contradiction());
        found
    }

    /// What contradicts itself in this setting whatever the wire: thinking
    /// turned off yet given an effort or a budget. The key named is the one
    /// to remove.
    pub fn contradiction(&self) -> Option<(&'static str, String)> {
        if self.enabled != Some(false) {
            return None;
        }
        let key = if self.effort.is_some() {
            "effort"
        } else if self.budget_tokens.is_some() {
            "budget_tokens"
        } else {
            return None;
        };
        Some((
            key,
            format!("`{key}` with `enabled = false`: a model that does not think has no {key}"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_combine_one_by_one_and_an_empty_setting_serializes_to_nothing() {
        let spec: ReasoningSetting = toml::from_str("effort = \"high\"").unwrap();
        let model: ReasoningSetting =
            toml::from_str("effort = \"low\"\nbudget_tokens = 512").unwrap();
        let both = spec.over(model);
        assert_eq!(both.effort, Some(Effort::High));
        assert_eq!(both.budget_tokens, Some(512));
        assert_eq!(both.enabled, None);
        assert_eq!(both.keys(), ["effort", "budget_tokens"]);
        assert!(ReasoningSetting::default().is_empty());
        assert_eq!(
            serde_json::to_string(&ReasoningSetting::default()).unwrap(),
            "{}"
        );
        assert!(toml::from_str::<ReasoningSetting>("effort = \"hihg\"").is_err());
        assert!(toml::from_str::<ReasoningSetting>("efort = \"high\"").is_err());
    }

    #[test]
    fn turning_thinking_off_contradicts_an_effort_or_a_budget() {
        let cases = [
            ("enabled = false", None),
            ("enabled = true\neffort = \"low\"", None),
            ("enabled = false\neffort = \"low\"", Some("effort")),
            ("enabled = false\nbudget_tokens = 8", Some("budget_tokens")),
        ];
        for (text, key) in cases {
            let r: ReasoningSetting = toml::from_str(text).unwrap();
            assert_eq!(r.contradiction().map(|(k, _)| k), key, "{text}");
        }
        assert_eq!(Effort::parse("medium"), Some(Effort::Medium));
        assert_eq!(Effort::parse("max"), None);
    }
}
