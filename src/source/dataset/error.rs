//! Dataset errors: each names the dataset file and row, or the spec key at fault.

use std::path::Path;
use std::sync::Arc;

use crate::error::Location;

/// Where a dataset row came from: its file and 1-based line (row number for Parquet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The file the row was read from.
    pub file: Arc<Path>,
    /// 1-based line of the row (JSONL, JSON, CSV) or row number (Parquet).
    pub line: usize,
}

impl Origin {
    /// The row's position as a diagnostic location.
    pub fn location(&self) -> Location {
        Location {
            file: self.file.to_path_buf(),
            line: self.line,
            column: 1,
        }
    }
}

/// What a dataset error is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum At {
    /// A position in a dataset file.
    File(Location),
    /// A key of the spec's `[dataset]` table, with a 1-based position inside
    /// its string (0 when unknown), for script errors.
    Key(&'static str, usize, usize),
}

/// A problem reading, selecting or mapping dataset rows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct DatasetError {
    /// Where it is.
    pub at: At,
    /// What is wrong, naming the row and field when there is one.
    pub message: String,
}

impl DatasetError {
    /// An error at `line`:`column` of `file`.
    pub fn in_file(file: &Path, line: usize, column: usize, message: impl Into<String>) -> Self {
        DatasetError {
            at: At::File(Location {
                file: file.to_path_buf(),
                line: line.max(1),
                column: column.max(1),
            }),
            message: message.into(),
        }
    }

    /// An error about a whole file.
    pub fn file(file: &Path, message: impl Into<String>) -> Self {
        Self::in_file(file, 1, 1, message)
    }

    /// An error about the row at `origin`.
    pub fn row(origin: &Origin, message: impl Into<String>) -> Self {
        DatasetError {
            at: At::File(origin.location()),
            message: message.into(),
        }
    }

    /// An error about the spec key `key` of `[dataset]`.
    pub fn key(key: &'static str, message: impl Into<String>) -> Self {
        DatasetError {
            at: At::Key(key, 0, 0),
            message: message.into(),
        }
    }
}
