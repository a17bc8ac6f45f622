//! TOML and serde errors as diagnostics: located at file:line:col, an
//! unknown key or value with its did-you-mean, a missing key with what to add.

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use crate::error::{Diagnostic, ErrorKind, Location, did_you_mean};

static UNKNOWN_FIELD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"unknown (?:field|variant) `([^`]*)`, expected (.*)").unwrap());

/// Turns a serde/toml error into a diagnostic with a did-you-mean for unknown keys.
pub(crate) fn toml_diagnostic(
    file: &Path,
    source: &str,
    path: &str,
    err: &toml::de::Error,
) -> Diagnostic {
    let location = match err.span() {
        Some(span) => Location::from_offset(file, source, span.start),
        None => Location::file_start(file),
    };
    let message = err.message().trim_end().to_owned();
    let at = if path.is_empty() || path == "." {
        String::new()
    } else {
        format!(" (at `{path}`)")
    };
    if let Some(caps) = UNKNOWN_FIELD.captures(&message) {
        let word = caps[1].to_owned();
        let candidates: Vec<String> = caps[2]
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect();
        let is_variant = message.starts_with("unknown variant");
        let what = if is_variant { "value" } else { "key" };
        let mut d = Diagnostic::new(
            if is_variant {
                ErrorKind::Invalid
            } else {
                ErrorKind::UnknownKey
            },
            location,
            format!("unknown {what} `{word}`{at}"),
        );
        d = match did_you_mean(&word, candidates.iter().map(String::as_str)) {
            Some(s) => d.with_help(format!("did you mean `{s}`?")),
            None => d.with_help(format!("expected one of: {}", candidates.join(", "))),
        };
        return d.with_source(source);
    }
    if let Some(field) = message
        .strip_prefix("missing field `")
        .and_then(|m| m.split('`').next())
    {
        let help = match field {
            "prompt" => "add a [prompt] table with at least `user = \"...\"`".to_owned(),
            other => format!("add `{other} = ...`"),
        };
        return Diagnostic::new(ErrorKind::Invalid, location, format!("{message}{at}"))
            .with_help(help)
            .with_source(source);
    }
    let kind = if message.contains("missing field") || message.contains("invalid") {
        ErrorKind::Invalid
    } else {
        ErrorKind::Toml
    };
    Diagnostic::new(kind, location, format!("{message}{at}")).with_source(source)
}
