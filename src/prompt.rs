//! Prompt rendering: the spec's message templates in a strict minijinja
//! environment (undefined variables are errors, execution is fuel-bounded).

use minijinja::{Environment, UndefinedBehavior, Value};
use serde::{Deserialize, Serialize};

/// Who speaks: the wires read a message's role (a tool's result has its own form).
pub(crate) use crate::format::Role;
/// Log-probabilities travel with answers, from the wire to records.
pub(crate) use crate::format::{
    ChoiceOutcome, Continuation, Logprobs, MAX_LOGPROB_TOKENS, TokenLogprob,
};
/// Tools travel with the messages, from the spec to the request.
pub(crate) use crate::format::{ReasoningSetting, Tool, ToolCall, ToolChoice, ToolMode};
pub(crate) use crate::media::ImageRef;

/// One rendered chat message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub content: String,
    /// Images sent with the message: path, MIME type, digest, size and the absolute `file`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageRef>,
    /// The tools an assistant message called, in the order the model wrote them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool's result: the id of the call it answers (may be empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For a tool's result: the name of the tool that produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// For an assistant turn of an episode: what the model reasoned before
    /// it, kept for the record (and for wires that want it sent back); the
    /// rules never read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
}

/// What a model reasoned before its answer, kept apart from the answer: a
/// server's `reasoning_content`, Ollama's `thinking`, or an inline
/// `<think>` block taken out of the text. A struct rather than a string so a
/// wire that signs its reasoning (Anthropic's `thinking` blocks) can add the
/// blocks it must be sent back unchanged without touching every reader.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reasoning {
    /// The reasoning as the model wrote it.
    pub text: String,
    /// Generation stopped inside the reasoning: an inline `<think>` block
    /// without its end, or a length stop before any answer. Kept with the
    /// reasoning so a replayed answer fails as the recorded one did.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unfinished: bool,
    /// The wire's own reasoning blocks, exactly as the server sent them
    /// (Anthropic's signed `thinking` and `redacted_thinking` blocks, a
    /// Gemini turn's parts that carry a `thoughtSignature`): a signing API
    /// checks them when an episode's later turn sends them back, so they are
    /// kept whole, never rebuilt from `text`. Empty (and not written) on the
    /// other wires, so records and cache keys without them stay as they were.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<serde_json::Value>,
}

impl Reasoning {
    /// Reasoning of `text`, or `None` when there is none to keep.
    pub fn of(text: impl Into<String>) -> Option<Reasoning> {
        let text = text.into();
        (!text.trim().is_empty()).then_some(Reasoning {
            text,
            ..Reasoning::default()
        })
    }

    /// Its length in characters (Markdown shows this, not the text).
    pub fn chars(&self) -> usize {
        self.text.chars().count()
    }
}

impl Message {
    /// A message of text alone.
    pub fn text(role: Role, content: impl Into<String>) -> Message {
        Message {
            role,
            content: content.into(),
            images: Vec::new(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            tool_name: None,
            reasoning: None,
        }
    }

    /// A model's turn: its text and the tools it called.
    pub fn assistant(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Message {
        Message {
            tool_calls,
            ..Message::text(Role::Assistant, content)
        }
    }

    /// A tool's result (or its error message), answering `call`.
    pub fn tool_result(call: &ToolCall, content: impl Into<String>) -> Message {
        Message {
            tool_call_id: Some(call.id.clone()),
            tool_name: Some(call.name.clone()),
            ..Message::text(Role::Tool, content)
        }
    }
}

/// A template error with its position inside the template (1-based; 0 when unknown).
#[derive(Debug, Clone)]
pub(crate) struct TemplateError {
    /// Which template: `system`, `user` or `messages.N`.
    pub template: String,
    /// What went wrong, including minijinja's explanation.
    pub message: String,
    /// Line inside the template.
    pub line: usize,
    /// Column inside the template.
    pub column: usize,
}

/// The compiled message templates of a spec.
pub(crate) struct PromptSet {
    env: Environment<'static>,
    messages: Vec<(Role, String)>,
    /// Per message, the names of its image path templates.
    images: Vec<Vec<String>>,
}

const FUEL: u64 = 200_000;

impl PromptSet {
    /// Compiles `(role, template name, source)` triples; all errors are returned.
    pub(crate) fn new(
        templates: Vec<(Role, String, String)>,
    ) -> Result<PromptSet, Vec<TemplateError>> {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_debug(true);
        env.set_fuel(Some(FUEL));
        env.add_filter("numbered", numbered);
        env.add_filter("bullets", bullets);
        env.add_filter("json", json);
        let mut errors = Vec::new();
        let mut messages = Vec::new();
        for (role, name, source) in templates {
            if let Err(e) = env.add_template_owned(name.clone(), source.clone()) {
                errors.push(template_error(&name, &source, &e));
            }
            messages.push((role, name));
        }
        let images = vec![Vec::new(); messages.len()];
        if errors.is_empty() {
            Ok(PromptSet {
                env,
                messages,
                images,
            })
        } else {
            Err(errors)
        }
    }

    /// Compiles the image path templates `(name, source)` of message `index`;
    /// all errors are returned.
    pub(crate) fn add_images(
        &mut self,
        index: usize,
        templates: Vec<(String, String)>,
    ) -> Result<(), Vec<TemplateError>> {
        let mut errors = Vec::new();
        for (name, source) in templates {
            if let Err(e) = self.env.add_template_owned(name.clone(), source.clone()) {
                errors.push(template_error(&name, &source, &e));
            }
            self.images[index].push(name);
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    /// Renders every message's image paths for `context`: per message, the
    /// template's name and the path it rendered.
    pub(crate) fn render_images(
        &self,
        context: &Value,
    ) -> Result<Vec<Vec<(String, String)>>, TemplateError> {
        self.images
            .iter()
            .map(|names| {
                names
                    .iter()
                    .map(|name| {
                        let template = self
                            .env
                            .get_template(name)
                            .expect("compiled in add_images()");
                        let path = template
                            .render(context)
                            .map_err(|e| template_error(name, template.source(), &e))?;
                        Ok((name.clone(), path))
                    })
                    .collect()
            })
            .collect()
    }

    /// Renders every message for `context` (instance variables plus `data` and `index`).
    pub(crate) fn render(&self, context: &Value) -> Result<Vec<Message>, TemplateError> {
        self.messages
            .iter()
            .map(|(role, name)| {
                let template = self.env.get_template(name).expect("compiled in new()");
                let content = template
                    .render(context)
                    .map_err(|e| template_error(name, template.source(), &e))?;
                Ok(Message::text(*role, content))
            })
            .collect()
    }
}

/// A minijinja error in template `name` (whose text is `source`), with the
/// line and column it points at inside the template.
pub(crate) fn template_error(name: &str, source: &str, e: &minijinja::Error) -> TemplateError {
    let mut message = e
        .detail()
        .map_or_else(|| e.kind().to_string(), |d| format!("{}: {d}", e.kind()));
    if e.kind() == minijinja::ErrorKind::UndefinedError {
        message.push_str(" (a variable the instance does not set, or a misspelled name)");
    }
    if e.kind() == minijinja::ErrorKind::UnknownFilter && e.detail() == Some("filter py is unknown")
    {
        // The one filter users expect everywhere because the code rule's docs show it.
        message.push_str(
            " (`py` exists only in a `code` rule's `test_template`; write `json` or `tojson` here)",
        );
    }
    let (line, column) = match e.range() {
        Some(range) => {
            let before = &source[..range.start.min(source.len())];
            let line = before.matches('\n').count() + 1;
            let col = before[before.rfind('\n').map_or(0, |i| i + 1)..]
                .chars()
                .count()
                + 1;
            (line, col)
        }
        None => (e.line().unwrap_or(0), 0),
    };
    TemplateError {
        template: name.to_owned(),
        message,
        line,
        column,
    }
}

/// Why a dataset field is not a chat history.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum HistoryError {
    /// The value is not a list.
    #[error("expected a list of {{role, content}} turns")]
    NotAList,
    /// A turn with a role other than user or assistant.
    #[error("turn {0}: role `{1}` is not allowed (only user and assistant)")]
    Role(usize, String),
    /// A turn without a string field.
    #[error("turn {0}: needs a string `{1}`")]
    Missing(usize, &'static str),
}

/// Chat turns from a list of `{role, content}` objects; only user and
/// assistant turns are accepted, since the spec owns the system prompt.
pub(crate) fn history_turns(value: &serde_json::Value) -> Result<Vec<Message>, HistoryError> {
    let items = value.as_array().ok_or(HistoryError::NotAList)?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let field = |name: &str| item.get(name).and_then(serde_json::Value::as_str);
            let role = match field("role") {
                Some("user") => Role::User,
                Some("assistant") => Role::Assistant,
                Some(other) => return Err(HistoryError::Role(i, other.to_owned())),
                None => return Err(HistoryError::Missing(i, "role")),
            };
            let content = field("content").ok_or(HistoryError::Missing(i, "content"))?;
            Ok(Message::text(role, content))
        })
        .collect()
}

/// `["a", "b"] | numbered` → "1. a\n2. b".
fn numbered(items: Vec<Value>) -> String {
    items
        .iter()
        .enumerate()
        .map(|(i, v)| format!("{}. {v}", i + 1))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `["a", "b"] | bullets` → "- a\n- b".
fn bullets(items: Vec<Value>) -> String {
    items
        .iter()
        .map(|v| format!("- {v}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Any value as compact JSON with non-ASCII text kept readable.
fn json(value: Value) -> Result<String, minijinja::Error> {
    serde_json::to_string(&value)
        .map_err(|e| minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use minijinja::context;

    fn set(src: &str) -> Result<PromptSet, Vec<TemplateError>> {
        PromptSet::new(vec![(Role::User, "user".into(), src.into())])
    }

    #[test]
    fn renders_with_filters() {
        let p =
            set("{{ items | numbered }}|{{ items | join(', ') | upper }}|{{ m | json }}").unwrap();
        let out = p
            .render(&context! { items => vec!["да", "нет"], m => context!{ a => 1 } })
            .unwrap();
        assert_eq!(out[0].content, "1. да\n2. нет|ДА, НЕТ|{\"a\":1}");
    }

    #[test]
    fn undefined_variables_name_their_line() {
        let p = set("Hello\n  {{ nmae }}").unwrap();
        let err = p.render(&context! { name => "x" }).unwrap_err();
        assert_eq!((err.line, err.column), (2, 6), "{err:?}");
        assert!(err.message.contains("undefined"), "{}", err.message);
    }

    #[test]
    fn history_accepts_user_and_assistant_turns_only() {
        let ok = serde_json::json!([{"role": "assistant", "content": "Здравствуйте!"}, {"role": "user", "content": "Где офис?"}]);
        let turns = history_turns(&ok).unwrap();
        assert_eq!(
            (turns[0].role, turns[1].content.as_str()),
            (Role::Assistant, "Где офис?")
        );
        let bad = serde_json::json!([{"role": "user", "content": "a"}, {"role": "system", "content": "b"}]);
        assert_eq!(
            history_turns(&bad).unwrap_err().to_string(),
            "turn 1: role `system` is not allowed (only user and assistant)"
        );
        let no_content = serde_json::json!([{"role": "user"}]);
        assert!(
            history_turns(&no_content)
                .unwrap_err()
                .to_string()
                .contains("turn 0: needs a string `content`")
        );
        assert!(history_turns(&serde_json::json!("x")).is_err());
    }

    #[test]
    fn image_paths_render_per_message() {
        let mut p = set("Read this").unwrap();
        p.add_images(0, vec![("images.0".into(), "scans/{{ id }}.png".into())])
            .unwrap();
        let out = p.render_images(&context! { id => "ru_00" }).unwrap();
        assert_eq!(
            out,
            vec![vec![("images.0".to_owned(), "scans/ru_00.png".to_owned())]]
        );
        let errs = p
            .add_images(0, vec![("images.1".into(), "{{ x".into())])
            .unwrap_err();
        assert_eq!(errs[0].template, "images.1");
    }

    #[test]
    fn syntax_errors_are_reported_at_load() {
        let errs = set("{% if x %}never closed").err().unwrap();
        assert_eq!(errs[0].line, 1);
    }
}
