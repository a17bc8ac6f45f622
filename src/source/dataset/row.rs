//! One dataset row, kept as JSON text, and the helpers every format reader
//! uses to turn its records into rows.

use serde_json::{Map, Value};

use super::error::{DatasetError, Origin};
use crate::format::depth::{MAX_DEPTH, text_depth, too_deep_text, value_depth};

/// One row: its fields as JSON text, and where it came from.
///
/// Parsed JSON costs about eight times its text (100,000 RRR rows: 95 MiB of
/// text, 740 MiB as values), so rows keep their text and are parsed when an
/// instance is made, which costs microseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    json: Box<str>,
    /// Its file and line.
    pub origin: Origin,
}

impl Row {
    /// A row of `fields`; refused when it nests past the depth limit.
    pub fn new(fields: &Map<String, Value>, origin: Origin) -> Result<Row, DatasetError> {
        let depth = fields.values().map(value_depth).max().unwrap_or(0) + 1;
        if depth > MAX_DEPTH {
            return Err(too_deep(&origin, depth));
        }
        let json = serde_json::to_string(fields).expect("JSON values serialize");
        Ok(Row {
            json: json.into_boxed_str(),
            origin,
        })
    }

    /// The row's fields.
    pub fn value(&self) -> Map<String, Value> {
        serde_json::from_str(&self.json).expect("rows hold JSON objects, checked when read")
    }
}

/// A row from JSON text already known to be valid: it must be an object.
pub(super) fn object_row(text: &str, origin: Origin) -> Result<Row, DatasetError> {
    let text = text.trim();
    check_depth(text, &origin)?;
    if text.starts_with('{') {
        return Ok(Row {
            json: text.into(),
            origin,
        });
    }
    let value: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    Err(DatasetError::row(
        &origin,
        format!(
            "row {}: a row must be a JSON object, not {}",
            origin.line,
            crate::text::json_kind(&value)
        ),
    ))
}

/// Refuses row text nested past the depth limit, measured without parsing.
pub(super) fn check_depth(text: &str, origin: &Origin) -> Result<(), DatasetError> {
    let depth = text_depth(text.as_bytes());
    if depth > MAX_DEPTH {
        return Err(too_deep(origin, depth));
    }
    Ok(())
}

/// The error of a row nested past the depth limit: the records of its
/// instance could not be read back.
fn too_deep(origin: &Origin, depth: usize) -> DatasetError {
    let what = format!("row {} nests", origin.line);
    DatasetError::row(origin, too_deep_text(&what, depth))
}

/// A JSON parse error without serde's own `at line L column C`, which the location states.
pub(super) fn json_message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}
