//! The work folder, laid out as synthetic-QA pipelines usually are: `output/` (document texts and
//! chunk files `<doc>_<i>.txt`), `generated/` (raw pairs per document),
//! `cleaned/` (rated pairs that passed the filters), `final/` (the JSONL),
//! plus `journal.jsonl` (requests, for resume) and `report.json`.

use std::path::{Path, PathBuf};

use serde::Serialize;

/// Paths inside one work folder.
pub(crate) struct WorkDir {
    /// The folder.
    pub root: PathBuf,
}

/// A file of the work folder or the output that could not be written.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
pub(crate) struct WriteError {
    /// The file or folder.
    pub path: PathBuf,
    /// The cause.
    pub source: std::io::Error,
}

impl WorkDir {
    /// The work folder for `--out FILE` when `--work` is not given: `<FILE without extension>.synth/` beside it.
    pub(crate) fn default_for(out: &Path) -> PathBuf {
        let stem = out
            .file_stem()
            .map_or_else(|| "qa".into(), |s| s.to_string_lossy().into_owned());
        out.with_file_name(format!("{stem}.synth"))
    }

    /// Creates the folder and its four stage folders.
    pub(crate) fn create(root: &Path) -> Result<WorkDir, WriteError> {
        for sub in ["output", "generated", "cleaned", "final"] {
            let path = root.join(sub);
            std::fs::create_dir_all(&path).map_err(|source| WriteError { path, source })?;
        }
        Ok(WorkDir {
            root: root.to_path_buf(),
        })
    }

    /// `output/<name>`.
    pub(crate) fn output(&self, name: &str) -> PathBuf {
        self.root.join("output").join(name)
    }

    /// `<stage>/<doc>.json`.
    pub(crate) fn stage_file(&self, stage: &str, doc: &str) -> PathBuf {
        self.root.join(stage).join(format!("{doc}.json"))
    }

    /// `final/<name>`.
    pub(crate) fn final_file(&self, name: &str) -> PathBuf {
        self.root.join("final").join(name)
    }

    /// The request journal.
    pub(crate) fn journal(&self) -> PathBuf {
        self.root.join("journal.jsonl")
    }

    /// The run summary.
    pub(crate) fn report(&self) -> PathBuf {
        self.root.join("report.json")
    }
}

/// Writes `bytes` to `path` atomically (see [`crate::files::write_atomic`]).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    crate::files::write_atomic(path, bytes).map_err(|source| WriteError {
        path: path.to_path_buf(),
        source,
    })
}

/// Writes a value as pretty JSON.
pub(crate) fn write_json(path: &Path, value: &impl Serialize) -> Result<(), WriteError> {
    let mut text = serde_json::to_vec_pretty(value).expect("values serialize");
    text.push(b'\n');
    write_atomic(path, &text)
}

/// Writes values as JSON lines.
pub(crate) fn write_jsonl<T: Serialize>(path: &Path, rows: &[T]) -> Result<(), WriteError> {
    let mut text = Vec::new();
    for row in rows {
        serde_json::to_writer(&mut text, row).expect("rows serialize");
        text.push(b'\n');
    }
    write_atomic(path, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_work_folder_sits_beside_the_output() {
        assert_eq!(
            WorkDir::default_for(Path::new("data/qa.jsonl")),
            Path::new("data/qa.synth")
        );
        let dir = tempfile::tempdir().unwrap();
        let work = WorkDir::create(&dir.path().join("w")).unwrap();
        for sub in ["output", "generated", "cleaned", "final"] {
            assert!(work.root.join(sub).is_dir());
        }
        write_jsonl(&work.final_file("x.jsonl"), &[1, 2]).unwrap();
        assert_eq!(
            std::fs::read_to_string(work.final_file("x.jsonl")).unwrap(),
            "1\n2\n"
        );
    }
}
