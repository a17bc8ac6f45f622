//! `exec` models' command templates rendered against a spec's instances at
//! check time, as a run would render them: a name the instances do not set
//! is a located error in `harness.toml` naming the model and `command[N]`,
//! not one `config_error` per instance of a run.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::error::{Diagnostic, ErrorKind, Location};
use crate::provider::ExecOptions;
use crate::provider::exec::{CommandError, ExecContext};
use crate::spec::Spec;

/// An `exec` model whose command `harness check` renders for every instance.
#[derive(Debug, Clone)]
pub struct ExecModel {
    /// The model's name in `harness.toml`.
    pub name: String,
    /// Its command and settings.
    pub options: ExecOptions,
    /// Where each `command[N]` stands in `harness.toml`, by `N`.
    pub arguments: Vec<Location>,
    /// The text of `harness.toml`, for the excerpt under an error.
    pub source: String,
}

/// Problems already reported for a spec: one per model and argument.
#[derive(Debug, Default)]
pub(super) struct Seen(BTreeSet<(String, usize)>);

/// Renders every model's command for instance `index` (`vars`, `messages`)
/// of `spec`; each argument's first failure becomes a diagnostic.
pub(super) fn check_commands(
    spec: &Spec,
    models: &[ExecModel],
    index: u64,
    vars: &Map<String, Value>,
    messages: &[crate::prompt::Message],
    seen: &mut Seen,
) -> Vec<Diagnostic> {
    let spec_dir = spec.file.parent().and_then(|d| std::path::absolute(d).ok());
    let mut out = Vec::new();
    for model in models {
        let context = ExecContext {
            model: &model.name,
            vars,
            spec_dir: spec_dir.as_deref(),
            messages,
        };
        let Err(e) = model.options.call(&context) else {
            continue;
        };
        let argument = match &e {
            CommandError::Template { index, .. } | CommandError::UnknownVariable { index, .. } => {
                *index
            }
            CommandError::Empty | CommandError::NoProgram => 0,
        };
        if seen.0.insert((model.name.clone(), argument)) {
            out.push(diagnostic(spec, model, argument, &e, index, vars));
        }
    }
    out
}

fn diagnostic(
    spec: &Spec,
    model: &ExecModel,
    argument: usize,
    e: &CommandError,
    index: u64,
    vars: &Map<String, Value>,
) -> Diagnostic {
    let location = model.arguments.get(argument).cloned().unwrap_or_else(|| {
        let file = model.arguments.first().map(|l| l.file.clone());
        Location::file_start(&file.unwrap_or_default())
    });
    let what = e
        .to_string()
        .replace("the instance", &format!("instance {index}"));
    let d = Diagnostic::new(
        ErrorKind::Invalid,
        location,
        format!("model `{}`, spec `{}`: {what}", model.name, spec.id),
    )
    .with_source(&model.source);
    let have: Vec<&str> = vars.keys().map(String::as_str).collect();
    let sets = format!(
        "the instance sets: {}; every command also sees `model`, `spec_dir` and `images`",
        have.join(", ")
    );
    match e {
        CommandError::UnknownVariable { name, .. } => {
            match crate::error::did_you_mean(name, have.iter().copied()) {
                Some(s) => d.with_help(format!("did you mean `{s}`? {sets}")),
                None => d.with_help(sets),
            }
        }
        _ => d,
    }
}
