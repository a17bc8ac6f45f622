//! Reading one dataset file: the format from `format` or the extension, gzip
//! unpacked when the name ends in `.gz`, and a process-wide cache so a file
//! read by several specs (or loads) is parsed once while anyone holds it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, Weak};
use std::time::SystemTime;

use super::error::DatasetError;
use super::row::Row;
use crate::files::{self, FileKind};
use crate::format::DatasetFormat;

/// The format of `path`: `format` if given, else from its extension (after any `.gz`).
pub(crate) fn detect_format(
    path: &Path,
    format: Option<DatasetFormat>,
) -> Result<DatasetFormat, DatasetError> {
    if let Some(f) = format {
        return Ok(f);
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let name = name
        .strip_suffix(".gz")
        .unwrap_or(&name)
        .to_ascii_lowercase();
    let ext = name.rsplit('.').next().unwrap_or("");
    match ext {
        "jsonl" | "ndjson" => Ok(DatasetFormat::Jsonl),
        "json" => Ok(DatasetFormat::Json),
        "csv" => Ok(DatasetFormat::Csv),
        "parquet" => Ok(DatasetFormat::Parquet),
        _ => Err(DatasetError::key(
            "path",
            format!(
                "cannot tell the format of {} from its extension; set `format` to jsonl, json, csv or parquet",
                path.display()
            ),
        )),
    }
}

type CacheKey = (
    PathBuf,
    Option<SystemTime>,
    u64,
    DatasetFormat,
    Option<String>,
);

static CACHE: LazyLock<Mutex<BTreeMap<CacheKey, Weak<Vec<Row>>>>> =
    LazyLock::new(|| Mutex::new(BTreeMap::new()));

/// The rows of `path`, parsed once per process while any caller still holds them.
pub(crate) fn read_rows(
    path: &Path,
    format: Option<DatasetFormat>,
    key: Option<&str>,
) -> Result<Arc<Vec<Row>>, DatasetError> {
    let format = detect_format(path, format)?;
    let meta = std::fs::metadata(path)
        .map_err(|e| DatasetError::key("path", format!("cannot read {}: {e}", path.display())))?;
    let cache_key = (
        path.to_path_buf(),
        meta.modified().ok(),
        meta.len(),
        format,
        key.map(str::to_owned),
    );
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(rows) = cache.get(&cache_key).and_then(Weak::upgrade) {
        return Ok(rows);
    }
    let rows = Arc::new(parse_file(path, format, key)?);
    cache.retain(|_, w| w.strong_count() > 0);
    cache.insert(cache_key, Arc::downgrade(&rows));
    Ok(rows)
}

/// Reads and parses `path` without the cache.
pub(crate) fn parse_file(
    path: &Path,
    format: DatasetFormat,
    key: Option<&str>,
) -> Result<Vec<Row>, DatasetError> {
    let file: Arc<Path> = Arc::from(path);
    let raw = files::read_bounded(path, FileKind::Dataset)
        .map_err(|e| DatasetError::key("path", format!("cannot read {}: {e}", path.display())))?;
    let data = if path.extension().is_some_and(|e| e == "gz") {
        // Unpacked under the same cap: a small file may unpack without end.
        let unpacked = flate2::read::MultiGzDecoder::new(raw.as_slice());
        let hint = (raw.len() as u64).saturating_mul(4);
        files::take_capped(unpacked, FileKind::Dataset, FileKind::Dataset.limit(), hint)
            .map_err(|e| DatasetError::file(path, format!("cannot unpack gzip: {e}")))?
    } else {
        raw
    };
    if format == DatasetFormat::Parquet {
        return super::parquet::parse(data, &file);
    }
    let text = String::from_utf8(data).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|b| **b == b'\n').count() + 1;
        DatasetError::in_file(path, line, 1, "the file is not valid UTF-8")
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    match format {
        DatasetFormat::Jsonl => super::jsonl::parse(text, &file),
        DatasetFormat::Json => super::json::parse(text, &file, key),
        DatasetFormat::Csv => super::csv::parse(text, &file),
        DatasetFormat::Parquet => unreachable!("handled above"),
    }
}
