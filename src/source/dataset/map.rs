//! A `[dataset]` Rhai script (`filter` or `map`) run once per row, which sees
//! the row as `row` and the spec's tables as `data`.

use rhai::{AST, Dynamic, Engine, Scope};
use serde_json::{Map, Value};

use super::error::{At, DatasetError, Origin};
use crate::format::depth::{MAX_DEPTH, too_deep_text};
use crate::scripting::value::{ToJsonError, drop_deep, drop_scope, to_json};
use crate::scripting::{ScriptError, compile, on_script_stack, sandboxed_engine};

/// A compiled per-row script.
pub(super) struct RowScript {
    key: &'static str,
    engine: Engine,
    ast: AST,
    data: Dynamic,
}

impl RowScript {
    /// Compiles the script of `[dataset].<key>`.
    pub(super) fn new(
        key: &'static str,
        source: &str,
        data: &Map<String, Value>,
        max_operations: u64,
    ) -> Result<RowScript, DatasetError> {
        let engine = sandboxed_engine(max_operations);
        let ast =
            compile(&engine, &["row", "data"], source).map_err(|e| script_error(key, None, &e))?;
        let data = rhai::serde::to_dynamic(data).map_err(|e| script_error(key, None, &e.into()))?;
        Ok(RowScript {
            key,
            engine,
            ast,
            data,
        })
    }

    /// Runs the script on `row`.
    pub(super) fn eval(
        &self,
        row: &Map<String, Value>,
        origin: &Origin,
    ) -> Result<Dynamic, DatasetError> {
        let mut scope = Scope::new();
        let row_value = rhai::serde::to_dynamic(row)
            .map_err(|e| script_error(self.key, Some(origin), &e.into()))?;
        scope.push_constant_dynamic("row", row_value);
        scope.push_constant_dynamic("data", self.data.clone());
        let result = self
            .engine
            .eval_ast_with_scope::<Dynamic>(&mut scope, &self.ast);
        drop_scope(scope);
        result.map_err(|e| script_error(self.key, Some(origin), &e.into()))
    }

    /// Runs the script on `row` and requires a map, returned as instance variables.
    pub(super) fn eval_map(
        &self,
        row: &Map<String, Value>,
        origin: &Origin,
    ) -> Result<Map<String, Value>, DatasetError> {
        // Rhai walks the values a script builds recursively, however deep.
        on_script_stack(|| self.eval_map_here(row, origin))
    }

    fn eval_map_here(
        &self,
        row: &Map<String, Value>,
        origin: &Origin,
    ) -> Result<Map<String, Value>, DatasetError> {
        let result = self.eval(row, origin)?;
        let type_name = result.type_name();
        match to_json(result, MAX_DEPTH) {
            Ok(Value::Object(vars)) => Ok(vars),
            Err(ToJsonError::TooDeep { depth }) => Err(self.row_error(
                origin,
                too_deep_text("returned a map that nests", depth),
            )),
            _ => Err(self.row_error(
                origin,
                format!("must return a map of instance variables (#{{ name: value }}), but it returned {type_name}"),
            )),
        }
    }

    /// Runs the script on `row` and requires a boolean.
    pub(super) fn eval_bool(
        &self,
        row: &Map<String, Value>,
        origin: &Origin,
    ) -> Result<bool, DatasetError> {
        let answer = on_script_stack(|| {
            let result = self.eval(row, origin)?;
            let answer = result.as_bool();
            // Not a boolean: it may nest deep.
            drop_deep([result]);
            Ok(answer)
        })?;
        answer.map_err(|t| {
            self.row_error(
                origin,
                format!("must return true or false, but it returned {t}"),
            )
        })
    }

    /// A wrong result: the script's fault, so at its key in the spec, naming the row.
    fn row_error(&self, origin: &Origin, message: String) -> DatasetError {
        DatasetError {
            at: At::Key(self.key, 0, 0),
            message: format!(
                "[dataset] {} on the row at {}:{} {message}",
                self.key,
                origin.file.display(),
                origin.line
            ),
        }
    }
}

/// A script error at its position in the spec, naming the row it ran on.
fn script_error(key: &'static str, origin: Option<&Origin>, e: &ScriptError) -> DatasetError {
    let message = match origin {
        Some(o) => format!(
            "{key} on the row at {}:{}: {}",
            o.file.display(),
            o.line,
            e.message
        ),
        None => e.message.clone(),
    };
    DatasetError {
        at: At::Key(key, e.line, e.column),
        message,
    }
}
