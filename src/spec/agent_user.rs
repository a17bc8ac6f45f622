//! A spec's simulated user (`[agent.user]`): the model that plays it, its
//! stop marker, and its `system` and `persona` templates, compiled once and
//! rendered per instance into the user model's system prompt.

use super::Spec;
use crate::error::{Diagnostic, ErrorKind};
use crate::format::locate::SourceMap;
use crate::format::{AgentUser, key_path};
use crate::prompt::{PromptSet, Role, TemplateError};

/// How the user model is told to play its part when `system` is not set.
pub(crate) const DEFAULT_USER_SYSTEM: &str = "You are a user talking to an assistant, \
not the assistant. Stay in character: write only what this user would say, one short \
message at a time, and never invent facts your instructions do not give. Give details \
only when the assistant asks for them. When your goal is met, or the assistant cannot \
meet it, reply with {{ stop }} and nothing else.";

/// Tokens of one user turn when `max_tokens` is not set.
const DEFAULT_USER_MAX_TOKENS: u32 = 512;

/// The most tokens `max_tokens` may allow one user turn.
const USER_MAX_TOKENS_CEILING: u32 = 65_536;

/// A compiled `[agent.user]`.
pub(crate) struct UserRuntime {
    /// The model named to play the user.
    pub model: String,
    /// What the user says to end the conversation.
    pub stop: String,
    /// Tokens of one user turn at most.
    pub max_tokens: u32,
    /// The `system` then the `persona` template.
    templates: PromptSet,
}

/// The spec key of a user template named `name` (`system` or `persona`).
fn template_key(name: &str) -> Vec<crate::format::locate::Key<'_>> {
    key_path!["agent", "user", name].to_vec()
}

fn template_diagnostic(map: &SourceMap, e: &TemplateError, prefix: &str) -> Diagnostic {
    let at = template_key(&e.template);
    let location = if e.line == 0 {
        map.locate(&at)
    } else {
        map.locate_in_string(&at, e.line, e.column)
    };
    Diagnostic::new(
        ErrorKind::Template,
        location,
        format!(
            "{prefix}[agent.user] template `{}`: {}",
            e.template, e.message
        ),
    )
}

/// Compiles `[agent.user]`, adding every problem found to `errors`.
pub(super) fn compile(
    user: &AgentUser,
    map: &SourceMap,
    errors: &mut Vec<Diagnostic>,
) -> Option<UserRuntime> {
    let at = |key: &str, message: String| {
        let path = if key.is_empty() {
            key_path!["agent", "user"].to_vec()
        } else {
            template_key(key)
        };
        Diagnostic::new(ErrorKind::Invalid, map.locate(&path), message)
    };
    let before = errors.len();
    let model = user.model.clone().filter(|m| !m.trim().is_empty());
    if model.is_none() {
        errors.push(at(
            "",
            "[agent.user] needs a `model` to play the user: a name from harness.toml or a reference such as `openai:gpt-4o-mini`".into(),
        ));
    }
    let persona = user.persona.clone().filter(|p| !p.trim().is_empty());
    if persona.is_none() {
        errors.push(at(
            "",
            "[agent.user] needs a `persona`: who the user is and what they want, a template over the instance's variables".into(),
        ));
    }
    if user.stop_marker().trim().is_empty() {
        errors.push(at("stop", "`stop` must not be blank".into()));
    }
    let max_tokens = user.max_tokens.unwrap_or(DEFAULT_USER_MAX_TOKENS);
    if !(1..=USER_MAX_TOKENS_CEILING).contains(&max_tokens) {
        errors.push(at(
            "max_tokens",
            format!("max_tokens must be within 1..={USER_MAX_TOKENS_CEILING}, not {max_tokens}"),
        ));
    }
    let system = user.system.as_deref().unwrap_or(DEFAULT_USER_SYSTEM);
    let sources = vec![
        (Role::System, "system".to_owned(), system.to_owned()),
        (
            Role::System,
            "persona".to_owned(),
            persona.unwrap_or_default(),
        ),
    ];
    let templates = match PromptSet::new(sources) {
        Ok(set) => Some(set),
        Err(problems) => {
            errors.extend(problems.iter().map(|e| template_diagnostic(map, e, "")));
            None
        }
    };
    if errors.len() > before {
        return None;
    }
    Some(UserRuntime {
        model: model?,
        stop: user.stop_marker().to_owned(),
        max_tokens,
        templates: templates?,
    })
}

impl Spec {
    /// The user model's system prompt for instance `index` with `vars`: the
    /// `system` text, then the persona, each rendered with the instance's
    /// variables, `data`, `index` and `stop`. `None` without `[agent.user]`.
    pub(crate) fn user_system(
        &self,
        index: u64,
        template_vars: &minijinja::Value,
    ) -> Result<Option<String>, Diagnostic> {
        let Some(user) = self.agent.as_ref().and_then(|a| a.user.as_ref()) else {
            return Ok(None);
        };
        let context = minijinja::context! {
            data => self.data.clone(),
            index => index,
            stop => user.stop.clone(),
            ..template_vars.clone()
        };
        let parts = user.templates.render(&context).map_err(|e| {
            template_diagnostic(&self.map, &e, &format!("instance {index}: "))
                .with_source(self.map.source())
        })?;
        let parts: Vec<&str> = parts
            .iter()
            .map(|m| m.content.trim())
            .filter(|t| !t.is_empty())
            .collect();
        Ok(Some(parts.join("\n\n")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compiled(toml_text: &str) -> (Option<UserRuntime>, Vec<String>) {
        let user: AgentUser = toml::from_str(toml_text).unwrap();
        let spec = format!("[agent.user]\n{toml_text}\n");
        let map = SourceMap::parse(std::path::Path::new("s.toml"), &spec).unwrap();
        let mut errors = Vec::new();
        let runtime = compile(&user, &map, &mut errors);
        (runtime, errors.iter().map(|d| d.to_string()).collect())
    }

    #[test]
    fn a_user_needs_a_model_and_a_persona_and_sane_bounds() {
        let cases: [(&str, &[&str]); 5] = [
            ("model = \"m\"\npersona = \"p\"", &[]),
            ("persona = \"p\"", &["needs a `model`"]),
            ("model = \"m\"", &["needs a `persona`"]),
            (
                "model = \"m\"\npersona = \"p\"\nstop = \" \"\nmax_tokens = 0",
                &["`stop` must not be blank", "within 1..=65536, not 0"],
            ),
            (
                "model = \"m\"\npersona = \"{{ goal\"",
                &["[agent.user] template `persona`"],
            ),
        ];
        for (text, expected) in cases {
            let (runtime, errors) = compiled(text);
            assert_eq!(runtime.is_some(), expected.is_empty(), "{text}: {errors:?}");
            assert_eq!(errors.len(), expected.len(), "{text}: {errors:?}");
            for (error, want) in errors.iter().zip(expected) {
                assert!(error.contains(want), "{text}: {error}");
            }
        }
        let (runtime, _) = compiled("model = \"m\"\npersona = \"p\"");
        let runtime = runtime.unwrap();
        assert_eq!(
            (runtime.stop.as_str(), runtime.max_tokens),
            ("###STOP###", 512)
        );
    }
}
