//! The shape of the code, checked: every `crate::` path in `src/` (and every
//! `super::` path that climbs out of its folder) points at a lower layer of
//! the table in `docs/architecture.md`, each row's "may import" cell lists
//! exactly the folders its code imports, and no source file or function
//! outgrows the limits the project keeps (500 and 120 lines).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 500;
const MAX_FN_LINES: usize = 120;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = crate::common::files_under(dir);
    out.retain(|path| path.extension().is_some_and(|e| e == "rs"));
    out
}

/// The layer of each folder or top-level file, from the table's rows
/// `| <layer> | `a`, `b` | ...`.
fn layers() -> BTreeMap<String, u32> {
    let doc = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let mut out = BTreeMap::new();
    for line in doc.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let Some(layer) = cells.get(1).and_then(|c| c.parse::<u32>().ok()) else {
            continue;
        };
        for name in cells[2].split('`').skip(1).step_by(2) {
            out.insert(name.to_owned(), layer);
        }
    }
    assert!(
        out.len() > 10,
        "no layer table found in docs/architecture.md"
    );
    out
}

/// One row of the layer table: its folders and files, and what its "may
/// import" cell names (`None` for "everything below" or "anything below").
struct Row {
    layer: u32,
    units: Vec<String>,
    may_import: Option<BTreeSet<String>>,
}

/// The rows of the layer table `| layer | units | owns | may import |`.
fn rows() -> Vec<Row> {
    let doc = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let names = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    };
    let mut out = Vec::new();
    for line in doc.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let Some(layer) = cells.get(1).and_then(|c| c.parse::<u32>().ok()) else {
            continue;
        };
        let cell = cells.get(4).copied().unwrap_or_default();
        let may_import = if cell.contains("below") {
            None
        } else {
            Some(names(cell).into_iter().collect())
        };
        out.push(Row {
            layer,
            units: names(cells[2]),
            may_import,
        });
    }
    out
}

/// The text without comments, so doc links and prose do not count as imports.
fn code_only(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(i) if !line[..i].contains('"') => &line[..i],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The folder or top-level file a source file belongs to: `src/run/task.rs` → `run`.
fn unit_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_owned()
}

/// The identifier `text` starts with.
fn ident(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// `(line, unit)` for every `crate::<unit>` path in `text`, and for every
/// `super::` path that climbs to the crate root; `depth` is how many modules
/// deep the file is (`src/run/task.rs`: 2, `src/run/mod.rs` and `src/check.rs`:
/// 1), and inline `mod x { ... }` blocks add theirs. `key_path!` is `format`'s macro.
fn references(text: &str, depth: usize) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    // The brace depths at which inline modules opened.
    let (mut inline, mut braces) = (Vec::<i64>::new(), 0i64);
    for (i, line) in code_only(text).lines().enumerate() {
        let line = strip_literals(line);
        let mut rest = line.as_str();
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            out.push((i + 1, ident(rest)));
        }
        let mut rest = line.as_str();
        while let Some(at) = rest.find("super::") {
            let before = &rest[..at];
            let climbs = rest[at..].matches("super::").count();
            let chain = "super::".repeat(climbs);
            rest = &rest[at..];
            if !rest.starts_with(&chain) || before.ends_with("::") {
                rest = &rest["super::".len()..];
                continue;
            }
            rest = &rest[chain.len()..];
            if climbs == depth + inline.len() {
                out.push((i + 1, ident(rest)));
            }
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        if let Some(m) = words.iter().position(|w| *w == "mod")
            && words.get(m + 2) == Some(&"{")
        {
            inline.push(braces);
        }
        braces += line.matches('{').count() as i64 - line.matches('}').count() as i64;
        while inline.last().is_some_and(|&open| braces <= open) {
            inline.pop();
        }
    }
    for (_, unit) in &mut out {
        if unit == "key_path" {
            *unit = "format".to_owned();
        }
    }
    out
}

/// How many modules deep `file` is below `src/`.
fn depth_of(src: &Path, file: &Path) -> usize {
    let rel = file.strip_prefix(src).unwrap();
    let parts = rel.components().count();
    if rel.file_name().is_some_and(|n| n == "mod.rs") {
        parts - 1
    } else {
        parts
    }
}

/// Every source file with how many modules deep it is: its place below
/// `src/`, or one below the file that includes it with `#[path = "..."]`.
fn module_depths(src: &Path) -> Vec<(PathBuf, usize)> {
    let files = rust_files(src);
    let mut depths: BTreeMap<PathBuf, usize> = files
        .iter()
        .map(|f| (f.clone(), depth_of(src, f)))
        .collect();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for line in text.lines() {
            if let Some(name) = line.trim().strip_prefix("#[path = \"") {
                let included = file.with_file_name(name.trim_end_matches("\"]"));
                depths.insert(included, depth_of(src, file) + 1);
            }
        }
    }
    depths.into_iter().collect()
}

/// The units each unit of `src/` imports, other than itself.
fn imports_by_unit(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, depth) in module_depths(src) {
        let unit = unit_of(src, &file);
        let text = std::fs::read_to_string(&file).unwrap();
        let entry = out.entry(unit.clone()).or_default();
        for (_, target) in references(&text, depth) {
            if target != unit {
                entry.insert(target);
            }
        }
    }
    out
}

#[test]
fn imports_point_only_at_lower_layers() {
    let layers = layers();
    let src = root().join("src");
    let mut problems = Vec::new();
    for (file, depth) in module_depths(&src) {
        let unit = unit_of(&src, &file);
        if unit == "lib" || unit == "main" {
            continue;
        }
        let Some(&own) = layers.get(&unit) else {
            problems.push(format!(
                "{}: `{unit}` has no layer in docs/architecture.md",
                file.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(&file).unwrap();
        for (line, target) in references(&text, depth) {
            if target == unit {
                continue;
            }
            match layers.get(&target) {
                Some(&layer) if layer < own => {}
                Some(&layer) => problems.push(format!(
                    "{}:{line}: `{unit}` (layer {own}) imports `{target}` (layer {layer})",
                    file.display()
                )),
                None => problems.push(format!(
                    "{}:{line}: `{target}` has no layer in docs/architecture.md",
                    file.display()
                )),
            }
        }
    }
    for name in layers.keys() {
        if !src.join(name).is_dir() && !src.join(format!("{name}.rs")).is_file() {
            problems.push(format!(
                "docs/architecture.md names `{name}`, which src/ does not have"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "layering broken:\n{}",
        problems.join("\n")
    );
}

#[test]
fn each_row_may_import_exactly_what_its_code_imports() {
    let src = root().join("src");
    let imports = imports_by_unit(&src);
    let rows = rows();
    assert!(
        rows.len() > 10,
        "no layer table found in docs/architecture.md"
    );
    let mut problems = Vec::new();
    for row in &rows {
        let Some(listed) = &row.may_import else {
            continue;
        };
        let used: BTreeSet<String> = row
            .units
            .iter()
            .flat_map(|u| imports.get(u).into_iter().flatten().cloned())
            .filter(|t| !row.units.contains(t))
            .collect();
        for unit in used.difference(listed) {
            problems.push(format!(
                "layer {} ({}) imports `{unit}`, which its \"may import\" cell does not list",
                row.layer,
                row.units.join(", ")
            ));
        }
        for unit in listed.difference(&used) {
            problems.push(format!(
                "layer {} ({}) lists `{unit}` under \"may import\", but imports nothing from it",
                row.layer,
                row.units.join(", ")
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "docs/architecture.md's \"may import\" column is out of date:\n{}",
        problems.join("\n")
    );
}

/// `(first line, length)` of every function in `text`, brace-matched.
fn functions(text: &str) -> Vec<(usize, String, usize)> {
    let lines: Vec<String> = code_only(text).lines().map(strip_literals).collect();
    let mut out = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let Some(name) = fn_name(line) else { continue };
        let (mut depth, mut opened) = (0i64, false);
        for (end, body) in lines.iter().enumerate().skip(start) {
            for c in body.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if opened && depth <= 0 {
                out.push((start + 1, name.clone(), end - start + 1));
                break;
            }
            if !opened && body.trim_end().ends_with(';') {
                break;
            }
        }
    }
    out
}

/// The name of the function a line declares, if it declares one.
fn fn_name(line: &str) -> Option<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "fn")?;
    if !words[..at].iter().all(|w| {
        matches!(
            *w,
            "pub" | "pub(crate)" | "pub(super)" | "async" | "unsafe" | "const" | "extern"
        )
    }) {
        return None;
    }
    let name = words.get(at + 1)?;
    Some(name.split(['(', '<']).next().unwrap_or(name).to_owned())
}

/// The line with string and char literals emptied, so braces inside them do not count.
fn strip_literals(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                while let Some(d) = chars.next() {
                    match d {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
                out.push_str("\"\"");
            }
            '\'' => {
                // A char literal ('x', '\n', '{') closes within a few characters; a lifetime does not.
                let ahead: String = chars.clone().take(4).collect();
                match ahead.find('\'') {
                    Some(n) if n > 0 => {
                        for _ in 0..=n {
                            chars.next();
                        }
                        out.push_str("' '");
                    }
                    _ => out.push(c),
                }
            }
            _ => out.push(c),
        }
    }
    out
}

#[test]
fn files_and_functions_stay_small() {
    let mut problems = Vec::new();
    for dir in ["src", "tests", "bench"] {
        for file in rust_files(&root().join(dir)) {
            let text = std::fs::read_to_string(&file).unwrap();
            let lines = text.lines().count();
            if lines > MAX_FILE_LINES {
                problems.push(format!(
                    "{}: {lines} lines (limit {MAX_FILE_LINES})",
                    file.display()
                ));
            }
            for (line, name, length) in functions(&text) {
                if length > MAX_FN_LINES {
                    problems.push(format!(
                        "{}:{line}: fn {name} is {length} lines (limit {MAX_FN_LINES})",
                        file.display()
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "too big:\n{}", problems.join("\n"));
}

#[test]
fn the_checks_see_what_they_claim() {
    let text = "use crate::run::record::Record;\n// crate::cli in a comment\nfn f() { key_path![\"a\"]; crate::key_path!(); }\n";
    let units: Vec<String> = references(text, 2).into_iter().map(|(_, u)| u).collect();
    assert_eq!(units, ["run", "format"]);
    // From src/run/mod.rs, `super::` is the crate root; inside its `mod tests`,
    // `super::super::` is, and a string holding a path is no import.
    let climbing = "use super::spec::Spec;\nuse super::record::Record;\nmod tests {\n    use super::super::text::clip;\n    use super::*;\n    const S: &str = \"super::cli\";\n}\nuse super::files;\n";
    let units: Vec<String> = references(climbing, 1)
        .into_iter()
        .map(|(_, u)| u)
        .collect();
    assert_eq!(units, ["spec", "record", "text", "files"]);
    let body = "pub fn big() {\n    let s = \"}\";\n    let c = '{';\n}\nfn other<'a>(x: &'a str) -> &'a str { x }\n";
    assert_eq!(
        functions(body),
        [(1, "big".to_owned(), 4), (5, "other".to_owned(), 1)]
    );
}

/// One error path: no library function fails with a bare `String`, and the
/// crate shows no more than eight public modules.
#[test]
fn errors_are_typed_and_the_public_face_is_small() {
    let src = root().join("src");
    let bare = regex::Regex::new(r"Result<[^>]*, *String>").unwrap();
    let found: Vec<String> = rust_files(&src)
        .iter()
        .flat_map(|file| {
            let text = std::fs::read_to_string(file).unwrap();
            let rel = file.strip_prefix(&src).unwrap().display().to_string();
            text.lines()
                .enumerate()
                .filter(|(_, line)| bare.is_match(line))
                .map(|(n, _)| format!("src/{rel}:{}", n + 1))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        found.is_empty(),
        "Result<_, String> at:\n{}",
        found.join("\n")
    );
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let public = lib.lines().filter(|l| l.starts_with("pub mod ")).count();
    assert!(public <= 8, "lib.rs has {public} public modules");
    assert!(
        lib.contains("#![warn(unreachable_pub)]"),
        "the lint that keeps it small"
    );
}
