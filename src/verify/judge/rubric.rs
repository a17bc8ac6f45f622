//! Rubrics: levels with a name and criteria, normalized to 0..1 as
//! `score = (level - min_level) / (max_level - min_level)`.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::Location;

/// The largest level number, either way.
pub(crate) const MAX_LEVEL: i64 = 1_000_000;

/// One level of a rubric.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Level {
    /// The level's number (any integers; the lowest scores 0, the highest 1).
    pub level: i64,
    /// A short name: `Отлично`, `Good`.
    pub name: String,
    /// What an answer at this level looks like.
    pub criteria: String,
}

/// Why a rubric cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RubricError {
    /// Fewer than two levels.
    #[error("a rubric needs at least two levels, this one has {0}")]
    TooFewLevels(usize),
    /// A level number given twice.
    #[error("level {0} appears twice")]
    Repeated(i64),
    /// A level with an empty name.
    #[error("level {0} has no name")]
    Unnamed(i64),
    /// A level number past [`MAX_LEVEL`] either way: the median of two
    /// samples adds levels, and floats tell big ones apart no more.
    #[error(
        "level {0} is out of range: a level is a whole number from -{MAX_LEVEL} to {MAX_LEVEL}"
    )]
    OutOfRange(i64),
    /// The rubric file could not be read.
    #[error("cannot read rubric file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The rubric file is not valid TOML of `[[level]]` tables.
    #[error("{at}: {message}")]
    Toml {
        /// Where.
        at: Location,
        /// What the TOML parser said.
        message: String,
    },
    /// The levels of a rubric file are not a valid rubric.
    #[error("{}: {source}", path.display())]
    InFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with its levels.
        source: Box<RubricError>,
    },
}

/// A validated rubric: at least two distinct levels, sorted from highest to lowest.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rubric {
    levels: Vec<Level>,
}

/// A rubric file: `[[level]]` tables.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RubricFile {
    level: Vec<Level>,
}

impl Rubric {
    /// Checks the levels: two or more, no number repeated, no empty name.
    pub fn new(mut levels: Vec<Level>) -> Result<Rubric, RubricError> {
        if levels.len() < 2 {
            return Err(RubricError::TooFewLevels(levels.len()));
        }
        if let Some(l) = levels
            .iter()
            .find(|l| l.level.unsigned_abs() > MAX_LEVEL as u64)
        {
            return Err(RubricError::OutOfRange(l.level));
        }
        levels.sort_by_key(|l| std::cmp::Reverse(l.level));
        if let Some(w) = levels.windows(2).find(|w| w[0].level == w[1].level) {
            return Err(RubricError::Repeated(w[0].level));
        }
        if let Some(l) = levels.iter().find(|l| l.name.trim().is_empty()) {
            return Err(RubricError::Unnamed(l.level));
        }
        Ok(Rubric { levels })
    }

    /// Reads a rubric file of `[[level]]` tables.
    pub fn read(path: &Path) -> Result<Rubric, RubricError> {
        let text = crate::files::read_text(path, crate::files::FileKind::Rubric).map_err(|e| {
            RubricError::Read {
                path: path.to_path_buf(),
                source: e.into(),
            }
        })?;
        let file: RubricFile = toml::from_str(&text).map_err(|e| {
            let at = match e.span() {
                Some(span) => Location::from_offset(path, &text, span.start),
                None => Location::file_start(path),
            };
            RubricError::Toml {
                at,
                message: e.message().to_owned(),
            }
        })?;
        Rubric::new(file.level).map_err(|e| RubricError::InFile {
            path: path.to_path_buf(),
            source: Box::new(e),
        })
    }

    /// Levels from highest to lowest.
    pub fn levels(&self) -> &[Level] {
        &self.levels
    }

    /// The lowest level's number.
    pub fn min(&self) -> i64 {
        self.levels.last().expect("two or more levels").level
    }

    /// The highest level's number.
    pub fn max(&self) -> i64 {
        self.levels[0].level
    }

    /// The level with this number.
    pub fn get(&self, level: i64) -> Option<&Level> {
        self.levels.iter().find(|l| l.level == level)
    }

    /// `(level - min) / (max - min)`: the lowest level is 0, the highest 1.
    /// Takes a fractional level too (the median of an even number of judge samples).
    pub fn normalize(&self, level: f64) -> f64 {
        let (min, max) = (self.min() as f64, self.max() as f64);
        ((level - min) / (max - min)).clamp(0.0, 1.0)
    }

    /// The numbers of every level, highest first.
    pub fn numbers(&self) -> Vec<i64> {
        self.levels.iter().map(|l| l.level).collect()
    }

    /// A short digest of the levels and the judge prompt template: judgements under
    /// different hashes are different measurements and reports keep them apart.
    pub fn hash(&self, template: &str) -> String {
        let mut h = Sha256::new();
        h.update(serde_json::to_vec(&self.levels).expect("levels serialize"));
        h.update([0]);
        h.update(template.as_bytes());
        h.finalize()[..6]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// A rubric with levels `range`, named `L<n>`, for tests.
#[cfg(test)]
pub(crate) fn numbered(range: impl Iterator<Item = i64>) -> Rubric {
    Rubric::new(
        range
            .map(|level| Level {
                level,
                name: format!("L{level}"),
                criteria: String::new(),
            })
            .collect(),
    )
    .unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    use numbered as rubric;

    #[test]
    fn the_seed_table_normalizes_exactly() {
        let r = rubric(1..=5);
        let scores: Vec<f64> = (1..=5).rev().map(|l| r.normalize(l as f64)).collect();
        assert_eq!(scores, [1.0, 0.75, 0.5, 0.25, 0.0]);
    }

    #[test]
    fn other_ranges_normalize_from_their_own_bounds() {
        let r = rubric(0..=3);
        let scores: Vec<f64> = (0..=3).map(|l| r.normalize(l as f64)).collect();
        assert_eq!(scores, [0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0]);
        let r = rubric(1..=10);
        assert_eq!(r.normalize(1.0), 0.0);
        assert_eq!(r.normalize(10.0), 1.0);
        assert!((r.normalize(7.0) - 6.0 / 9.0).abs() < 1e-15);
        assert_eq!(r.normalize(5.5), 0.5);
        // Gaps are allowed: only the bounds matter.
        let r = Rubric::new(vec![
            Level {
                level: 0,
                name: "no".into(),
                criteria: String::new(),
            },
            Level {
                level: 10,
                name: "yes".into(),
                criteria: String::new(),
            },
        ])
        .unwrap();
        assert_eq!(r.normalize(10.0), 1.0);
        assert_eq!((r.min(), r.max()), (0, 10));
    }

    #[test]
    fn bad_rubrics_are_refused() {
        assert!(
            Rubric::new(vec![])
                .unwrap_err()
                .to_string()
                .contains("at least two")
        );
        let twice = vec![
            Level {
                level: 1,
                name: "a".into(),
                criteria: String::new(),
            },
            Level {
                level: 1,
                name: "b".into(),
                criteria: String::new(),
            },
        ];
        let err = Rubric::new(twice).unwrap_err().to_string();
        assert!(err.contains("twice"), "{err}");
        for (low, high, ok) in [
            (-MAX_LEVEL, MAX_LEVEL, true),
            (0, MAX_LEVEL + 1, false),
            (-MAX_LEVEL - 1, 0, false),
            (i64::MIN, i64::MAX, false),
        ] {
            let levels = [low, high].map(|level| Level {
                level,
                name: format!("L{level}"),
                criteria: String::new(),
            });
            assert_eq!(Rubric::new(levels.to_vec()).is_ok(), ok, "{low}..{high}");
        }
    }

    #[test]
    fn a_bad_rubric_file_is_reported_at_its_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.toml");
        std::fs::write(
            &path,
            "[[level]]\nlevel = 1\nname = \"a\"\ncriteria = \"x\"\n\n[[level]]\nlevel = \"two\"\n",
        )
        .unwrap();
        let e = Rubric::read(&path).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}:7:9: ", path.display())), "{e}");
    }

    #[test]
    fn the_hash_follows_levels_and_template() {
        let r = rubric(1..=5);
        assert_eq!(r.hash("t"), rubric(1..=5).hash("t"));
        assert_ne!(r.hash("t"), r.hash("u"));
        assert_ne!(r.hash("t"), rubric(1..=4).hash("t"));
        assert_eq!(r.hash("t").len(), 12);
    }
}
