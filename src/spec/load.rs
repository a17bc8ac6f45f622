//! Reading a spec file: TOML into the model, then validation and compilation
//! of each part, collecting every problem instead of stopping at the first.

use std::path::{Path, PathBuf};

use super::{ScriptOrigin, Spec, dataset_diagnostic, template_diagnostic};
use crate::error::{Diagnostic, Diagnostics, ErrorKind, Location};
use crate::files::FileKind;
use crate::format::depth::{MAX_DEPTH, too_deep_text, value_depth};
use crate::format::key_path;
use crate::format::locate::{Key, SourceMap};
use crate::format::{ResponseFormat, Role, SpecFile, toml_diagnostic};
use crate::prompt::PromptSet;
use crate::scripting::{DEFAULT_MAX_OPERATIONS, ScriptError};
use crate::source::dataset::Dataset;
use crate::source::generate::Generator;
use crate::verify::RuleSet;

/// Spec files under `paths`: files as given, directories searched for `*.toml`, sorted.
pub(crate) fn spec_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Diagnostic> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let entries = std::fs::read_dir(path)
                .map_err(|e| Diagnostic::io(path, format!("cannot list directory: {e}")))?;
            let mut found: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect();
            found.sort();
            files.extend(found);
        } else if path.exists() {
            files.push(path.clone());
        } else {
            return Err(Diagnostic::io(path, "no such file or directory"));
        }
    }
    Ok(files)
}

/// The error for a second spec with the id of `first`: at its `id` key, or
/// at its start when the id comes from the file name.
pub(crate) fn duplicate_id(file: &Path, id: &str, first: &Path) -> Diagnostic {
    let source = crate::files::read_text(file, FileKind::Spec).unwrap_or_default();
    let location = SourceMap::parse(file, &source)
        .ok()
        .and_then(|map| {
            map.value_span(key_path!["id"])
                .map(|_| map.locate(key_path!["id"]))
        })
        .unwrap_or_else(|| Location::file_start(file));
    Diagnostic::new(
        ErrorKind::Invalid,
        location,
        format!(
            "spec id `{id}` is taken by {}: both would write golden/{id}/ and mix their results",
            first.display()
        ),
    )
    .with_help("give one of them another `id`")
    .with_source(&source)
}

/// Whether `id` can name a spec (and so golden directories): ASCII letters,
/// digits, `_` and `-`.
pub(crate) fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Reads and parses the spec file: its text, source map and serde model.
fn parse(file: &Path) -> Result<(String, SourceMap, SpecFile), Diagnostic> {
    let bytes = crate::files::read_bounded(file, FileKind::Spec)
        .map_err(|e| Diagnostic::io(file, format!("cannot read spec: {e}")))?;
    let source = String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let text = String::from_utf8_lossy(&e.as_bytes()[..valid]).into_owned();
        Diagnostic::new(
            ErrorKind::Toml,
            Location::from_offset(file, &text, valid),
            format!(
                "the file is not valid UTF-8: byte 0x{:02x} cannot start or continue a character",
                e.as_bytes()[valid]
            ),
        )
        .with_help("save the spec as UTF-8")
    })?;
    let map =
        SourceMap::parse(file, &source).map_err(|e| toml_diagnostic(file, &source, "", &e))?;
    // Like a syntax error: serde would read `nan` as a number (or in `data`, as null).
    if let Some((at, value)) = map.non_finite_floats().into_iter().next() {
        return Err(Diagnostic::new(
            ErrorKind::Invalid,
            at,
            format!("{value} is not a finite number: no key of a spec takes one"),
        )
        .with_source(&source));
    }
    let de =
        toml::Deserializer::parse(&source).map_err(|e| toml_diagnostic(file, &source, "", &e))?;
    let def: SpecFile = serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        toml_diagnostic(file, &source, &path, e.inner())
    })?;
    let mut def = def;
    if let Err(e) = read_data_files(file, &mut def, &map) {
        return Err(e.with_source(&source));
    }
    if let Some(deep) = deep_data(&def, &map) {
        return Err(deep.with_source(&source));
    }
    Ok((source, map, def))
}

/// Reads each `data_files` entry (a file relative to the spec: a `.json`
/// file's value, any other file's text) into `[data]` under its name; the
/// first problem, at its key.
fn read_data_files(file: &Path, def: &mut SpecFile, map: &SourceMap) -> Result<(), Diagnostic> {
    let dir = file.parent().unwrap_or(Path::new("."));
    for (name, path) in &def.data_files {
        let at = |message: String| {
            let at = map.locate(key_path!["data_files", name.as_str()]);
            Diagnostic::new(ErrorKind::Invalid, at, message)
        };
        if def.data.contains_key(name) {
            return Err(at(format!("`data.{name}` is set in [data] too")));
        }
        let full = dir.join(path);
        let text = crate::files::read_text(&full, FileKind::Dataset)
            .map_err(|e| at(format!("cannot read {}: {e}", full.display())))?;
        let value = if path.ends_with(".json") {
            serde_json::from_str(&text).map_err(|e| {
                let (line, column) = (e.line(), e.column());
                at(format!(
                    "{}:{line}:{column}: not valid JSON: {e}",
                    full.display()
                ))
            })?
        } else {
            serde_json::Value::String(text)
        };
        def.data.insert(name.clone(), value);
    }
    Ok(())
}

/// The first `[data]` value nested past the depth limit: the records of
/// the instances carrying it could not be read back.
fn deep_data(def: &SpecFile, map: &SourceMap) -> Option<Diagnostic> {
    def.data.iter().find_map(|(key, value)| {
        let depth = value_depth(value);
        (depth > MAX_DEPTH).then(|| {
            let message = too_deep_text(&format!("`data.{key}` nests"), depth);
            let at = map.locate(key_path!["data", key.as_str()]);
            Diagnostic::new(ErrorKind::Invalid, at, message)
        })
    })
}

/// Loads and compiles a spec.
pub(super) fn load(file: &Path, seed_override: Option<u64>) -> Result<Spec, Diagnostics> {
    let (source, map, mut def) = parse(file)?;
    if seed_override.is_some() {
        def.seed = seed_override;
    }
    let spec_dir = file.parent().unwrap_or(Path::new(".")).to_path_buf();
    let mut errors = Vec::new();
    let at = |path: &[Key], kind: ErrorKind, msg: String| {
        Diagnostic::new(kind, map.locate(path), msg).with_source(&source)
    };

    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let id = def.id.clone().unwrap_or(stem);
    if !valid_id(&id) {
        errors.push(at(
            key_path!["id"],
            ErrorKind::Invalid,
            format!("id `{id}` may hold only ASCII letters, digits, `_` and `-` (it names golden directories)"),
        ));
    }
    let runs = def.runs.unwrap_or(10);
    for (path, message) in super::validate::value_errors(&def) {
        errors.push(at(&path, ErrorKind::Invalid, message));
    }
    match (def.request.response_format, &def.request.schema) {
        (Some(ResponseFormat::JsonSchema), None) => errors.push(at(
            key_path!["request", "response_format"],
            ErrorKind::Invalid,
            "response_format = \"json_schema\" needs `schema = \"path/to/schema.json\"`".into(),
        )),
        (_, Some(schema)) => {
            if let Err(e) = crate::verify::read_schema(&spec_dir, schema) {
                errors.push(at(
                    key_path!["request", "schema"],
                    ErrorKind::Schema,
                    e.to_string(),
                ));
            }
        }
        _ => {}
    }
    errors.extend(unscored(&def, file));

    let generator = if errors
        .iter()
        .any(|e| e.message.starts_with("max_operations"))
    {
        None
    } else {
        compile_generator(&def, &map, &spec_dir, &source)
            .map_err(|e| errors.push(e))
            .ok()
            .flatten()
    };
    let dataset = def
        .dataset
        .as_ref()
        .and_then(|d| load_dataset(d, &def, &spec_dir, &map, &source, &mut errors));
    let runs = match &dataset {
        Some(ds) => {
            let rows = u32::try_from(ds.len()).unwrap_or(u32::MAX);
            def.runs.map_or(rows, |r| r.min(rows))
        }
        None => runs,
    };
    if let Some(e) = runs_ceiling(&def, runs, &map) {
        errors.push(e.with_source(&source));
    }
    let prompt = compile_prompt(&def, &map)
        .map_err(|mut e| errors.append(&mut e))
        .ok();
    errors.extend(super::images::check_static(&def, &map, &spec_dir));
    let (tools, tool_errors) = super::tools::static_tools(&def, &map, &spec_dir);
    errors.extend(tool_errors);
    let agent = super::agent::compile(&def, &map, &spec_dir, &mut errors);
    let mcp = super::mcp::compile(&def, &map, &spec_dir, &mut errors);
    let choices = super::choices::compile(&def, &map, &mut errors);
    let rules = RuleSet::build(&def.verify, &map, &spec_dir, None)
        .map_err(|mut e| errors.append(&mut e))
        .ok();
    let data = minijinja::Value::from(minijinja::value::Serde(&def.data));

    match (prompt, rules) {
        (Some(prompt), Some(rules)) if errors.is_empty() => Ok(Spec {
            id,
            file: file.to_path_buf(),
            runs,
            seed: def.seed.unwrap_or(0),
            def,
            rules,
            map,
            dataset,
            generator,
            prompt,
            data,
            tools,
            agent,
            choices,
            mcp,
        }),
        _ => {
            for e in &mut errors {
                if e.snippet.is_none() && e.location.file == file {
                    *e = e.clone().with_source(&source);
                }
            }
            Err(Diagnostics(errors))
        }
    }
}

/// The error of a spec that scores nothing: no `[[verify]]` rule and no `[choices]`.
fn unscored(def: &SpecFile, file: &Path) -> Option<Diagnostic> {
    (def.verify.is_empty() && def.choices.is_none()).then(|| {
        Diagnostic::new(
            ErrorKind::Invalid,
            Location::file_start(file),
            "the spec has no [[verify]] rule",
        )
        .with_help("add at least one, e.g.\n[[verify]]\nrule = \"exact\"\nexpected = \"answer\"")
    })
}

/// The error for more instances than [`super::RUNS_CEILING`] without the
/// spec's `allow_large_runs = true`: at `runs`, or at `[dataset]` when its rows decide.
fn runs_ceiling(def: &SpecFile, runs: u32, map: &SourceMap) -> Option<Diagnostic> {
    // Past the range of `runs` its own check says so.
    let out_of_range = def
        .runs
        .is_some_and(|r| !crate::format::range::RUNS.holds(r.into()));
    if runs <= super::RUNS_CEILING || def.allow_large_runs == Some(true) || out_of_range {
        return None;
    }
    let key = if def.runs.is_some() {
        key_path!["runs"]
    } else {
        key_path!["dataset"]
    };
    let message = format!(
        "{runs} instances is above the ceiling of {} (checking and running them takes minutes or more)",
        super::RUNS_CEILING
    );
    Some(
        Diagnostic::new(ErrorKind::Invalid, map.locate(key), message)
            .with_help("lower `runs`, or add `allow_large_runs = true` if so many are meant"),
    )
}

fn compile_generator(
    def: &SpecFile,
    map: &SourceMap,
    spec_dir: &Path,
    source: &str,
) -> Result<Option<(Generator, ScriptOrigin)>, Diagnostic> {
    let Some(generate) = &def.generate else {
        return Ok(None);
    };
    let data: serde_json::Map<String, serde_json::Value> = def
        .data
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let seed = def.seed.unwrap_or(0);
    let max_ops = generate.max_operations.unwrap_or(DEFAULT_MAX_OPERATIONS);
    let (script, origin) = match (&generate.script, &generate.file) {
        (Some(script), None) => (script.clone(), ScriptOrigin::Inline),
        (None, Some(rel)) => {
            let path = spec_dir.join(rel);
            let text = crate::files::read_text(&path, FileKind::Script).map_err(|e| {
                Diagnostic::new(
                    ErrorKind::Io,
                    map.locate(key_path!["generate", "file"]),
                    format!("cannot read {}: {e}", path.display()),
                )
                .with_source(source)
            })?;
            (text.clone(), ScriptOrigin::File { path, source: text })
        }
        _ => {
            return Err(Diagnostic::new(
                ErrorKind::Invalid,
                map.locate(key_path!["generate"]),
                "[generate] needs exactly one of `script` (inline Rhai) or `file` (a .rhai file)",
            )
            .with_source(source));
        }
    };
    match Generator::new(&script, &data, seed, max_ops) {
        Ok(g) => Ok(Some((g, origin))),
        Err(e) => Err(script_diagnostic(map, &origin, &e)),
    }
}

fn script_diagnostic(map: &SourceMap, origin: &ScriptOrigin, e: &ScriptError) -> Diagnostic {
    let location = match origin {
        ScriptOrigin::Inline => {
            map.locate_in_string(key_path!["generate", "script"], e.line, e.column)
        }
        ScriptOrigin::File { path, .. } => Location {
            file: path.clone(),
            line: e.line.max(1),
            column: e.column.max(1),
        },
    };
    let message = match origin {
        ScriptOrigin::File { path, .. } => script_file_message(path, &e.message),
        ScriptOrigin::Inline => e.message.clone(),
    };
    Diagnostic::new(ErrorKind::Script, location, message)
}

/// What a compile error of the script file at `path` says. `file` and
/// `script_file` may name any file on the machine, so no line of it is
/// shown, and Rhai's message, which quotes the words it stumbled on (a
/// token file's whole token), only when the file is a `.rhai` script.
pub(super) fn script_file_message(path: &Path, message: &str) -> String {
    if path.extension().is_some_and(|e| e == "rhai") {
        message.to_owned()
    } else {
        "not a Rhai script that compiles (the parser's message is shown for `.rhai` files only, as it quotes the file)".to_owned()
    }
}

fn compile_prompt(def: &SpecFile, map: &SourceMap) -> Result<PromptSet, Vec<Diagnostic>> {
    let p = &def.prompt;
    let mut templates = Vec::new();
    match &p.messages {
        Some(messages) => {
            if p.system.is_some() || p.user.is_some() {
                return Err(vec![Diagnostic::new(
                    ErrorKind::Invalid,
                    map.locate(key_path!["prompt", "messages"]),
                    "use either `messages` or `system`/`user` in [prompt], not both",
                )]);
            }
            for (i, m) in messages.iter().enumerate() {
                if m.role == Role::Tool {
                    // Tool results come from the tools an episode runs, never from a template.
                    return Err(vec![Diagnostic::new(
                        ErrorKind::Invalid,
                        map.locate(key_path!["prompt", "messages", i, "role"]),
                        "role `tool` is not written in a prompt: tool results come from an episode's tools",
                    )
                    .with_help("roles: system, user, assistant")]);
                }
                templates.push((m.role, format!("messages.{i}"), m.content.clone()));
            }
        }
        None => {
            if let Some(system) = &p.system {
                templates.push((Role::System, "system".into(), system.clone()));
            }
            if let Some(user) = &p.user {
                templates.push((Role::User, "user".into(), user.clone()));
            }
        }
    }
    // With a history, the dataset's turns carry the user's words.
    if p.history.is_none() && !templates.iter().any(|(role, _, _)| *role == Role::User) {
        return Err(vec![
            Diagnostic::new(
                ErrorKind::Invalid,
                map.locate(key_path!["prompt"]),
                "[prompt] has no user message",
            )
            .with_help(
                "add `user = \"...\"` or a `{ role = \"user\", content = \"...\" }` message",
            ),
        ]);
    }
    let located = |errs: Vec<crate::prompt::TemplateError>| -> Vec<Diagnostic> {
        errs.iter()
            .map(|e| template_diagnostic(map, e, None))
            .collect()
    };
    let mut set = PromptSet::new(templates).map_err(located)?;
    let mut errors = Vec::new();
    for (name, message, source) in super::images::image_templates(def) {
        if let Err(e) = set.add_images(message, vec![(name, source)]) {
            errors.extend(located(e));
        }
    }
    if errors.is_empty() {
        Ok(set)
    } else {
        Err(errors)
    }
}

/// The spec's dataset, or `None` with the problem added to `errors`.
fn load_dataset(
    d: &crate::format::Dataset,
    def: &SpecFile,
    spec_dir: &Path,
    map: &SourceMap,
    source: &str,
    errors: &mut Vec<Diagnostic>,
) -> Option<Dataset> {
    let data: serde_json::Map<String, serde_json::Value> = def
        .data
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    match Dataset::load(d, spec_dir, &data, def.seed.unwrap_or(0)) {
        Ok(ds) if ds.is_empty() => {
            errors.push(
                Diagnostic::new(
                    ErrorKind::Dataset,
                    map.locate(key_path!["dataset"]),
                    "the dataset has no rows left after `filter`, `sample` and `limit`",
                )
                .with_source(source),
            );
            None
        }
        Ok(ds) => Some(ds),
        Err(e) => {
            errors.push(dataset_diagnostic(map, &e, None));
            None
        }
    }
}
