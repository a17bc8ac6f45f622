//! Comparing a golden file with content made one line at a time, in constant
//! memory: each new line is checked against the next line of the golden file
//! and written through to its destination (the golden file under `--bless`,
//! else the `.new` file), atomically. A spec with a million instances is
//! checked without holding them.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use super::diff::GoldenDiff;
use super::{GoldenMode, GoldenStatus, pending_path};
use crate::files::AtomicFile;

/// New content kept in memory for a full diff, at most.
const DIFF_KEEP: usize = 1 << 20;

/// A golden comparison being fed line by line; see [`StreamCompare::finish`].
pub(crate) struct StreamCompare {
    path: PathBuf,
    mode: GoldenMode,
    golden: Option<BufReader<File>>,
    out: Option<AtomicFile>,
    /// The new content while it is small enough for a full diff.
    kept: Option<String>,
    /// The first line that differs: (1-based line, golden line, new line).
    first_difference: Option<(u64, Option<String>, Option<String>)>,
    lines: u64,
    old_line: String,
}

impl StreamCompare {
    /// Starts comparing with the golden file at `path`.
    pub(crate) fn new(path: &Path, mode: GoldenMode) -> io::Result<StreamCompare> {
        let golden = match crate::files::open_regular(path) {
            Ok((f, _)) => Some(BufReader::new(f)),
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e.into()),
        };
        let out = if mode.bless {
            Some(AtomicFile::create(path)?)
        } else if mode.write_pending {
            Some(AtomicFile::create(&pending_path(path))?)
        } else {
            None
        };
        Ok(StreamCompare {
            path: path.to_path_buf(),
            mode,
            golden,
            out,
            kept: Some(String::new()),
            first_difference: None,
            lines: 0,
            old_line: String::new(),
        })
    }

    /// Adds one line of new content (without its newline).
    pub(crate) fn push_line(&mut self, line: &str) -> io::Result<()> {
        self.lines += 1;
        if let Some(out) = &mut self.out {
            out.write_all(line.as_bytes())?;
            out.write_all(b"\n")?;
        }
        if let Some(kept) = &mut self.kept {
            if kept.len() + line.len() < DIFF_KEEP {
                kept.push_str(line);
                kept.push('\n');
            } else {
                self.kept = None;
            }
        }
        if self.first_difference.is_none() {
            let old = self.next_golden_line()?;
            if old.as_deref() != Some(line) {
                self.first_difference = Some((self.lines, old, Some(line.to_owned())));
            }
        }
        Ok(())
    }

    fn next_golden_line(&mut self) -> io::Result<Option<String>> {
        let Some(golden) = &mut self.golden else {
            return Ok(None);
        };
        self.old_line.clear();
        if golden.read_line(&mut self.old_line)? == 0 {
            return Ok(None);
        }
        Ok(Some(self.old_line.trim_end_matches('\n').to_owned()))
    }

    /// Ends the comparison: unchanged, blessed, or a difference with its diff
    /// (every difference when both sides are small, else the first differing line).
    pub(crate) fn finish(mut self) -> io::Result<GoldenStatus> {
        let existed = self.golden.is_some();
        if existed && self.first_difference.is_none() {
            if let Some(extra) = self.next_golden_line()? {
                self.first_difference = Some((self.lines + 1, Some(extra), None));
            }
        }
        let pending = pending_path(&self.path);
        if existed && self.first_difference.is_none() {
            drop(self.out.take());
            if pending.exists() {
                std::fs::remove_file(&pending)?;
            }
            return Ok(GoldenStatus::Unchanged);
        }
        if self.mode.bless {
            self.out.take().expect("blessing writes").commit()?;
            if pending.exists() {
                std::fs::remove_file(&pending)?;
            }
            return Ok(GoldenStatus::Blessed);
        }
        let written = match self.out.take() {
            Some(out) => {
                out.commit()?;
                Some(pending)
            }
            None => None,
        };
        if !existed {
            return Ok(GoldenStatus::New { pending: written });
        }
        Ok(GoldenStatus::Changed {
            diff: self.diff()?,
            pending: written,
        })
    }

    fn diff(&mut self) -> io::Result<GoldenDiff> {
        let small_golden = std::fs::metadata(&self.path)?.len() < DIFF_KEEP as u64;
        if let (Some(new), true) = (&self.kept, small_golden) {
            let old = crate::files::read_text(&self.path, crate::files::FileKind::Golden)?;
            return Ok(GoldenDiff::between(&old, new, &self.path));
        }
        let (line, old, new) = self.first_difference.clone().unwrap_or((0, None, None));
        Ok(GoldenDiff::first_difference(
            &self.path,
            line,
            old.as_deref(),
            new.as_deref(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(path: &Path, lines: &[&str], mode: GoldenMode) -> GoldenStatus {
        let mut c = StreamCompare::new(path, mode).unwrap();
        for l in lines {
            c.push_line(l).unwrap();
        }
        c.finish().unwrap()
    }

    #[test]
    fn streamed_comparisons_agree_with_whole_file_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s/instances.jsonl");
        let (bless, review, ci) = (
            GoldenMode {
                bless: true,
                write_pending: false,
            },
            GoldenMode {
                bless: false,
                write_pending: true,
            },
            GoldenMode {
                bless: false,
                write_pending: false,
            },
        );
        assert!(matches!(
            feed(&path, &["a", "b"], review),
            GoldenStatus::New { pending: Some(_) }
        ));
        assert_eq!(
            std::fs::read_to_string(pending_path(&path)).unwrap(),
            "a\nb\n"
        );
        assert_eq!(feed(&path, &["a", "b"], bless), GoldenStatus::Blessed);
        assert!(!pending_path(&path).exists());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a\nb\n");
        assert_eq!(feed(&path, &["a", "b"], ci), GoldenStatus::Unchanged);
        for lines in [&["a"][..], &["a", "b", "c"], &["a", "x"]] {
            let GoldenStatus::Changed {
                diff,
                pending: None,
            } = feed(&path, lines, ci)
            else {
                panic!("{lines:?} differs");
            };
            assert_eq!(
                diff,
                GoldenDiff::between("a\nb\n", &(lines.join("\n") + "\n"), &path)
            );
        }
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary or pending file is left");
    }
}
