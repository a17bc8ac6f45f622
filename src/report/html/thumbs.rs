//! The images of a prompt as the page shows them: a thumbnail (its size
//! capped by the stylesheet) and a label of path, type, size and digest.
//! The page is self-contained and its Content-Security-Policy loads images
//! from `data:` URLs only, so an image is embedded when it is small and its
//! file, read again now, still has the recorded digest; else the label stands alone.

use std::path::Path;

use serde::Serialize;

use crate::prompt::{ImageRef, Message};

/// Images up to this many bytes are embedded (a 48-line OCR spec's PNGs
/// average 8 KB); larger ones would bloat a page that holds every instance.
pub(super) const EMBED_BYTES: u64 = 256 * 1024;

/// The types a thumbnail may claim; anything else in a journal is not embedded.
const TYPES: [&str; 3] = ["image/png", "image/jpeg", "image/webp"];

/// One image in the page.
#[derive(Debug, Serialize)]
pub(super) struct Thumb {
    /// The `data:` URL, when embedded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub u: Option<String>,
    /// Path, type, size and digest prefix.
    pub t: String,
}

/// One prompt message: `[role, content]`, or `[role, content, thumbs]` when it has images.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum PromptRow {
    /// Text alone.
    Text(String, String),
    /// Text and images.
    Images(String, String, Vec<Thumb>),
}

/// The row of `message` with its text already clipped to `content`; relative
/// image paths are read from `dir` (the spec's folder), else the working directory.
pub(super) fn prompt_row(
    message: &Message,
    role: String,
    content: String,
    dir: Option<&Path>,
) -> PromptRow {
    if message.images.is_empty() {
        return PromptRow::Text(role, content);
    }
    let thumbs = message.images.iter().map(|i| thumb(i, dir)).collect();
    PromptRow::Images(role, content, thumbs)
}

fn thumb(image: &ImageRef, dir: Option<&Path>) -> Thumb {
    let t = format!(
        "{} · {} · {} bytes · sha256 {}",
        image.path,
        image.mime,
        image.size,
        image.short_digest()
    );
    let embeddable = image.size <= EMBED_BYTES && TYPES.contains(&image.mime.as_str());
    if !embeddable {
        return Thumb { u: None, t };
    }
    let mut found = image.clone();
    found.file = dir.unwrap_or(Path::new(".")).join(&image.path);
    // Read at most the recorded size, from a regular file only: a path
    // repointed at /dev/zero or a FIFO since the run costs nothing.
    match found.data_url() {
        Ok(u) => Thumb { u: Some(u), t },
        Err(_) => Thumb {
            u: None,
            t: format!("{t} · changed since the run"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Role;

    fn message(path: &str, size: u64, mime: &str) -> Message {
        let bytes = std::fs::read("docs/examples/datasets/ocr_mini/images/en_41.png").unwrap();
        let sha = sha2::Digest::finalize(<sha2::Sha256 as sha2::Digest>::new_with_prefix(&bytes));
        let image = serde_json::json!({
            "path": path, "mime": mime, "size": size,
            "sha256": sha.iter().map(|b| format!("{b:02x}")).collect::<String>(),
        });
        let mut m = Message::text(Role::User, "read");
        m.images.push(serde_json::from_value(image).unwrap());
        m
    }

    #[test]
    fn small_images_are_embedded_others_labelled() {
        let dir = Some(Path::new("docs/examples/specs"));
        let path = "../datasets/ocr_mini/images/en_41.png";
        let cases = [
            (message(path, 2825, "image/png"), true),
            (message(path, EMBED_BYTES + 1, "image/png"), false),
            (message(path, 2825, "text/html"), false),
            (
                message("../datasets/ocr_mini/images/ru_19.png", 2825, "image/png"),
                false,
            ),
            (message("gone.png", 2825, "image/png"), false),
        ];
        for (m, embedded) in cases {
            let row = prompt_row(&m, "user".into(), "read".into(), dir);
            let PromptRow::Images(_, _, thumbs) = row else {
                panic!("{row:?}")
            };
            assert_eq!(thumbs[0].u.is_some(), embedded, "{thumbs:?}");
            assert!(
                thumbs[0].t.contains(" bytes · sha256 efc837b5d15d"),
                "{}",
                thumbs[0].t
            );
            if let Some(u) = &thumbs[0].u {
                assert!(u.starts_with("data:image/png;base64,iVBORw0KGgo"));
            }
        }
        let text = prompt_row(
            &Message::text(Role::User, "x"),
            "user".into(),
            "x".into(),
            dir,
        );
        assert_eq!(serde_json::to_string(&text).unwrap(), r#"["user","x"]"#);
    }
}
