//! Golden files: reviewed expectations kept in `golden/`, compared on every
//! check, with colored diffs that name the fields that changed ([`diff`]) and
//! an insta-style review loop (a `.new` file beside a changed golden file;
//! `harness review` accepts or rejects).
//!
//! Two stores live here: golden instances (`<spec>/instances.jsonl`, what a
//! spec generates; [`instances`]) and golden transcripts (`<spec>/<model>.jsonl`,
//! what a model answered and how it scored; [`transcript`]). The replay
//! provider answers from the transcripts.
//!
//! A store, low in the layers: it imports only `prompt` (the message type)
//! and `text`.

mod departure;
pub(crate) mod diff;
pub(crate) mod fields;
pub(crate) mod instances;
pub(crate) mod stream;
pub(crate) mod transcript;

use std::io;
use std::path::{Path, PathBuf};

use diff::GoldenDiff;

/// What comparing a golden file found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GoldenStatus {
    /// The file matches.
    Unchanged,
    /// No golden file existed; `pending` is the `.new` written, if any.
    New {
        /// The `.new` file written for review.
        pending: Option<PathBuf>,
    },
    /// The file differs; `diff` says how, `pending` is the `.new` written, if any.
    Changed {
        /// The differences from the golden file to the new content.
        diff: GoldenDiff,
        /// The `.new` file written for review.
        pending: Option<PathBuf>,
    },
    /// `--bless` wrote the new content.
    Blessed,
}

impl GoldenStatus {
    /// Whether this counts as a difference (exit code 1).
    pub fn differs(&self) -> bool {
        matches!(
            self,
            GoldenStatus::New { .. } | GoldenStatus::Changed { .. }
        )
    }
}

/// How golden comparisons treat differences.
#[derive(Debug, Clone, Copy)]
pub struct GoldenMode {
    /// Write new content over the golden file.
    pub bless: bool,
    /// Write `.new` files for review (off in CI).
    pub write_pending: bool,
}

/// Environment variables that mark a CI system.
pub const CI_VARIABLES: &[&str] = &[
    "CI",
    "CONTINUOUS_INTEGRATION",
    "BUILD_NUMBER",
    "GITHUB_ACTIONS",
    "GITLAB_CI",
    "BUILDKITE",
    "TF_BUILD",
    "JENKINS_URL",
    "TEAMCITY_VERSION",
];

/// Whether we run under a CI system, where `.new` files are never written.
pub(crate) fn is_ci() -> bool {
    let set =
        |name: &str| std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
    CI_VARIABLES.iter().any(|v| set(v))
}

/// The review file beside a golden file.
pub(crate) fn pending_path(golden: &Path) -> PathBuf {
    let mut name = golden.as_os_str().to_owned();
    name.push(".new");
    PathBuf::from(name)
}

/// Every pending `.new` file under `dir`, sorted.
pub(crate) fn pending_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    if !dir.exists() {
        return Ok(found);
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "new") {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// The golden file a `.new` file proposes to replace.
pub(crate) fn golden_for_pending(pending: &Path) -> PathBuf {
    pending.with_extension("")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compare(path: &Path, actual: &str, mode: GoldenMode) -> io::Result<GoldenStatus> {
        let mut c = stream::StreamCompare::new(path, mode)?;
        for line in actual.lines() {
            c.push_line(line)?;
        }
        c.finish()
    }

    #[test]
    fn compare_writes_pending_files_and_blesses() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s/instances.jsonl");
        let review = GoldenMode {
            bless: false,
            write_pending: true,
        };
        let status = compare(&path, "a\n", review).unwrap();
        assert!(matches!(status, GoldenStatus::New { pending: Some(_) }));
        assert_eq!(
            pending_files(dir.path()).unwrap(),
            vec![pending_path(&path)]
        );
        assert_eq!(golden_for_pending(&pending_path(&path)), path);
        compare(
            &path,
            "a\n",
            GoldenMode {
                bless: true,
                write_pending: false,
            },
        )
        .unwrap();
        assert!(pending_files(dir.path()).unwrap().is_empty());
        let GoldenStatus::Changed { diff, .. } = compare(
            &path,
            "b\n",
            GoldenMode {
                bless: false,
                write_pending: false,
            },
        )
        .unwrap() else {
            panic!("expected a change");
        };
        assert!(diff.to_string().contains("-a\n+b"), "{diff}");
        assert!(pending_files(dir.path()).unwrap().is_empty());
    }
}
