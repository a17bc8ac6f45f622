//! CSV with a header row. Cells become typed values: canonical integers and
//! decimals become numbers, cells holding a JSON list or object become that
//! value, everything else stays a string (so `007` keeps its zeros).

use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::error::{DatasetError, Origin};
use super::row::Row;

/// Parses `text`, read from `file`.
pub(super) fn parse(text: &str, file: &Arc<Path>) -> Result<Vec<Row>, DatasetError> {
    let mut reader = ::csv::ReaderBuilder::new().from_reader(text.as_bytes());
    let error = |e: ::csv::Error| {
        let line = e.position().map_or(1, |p| p.line() as usize);
        DatasetError::in_file(file, line, 1, format!("bad CSV: {e}"))
    };
    let headers: Vec<String> = reader
        .headers()
        .map_err(error)?
        .iter()
        .map(str::to_owned)
        .collect();
    for (i, h) in headers.iter().enumerate() {
        if headers[..i].contains(h) {
            return Err(DatasetError::file(
                file,
                format!("the header names column `{h}` twice"),
            ));
        }
    }
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(error)?;
        let line = record.position().map_or(1, |p| p.line() as usize);
        let value: Map<String, Value> = headers
            .iter()
            .zip(record.iter())
            .map(|(h, cell)| (h.clone(), typed(cell)))
            .collect();
        let origin = Origin {
            file: file.clone(),
            line,
        };
        rows.push(Row::new(&value, origin)?);
    }
    Ok(rows)
}

/// The typed value of one cell.
fn typed(cell: &str) -> Value {
    if let Ok(i) = cell.parse::<i64>()
        && i.to_string() == cell
    {
        return i.into();
    }
    let numeric = cell
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | 'e' | 'E'));
    let int_part = cell.trim_start_matches('-').split(['.', 'e', 'E']).next();
    // A leading zero before more digits is an identifier (`007.1`), not a number.
    let canonical = int_part.is_some_and(|p| p == "0" || (!p.is_empty() && !p.starts_with('0')));
    if numeric
        && canonical
        && cell.contains('.')
        && let Ok(f) = cell.parse::<f64>()
        && let Some(n) = serde_json::Number::from_f64(f)
    {
        return Value::Number(n);
    }
    if (cell.starts_with('[') || cell.starts_with('{'))
        && let Ok(v) = serde_json::from_str::<Value>(cell)
    {
        return v;
    }
    Value::String(cell.to_owned())
}

#[cfg(test)]
mod tests {
    use super::typed;
    use serde_json::json;

    #[test]
    fn cells_are_typed_conservatively() {
        assert_eq!(typed("42"), json!(42));
        assert_eq!(typed("-7"), json!(-7));
        assert_eq!(typed("007"), json!("007"));
        assert_eq!(typed("3.5"), json!(3.5));
        assert_eq!(typed("0.25"), json!(0.25));
        assert_eq!(typed("007.5"), json!("007.5"));
        assert_eq!(typed("1.2.3"), json!("1.2.3"));
        assert_eq!(typed("[1, 2]"), json!([1, 2]));
        assert_eq!(typed("[not json"), json!("[not json"));
        assert_eq!(typed("Привет"), json!("Привет"));
        assert_eq!(typed(""), json!(""));
    }
}
