//! The images of a spec's messages: where relative paths start, the
//! load-time check of paths without template syntax, the per-instance check
//! of rendered ones, and dataset columns holding image bytes.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::Spec;
use crate::error::{Diagnostic, ErrorKind};
use crate::format::locate::{Key, SourceMap};
use crate::format::{Role, SpecFile};
use crate::media::{self, MAX_IMAGE_BYTES, MediaError};
use crate::prompt::Message;

/// The spec's per-image size limit (the default when its own is out of
/// range, which `validate` reports).
fn limit(def: &SpecFile) -> u64 {
    def.prompt
        .max_image_bytes
        .filter(|b| (1..=media::MAX_IMAGE_BYTES_CEILING).contains(b))
        .unwrap_or(MAX_IMAGE_BYTES)
}

/// The folder relative image paths start from, relative to the spec's
/// folder: the local dataset file's folder (its `{split}` filled from the
/// instance's `split`), else the spec's own (empty).
pub(super) fn image_dir(def: &SpecFile, vars: Option<&Map<String, Value>>) -> PathBuf {
    let Some(dataset) = def
        .dataset
        .as_ref()
        .filter(|d| !d.path.starts_with("hf://"))
    else {
        return PathBuf::new();
    };
    let split = vars
        .and_then(|v| v.get("split"))
        .and_then(Value::as_str)
        .or(dataset.split.as_deref())
        .unwrap_or("");
    let path = dataset.path.replace("{split}", split);
    Path::new(&path)
        .parent()
        .unwrap_or(Path::new(""))
        .to_path_buf()
}

/// The key path of template `name` (`user`, `images.0`, `messages.1`,
/// `messages.1.images.0`): a message template's path ends in `content`.
pub(super) fn template_key_path(name: &str) -> Vec<Key<'_>> {
    let mut path = vec![Key::Name("prompt")];
    path.extend(name.split('.').map(|part| match part.parse() {
        Ok(i) => Key::Index(i),
        Err(_) => Key::Name(part),
    }));
    if name.starts_with("messages.") && path.len() == 3 {
        path.push(Key::Name("content"));
    }
    path
}

/// Every image entry as (template name, message index in the prompt set, source).
pub(super) fn image_templates(def: &SpecFile) -> Vec<(String, usize, String)> {
    let p = &def.prompt;
    match &p.messages {
        Some(messages) => messages
            .iter()
            .enumerate()
            .flat_map(|(i, m)| {
                m.images
                    .iter()
                    .enumerate()
                    .map(move |(j, s)| (format!("messages.{i}.images.{j}"), i, s.clone()))
            })
            .collect(),
        None if p.user.is_none() => Vec::new(),
        None => {
            let user = usize::from(p.system.is_some());
            p.images
                .iter()
                .enumerate()
                .map(|(j, s)| (format!("images.{j}"), user, s.clone()))
                .collect()
        }
    }
}

/// Problems of the image entries that hold no template syntax, found when the
/// spec is loaded: each at its key.
pub(super) fn check_static(def: &SpecFile, map: &SourceMap, spec_dir: &Path) -> Vec<Diagnostic> {
    let dir = image_dir(def, None);
    let mut errors = Vec::new();
    if def.prompt.messages.is_none() && def.prompt.user.is_none() && !def.prompt.images.is_empty() {
        errors.push(Diagnostic::new(
            ErrorKind::Invalid,
            map.locate(crate::format::key_path!["prompt", "images"]),
            "`images` go with the `user` message, and [prompt] has no `user`",
        ));
    }
    for (i, m) in def.prompt.messages.iter().flatten().enumerate() {
        if m.role != Role::User && !m.images.is_empty() {
            errors.push(Diagnostic::new(
                ErrorKind::Invalid,
                map.locate(crate::format::key_path!["prompt", "messages", i, "images"]),
                "only `user` messages carry images (what the OpenAI and Ollama APIs accept)",
            ));
        }
    }
    for (name, _, source) in image_templates(def) {
        if source.contains("{{") || source.contains("{%") {
            continue;
        }
        if let Err(e) = media::load(spec_dir, &dir, &source, limit(def)) {
            errors.push(image_diagnostic(map, &name, None, &e));
        }
    }
    errors
}

/// An image problem at its `images` entry, naming the instance when there is one.
fn image_diagnostic(map: &SourceMap, name: &str, index: Option<u64>, e: &MediaError) -> Diagnostic {
    let prefix = index.map(|i| format!("instance {i}: ")).unwrap_or_default();
    map.diagnostic(
        ErrorKind::Image,
        map.locate(&template_key_path(name)),
        format!("{prefix}{e}"),
    )
}

/// Replaces each variable holding a Hugging Face image column with image
/// bytes (`{"bytes", "path"}`) by the path of a file holding those bytes, so
/// `images = ["{{ image }}"]` attaches it and no journal holds the bytes.
pub(super) fn materialize_columns(vars: &mut Map<String, Value>) -> Result<(), ColumnError> {
    for (name, value) in vars.iter_mut() {
        if let Some(bytes) = media::column_bytes(value) {
            let path = media::materialize(&bytes).map_err(|source| ColumnError {
                column: name.clone(),
                source,
            })?;
            *value = Value::String(path.display().to_string());
        }
    }
    Ok(())
}

/// An image column whose bytes could not be written to a file.
#[derive(Debug, thiserror::Error)]
#[error("image column `{column}`: cannot write its bytes: {source}")]
pub(super) struct ColumnError {
    /// The variable holding the column.
    column: String,
    /// Why the file could not be written.
    source: std::io::Error,
}

impl Spec {
    /// Renders, reads and checks the images of `messages` (the prompt set's
    /// messages, before any history is spliced in).
    pub(super) fn attach_images(
        &self,
        index: u64,
        context: &minijinja::Value,
        vars: &Map<String, Value>,
        messages: &mut [Message],
    ) -> Result<(), Diagnostic> {
        let rendered = self.prompt.render_images(context).map_err(|e| {
            self.template_diagnostic(&e, Some(index))
                .with_source(self.map.source())
        })?;
        if rendered.iter().all(Vec::is_empty) {
            return Ok(());
        }
        let spec_dir = self.file.parent().unwrap_or(Path::new("."));
        let dir = image_dir(&self.def, Some(vars));
        for (message, paths) in messages.iter_mut().zip(rendered) {
            for (name, path) in paths {
                let image = media::load(spec_dir, &dir, &path, limit(&self.def))
                    .map_err(|e| image_diagnostic(&self.map, &name, Some(index), &e))?;
                message.images.push(image);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::key_path;

    #[test]
    fn template_names_map_to_their_keys() {
        let cases: [(&str, &[Key]); 4] = [
            ("user", key_path!["prompt", "user"]),
            ("images.2", key_path!["prompt", "images", 2]),
            ("messages.1", key_path!["prompt", "messages", 1, "content"]),
            (
                "messages.1.images.0",
                key_path!["prompt", "messages", 1, "images", 0],
            ),
        ];
        for (name, want) in cases {
            assert_eq!(
                format!("{:?}", template_key_path(name)),
                format!("{want:?}"),
                "{name}"
            );
        }
    }

    #[test]
    fn relative_paths_start_at_a_local_dataset_else_the_spec() {
        let def = |dataset: &str| -> SpecFile {
            toml::from_str(&format!(
                "{dataset}\n[prompt]\nuser = \"x\"\nimages = [\"a.png\"]\n[[verify]]\nrule = \"exact\"\nexpected = \"a\""
            ))
            .unwrap()
        };
        let split = Map::from_iter([("split".to_owned(), Value::from("test"))]);
        let cases = [
            ("", None, ""),
            (
                "[dataset]\npath = \"../datasets/ocr/lines.jsonl\"",
                None,
                "../datasets/ocr",
            ),
            ("[dataset]\npath = \"hf://o/n\"\nsplit = \"test\"", None, ""),
            (
                "[dataset]\npath = \"d/{split}/rows.jsonl\"",
                Some(&split),
                "d/test",
            ),
        ];
        for (dataset, vars, want) in cases {
            assert_eq!(
                image_dir(&def(dataset), vars),
                PathBuf::from(want),
                "{dataset}"
            );
        }
    }
}
