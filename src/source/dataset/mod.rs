//! Instances from data: rows read once from JSONL, JSON, CSV or Parquet files
//! (gzipped when the name ends in `.gz`) or from the Hugging Face hub, then
//! filtered, sampled and limited per split, interleaved across splits, and
//! mapped to instance variables when an instance is made.
//!
//! Rows stay as compact JSON text in shared `Arc`s (see [`read::read_rows`]);
//! an instance costs one row parse plus its mapping.
//!
//! Inside: `read` picks the format and caches files, one reader per format
//! (`jsonl`, `json`, `csv`, `parquet`) turns records into [`Row`]s
//! (`row`), `hf` fetches hub splits, `select` filters and samples, `map`
//! runs the mapping script. Every error names its file, line and field.

mod csv;
pub(crate) mod error;
pub(crate) mod hf;
mod json;
mod jsonl;
mod map;
mod parquet;
pub(crate) mod read;
mod row;
mod select;

use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value};

pub(crate) use error::{At, DatasetError};
use map::RowScript;
pub(crate) use row::Row;
use select::Selection;
pub(crate) use select::sample;

use crate::format::Dataset as DatasetDef;
use crate::scripting::DEFAULT_MAX_OPERATIONS;

/// A loaded dataset: the selected rows of every split, in instance order.
pub struct Dataset {
    /// Rows of each split (several hub files of one split are joined).
    splits: Vec<Arc<Vec<Row>>>,
    /// Split names, parallel to `splits` (`None` when no split is named).
    names: Vec<Option<String>>,
    /// Instance index → (split, row).
    order: Vec<(u32, u32)>,
    fields: Option<Vec<(String, Vec<String>)>>,
    map: Option<RowScript>,
    name: String,
}

impl Dataset {
    /// Reads and selects the rows `def` describes; paths are relative to `spec_dir`.
    pub fn load(
        def: &DatasetDef,
        spec_dir: &Path,
        data: &Map<String, Value>,
        seed: u64,
    ) -> Result<Dataset, DatasetError> {
        let names = split_names(def)?;
        let max_ops = def.max_operations.unwrap_or(DEFAULT_MAX_OPERATIONS);
        if let Some(message) = crate::scripting::max_operations_problem(max_ops) {
            return Err(DatasetError::key("max_operations", message));
        }
        let filter = def
            .filter
            .as_deref()
            .map(|s| RowScript::new("filter", s, data, max_ops))
            .transpose()?;
        let map = def
            .map
            .as_deref()
            .map(|s| RowScript::new("map", s, data, max_ops))
            .transpose()?;
        let selection = Selection {
            filter: filter.as_ref(),
            sample: def.sample,
            limit: def.limit,
            seed,
        };
        let mut splits = Vec::new();
        let mut selected = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let rows = split_rows(def, spec_dir, name.as_deref())?;
            selected.push(select::select(&rows, &selection, i as u64)?);
            splits.push(rows);
        }
        Ok(Dataset {
            order: select::interleave(&selected),
            splits,
            names,
            fields: def.fields.as_ref().map(|f| {
                f.iter()
                    .map(|(k, v)| (k.clone(), v.paths().to_vec()))
                    .collect()
            }),
            map,
            name: dataset_name(&def.path),
        })
    }

    /// Instances the dataset yields.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether no row was selected.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The name reports use: the hub id, or the data directory's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The row of instance `index`.
    pub fn row(&self, index: u64) -> Option<&Row> {
        let (s, r) = *self.order.get(usize::try_from(index).ok()?)?;
        self.splits[s as usize].get(r as usize)
    }

    /// The variables of instance `index`: the row after `fields` and `map`, plus `split`.
    pub fn vars(&self, index: u64) -> Result<Map<String, Value>, DatasetError> {
        let Some(&(s, r)) = usize::try_from(index).ok().and_then(|i| self.order.get(i)) else {
            return Err(DatasetError::key(
                "path",
                format!("instance {index} is past the dataset's {} rows", self.len()),
            ));
        };
        let row = &self.splits[s as usize][r as usize];
        let mut vars = match &self.fields {
            None => row.value(),
            Some(fields) => pick_fields(row, fields)?,
        };
        if let Some(map) = &self.map {
            vars = map.eval_map(&vars, &row.origin)?;
        }
        if let Some(split) = &self.names[s as usize] {
            vars.entry("split")
                .or_insert_with(|| Value::String(split.clone()));
        }
        Ok(vars)
    }
}

/// The splits to read: `splits`, else `split`, else one unnamed.
fn split_names(def: &DatasetDef) -> Result<Vec<Option<String>>, DatasetError> {
    let names: Vec<Option<String>> = match (&def.split, def.splits.is_empty()) {
        (Some(_), false) => {
            return Err(DatasetError::key(
                "splits",
                "use `split` (one) or `splits` (several), not both",
            ));
        }
        (Some(s), true) => vec![Some(s.clone())],
        (None, false) => def.splits.iter().cloned().map(Some).collect(),
        (None, true) => vec![None],
    };
    let hub = def.path.starts_with("hf://");
    if hub && names == [None] {
        return Err(DatasetError::key(
            "path",
            "an hf:// dataset needs `split = \"...\"` or `splits = [...]`",
        ));
    }
    if !hub && names.len() > 1 && !def.path.contains("{split}") {
        return Err(DatasetError::key(
            "path",
            "several splits need `{split}` in `path` (e.g. \"data/{split}.jsonl\")",
        ));
    }
    if !hub && def.path.contains("{split}") && names == [None] {
        return Err(DatasetError::key(
            "path",
            "`path` has `{split}` but no `split` or `splits` is given",
        ));
    }
    Ok(names)
}

/// The rows of one split, before selection.
fn split_rows(
    def: &DatasetDef,
    spec_dir: &Path,
    split: Option<&str>,
) -> Result<Arc<Vec<Row>>, DatasetError> {
    let hub = hf::HubSplit::parse(&def.path, def.config.as_deref(), split.unwrap_or(""));
    let files = match hub {
        Some(parsed) => {
            let parsed = parsed.map_err(|e| DatasetError::key("path", e.to_string()))?;
            hf::split_files(&parsed)?
        }
        None => {
            let rel = def.path.replace("{split}", split.unwrap_or(""));
            vec![spec_dir.join(rel)]
        }
    };
    let format = match hub_format(&def.path) {
        Some(f) => Some(f),
        None => def.format,
    };
    let mut parts = files
        .iter()
        .map(|f| read::read_rows(f, format, def.key.as_deref()))
        .collect::<Result<Vec<_>, _>>()?;
    if parts.len() == 1 {
        return Ok(parts.pop().expect("one part"));
    }
    Ok(Arc::new(
        parts.iter().flat_map(|p| p.iter().cloned()).collect(),
    ))
}

/// The hub serves Parquet whatever the dataset was uploaded as.
fn hub_format(path: &str) -> Option<crate::format::DatasetFormat> {
    path.starts_with("hf://")
        .then_some(crate::format::DatasetFormat::Parquet)
}

/// `fields`: each variable from the first of its paths present in the row.
fn pick_fields(
    row: &Row,
    fields: &[(String, Vec<String>)],
) -> Result<Map<String, Value>, DatasetError> {
    let mut vars = Map::new();
    let fields_of_row = row.value();
    for (name, paths) in fields {
        let found = paths.iter().find_map(|p| select::lookup(&fields_of_row, p));
        let Some(value) = found else {
            let keys: Vec<&str> = fields_of_row.keys().map(String::as_str).collect();
            return Err(DatasetError::row(
                &row.origin,
                format!(
                    "row {}: field `{}` (for variable `{name}`) is missing; the row has: {}",
                    row.origin.line,
                    paths.join("` or `"),
                    keys.join(", ")
                ),
            ));
        };
        vars.insert(name.clone(), value.clone());
    }
    Ok(vars)
}

/// `hf://owner/name` → `owner/name`; a file path → its directory's name (its stem at top level).
fn dataset_name(path: &str) -> String {
    if let Some(repo) = path.strip_prefix("hf://") {
        return repo.to_owned();
    }
    let p = Path::new(path);
    let dir = p
        .parent()
        .and_then(Path::file_name)
        .map(|d| d.to_string_lossy().into_owned());
    dir.filter(|d| d != "..").unwrap_or_else(|| {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        name.split('.').next().unwrap_or_default().to_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::dataset_name;

    #[test]
    fn names_for_reports() {
        assert_eq!(
            dataset_name("hf://evilfreelancer/rrr-benchmark"),
            "evilfreelancer/rrr-benchmark"
        );
        assert_eq!(dataset_name("../datasets/rrr_ru/{split}.jsonl"), "rrr_ru");
        assert_eq!(dataset_name("rows.jsonl.gz"), "rows");
    }
}
