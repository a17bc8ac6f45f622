//! `[limits]`: the size cap of each kind of file the harness reads, raised
//! (or lowered) from its default. A 2 GiB dataset is refused under the
//! default 1 GiB cap; `dataset_bytes = 4294967296` lets it in. The caps of
//! `harness.toml` itself (16 MiB, read before its limits are known) and of
//! images (each spec's `max_image_bytes`) are not here.

use serde::Deserialize;

use crate::files::{FileKind, FileLimits};

/// `[limits]`: one key per kind of file, each a size in bytes. Every field
/// is named by [`FileKind::key`]; a unit test holds the two together.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileCaps {
    /// Spec files (default 16 MiB).
    pub spec_bytes: Option<u64>,
    /// Dataset files, and a gzip file's unpacked rows (default 1 GiB).
    pub dataset_bytes: Option<u64>,
    /// A spec's `tools_file` (default 16 MiB).
    pub tools_file_bytes: Option<u64>,
    /// Rhai scripts: `[generate] file`, a tool's `script_file` (default 4 MiB).
    pub script_bytes: Option<u64>,
    /// JSON Schema files (default 4 MiB).
    pub schema_bytes: Option<u64>,
    /// A judge rule's `rubric_file` (default 4 MiB).
    pub rubric_bytes: Option<u64>,
    /// A code rule's `runner` (default 4 MiB).
    pub runner_bytes: Option<u64>,
    /// A `--prices` file (default 64 MiB).
    pub prices_bytes: Option<u64>,
    /// Golden instance and transcript files (default 256 MiB).
    pub golden_bytes: Option<u64>,
    /// A run's `plan.json`, a hub download's list of files (default 64 MiB).
    pub plan_bytes: Option<u64>,
    /// The documents `harness synth` reads (default 256 MiB).
    pub document_bytes: Option<u64>,
}

impl FileCaps {
    /// Each kind with the cap this table sets for it, in file-kind order.
    pub(super) fn entries(&self) -> [(FileKind, Option<u64>); 11] {
        [
            (FileKind::Spec, self.spec_bytes),
            (FileKind::Prices, self.prices_bytes),
            (FileKind::Rubric, self.rubric_bytes),
            (FileKind::Dataset, self.dataset_bytes),
            (FileKind::Tools, self.tools_file_bytes),
            (FileKind::Script, self.script_bytes),
            (FileKind::Schema, self.schema_bytes),
            (FileKind::Runner, self.runner_bytes),
            (FileKind::Golden, self.golden_bytes),
            (FileKind::Manifest, self.plan_bytes),
            (FileKind::Document, self.document_bytes),
        ]
    }

    /// The defaults, with the caps this table sets.
    pub(crate) fn file_limits(&self) -> FileLimits {
        let mut limits = FileLimits::default();
        for (kind, cap) in self.entries() {
            if let Some(cap) = cap {
                limits.set(kind, cap);
            }
        }
        limits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_the_one_its_kind_names_and_sets_that_kind_alone() {
        // A value per key, each its own, so a key wired to another kind shows.
        let keys: Vec<(FileKind, &str)> = FileKind::ALL
            .into_iter()
            .filter_map(|k| k.key().map(|key| (k, key)))
            .collect();
        let text: String = keys
            .iter()
            .enumerate()
            .map(|(i, (_, key))| format!("{key} = {}\n", 4096 + i))
            .collect();
        let caps: FileCaps = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(caps.entries().len(), keys.len());
        let limits = caps.file_limits();
        for (i, (kind, key)) in keys.iter().enumerate() {
            assert_eq!(limits.cap(*kind), 4096 + i as u64, "{key}");
        }
        assert_eq!(
            limits.cap(FileKind::Config),
            FileKind::Config.default_limit()
        );
        let none = FileCaps::default().file_limits();
        assert_eq!(none, FileLimits::default());
        let unknown = toml::from_str::<FileCaps>("config_bytes = 1\n").unwrap_err();
        assert!(unknown.to_string().contains("unknown field"), "{unknown}");
    }
}
