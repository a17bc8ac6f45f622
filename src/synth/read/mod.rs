//! Document readers: plain text and Markdown, HTML, PDF and DOCX, each to
//! plain text. A file that cannot be read is reported and skipped; it never
//! stops the batch.
//!
//! A leaf of `synth`: it imports nothing from the rest of the crate.

mod docx;
mod html;
mod pdf;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// A document's format, from its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Format {
    /// `.txt`, `.text`.
    Text,
    /// `.md`, `.markdown` (read as text: Markdown is meant to be read as it is).
    Markdown,
    /// `.html`, `.htm`.
    Html,
    /// `.pdf`.
    Pdf,
    /// `.docx`.
    Docx,
}

impl Format {
    /// The format of `path`, or `None` for an extension no reader takes.
    pub(crate) fn of(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "txt" | "text" => Format::Text,
            "md" | "markdown" => Format::Markdown,
            "html" | "htm" | "xhtml" => Format::Html,
            "pdf" => Format::Pdf,
            "docx" => Format::Docx,
            _ => return None,
        })
    }
}

/// Why one file could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    /// The file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file was read but its content could not be turned into text.
    #[error("{path}: {source}")]
    Content {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        source: ContentError,
    },
}

/// Why a file's bytes are not a document of its format.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ContentError {
    /// A text file that is not UTF-8.
    #[error("not UTF-8 text: {0}")]
    NotUtf8(#[from] std::string::FromUtf8Error),
    /// The PDF reader refused the file (its message).
    #[error("not a readable PDF: {0}")]
    Pdf(String),
    /// The PDF reader panicked on the file.
    #[error("not a readable PDF: the PDF reader failed on this file")]
    PdfPanic,
    /// A `.docx` that is not a ZIP archive.
    #[error("not a DOCX (ZIP) file: {0}")]
    NotZip(zip::result::ZipError),
    /// A ZIP archive without `word/document.xml`.
    #[error("not a DOCX file: word/document.xml: {0}")]
    NoDocument(zip::result::ZipError),
    /// `word/document.xml` could not be read or decoded.
    #[error("word/document.xml: {0}")]
    Xml(String),
    /// `word/document.xml` is not well-formed XML.
    #[error("word/document.xml at byte {at}: {message}")]
    XmlAt {
        /// The byte the XML reader stopped at.
        at: u64,
        /// The reader's message.
        message: String,
    },
}

/// One document's text and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Document {
    /// A unique, file-name-safe name: the path below the input folder without
    /// its extension, `/` replaced by `_` (chunk files are `<name>_<i>.txt`).
    pub name: String,
    /// The file as given or found.
    pub source: PathBuf,
    /// Its format.
    pub format: Format,
    /// The extracted text.
    pub text: String,
}

/// A file that was not read, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Skipped {
    /// The file.
    pub source: PathBuf,
    /// Why.
    pub reason: String,
}

/// Reads one file by its format.
pub(crate) fn read_file(path: &Path, format: Format) -> Result<String, ReadError> {
    let bytes =
        crate::files::read_bounded(path, crate::files::FileKind::Document).map_err(|e| {
            ReadError::Io {
                path: path.to_path_buf(),
                source: e.into(),
            }
        })?;
    let content = |source| ReadError::Content {
        path: path.to_path_buf(),
        source,
    };
    let text = match format {
        Format::Text | Format::Markdown => {
            String::from_utf8(bytes).map_err(|e| content(e.into()))?
        }
        Format::Html => {
            let source = String::from_utf8_lossy(&bytes);
            html::text(&source)
        }
        Format::Pdf => pdf::text(&bytes).map_err(content)?,
        Format::Docx => docx::text(&bytes).map_err(content)?,
    };
    Ok(text.replace("\r\n", "\n").trim().to_owned())
}

/// Every file under `inputs` (files, or folders walked recursively in name
/// order; hidden entries skipped), read into documents; the rest reported.
pub(crate) fn read_inputs(inputs: &[PathBuf]) -> (Vec<Document>, Vec<Skipped>) {
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    for input in inputs {
        if input.is_dir() {
            walk(input, input, &mut files, &mut skipped);
        } else {
            let base = input.parent().unwrap_or(Path::new("")).to_path_buf();
            files.push((base, input.clone()));
        }
    }
    let mut documents = Vec::new();
    let mut names = HashSet::new();
    for (base, path) in files {
        let Some(format) = Format::of(&path) else {
            skipped.push(Skipped {
                source: path,
                reason: "unsupported format (txt, md, html, pdf, docx are read)".into(),
            });
            continue;
        };
        match read_file(&path, format) {
            Ok(text) if text.is_empty() => skipped.push(Skipped {
                source: path,
                reason: "no text".into(),
            }),
            Ok(text) => documents.push(Document {
                name: unique_name(&base, &path, &mut names),
                source: path,
                format,
                text,
            }),
            Err(e) => skipped.push(Skipped {
                source: path,
                reason: e.to_string(),
            }),
        }
    }
    (documents, skipped)
}

fn walk(base: &Path, dir: &Path, files: &mut Vec<(PathBuf, PathBuf)>, skipped: &mut Vec<Skipped>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            skipped.push(Skipped {
                source: dir.to_path_buf(),
                reason: format!("cannot list: {e}"),
            });
            return;
        }
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        {
            continue;
        }
        if path.is_dir() {
            walk(base, &path, files, skipped);
        } else {
            files.push((base.to_path_buf(), path));
        }
    }
}

/// `sub/report.pdf` → `sub_report`; a name already taken gets its extension (`report_pdf`), then a number.
fn unique_name(base: &Path, path: &Path, taken: &mut HashSet<String>) -> String {
    let rel = path.strip_prefix(base).unwrap_or(path).with_extension("");
    let stem: String = rel
        .to_string_lossy()
        .chars()
        .map(|c| {
            if c == '/' || c == '\\' || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect();
    let ext = path.extension().map(|e| e.to_string_lossy().into_owned());
    let mut candidates = vec![stem.clone()];
    candidates.extend(ext.map(|e| format!("{stem}_{e}")));
    let name = candidates
        .into_iter()
        .chain((2..).map(|n| format!("{stem}-{n}")))
        .find(|c| !taken.contains(c))
        .expect("an unused name exists");
    taken.insert(name.clone());
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_flat() {
        let mut taken = HashSet::new();
        let base = Path::new("docs");
        assert_eq!(unique_name(base, Path::new("docs/a.txt"), &mut taken), "a");
        assert_eq!(
            unique_name(base, Path::new("docs/a.pdf"), &mut taken),
            "a_pdf"
        );
        assert_eq!(
            unique_name(base, Path::new("docs/a.pdf"), &mut taken),
            "a-2"
        );
        assert_eq!(
            unique_name(base, Path::new("docs/sub/b.md"), &mut taken),
            "sub_b"
        );
    }

    #[test]
    fn unreadable_and_unsupported_files_are_skipped_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("good.txt"), "Hello there.\r\n").unwrap();
        std::fs::write(dir.path().join("bad.txt"), [0xff, 0xfe, 0x00]).unwrap();
        std::fs::write(dir.path().join("broken.pdf"), "not a pdf").unwrap();
        std::fs::write(dir.path().join("broken.docx"), "not a zip").unwrap();
        std::fs::write(dir.path().join("image.png"), [1, 2, 3]).unwrap();
        std::fs::write(dir.path().join(".hidden.txt"), "secret").unwrap();
        let (docs, skipped) = read_inputs(&[dir.path().to_path_buf()]);
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].name, "good");
        assert_eq!(docs[0].text, "Hello there.");
        let reasons: Vec<String> = skipped
            .iter()
            .map(|s| s.source.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            reasons,
            ["bad.txt", "broken.docx", "broken.pdf", "image.png"]
        );
        assert!(skipped.iter().all(|s| !s.reason.is_empty()));
    }
}
