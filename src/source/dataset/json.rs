//! JSON: an array of row objects, or an object holding that array under `key`.
//! Rows keep the line they start on, found from their offset in the text.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::value::RawValue;

use super::error::{DatasetError, Origin};
use super::row::{Row, json_message, object_row};
use crate::error::Location;

/// Parses `text`, read from `file`; `key` names the list inside a top-level object.
pub(super) fn parse(
    text: &str,
    file: &Arc<Path>,
    key: Option<&str>,
) -> Result<Vec<Row>, DatasetError> {
    let invalid = |e: serde_json::Error| {
        DatasetError::in_file(
            file,
            e.line(),
            e.column(),
            format!("not valid JSON: {}", json_message(&e)),
        )
    };
    let top: &RawValue = serde_json::from_str(text).map_err(invalid)?;
    let list = match (top.get().trim_start().starts_with('{'), key) {
        (true, Some(key)) => {
            let object: BTreeMap<String, &RawValue> =
                serde_json::from_str(top.get()).map_err(invalid)?;
            *object.get(key).ok_or_else(|| {
                let keys: Vec<&str> = object.keys().map(String::as_str).collect();
                DatasetError::file(
                    file,
                    format!(
                        "the object has no key `{key}` (it has: {})",
                        keys.join(", ")
                    ),
                )
            })?
        }
        (true, None) => {
            let object: BTreeMap<String, &RawValue> =
                serde_json::from_str(top.get()).map_err(invalid)?;
            let lists: Vec<&str> = object
                .iter()
                .filter(|(_, v)| v.get().starts_with('['))
                .map(|(k, _)| k.as_str())
                .collect();
            return Err(DatasetError::file(
                file,
                format!(
                    "the file is an object: set `key` to the list of rows (lists: {})",
                    lists.join(", ")
                ),
            ));
        }
        (false, _) => top,
    };
    let items: Vec<&RawValue> = serde_json::from_str(list.get()).map_err(|_| {
        let at = offset_location(file, text, list);
        DatasetError::in_file(&at.file, at.line, at.column, "expected a list of rows")
    })?;
    items
        .into_iter()
        .map(|item| {
            let at = offset_location(file, text, item);
            let origin = Origin {
                file: file.clone(),
                line: at.line,
            };
            object_row(item.get(), origin)
        })
        .collect()
}

/// The position of `raw`, a slice of `text`, in the file.
fn offset_location(file: &Path, text: &str, raw: &RawValue) -> Location {
    let offset = (raw.get().as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
    Location::from_offset(file, text, offset)
}
