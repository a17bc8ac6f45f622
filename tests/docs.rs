//! The documentation's TOML examples are files the code is checked against,
//! so the docs cannot drift from the code:
//!
//! - every ```toml block in `README.md` and `docs/*.md` is announced by an
//!   `<!-- example: docs/examples/... -->` comment right before it, and its
//!   lines appear, in order and contiguously, in that file;
//! - every spec in `docs/examples/specs/` passes `harness check` (examples,
//!   and a golden round trip in a temporary directory);
//! - every configuration in `docs/examples/config/` loads, and each model it
//!   names resolves.
//!
//! Failures name the Markdown file and line that shows the example.

use std::path::{Path, PathBuf};

use crate::common::copy_dir;

/// The comment that names a block's example file.
const MARKER_OPEN: &str = "<!-- example:";
const MARKER_CLOSE: &str = "-->";
/// Where example files live, relative to the repository root.
const EXAMPLES: &str = "docs/examples";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `README.md` and every `docs/*.md`, relative to the root, sorted.
fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![PathBuf::from("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .map(|e| e.expect("readable docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .map(|p| Path::new("docs").join(p.file_name().expect("a file name")))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// One ```toml block of a Markdown file.
struct TomlBlock {
    /// The Markdown file, relative to the root.
    doc: PathBuf,
    /// 1-based line of the opening fence.
    line: usize,
    /// The example file named by the comment before the block, if any.
    example: Option<String>,
    /// The block's lines, without the fence's indentation.
    lines: Vec<String>,
}

impl TomlBlock {
    fn at(&self) -> String {
        format!("{}:{}", self.doc.display(), self.line)
    }
}

/// The example file named by a marker line, if it is one.
fn marker(line: &str) -> Option<String> {
    let rest = line.trim().strip_prefix(MARKER_OPEN)?;
    let name = rest.strip_suffix(MARKER_CLOSE)?.trim();
    Some(name.to_owned())
}

/// The ```toml blocks of one Markdown file (other fenced blocks are skipped).
fn toml_blocks(doc: &Path) -> Vec<TomlBlock> {
    let text = std::fs::read_to_string(root().join(doc))
        .unwrap_or_else(|e| panic!("{}: cannot read: {e}", doc.display()));
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let trimmed = lines[i].trim_start();
        let Some(info) = trimmed.strip_prefix("```") else {
            i += 1;
            continue;
        };
        let indent = lines[i].len() - trimmed.len();
        let opening = i;
        let mut body = Vec::new();
        i += 1;
        while i < lines.len() && lines[i].trim() != "```" {
            let line = lines[i];
            let cut = line.len() - line.trim_start().len();
            body.push(line[cut.min(indent)..].trim_end().to_owned());
            i += 1;
        }
        i += 1;
        if info.trim() != "toml" {
            continue;
        }
        let example = lines[..opening]
            .iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .and_then(|l| marker(l));
        blocks.push(TomlBlock {
            doc: doc.to_path_buf(),
            line: opening + 1,
            example,
            lines: body,
        });
    }
    blocks
}

fn all_toml_blocks() -> Vec<TomlBlock> {
    markdown_files()
        .iter()
        .flat_map(|f| toml_blocks(f))
        .collect()
}

/// Where the docs show `example` (a path relative to the root), for messages.
fn shown_at(blocks: &[TomlBlock], example: &Path) -> String {
    let places: Vec<String> = blocks
        .iter()
        .filter(|b| b.example.as_deref().map(Path::new) == Some(example))
        .map(TomlBlock::at)
        .collect();
    if places.is_empty() {
        format!("{} (shown in no ```toml block)", example.display())
    } else {
        format!("{} (shown at {})", example.display(), places.join(", "))
    }
}

/// Checks one block against its file; returns the problem, if any.
fn block_problem(block: &TomlBlock) -> Option<String> {
    let at = block.at();
    let Some(name) = &block.example else {
        return Some(format!(
            "{at}: a ```toml block needs `{MARKER_OPEN} {EXAMPLES}/... {MARKER_CLOSE}` on the line before it"
        ));
    };
    if !name.starts_with(&format!("{EXAMPLES}/")) {
        return Some(format!("{at}: `{name}` is not under {EXAMPLES}/"));
    }
    let text = match std::fs::read_to_string(root().join(name)) {
        Ok(t) => t,
        Err(e) => return Some(format!("{at}: names `{name}`, which cannot be read: {e}")),
    };
    if block.lines.is_empty() {
        return Some(format!("{at}: the ```toml block is empty"));
    }
    let file: Vec<&str> = text.lines().map(str::trim_end).collect();
    let n = block.lines.len();
    let found = file
        .windows(n)
        .any(|w| w.iter().zip(&block.lines).all(|(a, b)| a == b));
    if found {
        return None;
    }
    // Say which block line is the first to leave the file, from the best start.
    let (mut best_len, mut best_start) = (0, None);
    for start in 0..file.len() {
        let len = file[start..]
            .iter()
            .zip(&block.lines)
            .take_while(|(a, b)| *a == *b)
            .count();
        if len > best_len {
            (best_len, best_start) = (len, Some(start));
        }
    }
    let block_line = block.line + 1 + best_len;
    let wanted = &block.lines[best_len];
    Some(match best_start {
        None => format!(
            "{}:{block_line}: the block's first line `{wanted}` is not in `{name}`",
            block.doc.display()
        ),
        Some(start) => format!(
            "{}:{block_line}: the block (opened at line {}) follows `{name}` from its line {} \
             for {best_len} line(s), then differs: the doc has `{wanted}`, the file has `{}`",
            block.doc.display(),
            block.line,
            start + 1,
            file.get(start + best_len)
                .copied()
                .unwrap_or("<end of file>")
        ),
    })
}

#[test]
fn every_toml_block_is_cut_from_a_named_example_file() {
    let blocks = all_toml_blocks();
    assert!(
        blocks.len() >= 10,
        "only {} ```toml blocks found in README.md and docs/*.md: is the parser broken?",
        blocks.len()
    );
    let problems: Vec<String> = blocks.iter().filter_map(block_problem).collect();
    assert!(
        problems.is_empty(),
        "{} of {} ```toml blocks do not match their example files:\n{}",
        problems.len(),
        blocks.len(),
        problems.join("\n")
    );
}

/// The example files of one kind (`specs`, `config`): `*.toml` directly in the folder.
fn example_files(kind: &str) -> Vec<PathBuf> {
    let dir = Path::new(EXAMPLES).join(kind);
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join(&dir))
        .unwrap_or_else(|e| panic!("{}: cannot list: {e}", dir.display()))
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| dir.join(p.file_name().expect("a file name")))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no example files in {}", dir.display());
    files
}

#[test]
fn every_example_file_is_shown_or_linked_by_the_docs() {
    let docs: String = markdown_files()
        .iter()
        .map(|f| std::fs::read_to_string(root().join(f)).expect("readable Markdown"))
        .collect();
    let unused: Vec<String> = ["specs", "config"]
        .iter()
        .flat_map(|kind| example_files(kind))
        .filter(|f| {
            let full = f.to_string_lossy().into_owned();
            // Pages in docs/ link it as `examples/...`, the README as `docs/examples/...`.
            let from_docs = full.trim_start_matches("docs/").to_owned();
            !docs.contains(&full) && !docs.contains(&from_docs)
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        unused.is_empty(),
        "example files that README.md and docs/*.md never show or link (show them, or delete them):\n{}",
        unused.join("\n")
    );
}

/// Runs the real binary in `dir` without color or CI detection.
fn harness(dir: &Path, args: &[&str]) -> (i32, String) {
    crate::common::run(crate::common::harness(dir).args(args))
}

#[test]
fn every_spec_example_passes_harness_check() {
    let blocks = all_toml_blocks();
    let specs = example_files("specs");
    let tmp = tempfile::tempdir().expect("a temporary directory");
    // The whole examples folder, so specs can read their fixtures (the datasets folder).
    let examples = tmp.path().join("examples");
    copy_dir(&root().join(EXAMPLES), &examples);
    let golden = tmp.path().join("golden");
    let (specs_dir, golden_dir) = (
        examples.join("specs").display().to_string(),
        golden.display().to_string(),
    );
    let where_shown = |output: &str| -> String {
        // `harness check` prints one line per spec: `ok`, `bless`, `NEW`, `DIFF` or `FAIL`, then its id.
        let failing: Vec<String> = output
            .lines()
            .filter_map(|l| {
                let mut words = l.split_whitespace();
                let status = words.next()?;
                let id = words.next()?;
                matches!(status, "FAIL" | "DIFF" | "NEW").then(|| id.to_owned())
            })
            .collect();
        let located: Vec<String> = specs
            .iter()
            .filter(|s| {
                let stem = s.file_stem().expect("a stem").to_string_lossy();
                failing
                    .iter()
                    .any(|id| *id == stem || id.ends_with(&format!("{stem}.toml")))
            })
            .map(|s| format!("  {}", shown_at(&blocks, s)))
            .collect();
        if located.is_empty() {
            String::new()
        } else {
            format!("\nFailing examples:\n{}", located.join("\n"))
        }
    };
    for (round, args) in [
        (
            "--bless",
            vec!["check", &specs_dir, "--bless", "--golden", &golden_dir],
        ),
        (
            "the golden compare",
            vec!["check", &specs_dir, "--golden", &golden_dir],
        ),
    ] {
        let (code, output) = harness(tmp.path(), &args);
        assert_eq!(
            code,
            0,
            "`harness {}` ({round}) exited {code} on {EXAMPLES}/specs:\n{output}{}",
            args.join(" "),
            where_shown(&output)
        );
        let summary = format!("{n} specs: {n} ok", n = specs.len());
        assert!(
            output.contains(&summary),
            "`harness {}` ({round}) did not report `{summary}`:\n{output}",
            args.join(" ")
        );
    }
}

#[test]
fn every_config_example_loads() {
    let blocks = all_toml_blocks();
    let mut problems = Vec::new();
    for file in example_files("config") {
        let shown = shown_at(&blocks, &file);
        let config = match harness::Config::load(&root().join(&file), true) {
            Ok(c) => c,
            Err(e) => {
                problems.push(format!("{shown}: does not load: {e}"));
                continue;
            }
        };
        let names = config
            .models
            .keys()
            .chain(&config.run.models)
            .chain(config.judge.as_ref().map(|j| &j.model));
        for name in names {
            if let Err(e) = config.resolve_model(name) {
                problems.push(format!("{shown}: model `{name}` does not resolve: {e}"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "configuration examples that do not load:\n{}",
        problems.join("\n")
    );
}
