//! Images a prompt carries: read from a file, typed by their magic bytes (PNG,
//! JPEG, WebP), size-capped and identified by their SHA-256. Only the path and
//! digest travel through journals, golden files and cache keys; the bytes are
//! read again when a request is sent.

use std::path::{Component, Path, PathBuf};

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::files::{self, FileKind, ReadError};

/// The default per-image size limit: 20 MiB, what hosted vision APIs accept.
pub(crate) const MAX_IMAGE_BYTES: u64 = 20 * 1024 * 1024;

/// The most a spec's `max_image_bytes` may allow: 100 MiB.
pub(crate) const MAX_IMAGE_BYTES_CEILING: u64 = 100 * 1024 * 1024;

/// One image attached to a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageRef {
    /// The image as the spec names it: its folder joined with the written path, normalized.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// The resolved absolute file the bytes are read from (not serialized: it is machine-specific).
    #[serde(skip)]
    pub file: PathBuf,
    /// `image/png`, `image/jpeg` or `image/webp`, from the magic bytes.
    pub mime: String,
    /// Hex SHA-256 of the bytes.
    pub sha256: String,
    /// Size in bytes.
    pub size: u64,
}

/// Why an image cannot be attached, or sent again. No variant holds any
/// of the file's bytes: a spec may name any file, and errors are printed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum MediaError {
    /// The template rendered to nothing.
    #[error("the image path is empty")]
    Empty,
    /// The file cannot be read: missing, no permission, not a regular file.
    #[error("image `{path}`: {reason}")]
    Unreadable {
        /// The path as named.
        path: String,
        /// What is wrong with the file.
        reason: String,
    },
    /// The bytes are not PNG, JPEG or WebP.
    #[error("image `{path}` is not PNG, JPEG or WebP (by its first bytes)")]
    NotImage {
        /// The path as named.
        path: String,
    },
    /// The file is over the limit.
    #[error("image `{path}` is {}over the limit of {limit} bytes", size.map(|s| format!("{s} bytes, ")).unwrap_or_default())]
    TooLarge {
        /// The path as named.
        path: String,
        /// Its size, when it says (a file that grows past the cap has none).
        size: Option<u64>,
        /// The limit.
        limit: u64,
    },
    /// Read again to be sent, the file is no longer what was loaded.
    #[error("image `{path}` changed since the spec was loaded{}", why.as_ref().map(|w| format!(": {w}")).unwrap_or_default())]
    Changed {
        /// The path as named.
        path: String,
        /// What is wrong with it now, when it is more than other bytes.
        why: Option<String>,
    },
}

/// The MIME type of `bytes` by their magic number, when it is an accepted image type.
pub(crate) fn sniff(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// `path` with `.` and `a/..` removed without touching the file system.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir
                if matches!(out.components().next_back(), Some(Component::Normal(_))) =>
            {
                out.pop();
            }
            other => out.push(other),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// Reads, types, sizes and hashes the image `written` in folder `dir` (both
/// relative to `base` unless absolute), refusing files over `limit` bytes
/// before reading them. The image keeps `dir` joined with `written`
/// (normalized) as its path, so it reads the same wherever `base` is; errors
/// name the file as `base` joined with that.
pub(crate) fn load(
    base: &Path,
    dir: &Path,
    written: &str,
    limit: u64,
) -> Result<ImageRef, MediaError> {
    if written.trim().is_empty() {
        return Err(MediaError::Empty);
    }
    let named = normalize(&dir.join(written.trim()));
    let path = normalize(&base.join(&named));
    let shown = path.display().to_string();
    let bytes = files::read_capped(&path, FileKind::Image, limit).map_err(|e| match e {
        ReadError::TooLarge { size, .. } => MediaError::TooLarge {
            path: shown.clone(),
            size,
            limit,
        },
        e => MediaError::Unreadable {
            path: shown.clone(),
            reason: e.to_string(),
        },
    })?;
    let Some(mime) = sniff(&bytes) else {
        return Err(MediaError::NotImage { path: shown });
    };
    let file = std::path::absolute(&path).unwrap_or(path);
    Ok(ImageRef {
        path: named.display().to_string(),
        file,
        mime: mime.to_owned(),
        sha256: sha256_hex(&bytes),
        size: bytes.len() as u64,
    })
}

/// Hex SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Writes image bytes held in a dataset column to a content-addressed file
/// (`<temp>/harness-images/<sha256>.<ext>`), so they have a path like any
/// other image; returns that path. Bytes that are no image are written too,
/// and refused where the path is attached, at the `images` key.
pub(crate) fn materialize(bytes: &[u8]) -> std::io::Result<PathBuf> {
    let ext = match sniff(bytes) {
        Some("image/png") => "png",
        Some("image/jpeg") => "jpg",
        Some("image/webp") => "webp",
        _ => "bin",
    };
    let dir = std::env::temp_dir().join("harness-images");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("{}.{ext}", sha256_hex(bytes)));
    if !path.exists() {
        // Write then rename, so a concurrent reader never sees half a file;
        // the partial name is unique to this process and call.
        static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let partial = dir.join(format!(".{}.{call}.partial", std::process::id()));
        std::fs::write(&partial, bytes)?;
        std::fs::rename(&partial, &path)?;
    }
    Ok(path)
}

/// The bytes of a Hugging Face image column (`{"bytes": <base64>, "path": ...}`
/// as Parquet rows become JSON), when `value` is one that holds bytes.
pub(crate) fn column_bytes(value: &serde_json::Value) -> Option<Vec<u8>> {
    let object = value.as_object()?;
    let encoded = object.get("bytes")?.as_str()?;
    if object.keys().any(|k| k != "bytes" && k != "path") {
        return None;
    }
    base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()
}

impl ImageRef {
    /// The image's bytes, read again from its file and checked against its
    /// digest: never more than the recorded size (a file that grew changed),
    /// never from a FIFO or a device swapped in since.
    pub(crate) fn read(&self) -> Result<Vec<u8>, MediaError> {
        let changed = |why: Option<String>| MediaError::Changed {
            path: self.path.clone(),
            why,
        };
        let limit = self.size.min(MAX_IMAGE_BYTES_CEILING);
        let bytes = match files::read_capped(&self.file, FileKind::Image, limit) {
            Ok(bytes) => bytes,
            Err(ReadError::TooLarge { .. }) => return Err(changed(None)),
            Err(e) => return Err(changed(Some(e.to_string()))),
        };
        if sha256_hex(&bytes) != self.sha256 {
            return Err(changed(None));
        }
        Ok(bytes)
    }

    /// The bytes in standard base64, as both wire formats send them.
    pub(crate) fn base64(&self) -> Result<String, MediaError> {
        Ok(base64::engine::general_purpose::STANDARD.encode(self.read()?))
    }

    /// A `data:` URL of the image.
    pub(crate) fn data_url(&self) -> Result<String, MediaError> {
        Ok(format!("data:{};base64,{}", self.mime, self.base64()?))
    }

    /// The first 12 hex digits of the digest, enough to tell images apart.
    pub fn short_digest(&self) -> &str {
        &self.sha256[..self.sha256.len().min(12)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG_1X1: &[u8] = &[
        0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D, b'I', b'H', b'D', b'R',
    ];

    #[test]
    fn sniffs_magic_bytes_not_names() {
        let cases: [(&[u8], Option<&str>); 5] = [
            (PNG_1X1, Some("image/png")),
            (&[0xFF, 0xD8, 0xFF, 0xE0], Some("image/jpeg")),
            (b"RIFF\x10\0\0\0WEBPVP8 ", Some("image/webp")),
            (b"GIF89a", None),
            (b"RIFF\x10\0\0\0WAVE", None),
        ];
        for (bytes, want) in cases {
            assert_eq!(sniff(bytes), want, "{bytes:?}");
        }
    }

    #[test]
    fn normalizes_lexically() {
        let cases = [
            ("specs/../datasets/x/./a.png", "datasets/x/a.png"),
            ("../a.png", "../a.png"),
            ("/abs/./b/../c.png", "/abs/c.png"),
        ];
        for (path, want) in cases {
            assert_eq!(normalize(Path::new(path)), PathBuf::from(want));
        }
    }

    #[test]
    fn loads_checks_and_refuses() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.png"), PNG_1X1).unwrap();
        std::fs::write(dir.path().join("a.txt"), b"hello").unwrap();
        let image = load(dir.path(), Path::new(""), "a.png", 100).unwrap();
        assert_eq!(image.path, "a.png");
        assert_eq!((image.mime.as_str(), image.size), ("image/png", 16));
        assert_eq!(image.sha256, sha256_hex(PNG_1X1));
        assert!(image.file.is_absolute());
        assert_eq!(image.read().unwrap(), PNG_1X1);
        assert!(
            image
                .data_url()
                .unwrap()
                .starts_with("data:image/png;base64,iVBORw0KGgo")
        );
        let errors = [
            (
                load(dir.path(), Path::new(""), "a.png", 10),
                "16 bytes, over the limit of 10",
            ),
            (
                load(dir.path(), Path::new(""), "a.txt", 100),
                "is not PNG, JPEG or WebP (by its first bytes)",
            ),
            (load(dir.path(), Path::new(""), "none.png", 100), "none.png"),
            (load(dir.path(), Path::new("x"), " ", 100), "empty"),
        ];
        for (result, want) in errors {
            let message = result.unwrap_err().to_string();
            assert!(message.contains(want), "{message}");
        }
    }

    #[test]
    fn column_bytes_are_materialized_by_digest() {
        let encoded = base64::engine::general_purpose::STANDARD.encode(PNG_1X1);
        let column = serde_json::json!({"bytes": encoded, "path": "x.png"});
        let bytes = column_bytes(&column).unwrap();
        let path = materialize(&bytes).unwrap();
        assert!(path.ends_with(format!("{}.png", sha256_hex(PNG_1X1))));
        assert_eq!(std::fs::read(&path).unwrap(), PNG_1X1);
        assert!(column_bytes(&serde_json::json!({"bytes": null, "path": "x"})).is_none());
        assert!(column_bytes(&serde_json::json!({"bytes": "aa", "other": 1})).is_none());
    }
}
