//! Reading a file a user, a spec or a recorded run names: only a regular
//! file, opened without blocking, never more than its kind's size cap.
//!
//! A path may name `/dev/zero`, a FIFO or a file that grows while it is
//! read. So the path is looked at before it is opened (a device is never
//! opened at all), opened with `O_NONBLOCK` (a FIFO swapped in between does
//! not block the open), looked at again through the open descriptor (what
//! is read is what was checked), and read through a `take(cap + 1)`, so a
//! file that lies about its size, or grows, still cannot pass its cap.
//! `O_NONBLOCK` stays set: regular files ignore it.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// What a file is for; each kind has its own size cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileKind {
    /// A spec's TOML file.
    Spec,
    /// `harness.toml`.
    Config,
    /// A LiteLLM price file (`--prices`).
    Prices,
    /// A judge rule's `rubric_file`.
    Rubric,
    /// A dataset file (`[dataset] path`, downloaded hub files), and its
    /// gzip-unpacked content.
    Dataset,
    /// A `tools_file`.
    Tools,
    /// A Rhai script: a tool's `script_file`, `[generate] file`.
    Script,
    /// A JSON Schema file (`[request] schema`, `json_schema` rules).
    Schema,
    /// A code rule's `runner`.
    Runner,
    /// An image; its cap is the spec's `max_image_bytes`, given by the caller.
    Image,
    /// A golden transcript or instance file.
    Golden,
    /// A run's `plan.json`, a download's manifest.
    Manifest,
    /// A document `harness synth` reads (PDF, DOCX, HTML, text), and a
    /// DOCX's unpacked text.
    Document,
}

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

impl FileKind {
    /// The most bytes a file of this kind may hold.
    pub(crate) const fn limit(self) -> u64 {
        match self {
            FileKind::Spec | FileKind::Config | FileKind::Tools => 16 * MIB,
            FileKind::Rubric | FileKind::Script | FileKind::Schema | FileKind::Runner => 4 * MIB,
            FileKind::Prices | FileKind::Manifest => 64 * MIB,
            FileKind::Dataset => GIB,
            FileKind::Golden | FileKind::Document => 256 * MIB,
            // The spec's `max_image_bytes` ceiling; callers pass the spec's own.
            FileKind::Image => 100 * MIB,
        }
    }

    /// The kind in a sentence's plural: "over the 1 GiB limit for datasets".
    pub(crate) const fn plural(self) -> &'static str {
        match self {
            FileKind::Spec => "spec files",
            FileKind::Config => "configuration files",
            FileKind::Prices => "price files",
            FileKind::Rubric => "rubric files",
            FileKind::Dataset => "datasets",
            FileKind::Tools => "tools files",
            FileKind::Script => "script files",
            FileKind::Schema => "schema files",
            FileKind::Runner => "runner files",
            FileKind::Image => "images",
            FileKind::Golden => "golden files",
            FileKind::Manifest => "manifests",
            FileKind::Document => "documents",
        }
    }
}

/// Why a file was not read. Its text names what is wrong with the file,
/// never anything of its content; callers say which file.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    /// The operating system refused (no such file, no permission, ...).
    #[error("{0}")]
    Io(#[from] io::Error),
    /// A FIFO, a device, a directory or a socket.
    #[error("it is {0}, not a regular file")]
    NotRegular(&'static str),
    /// Over the cap.
    #[error("it is {}over the {} limit for {}", size.map(|s| format!("{}, ", human(s))).unwrap_or_default(), human(*.limit), .kind.plural())]
    TooLarge {
        /// Its size, when it says (a stream that runs past the cap has none).
        size: Option<u64>,
        /// The cap.
        limit: u64,
        /// Which cap.
        kind: FileKind,
    },
    /// Text that is not UTF-8.
    #[error("it is not UTF-8 text")]
    NotText,
}

impl ReadError {
    /// Whether the file does not exist.
    pub(crate) fn is_not_found(&self) -> bool {
        matches!(self, ReadError::Io(e) if e.kind() == io::ErrorKind::NotFound)
    }
}

impl From<ReadError> for io::Error {
    fn from(e: ReadError) -> io::Error {
        match e {
            ReadError::Io(e) => e,
            ReadError::NotText => io::Error::new(io::ErrorKind::InvalidData, e),
            other => io::Error::other(other),
        }
    }
}

/// `bytes` for people: `512 bytes`, `20 MiB`, `3.1 GiB`.
pub(crate) fn human(bytes: u64) -> String {
    let (unit, name) = match bytes {
        b if b >= GIB => (GIB, "GiB"),
        b if b >= MIB => (MIB, "MiB"),
        b if b >= KIB => (KIB, "KiB"),
        b => return format!("{b} bytes"),
    };
    let rounded = format!("{:.1}", bytes as f64 / unit as f64);
    match rounded.strip_suffix(".0") {
        Some(whole) if bytes % unit == 0 => format!("{whole} {name}"),
        // `4.0 MiB, over the 4 MiB limit` would read as no excess at all.
        Some(_) => format!("{bytes} bytes"),
        None => format!("{rounded} {name}"),
    }
}

/// What a file that is not a regular one is, in a sentence.
fn not_regular(kind: std::fs::FileType) -> Option<&'static str> {
    if kind.is_file() {
        None
    } else if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_char_device() {
        Some("a character device")
    } else if kind.is_block_device() {
        Some("a block device")
    } else if kind.is_dir() {
        Some("a directory")
    } else if kind.is_socket() {
        Some("a socket")
    } else {
        Some("not a file")
    }
}

/// Opens `path` for reading when it is a regular file; returns it and its size.
pub(crate) fn open_regular(path: &Path) -> Result<(File, u64), ReadError> {
    // Before the open, so a device's open (a tape's rewind, a terminal) never happens.
    if let Some(what) = not_regular(std::fs::metadata(path)?.file_type()) {
        return Err(ReadError::NotRegular(what));
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    // Again on the descriptor: the path may have been swapped since.
    let meta = file.metadata()?;
    if let Some(what) = not_regular(meta.file_type()) {
        return Err(ReadError::NotRegular(what));
    }
    Ok((file, meta.len()))
}

/// The bytes of the regular file `path`, at most `kind`'s cap.
pub(crate) fn read_bounded(path: &Path, kind: FileKind) -> Result<Vec<u8>, ReadError> {
    read_capped(path, kind, kind.limit())
}

/// The bytes of the regular file `path`, at most `limit` (a cap of `kind`
/// the caller sets, such as a spec's `max_image_bytes`).
pub(crate) fn read_capped(path: &Path, kind: FileKind, limit: u64) -> Result<Vec<u8>, ReadError> {
    let (file, size) = open_regular(path)?;
    if size > limit {
        return Err(ReadError::TooLarge {
            size: Some(size),
            limit,
            kind,
        });
    }
    take_capped(file, kind, limit, size)
}

/// At most `limit` bytes of `reader` (`hint`: how many to expect); more is
/// an error, found by reading one byte past the cap, never more.
pub(crate) fn take_capped(
    reader: impl Read,
    kind: FileKind,
    limit: u64,
    hint: u64,
) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::with_capacity(usize::try_from(hint.min(limit)).unwrap_or(0));
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge {
            size: None,
            limit,
            kind,
        });
    }
    Ok(bytes)
}

/// The text of the regular file `path`, at most `kind`'s cap.
pub(crate) fn read_text(path: &Path, kind: FileKind) -> Result<String, ReadError> {
    String::from_utf8(read_bounded(path, kind)?).map_err(|_| ReadError::NotText)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_under_their_cap_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small.txt");
        std::fs::write(&small, "hello").unwrap();
        assert_eq!(read_text(&small, FileKind::Script).unwrap(), "hello");
        let big = dir.path().join("big.rhai");
        File::create(&big)
            .unwrap()
            .set_len(FileKind::Script.limit() + 1)
            .unwrap();
        let fifo = dir.path().join("fifo");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo touches nothing else.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let cases: [(&Path, &str); 5] = [
            (
                &big,
                "it is 4194305 bytes, over the 4 MiB limit for script files",
            ),
            (&fifo, "it is a FIFO, not a regular file"),
            (Path::new("/dev/zero"), "it is a character device"),
            (dir.path(), "it is a directory"),
            (&dir.path().join("none"), "No such file"),
        ];
        for (path, want) in cases {
            let e = read_bounded(path, FileKind::Script)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{}: {e}", path.display());
        }
        assert!(
            read_bounded(&dir.path().join("none"), FileKind::Spec)
                .unwrap_err()
                .is_not_found()
        );
        std::fs::write(&small, [0xff, 0xfe]).unwrap();
        assert!(matches!(
            read_text(&small, FileKind::Spec),
            Err(ReadError::NotText)
        ));
    }

    #[test]
    fn a_file_that_lies_about_its_size_stops_one_byte_past_the_cap() {
        // /proc files say they are empty and are not.
        let e = read_capped(Path::new("/proc/self/maps"), FileKind::Golden, 8).unwrap_err();
        assert!(
            matches!(
                e,
                ReadError::TooLarge {
                    size: None,
                    limit: 8,
                    ..
                }
            ),
            "{e}"
        );
        let endless = std::io::repeat(b'x');
        let e = take_capped(endless, FileKind::Dataset, 1 << 20, 0).unwrap_err();
        assert_eq!(e.to_string(), "it is over the 1 MiB limit for datasets");
    }

    #[test]
    fn sizes_read_like_people_write_them() {
        let cases = [
            (512, "512 bytes"),
            (2048, "2 KiB"),
            (20 * MIB, "20 MiB"),
            (3 * GIB + GIB / 10, "3.1 GiB"),
        ];
        for (bytes, want) in cases {
            assert_eq!(human(bytes), want);
        }
    }
}
