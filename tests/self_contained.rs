//! A clone works alone: no spec, script, test, bench, doc example or CI step
//! reads a path outside the repository. Every `../`-path in those files is
//! resolved (against the file's folder for data files, against the
//! repository root for code, which runs from there) and must stay inside.
//! The few that leave on purpose are inputs the harness must refuse or
//! attacks the sandbox must stop; they are listed below with why.

use std::fs;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use crate::common::root;

/// Folders whose files are scanned (relative to the repository root).
const SCANNED: &[&str] = &[
    "specs",
    "scripts",
    "tests",
    "bench",
    "docs",
    "pipelines",
    "examples",
    "datasets",
    ".ci",
];

/// The folder CI happens to have beside its checkout and a user's clone
/// never has; spelled once, so this file names it without reading it.
const BESIDE: &str = "shared";

/// `(file, path)` pairs that leave the root on purpose, and why.
const DELIBERATE: &[(&str, &str, &str)] = &[
    (
        "bench/tau2_parity/evaluate.sh",
        "../..",
        "from the script's own folder (`$here`) up to the repository root",
    ),
    (
        "bench/tau2_parity/record.sh",
        "../..",
        "from the script's own folder (`$here`) up to the repository root",
    ),
    (
        "tests/view.rs",
        "../secret.txt",
        "a request the viewer must refuse",
    ),
    (
        "tests/view.rs",
        "../../secret.txt",
        "a request the viewer must refuse",
    ),
    (
        "tests/view.rs",
        "../../secret.txt/records/0",
        "a request the viewer must refuse",
    ),
    (
        "tests/front_door.rs",
        "../escape",
        "a spec id harness new refuses",
    ),
    (
        "tests/datasets.rs",
        "../x",
        "an hf:// name the hub reader refuses",
    ),
    (
        "tests/fixtures/hostile/write_outside.py",
        "../harness-escape-{run}",
        "model code the sandbox must keep in",
    ),
    (
        "tests/fixtures/forgery/attacks/read_tests_file.py",
        "../*/tests.json",
        "model code the sandbox must keep in",
    ),
    (
        "tests/media.rs",
        "../datasets/ocr_mini/images",
        "the image path a journal records, relative to a temporary workspace's specs/; compared, never read",
    ),
    (
        "specs/t03_code_gen.toml",
        "../../../etc/shadow",
        "an example of model code the sandbox must keep in",
    ),
];

/// Files run from the repository root (code), whose relative paths mean
/// `root/...`; everything else (data, and Markdown's links) is read relative
/// to its own folder.
fn runs_from_root(file: &Path) -> bool {
    matches!(file.extension().and_then(|e| e.to_str()), Some("rs" | "sh"))
        || file.starts_with(".ci")
}

/// `base/rel` with `.` and `..` folded, without touching the disk; `None`
/// when it climbs above `/`.
fn resolve(base: &Path, rel: &str) -> Option<PathBuf> {
    let mut out = base.to_path_buf();
    for part in Path::new(rel).components() {
        match part {
            Component::ParentDir => out.pop().then_some(())?,
            Component::Normal(p) => out.push(p),
            _ => {}
        }
    }
    Some(out)
}

/// The relative paths in `text` that start by climbing (`../`).
fn climbing_paths(text: &str) -> Vec<String> {
    let re = regex::Regex::new(r#"(?:\.\./)+[^\s"'`),;\]\\]*"#).unwrap();
    re.find_iter(text).map(|m| m.as_str().to_owned()).collect()
}

fn tracked_files() -> Vec<PathBuf> {
    let out = Command::new("git")
        .args(["ls-files", "-z", "--"])
        .args(SCANNED)
        .current_dir(root())
        .output()
        .expect("git runs");
    assert!(out.status.success());
    out.stdout
        .split(|&b| b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| PathBuf::from(std::str::from_utf8(s).unwrap()))
        .collect()
}

/// Where one file's climbing paths land outside the root, as
/// `file:line: path`.
fn escapes_in(file: &Path, text: &str) -> Vec<String> {
    let root = PathBuf::from("/repo");
    let mut found = Vec::new();
    // A doc's example block is a copy of the file its marker names: its paths
    // are that file's.
    let mut example: Option<PathBuf> = None;
    for (n, line) in text.lines().enumerate() {
        if let Some(path) = line
            .trim()
            .strip_prefix("<!-- example: ")
            .and_then(|l| l.strip_suffix(" -->"))
        {
            example = Some(PathBuf::from(path));
        } else if line.starts_with("```") && !line.trim_end().ends_with("```toml") {
            example = None;
        }
        let own = example.as_deref().unwrap_or(file);
        // `#[path]` and `#:schema` are read from the file's own folder.
        let own_folder =
            !runs_from_root(own) || line.contains("#[path") || line.contains("#:schema");
        let base = if own_folder {
            root.join(own.parent().unwrap())
        } else {
            root.clone()
        };
        for rel in climbing_paths(line) {
            let inside = resolve(&base, &rel).is_some_and(|p| p.starts_with(&root));
            let deliberate = DELIBERATE
                .iter()
                .any(|(f, p, _)| Path::new(f) == file && rel == *p);
            if !inside && !deliberate {
                found.push(format!("{}:{}: {rel}", file.display(), n + 1));
            }
        }
        let (up, data) = (format!("../{BESIDE}"), format!("{BESIDE}/data"));
        if line.contains(&up) || line.contains(&data) {
            found.push(format!("{}:{}: names {up}", file.display(), n + 1));
        }
    }
    found
}

#[test]
fn no_file_reads_outside_the_repository() {
    let files = tracked_files();
    assert!(files.len() > 100, "only {} files scanned", files.len());
    let mut escapes = Vec::new();
    // This file's own tables quote the paths they allow and test.
    let me = Path::new("tests/self_contained.rs");
    for file in files.iter().filter(|f| f.as_path() != me) {
        let Ok(text) = fs::read_to_string(root().join(file)) else {
            continue; // binary data
        };
        escapes.extend(escapes_in(file, &text));
    }
    assert!(
        escapes.is_empty(),
        "paths outside the repository:\n{}",
        escapes.join("\n")
    );
}

#[test]
fn the_scanner_finds_what_leaves() {
    let beside = format!("path = \"../../{BESIDE}/x.jsonl\"");
    let cases: &[(&str, &str, usize)] = &[
        ("specs/a.toml", "path = \"../datasets/x.jsonl\"", 0),
        ("specs/a.toml", beside.as_str(), 2),
        ("specs/a.toml", "path = \"../../elsewhere/x.jsonl\"", 1),
        ("tests/a.rs", "root().join(\"../data\")", 1),
        ("tests/a.rs", "root().join(\"datasets/x\")", 0),
        ("bench/a.rs", "#[path = \"../tests/common/x.rs\"]", 0),
        ("docs/examples/specs/a.toml", "path = \"../datasets/x\"", 0),
        ("docs/examples/specs/a.toml", "path = \"../../../../x\"", 1),
        (
            "docs/a.md",
            "<!-- example: docs/examples/specs/a.toml -->\n```toml\n#:schema ../../../schemas/s.json\n```\n#:schema ../../../schemas/s.json",
            1,
        ),
    ];
    for (file, line, expected) in cases {
        let found = escapes_in(Path::new(file), line);
        assert_eq!(found.len(), *expected, "{file}: {line}: {found:?}");
    }
}
