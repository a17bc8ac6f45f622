//! Files that survive a crash: append-only JSON-lines logs (journals) and
//! whole files replaced atomically.
//!
//! A log line is written and flushed to the kernel before it counts, so a
//! killed process loses nothing it reported; `fsync` runs at most every
//! 200 ms and at close, bounding what a power loss could take. A torn last
//! line is dropped when the log is reopened.
//!
//! A leaf: it imports nothing from the rest of the crate.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// An append-only file of JSON lines, open for appending.
pub struct AppendLog {
    file: File,
    path: PathBuf,
    last_sync: Instant,
}

const SYNC_EVERY: Duration = Duration::from_millis(200);

impl AppendLog {
    /// Opens (creating) a log of `T` lines, dropping a torn last line (one that
    /// does not parse as `T`) left by a crash.
    pub fn open<T: serde::de::DeserializeOwned>(path: &Path) -> io::Result<AppendLog> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)?;
        let valid_len = valid_prefix_len::<T>(path)?;
        if valid_len < file.metadata()?.len() {
            file.set_len(valid_len)?;
            file.seek(SeekFrom::End(0))?;
        }
        Ok(AppendLog {
            file,
            path: path.to_path_buf(),
            last_sync: Instant::now(),
        })
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends a value as one JSON line, in a single write.
    pub fn append<T: serde::Serialize>(&mut self, value: &T) -> io::Result<()> {
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
    pub fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }
}

/// Length of the file without a torn last line: one with no newline (a crash
/// mid-write) or that does not parse. Bad lines elsewhere are left alone —
/// cutting there would delete the good records after them.
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
        last_ok = line.last() == Some(&b'\n') && serde_json::from_slice::<T>(&line).is_ok();
    }
    Ok(if last_ok { len } else { last_start })
}

/// Calls `f` with each line that parses as `T`, in file order; other lines are skipped.
pub fn for_each_line<T: serde::de::DeserializeOwned>(
    path: &Path,
    mut f: impl FnMut(T),
) -> io::Result<()> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for line in BufReader::new(file).split(b'\n') {
        if let Ok(record) = serde_json::from_slice::<T>(&line?) {
            f(record);
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` through a temporary sibling, `fsync` and a rename,
/// so a reader (or a crash) sees the old file or the new one, never half a file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut file = File::create(&tmp)?;
    file.write_all(bytes)?;
    file.sync_data()?;
    std::fs::rename(&tmp, path)
}
