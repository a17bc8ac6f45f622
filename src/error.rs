//! Diagnostics: every error about user input names a file, line and column.

use std::fmt;
use std::path::{Path, PathBuf};

/// A position in a user's file, 1-based.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file the problem is in.
    pub file: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, counted in characters.
    pub column: usize,
}

impl Location {
    /// The location of byte `offset` in `source`, read from `file`.
    pub fn from_offset(file: &Path, source: &str, offset: usize) -> Location {
        let offset = offset.min(source.len());
        let before = &source[..floor_char_boundary(source, offset)];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() + 1;
        Location {
            file: file.to_path_buf(),
            line,
            column,
        }
    }

    /// The start of `file`, for problems that belong to a whole file.
    pub fn file_start(file: &Path) -> Location {
        Location {
            file: file.to_path_buf(),
            line: 1,
            column: 1,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.column)
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// What kind of problem a diagnostic reports; the CLI maps all of them to exit code 2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The file could not be read.
    Io,
    /// TOML syntax, or a value of the wrong type or shape.
    Toml,
    /// A key the spec format does not have.
    UnknownKey,
    /// A value that is well-formed but not acceptable.
    Invalid,
    /// A Rhai script failed to compile or run.
    Script,
    /// A minijinja template failed to compile or render.
    Template,
    /// A regular expression failed to compile.
    Regex,
    /// A JSON Schema file is missing or invalid.
    Schema,
    /// A self-check example did not hold.
    Example,
    /// A golden file could not be read or written.
    Golden,
    /// A dataset file, row or field is missing or malformed.
    Dataset,
    /// An image is missing, of an unaccepted type or over the size limit.
    Image,
}

impl ErrorKind {
    /// A short lowercase label for the kind.
    pub fn label(self) -> &'static str {
        match self {
            ErrorKind::Io => "io",
            ErrorKind::Toml => "toml",
            ErrorKind::UnknownKey => "unknown key",
            ErrorKind::Invalid => "invalid value",
            ErrorKind::Script => "script",
            ErrorKind::Template => "template",
            ErrorKind::Regex => "regex",
            ErrorKind::Schema => "schema",
            ErrorKind::Example => "example",
            ErrorKind::Golden => "golden",
            ErrorKind::Dataset => "dataset",
            ErrorKind::Image => "image",
        }
    }
}

/// One problem in a user's input, with where it is and, when we know one, a hint.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{location}: {} error: {message}", kind.label())]
pub struct Diagnostic {
    /// What kind of problem this is.
    pub kind: ErrorKind,
    /// Where the problem is.
    pub location: Location,
    /// What is wrong, for a human.
    pub message: String,
    /// How to fix it, when we can tell.
    pub help: Option<String>,
    /// The offending source line, for display under the message.
    pub snippet: Option<String>,
}

impl Diagnostic {
    /// A diagnostic at `location`.
    pub fn new(kind: ErrorKind, location: Location, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            kind,
            location,
            message: message.into(),
            help: None,
            snippet: None,
        }
    }

    /// A problem reading the file or directory at `path` itself.
    pub fn io(path: &Path, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(ErrorKind::Io, Location::file_start(path), message)
    }

    /// Adds a hint.
    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    /// Attaches the source line the location points into.
    pub fn with_source(mut self, source: &str) -> Diagnostic {
        self.snippet = source
            .lines()
            .nth(self.location.line.saturating_sub(1))
            .map(str::to_owned);
        self
    }
}

/// Several diagnostics, reported together so one run shows every problem.
#[derive(Debug, Clone, Default, thiserror::Error)]
#[error("{}", self.0.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("\n"))]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl From<Diagnostic> for Diagnostics {
    fn from(d: Diagnostic) -> Self {
        Diagnostics(vec![d])
    }
}

/// Suggests the closest candidate to a misspelled word, if one is close enough.
pub(crate) fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(word, c), c))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_map_to_lines_and_char_columns() {
        let src = "a = 1\nб = \"x\"\n";
        let loc = Location::from_offset(Path::new("f.toml"), src, src.find('"').unwrap());
        assert_eq!((loc.line, loc.column), (2, 5));
        assert_eq!(loc.to_string(), "f.toml:2:5");
    }

    #[test]
    fn suggests_close_words_only() {
        assert_eq!(
            did_you_mean("tolerence", ["tolerance", "rule"]),
            Some("tolerance")
        );
        assert_eq!(did_you_mean("zzz", ["tolerance", "rule"]), None);
    }
}
