//! The shape of the code, checked: every `crate::` path in `src/` points at a
//! lower layer of the table in `docs/architecture.md`, and no source file or
//! function outgrows the limits the project keeps (500 and 120 lines).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 500;
const MAX_FN_LINES: usize = 120;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
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

/// `(line, unit)` for every `crate::<unit>` path in `text`; `key_path!` is `format`'s macro.
fn references(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in code_only(text).lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let unit = if name == "key_path" {
                "format".to_owned()
            } else {
                name
            };
            out.push((i + 1, unit));
        }
    }
    out
}

#[test]
fn imports_point_only_at_lower_layers() {
    let layers = layers();
    let src = root().join("src");
    let mut problems = Vec::new();
    for file in rust_files(&src) {
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
        for (line, target) in references(&text) {
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
    let units: Vec<String> = references(text).into_iter().map(|(_, u)| u).collect();
    assert_eq!(units, ["run", "format"]);
    let body = "pub fn big() {\n    let s = \"}\";\n    let c = '{';\n}\nfn other<'a>(x: &'a str) -> &'a str { x }\n";
    assert_eq!(
        functions(body),
        [(1, "big".to_owned(), 4), (5, "other".to_owned(), 1)]
    );
}
