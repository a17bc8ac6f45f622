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
    /// Every kind, in declaration order (the order of [`FileLimits`]).
    pub(crate) const ALL: [FileKind; 13] = [
        FileKind::Spec,
        FileKind::Config,
        FileKind::Prices,
        FileKind::Rubric,
        FileKind::Dataset,
        FileKind::Tools,
        FileKind::Script,
        FileKind::Schema,
        FileKind::Runner,
        FileKind::Image,
        FileKind::Golden,
        FileKind::Manifest,
        FileKind::Document,
    ];

    /// The most bytes a file of this kind may hold when nothing raises it.
    pub(crate) const fn default_limit(self) -> u64 {
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

    /// The most bytes a file of this kind may hold in this process: its
    /// default, or what `harness.toml`'s `[limits]` set.
    pub(crate) fn limit(self) -> u64 {
        FileLimits::current().cap(self)
    }

    /// The key of `[limits]` in `harness.toml` that sets this kind's cap.
    /// `harness.toml` itself has none (it is read before its limits are
    /// known); an image's cap is its spec's `max_image_bytes`.
    pub(crate) const fn key(self) -> Option<&'static str> {
        match self {
            FileKind::Spec => Some("spec_bytes"),
            FileKind::Prices => Some("prices_bytes"),
            FileKind::Rubric => Some("rubric_bytes"),
            FileKind::Dataset => Some("dataset_bytes"),
            FileKind::Tools => Some("tools_file_bytes"),
            FileKind::Script => Some("script_bytes"),
            FileKind::Schema => Some("schema_bytes"),
            FileKind::Runner => Some("runner_bytes"),
            FileKind::Golden => Some("golden_bytes"),
            FileKind::Manifest => Some("plan_bytes"),
            FileKind::Document => Some("document_bytes"),
            FileKind::Config | FileKind::Image => None,
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

    /// How the cap of this kind is raised, as the end of a sentence.
    fn raised_by(self) -> String {
        match self.key() {
            Some(key) => {
                format!(" (raise it with `{key}` in the `[limits]` table of harness.toml)")
            }
            None => String::new(),
        }
    }
}

/// The size cap of every kind of file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileLimits([u64; FileKind::ALL.len()]);

impl Default for FileLimits {
    fn default() -> FileLimits {
        FileLimits(FileKind::ALL.map(FileKind::default_limit))
    }
}

/// The caps of this process, set once by the command line from
/// `harness.toml` before the first file is read.
///
/// A process-wide value rather than one passed down: the bounded reader is
/// called from a dozen modules on eight layers, at load time (specs, their
/// datasets, tools, scripts, schemas, rubrics, runners), at run time (a
/// replayed transcript, a schema read for a request, a hub download) and by
/// commands that load no spec at all (`report`, `review`); a cap passed down
/// each path would be one more argument on every one of them, and a path that
/// forgot it would read the same file under another cap (the plan hash
/// reads the spec files the loader read). The caps belong to the machine and
/// the user, not to a spec, so one value per process is their true scope:
/// written once, never changed, and unset (the defaults) in unit tests.
static LIMITS: std::sync::OnceLock<FileLimits> = std::sync::OnceLock::new();

impl FileLimits {
    /// Sets the cap of `kind` to `bytes`.
    pub(crate) fn set(&mut self, kind: FileKind, bytes: u64) {
        self.0[kind as usize] = bytes;
    }

    /// The cap of `kind`.
    pub(crate) fn cap(&self, kind: FileKind) -> u64 {
        self.0[kind as usize]
    }

    /// Makes these the caps of every read from now on; only the first call
    /// counts (a second one returns its caps back).
    pub(crate) fn install(self) -> Result<(), FileLimits> {
        LIMITS.set(self)
    }

    /// The caps in force: the installed ones, else the defaults.
    pub(crate) fn current() -> FileLimits {
        LIMITS.get().copied().unwrap_or_default()
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
    #[error("it is {}over the {} limit for {}{}", size.map(|s| format!("{}, ", human(s))).unwrap_or_default(), human(*.limit), .kind.plural(), .kind.raised_by())]
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
        assert_eq!(
            e.to_string(),
            "it is over the 1 MiB limit for datasets (raise it with `dataset_bytes` in the `[limits]` table of harness.toml)"
        );
    }

    #[test]
    fn every_cap_but_the_configurations_own_has_a_key_and_a_set_cap_is_the_one_read() {
        let defaults = FileLimits::default();
        let mut keys = Vec::new();
        for (i, kind) in FileKind::ALL.into_iter().enumerate() {
            assert_eq!(kind as usize, i, "{kind:?} is out of ALL's order");
            assert_eq!(defaults.cap(kind), kind.default_limit(), "{kind:?}");
            match kind.key() {
                Some(key) => keys.push(key),
                None => assert!(matches!(kind, FileKind::Config | FileKind::Image)),
            }
        }
        let mut unique = keys.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), keys.len(), "{keys:?}");
        assert!(keys.iter().all(|k| k.ends_with("_bytes")), "{keys:?}");
        // Unit tests install nothing: what is in force is the defaults.
        assert_eq!(FileKind::Dataset.limit(), GIB);
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("rows.jsonl");
        std::fs::write(&data, vec![b'x'; 3000]).unwrap();
        let mut limits = FileLimits::default();
        let cases = [
            (
                2 * KIB,
                Some(
                    "it is 2.9 KiB, over the 2 KiB limit for datasets (raise it with `dataset_bytes`",
                ),
            ),
            (4 * KIB, None),
        ];
        for (cap, refused) in cases {
            limits.set(FileKind::Dataset, cap);
            assert_eq!(limits.cap(FileKind::Dataset), cap);
            assert_eq!(
                limits.cap(FileKind::Spec),
                16 * MIB,
                "one kind set, no other"
            );
            let read = read_capped(&data, FileKind::Dataset, limits.cap(FileKind::Dataset));
            match (read, refused) {
                (Ok(bytes), None) => assert_eq!(bytes.len(), 3000),
                (Err(e), Some(says)) => assert!(e.to_string().starts_with(says), "{e}"),
                (read, _) => panic!("cap {cap}: {:?}", read.map(|b| b.len())),
            }
        }
        let e = ReadError::TooLarge {
            size: Some(20 * MIB),
            limit: 16 * MIB,
            kind: FileKind::Config,
        };
        assert_eq!(
            e.to_string(),
            "it is 20 MiB, over the 16 MiB limit for configuration files"
        );
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
