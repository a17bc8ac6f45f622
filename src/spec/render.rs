//! An instance's messages: its prompt's templates rendered with its
//! variables (read lazily, [`super::template_vars`]), `data`, `index` and
//! the choice list, its images attached and its history spliced in.

use serde_json::{Map, Value};

use super::{Spec, choices, template_vars};
use crate::error::Diagnostic;
use crate::prompt::Message;
use minijinja::Value as TemplateValue;

impl Spec {
    /// The messages for an instance with `vars`.
    pub fn render(
        &self,
        index: u64,
        vars: &Map<String, Value>,
    ) -> Result<Vec<Message>, Diagnostic> {
        let vars = std::sync::Arc::new(vars.clone());
        self.render_with(index, &vars, &template_vars::lazy(&vars))
    }

    /// The messages for an instance with `vars`, which its templates read
    /// as `template_vars` ([`template_vars::lazy`]).
    pub(super) fn render_with(
        &self,
        index: u64,
        vars: &Map<String, Value>,
        template_vars: &TemplateValue,
    ) -> Result<Vec<Message>, Diagnostic> {
        let choice_list = match self.choice_set(index, vars)? {
            Some(set) => choices::ChoicesRuntime::template_list(&set),
            None => Value::Null,
        };
        let context = minijinja::context! {
            data => self.data.clone(),
            index => index,
            choice_list => TemplateValue::from(minijinja::value::Serde(&choice_list)),
            ..template_vars.clone()
        };
        let mut messages = self.prompt.render(&context).map_err(|e| {
            self.template_diagnostic(&e, Some(index))
                .with_source(self.map.source())
        })?;
        self.attach_images(index, &context, vars, &mut messages)?;
        if let Some(var) = &self.def.prompt.history {
            let turns = crate::verify::lookup(vars, var)
                .ok_or_else(|| format!("the instance has no variable `{var}`"))
                .and_then(|v| crate::prompt::history_turns(v).map_err(|e| e.to_string()))
                .map_err(|message| {
                    let at = crate::format::key_path!["prompt", "history"];
                    self.var_diagnostic(index, ("history", var), &message, at)
                })?;
            let at = messages
                .iter()
                .position(|m| m.role != crate::format::Role::System)
                .unwrap_or(messages.len());
            messages.splice(at..at, turns);
        }
        Ok(messages)
    }
}
