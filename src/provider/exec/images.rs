//! The images an `exec` program gets: private copies of what was recorded.
//!
//! A request's cache key names each image by its digest, and the program
//! reads files by path. Were the program handed the user's file, a file
//! changed between the load and the run (or during it) would be answered
//! and cached under the old digest, and a later run with the original image
//! would get that answer. So each image is read again (capped, checked
//! against its digest) and written to a folder only this user can enter;
//! the command line names the copies. After the program exits, the
//! originals and the copies are checked again: an image that changed while
//! the program ran fails the call (`image_changed`), and a failed call is
//! never cached.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::ExecCall;
use crate::prompt::{ImageRef, Message};
use crate::provider::ProviderError;

/// A private folder of image copies, removed with everything in it on drop.
pub(super) struct Copies {
    dir: Option<PathBuf>,
    /// Each image as recorded, and the same image at its copy.
    images: Vec<(ImageRef, ImageRef)>,
}

impl Copies {
    /// Copies every image of `messages`, each checked against its digest.
    pub(super) fn make(messages: &[Message]) -> Result<Copies, ProviderError> {
        let mut copies = Copies {
            dir: None,
            images: Vec::new(),
        };
        for (i, image) in messages.iter().flat_map(|m| &m.images).enumerate() {
            let bytes = image.read().map_err(|e| crate::provider::image_error(&e))?;
            let dir = match &copies.dir {
                Some(dir) => dir.clone(),
                None => copies
                    .dir
                    .insert(private_dir().map_err(copy_error)?)
                    .clone(),
            };
            let ext = match image.mime.as_str() {
                "image/png" => "png",
                "image/jpeg" => "jpg",
                "image/webp" => "webp",
                _ => "bin",
            };
            let file = dir.join(format!("image-{i}.{ext}"));
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&file)
                .and_then(|mut f| f.write_all(&bytes))
                .map_err(copy_error)?;
            let mut copy = image.clone();
            copy.file = file;
            copies.images.push((image.clone(), copy));
        }
        Ok(copies)
    }

    /// `call` with each image's file named by its copy instead; longest
    /// paths first, so a path inside another is never half replaced.
    pub(super) fn call(&self, call: &ExecCall) -> ExecCall {
        let mut swaps: Vec<(String, String)> = self
            .images
            .iter()
            .map(|(original, copy)| (path_text(&original.file), path_text(&copy.file)))
            .filter(|(from, _)| !from.is_empty())
            .collect();
        swaps.sort_by_key(|(from, _)| std::cmp::Reverse(from.len()));
        let mut out = call.clone();
        for arg in &mut out.argv {
            for (from, to) in &swaps {
                if arg.contains(from.as_str()) {
                    *arg = arg.replace(from.as_str(), to);
                }
            }
        }
        out
    }

    /// Fails when an original or a copy is no longer what was recorded.
    pub(super) fn check(&self) -> Result<(), ProviderError> {
        for (original, copy) in &self.images {
            original
                .read()
                .map_err(|e| crate::provider::image_error(&e))?;
            copy.read().map_err(|_| {
                ProviderError::ImageChanged(format!(
                    "image `{}`: the program changed its copy",
                    original.path
                ))
            })?;
        }
        Ok(())
    }
}

impl Drop for Copies {
    fn drop(&mut self) {
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn path_text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

fn copy_error(e: std::io::Error) -> ProviderError {
    ProviderError::Program(format!("cannot copy its images: {e}"))
}

/// A new folder in the temporary directory that only this user can enter.
/// `mkdir` fails on any name that exists (a symlink too), so a name
/// planted by another user is skipped, never followed.
fn private_dir() -> std::io::Result<PathBuf> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let base = std::env::temp_dir();
    let mut last = None;
    for _ in 0..16 {
        let n = CALLS.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = base.join(format!(
            "harness-exec-{}-{n}-{nanos:08x}",
            std::process::id()
        ));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free name")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    #[test]
    fn programs_get_private_checked_copies_and_changes_fail_the_call() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.png"), PNG).unwrap();
        let image = crate::media::load(dir.path(), Path::new(""), "a.png", 1 << 20).unwrap();
        let mut message: Message =
            serde_json::from_value(serde_json::json!({"role": "user", "content": "read"})).unwrap();
        message.images.push(image.clone());
        let original = path_text(&image.file);
        let call = ExecCall {
            argv: vec!["ocr".into(), original.clone(), format!("--in={original}")],
            vars: Default::default(),
            local: Vec::new(),
        };
        let copies = Copies::make(std::slice::from_ref(&message)).unwrap();
        let run = copies.call(&call);
        let copy = PathBuf::from(&run.argv[1]);
        assert_ne!(run.argv[1], original);
        assert_eq!(run.argv[2], format!("--in={}", run.argv[1]));
        assert_eq!(std::fs::read(&copy).unwrap(), PNG);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(copy.parent().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        copies.check().unwrap();
        std::fs::write(dir.path().join("a.png"), b"\x89PNG\r\n\x1a\nother").unwrap();
        let e = copies.check().unwrap_err();
        assert_eq!(e.kind(), crate::failure::FailureKind::ImageChanged, "{e}");
        assert!(Copies::make(std::slice::from_ref(&message)).is_err());
        drop(copies);
        assert!(!copy.exists(), "the copies go with the call");
    }
}
