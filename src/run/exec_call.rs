//! An `exec` model's command line, rendered for one instance of a spec into
//! the request that asks it (the model's answer and the judge's alike).

use crate::provider::exec::{CommandError, ExecContext};
use crate::provider::{ChatRequest, ModelSetup};
use crate::spec::Spec;

/// Why an `exec` model's command line does not render for an instance.
#[derive(Debug, thiserror::Error)]
#[error("model `{model}`: {source}")]
pub(super) struct ExecCallError {
    /// The model's name.
    model: String,
    /// What went wrong in its `command`.
    source: CommandError,
}

/// Renders an `exec` model's command line for an instance of `spec` into
/// `request` (nothing for other models); the error names the model.
pub(super) fn with_exec(
    request: &mut ChatRequest,
    model: &ModelSetup,
    vars: &serde_json::Map<String, serde_json::Value>,
    spec: &Spec,
) -> Result<(), ExecCallError> {
    let Some(exec) = &model.exec else {
        return Ok(());
    };
    let spec_dir = spec.file.parent().and_then(|d| std::path::absolute(d).ok());
    let context = ExecContext {
        model: &model.name,
        vars,
        spec_dir: spec_dir.as_deref(),
        messages: &request.messages,
    };
    let call = exec.call(&context).map_err(|source| ExecCallError {
        model: model.name.clone(),
        source,
    })?;
    request.exec = Some(call);
    Ok(())
}
