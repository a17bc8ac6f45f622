//! A spec's reasoning setting against one model: the setting its requests
//! would send (a sweep cell's key over the spec's, the spec's over the
//! model's own) checked against the model's wire and `max_tokens`, and a
//! problem located where it was written.
//!
//! The spec alone is checked on load (`validate`); this is the check that
//! needs a model, run by `harness check -m` and before `harness run` asks
//! anything. What a wire carries is the provider layer's to say: the caller
//! passes it in, so this layer needs no provider.

use crate::error::{Diagnostic, ErrorKind, Location};
use crate::format::ReasoningSetting;
use crate::format::key_path;

use super::Spec;

/// The requests' `max_tokens` when neither the model, `[sampling]` nor
/// `[request]` sets one.
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 1024;

/// What a model brings to a spec's reasoning.
pub(crate) struct ModelReasoning<'a> {
    /// The model's name, for messages.
    pub name: &'a str,
    /// The model's own setting (`reasoning` in `harness.toml`).
    pub own: ReasoningSetting,
    /// A sweep cell's setting, when the model is one: its `--sweep` argument too.
    pub sweep: Option<(ReasoningSetting, &'a str)>,
    /// The model's `options.max_tokens`, which wins over the spec's.
    pub max_tokens: Option<u32>,
    /// The key of a setting the model's wire cannot carry, and why.
    pub unsupported: &'a dyn Fn(&ReasoningSetting) -> Option<(&'static str, String)>,
}

impl Spec {
    /// The `max_tokens` of this spec's requests to a model whose own is `model`.
    pub(crate) fn max_tokens_for(&self, model: Option<u32>) -> u32 {
        let sampling = self.def.sampling.as_ref().and_then(|s| s.max_tokens);
        model
            .or(sampling)
            .or(self.def.request.max_tokens)
            .unwrap_or(DEFAULT_MAX_TOKENS)
    }

    /// The first problem of the reasoning `model`'s requests for this spec
    /// would send: a key its wire cannot carry, thinking off with an effort,
    /// a budget above `max_tokens`. Located at the spec's key when the spec
    /// wrote it; a sweep's or the model's own is named in the message.
    pub(crate) fn reasoning_problem(&self, model: &ModelReasoning<'_>) -> Option<Diagnostic> {
        let spec = self.def.request.reasoning;
        let mut setting = spec.over(model.own);
        if let Some((sweep, _)) = model.sweep {
            setting = sweep.over(setting);
        }
        let max_tokens = self.max_tokens_for(model.max_tokens);
        let unsupported = || (model.unsupported)(&setting);
        let (key, why) = setting.contradiction().or_else(unsupported).or_else(|| {
            let budget = setting.budget_tokens.filter(|b| *b > max_tokens)?;
            Some((
                "budget_tokens",
                format!(
                    "reasoning budget_tokens = {budget} is larger than max_tokens = {max_tokens}: \
                     the answer would never get a token"
                ),
            ))
        })?;
        let written = |r: &ReasoningSetting| r.keys().contains(&key);
        let (location, origin) = match model.sweep {
            Some((sweep, argument)) if written(&sweep) => (
                Location::file_start(&self.file),
                format!("--sweep {argument}: "),
            ),
            _ if written(&spec) => (
                self.map.locate(key_path!["request", "reasoning", key]),
                String::new(),
            ),
            _ => (
                self.map.locate(key_path!["request", "max_tokens"]),
                "the model's own reasoning (harness.toml): ".to_owned(),
            ),
        };
        Some(self.map.diagnostic(
            ErrorKind::Invalid,
            location,
            format!("model `{}`: {origin}{why}", model.name),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spec of `request` lines, loaded from a file in `dir`.
    fn spec(dir: &std::path::Path, request: &str) -> Spec {
        let path = dir.join("s.toml");
        let text = format!(
            "runs = 1\n[prompt]\nuser = \"2 + 2?\"\n[request]\n{request}\n[[verify]]\nrule = \"contains\"\nexpected = \"answer\"\n"
        );
        std::fs::write(&path, text).unwrap();
        Spec::load(&path).unwrap()
    }

    #[test]
    fn a_problem_is_located_where_its_setting_was_written() {
        let dir = tempfile::tempdir().unwrap();
        let carries_all = |_: &ReasoningSetting| None;
        let no_budget = |r: &ReasoningSetting| {
            r.budget_tokens
                .map(|_| ("budget_tokens", "no budget here".to_owned()))
        };
        let budget = |b| ReasoningSetting {
            budget_tokens: Some(b),
            ..ReasoningSetting::default()
        };
        // (request lines, the model's own, its max_tokens, a sweep's, the wire,
        //  where the error is and what it says; no place: no error)
        type Wire<'a> = &'a dyn Fn(&ReasoningSetting) -> Option<(&'static str, String)>;
        type Case<'a> = (
            &'a str,
            ReasoningSetting,
            Option<u32>,
            Option<ReasoningSetting>,
            Wire<'a>,
        );
        let none = ReasoningSetting::default();
        let off = ReasoningSetting {
            enabled: Some(false),
            ..none
        };
        let all: Wire = &carries_all;
        let cases: [(Case, Option<(usize, &str)>); 6] = [
            (
                (
                    "max_tokens = 64\nreasoning = { budget_tokens = 64 }",
                    none,
                    None,
                    None,
                    all,
                ),
                None,
            ),
            (
                (
                    "reasoning = { budget_tokens = 512 }",
                    none,
                    Some(256),
                    None,
                    all,
                ),
                Some((5, "larger than max_tokens = 256")),
            ),
            (
                (
                    "reasoning = { budget_tokens = 512 }",
                    none,
                    None,
                    None,
                    &no_budget,
                ),
                Some((5, "no budget here")),
            ),
            (
                ("max_tokens = 100", budget(200), None, None, all),
                Some((5, "the model's own reasoning")),
            ),
            (
                ("max_tokens = 100", none, None, Some(budget(200)), all),
                Some((1, "--sweep reasoning.budget_tokens=200")),
            ),
            (
                ("reasoning = { effort = \"low\" }", off, None, None, all),
                Some((5, "`effort` with `enabled = false`")),
            ),
        ];
        for ((request, own, max_tokens, sweep, unsupported), want) in cases {
            let spec = spec(dir.path(), request);
            let problem = spec.reasoning_problem(&ModelReasoning {
                name: "m",
                own,
                sweep: sweep.map(|s| (s, "reasoning.budget_tokens=200")),
                max_tokens,
                unsupported,
            });
            let got = problem.map(|d| (d.location.line, d.message));
            match (got, want) {
                (None, None) => {}
                (Some((line, message)), Some((at, says))) => {
                    assert_eq!(line, at, "{request}: {message}");
                    assert!(message.contains(says), "{request}: {message}");
                }
                (got, want) => panic!("{request}: {got:?}, wanted {want:?}"),
            }
        }
    }
}
