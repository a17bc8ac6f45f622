//! JSON Lines: one object per line; blank lines are skipped.

use std::path::Path;
use std::sync::Arc;

use serde::de::IgnoredAny;

use super::error::{DatasetError, Origin};
use super::row::{Row, check_depth, json_message, object_row};

/// Parses every line of `text`, read from `file`.
pub(super) fn parse(text: &str, file: &Arc<Path>) -> Result<Vec<Row>, DatasetError> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let origin = Origin {
            file: file.clone(),
            line: i + 1,
        };
        check_depth(line, &origin)?;
        // Checked, not kept: rows stay text until an instance needs them.
        serde_json::from_str::<IgnoredAny>(line).map_err(|e| {
            DatasetError::in_file(
                file,
                i + 1,
                e.column(),
                format!("row is not valid JSON: {}", json_message(&e)),
            )
        })?;
        rows.push(object_row(line, origin)?);
    }
    Ok(rows)
}
