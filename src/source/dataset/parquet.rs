//! Parquet through the `parquet` crate's record API: each row becomes a JSON
//! object (nested lists and structs included), its row number standing in for a line.

use std::path::Path;
use std::sync::Arc;

use parquet::file::reader::{FileReader, SerializedFileReader};

use super::error::{DatasetError, Origin};
use serde_json::Value;

use super::row::Row;

/// Parses the Parquet file `data`, read from `file`.
pub(super) fn parse(data: Vec<u8>, file: &Arc<Path>) -> Result<Vec<Row>, DatasetError> {
    let reader = SerializedFileReader::new(bytes::Bytes::from(data))
        .map_err(|e| DatasetError::file(file, format!("not a readable Parquet file: {e}")))?;
    let total = reader.metadata().file_metadata().num_rows().max(0) as usize;
    let mut rows = Vec::with_capacity(total);
    let iter = reader
        .get_row_iter(None)
        .map_err(|e| DatasetError::file(file, format!("cannot read Parquet rows: {e}")))?;
    for (i, row) in iter.enumerate() {
        let origin = Origin {
            file: file.clone(),
            line: i + 1,
        };
        let row = row.map_err(|e| DatasetError::row(&origin, format!("row {}: {e}", i + 1)))?;
        match row.to_json_value() {
            Value::Object(fields) => rows.push(Row::new(&fields, origin)?),
            _ => unreachable!("a Parquet row converts to a JSON object"),
        }
    }
    Ok(rows)
}
