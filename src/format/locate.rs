//! Finds where a key or value sits in a spec's TOML source, so later stages
//! (scripts, templates, regexes, examples) can report file:line:col.

use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use toml::Spanned;
use toml::de::{DeTable, DeValue, ValueDeserializer};

use super::toml_error::toml_diagnostic;
use crate::error::{Diagnostic, ErrorKind, Location};

/// One step of a path into a TOML document.
#[derive(Debug, Clone, Copy)]
pub enum Key<'a> {
    /// A table key.
    Name(&'a str),
    /// An array index.
    Index(usize),
}

impl<'a> From<&'a str> for Key<'a> {
    fn from(s: &'a str) -> Self {
        Key::Name(s)
    }
}

impl From<usize> for Key<'_> {
    fn from(i: usize) -> Self {
        Key::Index(i)
    }
}

/// Builds a `&[Key]` path from mixed names and indices.
macro_rules! key_path {
    ($($k:expr),* $(,)?) => { &[$($crate::format::locate::Key::from($k)),*][..] };
}
pub(crate) use key_path;

/// A span-carrying outline of a TOML document: structure and positions, no values.
#[derive(Debug)]
enum Node {
    Table(Vec<(String, Range<usize>, Spanned<Node>)>),
    Array(Vec<Spanned<Node>>),
    Scalar,
    /// A float TOML reads as infinite or NaN (`inf`, `nan`, `1e999`).
    NonFinite,
}

fn outline(value: &DeValue<'_>) -> Node {
    match value {
        DeValue::Table(t) => outline_table(t),
        DeValue::Array(a) => Node::Array(
            a.iter()
                .map(|v| Spanned::new(v.span(), outline(v.get_ref())))
                .collect(),
        ),
        DeValue::Float(f) if !super::range::finite_float_text(f.as_str()) => Node::NonFinite,
        _ => Node::Scalar,
    }
}

fn outline_table(table: &DeTable<'_>) -> Node {
    Node::Table(
        table
            .iter()
            .map(|(k, v)| {
                (
                    k.get_ref().to_string(),
                    k.span(),
                    Spanned::new(v.span(), outline(v.get_ref())),
                )
            })
            .collect(),
    )
}

/// The parsed, span-carrying form of a spec file.
pub struct SourceMap {
    file: PathBuf,
    source: String,
    root: Spanned<Node>,
}

impl SourceMap {
    /// Parses `source`; fails only on TOML syntax errors.
    pub fn parse(file: &Path, source: &str) -> Result<SourceMap, toml::de::Error> {
        let root = DeTable::parse(source)?;
        let root = Spanned::new(root.span(), outline_table(root.get_ref()));
        Ok(SourceMap {
            file: file.to_path_buf(),
            source: source.to_owned(),
            root,
        })
    }

    /// The file this map describes.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The full source text.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// A diagnostic at `location` in this file, showing its source line.
    pub fn diagnostic(
        &self,
        kind: ErrorKind,
        location: Location,
        message: impl Into<String>,
    ) -> Diagnostic {
        Diagnostic::new(kind, location, message).with_source(&self.source)
    }

    /// The span of the value at `path`, if present.
    pub fn value_span(&self, path: &[Key]) -> Option<Range<usize>> {
        self.node(path).map(|v| v.span())
    }

    /// The span of the key that ends `path`, if present (for unknown-key errors).
    pub fn key_span(&self, path: &[Key]) -> Option<Range<usize>> {
        let (last, parent) = path.split_last()?;
        let Key::Name(name) = last else {
            return self.value_span(path);
        };
        match self.node(parent)?.get_ref() {
            Node::Table(entries) => entries
                .iter()
                .find(|(k, _, _)| k == name)
                .map(|(_, span, _)| span.clone()),
            _ => None,
        }
    }

    /// The keys present in the table at `path`, in source order.
    pub fn table_keys(&self, path: &[Key]) -> Vec<String> {
        match self.node(path).map(|n| n.get_ref()) {
            Some(Node::Table(entries)) => entries.iter().map(|(k, _, _)| k.clone()).collect(),
            _ => Vec::new(),
        }
    }

    /// The location of `path`'s value, or the nearest present ancestor, or the file start.
    pub fn locate(&self, path: &[Key]) -> Location {
        for end in (1..=path.len()).rev() {
            if let Some(span) = self.value_span(&path[..end]) {
                return self.location_at(span.start);
            }
        }
        Location::file_start(&self.file)
    }

    /// The location of `path`'s key (falls back to [`SourceMap::locate`]).
    pub fn locate_key(&self, path: &[Key]) -> Location {
        match self.key_span(path) {
            Some(span) => self.location_at(span.start),
            None => self.locate(path),
        }
    }

    /// The location of a byte offset.
    pub fn location_at(&self, offset: usize) -> Location {
        Location::from_offset(&self.file, &self.source, offset)
    }

    /// Where the text of the string at `path` starts, skipping its quotes and
    /// the newline TOML trims after an opening triple quote.
    pub fn string_content_start(&self, path: &[Key]) -> Option<usize> {
        let span = self.value_span(path)?;
        let raw = self.source.get(span.clone())?;
        let mut start = span.start;
        if raw.starts_with("'''") || raw.starts_with("\"\"\"") {
            start += 3;
            let rest = &self.source[start..];
            if rest.starts_with("\r\n") {
                start += 2;
            } else if rest.starts_with('\n') {
                start += 1;
            }
        } else if raw.starts_with('\'') || raw.starts_with('"') {
            start += 1;
        }
        Some(start)
    }

    /// Maps a 1-based (line, column) inside the string at `path` to a file location.
    ///
    /// Walks the raw TOML text decoding escapes (`\n`, `\"`, `\uXXXX`, line-ending
    /// backslashes), so positions stay exact in basic strings too.
    pub fn locate_in_string(&self, path: &[Key], line: usize, column: usize) -> Location {
        let Some(start) = self.string_content_start(path) else {
            return self.locate(path);
        };
        let basic = self
            .value_span(path)
            .and_then(|span| self.source.get(span.start..span.start + 1))
            == Some("\"");
        let raw = &self.source[start..];
        let (target_line, target_col) = (line.max(1), column.max(1));
        let (mut line, mut col) = (1usize, 1usize);
        let mut chars = raw.char_indices().peekable();
        while let Some((offset, c)) = chars.next() {
            if (line, col) >= (target_line, target_col) {
                return self.location_at(start + offset);
            }
            if basic && c == '\\' {
                match chars.next() {
                    Some((_, 'u')) => {
                        chars.nth(3);
                    }
                    Some((_, 'U')) => {
                        chars.nth(7);
                    }
                    Some((_, 'n')) => {
                        line += 1;
                        col = 1;
                        continue;
                    }
                    Some((_, w)) if w.is_whitespace() => {
                        // A line-ending backslash swallows the following whitespace.
                        while chars.next_if(|(_, w)| w.is_whitespace()).is_some() {}
                        continue;
                    }
                    _ => {}
                }
                col += 1;
            } else if c == '\n' {
                line += 1;
                col = 1;
            } else {
                col += 1;
            }
        }
        self.location_at(start + raw.len())
    }

    /// Reads the table at `path` into `T`, leaving out the keys in `skip`.
    /// Errors keep their place in the file and name the key's path
    /// (`verify[0].threshold`), as when the whole file is read.
    pub fn read_table<T: DeserializeOwned>(
        &self,
        path: &[Key],
        skip: &[&str],
    ) -> Result<T, Diagnostic> {
        let diagnostic =
            |at: &str, e: &toml::de::Error| toml_diagnostic(&self.file, &self.source, at, e);
        let root = DeTable::parse(&self.source).map_err(|e| diagnostic("", &e))?;
        let mut current = Spanned::new(root.span(), DeValue::Table(root.into_inner()));
        let mut at = String::new();
        for key in path {
            let next = match (key, current.get_ref()) {
                (Key::Name(n), DeValue::Table(t)) => t.get(*n).cloned(),
                (Key::Index(i), DeValue::Array(a)) => a.get(*i).cloned(),
                _ => None,
            };
            match key {
                Key::Name(n) if at.is_empty() => at.push_str(n),
                Key::Name(n) => at.push_str(&format!(".{n}")),
                Key::Index(i) => at.push_str(&format!("[{i}]")),
            }
            current = next
                .unwrap_or_else(|| Spanned::new(current.span(), DeValue::Table(DeTable::new())));
        }
        if let DeValue::Table(table) = current.get_mut() {
            for key in skip {
                table.remove(*key);
            }
        }
        serde_path_to_error::deserialize(ValueDeserializer::from(current)).map_err(|e| {
            let inner = e.path().to_string();
            let at = if inner == "." {
                at
            } else {
                format!("{at}.{inner}")
            };
            diagnostic(&at, e.inner())
        })
    }

    /// Where the document holds a float that is infinite or NaN once read,
    /// in source order: no key takes one, and inside free-form values
    /// (`data`, `extra_body`) it would silently become `null`.
    pub fn non_finite_floats(&self) -> Vec<(Location, String)> {
        let mut found = Vec::new();
        let mut stack = vec![&self.root];
        while let Some(node) = stack.pop() {
            match node.get_ref() {
                Node::Table(entries) => stack.extend(entries.iter().rev().map(|(_, _, v)| v)),
                Node::Array(items) => stack.extend(items.iter().rev()),
                Node::NonFinite => found.push(node.span()),
                Node::Scalar => {}
            }
        }
        found.sort_by_key(|span| span.start);
        found
            .into_iter()
            .map(|span| {
                let text = self.source.get(span.clone()).unwrap_or_default().to_owned();
                (self.location_at(span.start), text)
            })
            .collect()
    }

    fn node(&self, path: &[Key]) -> Option<&Spanned<Node>> {
        let mut current = &self.root;
        for key in path {
            current = match (key, current.get_ref()) {
                (Key::Name(n), Node::Table(entries)) => {
                    entries.iter().find(|(k, _, _)| k == n).map(|(_, _, v)| v)?
                }
                (Key::Index(i), Node::Array(items)) => items.get(*i)?,
                _ => return None,
            };
        }
        Some(current)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "id = \"x\"\n[[verify]]\nrule = \"exact\"\n[[verify]]\nrule = \"regex\"\npattern = '''\n(a\n'''\n";

    #[test]
    fn finds_keys_and_values_in_arrays_of_tables() {
        let map = SourceMap::parse(Path::new("s.toml"), SRC).unwrap();
        let loc = map.locate(key_path!["verify", 1, "rule"]);
        assert_eq!((loc.line, loc.column), (5, 8));
        let key = map.locate_key(key_path!["verify", 1, "pattern"]);
        assert_eq!((key.line, key.column), (6, 1));
        assert_eq!(map.table_keys(key_path!["verify", 0]), vec!["rule"]);
    }

    #[test]
    fn maps_positions_across_escapes_in_basic_strings() {
        let src = "user = \"ab\\n\\\"c{{ x }}\"\n";
        let map = SourceMap::parse(Path::new("s.toml"), src).unwrap();
        // Template line 2, column 3 is `{` after the escaped quote and `c`.
        let loc = map.locate_in_string(key_path!["user"], 2, 3);
        assert_eq!((loc.line, loc.column), (1, 16), "{src}");
    }

    #[test]
    fn finds_every_float_that_reads_as_infinite_or_nan() {
        let src = "a = 1.5\nb = inf\n[data]\nx = [1.0, nan, 1e999]\ny = { z = -inf, w = 2 }\n";
        let map = SourceMap::parse(Path::new("s.toml"), src).unwrap();
        let found: Vec<(usize, usize, String)> = map
            .non_finite_floats()
            .into_iter()
            .map(|(at, text)| (at.line, at.column, text))
            .collect();
        assert_eq!(
            found,
            [
                (2, 5, "inf"),
                (4, 11, "nan"),
                (4, 16, "1e999"),
                (5, 11, "-inf")
            ]
            .map(|(l, c, t)| (l, c, t.to_owned()))
        );
    }

    #[test]
    fn maps_positions_inside_multiline_strings() {
        let map = SourceMap::parse(Path::new("s.toml"), SRC).unwrap();
        let loc = map.locate_in_string(key_path!["verify", 1, "pattern"], 1, 2);
        assert_eq!((loc.line, loc.column), (7, 2));
    }
}
