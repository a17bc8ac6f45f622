//! Files that survive a crash: append-only JSON-lines logs (journals) and
//! whole files replaced atomically.
//!
//! A log line is written and flushed to the kernel before it counts, so a
//! killed process loses nothing it reported; `fsync` runs at most every
//! 200 ms and at close, bounding what a power loss could take. A torn last
//! line is dropped when the log is reopened.
//!
//! A whole file is replaced through a temporary sibling, `fsync`, a rename
//! and an `fsync` of the directory ([`write_atomic`], [`AtomicFile`]).
//!
//! Every file a user, a spec or a recorded run names is read through
//! [`bounded`]: regular files only, never blocking, capped per kind.
//!
//! A leaf: it imports nothing from the rest of the crate.

mod bounded;

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub(crate) use bounded::{
    FileKind, FileLimits, ReadError, human, open_regular, read_bounded, read_capped, read_text,
    take_capped,
};

/// An append-only file of JSON lines, open for appending.
pub(crate) struct AppendLog {
    file: File,
    last_sync: Instant,
}

const SYNC_EVERY: Duration = Duration::from_millis(200);

impl AppendLog {
    /// Opens (creating) a log of `T` lines, dropping a torn last line (one that
    /// does not parse as `T`) left by a crash.
    pub(crate) fn open<T: serde::de::DeserializeOwned>(path: &Path) -> io::Result<AppendLog> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)?;
        if !file.metadata()?.is_file() {
            // A FIFO here would block the read of its valid prefix for good.
            return Err(io::Error::other(format!(
                "{} is not a regular file",
                path.display()
            )));
        }
        let valid_len = valid_prefix_len::<T>(path)?;
        if valid_len < file.metadata()?.len() {
            file.set_len(valid_len)?;
            file.seek(SeekFrom::End(0))?;
        }
        Ok(AppendLog {
            file,
            last_sync: Instant::now(),
        })
    }

    /// Appends a value as one JSON line, in a single write.
    pub(crate) fn append<T: serde::Serialize>(&mut self, value: &T) -> io::Result<()> {
        let mut line = serde_json::to_vec(value).map_err(io::Error::other)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        if self.last_sync.elapsed() >= SYNC_EVERY {
            self.file.sync_data()?;
            self.last_sync = Instant::now();
        }
        Ok(())
    }

    /// Syncs everything to disk.
    pub(crate) fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }
}

/// Length of the file without a torn last line: one with no newline (a crash
/// mid-write) or that does not parse. Bad lines elsewhere are left alone —
/// cutting there would delete the good records after them; reading them
/// fails loudly instead (see [`for_each_line_at`]).
fn valid_prefix_len<T: serde::de::DeserializeOwned>(path: &Path) -> io::Result<u64> {
    let mut reader = BufReader::new(File::open(path)?);
    let (mut len, mut last_start, mut last_ok, mut line) = (0u64, 0u64, true, Vec::new());
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        last_start = len;
        len += n as u64;
        last_ok = line.last() == Some(&b'\n') && parse_line::<T>(&line).is_ok();
    }
    Ok(if last_ok { len } else { last_start })
}

/// The deepest a line of a JSON-lines log may nest. Far above what the
/// harness writes (values are limited to 64 levels where they enter, and a
/// record adds under 10 of its own), far below what would strain a stack.
pub(crate) const MAX_LINE_DEPTH: usize = 1_000;

/// A line of a JSON-lines log that cannot be read: its file, its 1-based
/// line (or byte offset, for a record read back by its offset) and why.
#[derive(Debug, thiserror::Error)]
#[error("{}, {at}: {why}; the harness never writes such a line: restore the file, or remove the line to lose that record", path.display())]
pub(crate) struct BadLine {
    /// The log.
    pub path: PathBuf,
    /// `line N` or `byte N`.
    pub at: String,
    /// What is wrong with it.
    pub why: LineProblem,
}

/// Why a line of a JSON-lines log cannot be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LineProblem {
    /// It nests deeper than [`MAX_LINE_DEPTH`].
    #[error("it nests {0} levels deep, deeper than the {MAX_LINE_DEPTH} a line may")]
    TooDeep(usize),
    /// It is not JSON of the expected shape.
    #[error("it is not a record: {0}")]
    NotARecord(serde_json::Error),
}

impl BadLine {
    fn into_io(self) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, self)
    }
}

/// One line of a JSON-lines log as `T`. Whatever depth the harness wrote
/// is read back: serde_json's recursion limit (128 levels, which once
/// dropped a record without a word) is off, and the line's depth is
/// measured first, without recursion, against [`MAX_LINE_DEPTH`].
pub(crate) fn parse_line<T: serde::de::DeserializeOwned>(line: &[u8]) -> Result<T, LineProblem> {
    let depth = json_nesting(line);
    if depth > MAX_LINE_DEPTH {
        return Err(LineProblem::TooDeep(depth));
    }
    let mut de = serde_json::Deserializer::from_slice(line);
    de.disable_recursion_limit();
    let value = T::deserialize(serde_stacker::Deserializer::new(&mut de))
        .map_err(LineProblem::NotARecord)?;
    de.end().map_err(LineProblem::NotARecord)?;
    Ok(value)
}

/// How deep JSON text nests, brackets inside strings not counted: a loop,
/// so a line of any depth is measured safely.
pub(crate) fn json_nesting(text: &[u8]) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in text {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Opens `path` for reading; `None` when it does not exist (a journal or
/// log not written yet reads as empty). A FIFO or a device in its place is
/// an error, not a read that never ends.
pub(crate) fn open_existing(path: &Path) -> io::Result<Option<File>> {
    match open_regular(path) {
        Ok((f, _)) => Ok(Some(f)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(io::Error::from(e)),
    }
}

/// Calls `f` with each line of `path` as `T`, in file order; a line that
/// cannot be read fails (see [`for_each_line_at`]).
pub(crate) fn for_each_line<T: serde::de::DeserializeOwned>(
    path: &Path,
    mut f: impl FnMut(T),
) -> io::Result<()> {
    let Some(file) = open_existing(path)? else {
        return Ok(());
    };
    for_each_line_at(path, &mut BufReader::new(file), |_, _, value| {
        f(value);
        Ok::<(), io::Error>(())
    })
}

/// Calls `f` with the offset, the bytes (newline included, when there is
/// one) and the value of each line of `reader` (the log at `path`), in
/// order. Stops at the first error `f` returns, and at a line that cannot
/// be read as `T`: a [`BadLine`] naming its line, never a line skipped (a
/// record skipped is a score changed). The one exception is a torn last
/// line, without its newline, that does not parse: a crash mid-write left
/// it, and the log drops it when next opened for appending.
pub(crate) fn for_each_line_at<T: serde::de::DeserializeOwned, E: From<io::Error>>(
    path: &Path,
    reader: &mut impl BufRead,
    mut f: impl FnMut(u64, &[u8], T) -> Result<(), E>,
) -> Result<(), E> {
    let (mut offset, mut number, mut line) = (0u64, 0u64, Vec::new());
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(());
        }
        number += 1;
        match parse_line::<T>(&line) {
            Ok(value) => f(offset, &line, value)?,
            Err(_) if line.last() != Some(&b'\n') => {}
            Err(why) => {
                let at = format!("line {number}");
                let path = path.to_path_buf();
                return Err(BadLine { path, at, why }.into_io().into());
            }
        }
        offset += n as u64;
    }
}

/// Reads the line at `offset` of `reader` (the log at `path`) as `T`: a
/// record found by an earlier pass, read back by its place.
pub(crate) fn read_line_at<T: serde::de::DeserializeOwned>(
    path: &Path,
    reader: &mut (impl BufRead + Seek),
    offset: u64,
) -> io::Result<T> {
    reader.seek(SeekFrom::Start(offset))?;
    let mut line = Vec::new();
    reader.read_until(b'\n', &mut line)?;
    parse_line(&line).map_err(|why| {
        let at = format!("byte {offset}");
        let path = path.to_path_buf();
        BadLine { path, at, why }.into_io()
    })
}

/// The harness's cache directory: `HARNESS_CACHE`, else `~/.cache/harness`.
pub(crate) fn cache_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("HARNESS_CACHE").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
    home.join(".cache/harness")
}

/// Writes `bytes` to `path` through a temporary sibling, `fsync` and a rename,
/// so a reader (or a crash) sees the old file or the new one, never half a file.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(bytes)?;
    file.commit()
}

/// Claims the first free name of `base`, then `base`, `sep` and 2, 3, ...
/// (`run-2`): `create` makes the thing a name stands for (`create_dir`, a
/// `create_new` file) and fails with `AlreadyExists` when another run holds
/// it. The kernel decides each claim, so two processes racing for one name
/// never both get it.
pub(crate) fn claim_name(
    base: &str,
    sep: char,
    mut create: impl FnMut(&str) -> io::Result<()>,
) -> io::Result<String> {
    let mut name = base.to_owned();
    for n in 2.. {
        match create(&name) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => name = format!("{base}{sep}{n}"),
            other => return other.map(|()| name),
        }
    }
    unreachable!("the suffixes never run out")
}

/// A file being replaced atomically: written to a temporary sibling (same
/// directory, so the rename cannot cross file systems), which [`AtomicFile::commit`]
/// syncs and renames over the target, then syncs the directory so the rename
/// itself survives a power loss. Dropped without a commit, the temporary file
/// is removed and the target is untouched.
pub(crate) struct AtomicFile {
    file: Option<io::BufWriter<File>>,
    tmp: PathBuf,
    path: PathBuf,
    /// The outermost directory `create` made, removed again (when empty)
    /// if nothing is committed, so an abandoned write leaves no trace.
    made: Option<PathBuf>,
}

impl AtomicFile {
    /// Starts replacing `path` (creating its directory).
    pub(crate) fn create(path: &Path) -> io::Result<AtomicFile> {
        let dir = parent_dir(path);
        let made = dir
            .ancestors()
            .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
            .last()
            .map(Path::to_path_buf);
        std::fs::create_dir_all(dir)?;
        let name = path.file_name().map_or_else(
            || std::ffi::OsString::from("file"),
            std::ffi::OsStr::to_os_string,
        );
        // Hidden and per process: two writers never share a temporary file,
        // and scanners of `*.jsonl` or `*.new` never mistake one for a result.
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(&name);
        tmp_name.push(format!(".{}.tmp", std::process::id()));
        let tmp = dir.join(tmp_name);
        let file = File::create(&tmp)?;
        Ok(AtomicFile {
            file: Some(io::BufWriter::new(file)),
            tmp,
            path: path.to_path_buf(),
            made,
        })
    }

    /// Syncs the new content and puts it in place of the old file.
    pub(crate) fn commit(mut self) -> io::Result<()> {
        let file = self.file.take().expect("committed once");
        let file = file.into_inner().map_err(io::IntoInnerError::into_error)?;
        stall_for_tests(&self.path);
        file.sync_all()?;
        drop(file);
        std::fs::rename(&self.tmp, &self.path)?;
        sync_dir(parent_dir(&self.path))
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.as_mut().expect("not committed").write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.as_mut().expect("not committed").flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
            // Innermost first; a directory something else wrote into stays.
            if let Some(made) = &self.made {
                for dir in parent_dir(&self.path).ancestors() {
                    if std::fs::remove_dir(dir).is_err() || dir == made {
                        break;
                    }
                }
            }
        }
    }
}

/// The directory `path` is in (`.` for a bare file name).
fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Syncs a directory, so renames and new entries in it are on disk.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// The kill tests' hook (`tests/atomic_writes.rs`): with `HARNESS_TEST_STALL_WRITE`
/// set, a write of a file whose name contains its value stops after writing
/// the temporary file and before the rename, so a test can kill the process
/// at the worst moment.
fn stall_for_tests(path: &Path) {
    static TARGET: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let target = TARGET.get_or_init(|| std::env::var("HARNESS_TEST_STALL_WRITE").ok());
    let name = path.file_name().map(|n| n.to_string_lossy());
    if let (Some(target), Some(name)) = (target, name)
        && name.contains(target.as_str())
    {
        eprintln!("stalling before the rename of {}", path.display());
        loop {
            std::thread::sleep(Duration::from_secs(60));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_back_at_any_depth_the_harness_writes_and_bad_ones_fail_by_number() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        let nested = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        let read = |text: &str| {
            std::fs::write(&path, text).unwrap();
            let mut values: Vec<serde_json::Value> = Vec::new();
            for_each_line(&path, |v| values.push(v)).map(|()| values.len())
        };
        // serde_json alone stops at 128 levels; a torn last line is skipped.
        let text = format!("{}\n{}\n{{\"torn\":", nested(127), nested(MAX_LINE_DEPTH));
        assert_eq!(read(&text).unwrap(), 2);
        // (the file, what the error says)
        let cases = [
            (
                "1\nnot json\n2\n",
                "journal.jsonl, line 2: it is not a record",
            ),
            ("1\n\n", "line 2: it is not a record"),
            ("1 2\n", "line 1: it is not a record: trailing characters"),
            (
                &*format!("1\n{}\n", nested(MAX_LINE_DEPTH + 1)),
                "line 2: it nests 1001 levels deep",
            ),
        ];
        for (text, says) in cases {
            let e = read(text).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidData);
            assert!(e.to_string().contains(says), "{e}");
        }
        // Reopened for appending, the log keeps a deep last line and drops a torn one.
        std::fs::write(&path, format!("{}\n{{\"a\"", nested(300))).unwrap();
        let mut log = AppendLog::open::<serde_json::Value>(&path).unwrap();
        log.append(&serde_json::json!(2)).unwrap();
        assert_eq!(read(&std::fs::read_to_string(&path).unwrap()).unwrap(), 2);
    }

    #[test]
    fn racing_claims_of_one_name_each_get_their_own() {
        let dir = tempfile::tempdir().unwrap();
        let claims: Vec<String> = std::thread::scope(|s| {
            let claim = || claim_name("run", '-', |n| std::fs::create_dir(dir.path().join(n)));
            let racers: Vec<_> = (0..8).map(|_| s.spawn(claim)).collect();
            racers
                .into_iter()
                .map(|r| r.join().unwrap().unwrap())
                .collect()
        });
        let mut sorted = claims.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 8, "{claims:?}");
        assert!(sorted.contains(&"run".to_owned()) && sorted.contains(&"run-8".to_owned()));
        // Any other failure is the caller's to see, not a reason to try the next name.
        let denied = claim_name("x", '-', |_| {
            Err(io::Error::from(io::ErrorKind::PermissionDenied))
        });
        assert_eq!(denied.unwrap_err().kind(), io::ErrorKind::PermissionDenied);
    }

    #[test]
    fn atomic_writes_replace_whole_files_and_leave_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/plan.json");
        write_atomic(&path, b"old").unwrap();
        write_atomic(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        let mut abandoned = AtomicFile::create(&path).unwrap();
        abandoned.write_all(b"half").unwrap();
        drop(abandoned);
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("plan.json")]);
        // An abandoned first write removes the directories it made, and only those.
        let deep = dir.path().join("sub/a/b/new.json");
        drop(AtomicFile::create(&deep).unwrap());
        assert!(!dir.path().join("sub/a").exists());
        assert!(path.exists());
    }
}
