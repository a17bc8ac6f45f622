//! The `exec` provider: any program as a model. Each request runs the
//! model's `command` (every argument a minijinja template rendered from the
//! instance), writes the request as JSON to its stdin and reads the answer
//! from its stdout: plain text, or `{"text": ..., "usage": {...}}`.
//!
//! The command is rendered when the request is built ([`ExecOptions::call`]),
//! so the rendered command line travels in the [`ChatRequest`] and is part of
//! its cache key: changing the command asks again. The program gets private
//! copies of the images, checked before and after it runs ([`images`]).
//! Running the program (its environment, process group, timeout and output
//! limits) is [`child`]'s.

mod child;
mod images;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use minijinja::{Environment, UndefinedBehavior};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{ChatRequest, Completion, OPENAI_SAMPLING, ProviderError, Usage};
use crate::prompt::Message;
use crate::prompt::ToolCall;

/// Default seconds one call of a program may take.
pub(crate) const DEFAULT_TIMEOUT_SECS: f64 = 60.0;

/// Template execution budget per argument, as for prompts.
const FUEL: u64 = 100_000;

/// How an `exec` model runs: `[models.NAME]` with `provider = "exec"`. Kept
/// in a run's plan, so it holds the names of passed variables, never their values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecOptions {
    /// The program and its arguments, each a minijinja template.
    pub command: Vec<String>,
    /// The directory the program runs in: the directory of `harness.toml`.
    pub cwd: PathBuf,
    /// Variables passed from the harness's environment when set (`env`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// Variables set to fixed values (`env_set`); they win over `env`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env_set: BTreeMap<String, String>,
}

/// One rendered call: what a request asks an `exec` model to run, and the
/// instance it is for. Part of the request, so of its cache key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecCall {
    /// The rendered command line: the program, then its arguments.
    pub argv: Vec<String>,
    /// The instance's variables, sent on stdin.
    pub vars: Map<String, Value>,
    /// The machine's own paths in `argv`, each with the name it has in a
    /// cache key: the spec's folder, the images' files by digest.
    #[serde(skip)]
    pub local: Vec<(String, String)>,
}

impl ExecCall {
    /// The call as a cache key names it: the same on every checkout, so a
    /// cache moved with the repository still answers.
    pub(crate) fn portable(&self) -> ExecCall {
        let argv = self
            .argv
            .iter()
            .map(|arg| {
                let mut arg = arg.clone();
                for (path, name) in &self.local {
                    arg = arg.replace(path.as_str(), name);
                }
                arg
            })
            .collect();
        ExecCall {
            argv,
            vars: self.vars.clone(),
            local: Vec::new(),
        }
    }
}

/// Why a `command` is not usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// `command = []`.
    #[error("`command` is empty: give the program and its arguments")]
    Empty,
    /// An argument that does not compile or render.
    #[error("`command[{index}]`, line {line} column {column}: {message}")]
    Template {
        /// Which argument (0: the program).
        index: usize,
        /// Line inside the argument.
        line: usize,
        /// Column inside the argument.
        column: usize,
        /// What went wrong.
        message: String,
    },
    /// The program rendered to an empty string.
    #[error("`command[0]` renders to nothing: the program must be named")]
    NoProgram,
    /// An argument names a variable the request's context does not hold.
    #[error("`command[{index}]` names variable `{name}`, which the instance does not set")]
    UnknownVariable {
        /// Which argument (0: the program).
        index: usize,
        /// The variable.
        name: String,
    },
}

/// What the argument templates see: the instance's variables, and beside
/// them (winning over a variable of the same name) `model`, `spec_dir` and
/// `images`.
pub struct ExecContext<'a> {
    /// The model's display name.
    pub model: &'a str,
    /// The instance's variables (none for a request made outside a spec).
    pub vars: &'a Map<String, Value>,
    /// The absolute directory of the spec file, when the request is a spec's.
    pub spec_dir: Option<&'a Path>,
    /// The request's messages (their images become `images`).
    pub messages: &'a [Message],
}

impl ExecContext<'_> {
    /// The template context as one object.
    fn value(&self) -> Value {
        let mut context = self.vars.clone();
        context.insert("model".into(), json!(self.model));
        let dir = self.spec_dir.map(|d| d.to_string_lossy().into_owned());
        context.insert("spec_dir".into(), json!(dir.unwrap_or_default()));
        context.insert("images".into(), json!(self.image_files()));
        Value::Object(context)
    }

    /// The absolute files of every message's images, in order.
    fn image_files(&self) -> Vec<String> {
        let images = self.messages.iter().flat_map(|m| &m.images);
        images
            .map(|i| i.file.to_string_lossy().into_owned())
            .collect()
    }

    /// The machine's own paths a rendered argument may hold, with their
    /// portable names; longest first, so an image inside the spec's
    /// folder is named by its digest.
    fn local_paths(&self) -> Vec<(String, String)> {
        let images = self.messages.iter().flat_map(|m| &m.images);
        let mut local: Vec<(String, String)> = images
            .map(|i| {
                (
                    i.file.to_string_lossy().into_owned(),
                    format!("<image {}>", i.sha256),
                )
            })
            .collect();
        if let Some(dir) = self.spec_dir {
            local.push((dir.to_string_lossy().into_owned(), "<spec_dir>".into()));
        }
        local.retain(|(path, _)| !path.is_empty());
        local.sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
        local
    }
}

impl ExecOptions {
    /// Checks that every argument compiles and the program is named.
    pub fn check(&self) -> Result<(), CommandError> {
        let env = environment();
        if self.command.is_empty() {
            return Err(CommandError::Empty);
        }
        for (index, source) in self.command.iter().enumerate() {
            env.template_from_str(source)
                .map_err(|e| template_error(index, source, &e))?;
        }
        Ok(())
    }

    /// Renders the command for one request.
    pub fn call(&self, context: &ExecContext<'_>) -> Result<ExecCall, CommandError> {
        let env = environment();
        let mut argv = Vec::with_capacity(self.command.len());
        let values = context.value();
        let value = minijinja::Value::from(minijinja::value::Serde(&values));
        for (index, source) in self.command.iter().enumerate() {
            let rendered = env.render_str(source, &value).map_err(|e| {
                unknown_variable(&env, source, &values)
                    .filter(|_| e.kind() == minijinja::ErrorKind::UndefinedError)
                    .map_or_else(
                        || template_error(index, source, &e),
                        |name| CommandError::UnknownVariable { index, name },
                    )
            })?;
            argv.push(rendered);
        }
        match argv.first() {
            None => Err(CommandError::Empty),
            Some(program) if program.trim().is_empty() => Err(CommandError::NoProgram),
            Some(_) => Ok(ExecCall {
                argv,
                vars: context.vars.clone(),
                local: context.local_paths(),
            }),
        }
    }
}

fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_fuel(Some(FUEL));
    env
}

/// The first variable, by name, that `source` reads and neither `context`
/// nor the template language defines.
fn unknown_variable(env: &Environment<'_>, source: &str, context: &Value) -> Option<String> {
    let template = env.template_from_str(source).ok()?;
    let mut names: Vec<String> = template.undeclared_variables(false).into_iter().collect();
    names.sort();
    let globals: Vec<&str> = env.globals().map(|(name, _)| name).collect();
    names
        .into_iter()
        .find(|n| context.get(n).is_none() && !globals.contains(&n.as_str()))
}

fn template_error(index: usize, source: &str, e: &minijinja::Error) -> CommandError {
    let t = crate::prompt::template_error(&format!("command[{index}]"), source, e);
    CommandError::Template {
        index,
        line: t.line,
        column: t.column,
        message: t.message,
    }
}

/// A ready `exec` model.
pub(crate) struct ExecClient {
    name: String,
    options: ExecOptions,
    timeout: Duration,
}

impl ExecClient {
    /// The client of the model `name` that runs as `options` say.
    pub(crate) fn new(name: &str, options: ExecOptions, timeout_secs: f64) -> ExecClient {
        ExecClient {
            name: name.to_owned(),
            options,
            timeout: super::model_ref::timeout(timeout_secs),
        }
    }

    /// Runs the program once for `request`.
    pub(crate) async fn complete(
        &self,
        request: &ChatRequest,
    ) -> Result<Completion, ProviderError> {
        // The client layer renders the command before the cache is asked.
        let call = request.exec.as_ref().ok_or_else(|| {
            ProviderError::Config(format!("model `{}`: no rendered command", self.name))
        })?;
        let copies = images::Copies::make(&request.messages)?;
        let call = copies.call(call);
        let stdin = stdin_json(&self.name, request, &call);
        let stdout = child::run(&call.argv, &self.options, &stdin, self.timeout).await?;
        copies.check()?;
        parse_stdout(&stdout)
    }
}

/// The JSON a program reads on stdin.
pub(crate) fn stdin_json(model: &str, request: &ChatRequest, call: &ExecCall) -> Vec<u8> {
    let mut body = json!({
        "model": model,
        "messages": request.messages.as_slice(),
        "format": request.format,
        "vars": call.vars,
        "argv": call.argv,
    });
    if let Some(map) = body.as_object_mut() {
        map.extend(request.sampling(&OPENAI_SAMPLING));
    }
    let mut bytes = serde_json::to_vec(&body).expect("requests serialize");
    bytes.push(b'\n');
    bytes
}

/// The answer in a program's stdout: a JSON object with a string `text`
/// (and optional `usage` and `tool_calls`), else the whole output as text;
/// trailing whitespace (a final newline, Tesseract's form feed) is not part of it.
pub(crate) fn parse_stdout(stdout: &[u8]) -> Result<Completion, ProviderError> {
    let text = String::from_utf8_lossy(stdout);
    let trimmed = text.trim_end();
    let envelope = trimmed
        .trim_start()
        .starts_with('{')
        .then(|| serde_json::from_str::<Map<String, Value>>(trimmed).ok())
        .flatten()
        .filter(|o| {
            o.get("text").is_some_and(Value::is_string)
                || (o.get("text").is_none() && o.get("tool_calls").is_some_and(Value::is_array))
        });
    let Some(envelope) = envelope else {
        return Ok(Completion::new(trimmed, Usage::default()));
    };
    let count = |key: &str| -> Result<Option<u64>, ProviderError> {
        match envelope.get("usage").and_then(|u| u.get(key)) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| {
                ProviderError::Malformed(format!("usage.{key} is not a whole number: {v}"))
            }),
        }
    };
    let usage = Usage {
        tokens_in: count("prompt_tokens")?,
        tokens_out: count("completion_tokens")?,
        tokens_cached: None,
        tokens_reasoning: None,
    };
    let text = envelope
        .get("text")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let mut completion = Completion::new(text, usage);
    completion.tool_calls = tool_calls(envelope.get("tool_calls"))?;
    Ok(completion)
}

/// The envelope's `tool_calls`: `[{"name", "arguments", "id"?}]`, the
/// arguments an object or JSON text (text that does not parse is kept, and
/// the rules fail it as invalid arguments).
fn tool_calls(value: Option<&Value>) -> Result<Vec<ToolCall>, ProviderError> {
    let calls = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(calls)) => calls,
        Some(other) => {
            return Err(ProviderError::Malformed(format!(
                "tool_calls is not a list: {other}"
            )));
        }
    };
    let malformed =
        |i: usize, what: &str| ProviderError::Malformed(format!("tool_calls[{i}]: {what}"));
    calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            let name = call
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| malformed(i, "no string `name`"))?;
            let id = call.get("id").and_then(Value::as_str).unwrap_or_default();
            match call.get("arguments") {
                None | Some(Value::Null) => Ok(ToolCall::from_text(id, name, "")),
                Some(Value::String(text)) => Ok(ToolCall::from_text(id, name, text)),
                Some(arguments @ Value::Object(_)) => Ok(ToolCall {
                    id: id.to_owned(),
                    name: name.to_owned(),
                    arguments: arguments.clone(),
                    invalid: None,
                }),
                Some(_) => Err(malformed(
                    i,
                    "`arguments` is neither an object nor JSON text",
                )),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
