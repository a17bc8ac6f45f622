//! The OCR spec live: `specs/ocr_lines.toml` read by Tesseract through
//! `exec:` (the repository's `harness.toml` names `tesseract` and
//! `tesseract_eng`), in a fresh copy of the repository, must reproduce the
//! committed golden transcripts, and a rerun asks nothing. Without
//! `tesseract` on PATH (a plain `cargo test` on a laptop) it says so and
//! returns; under `HARNESS_E2E=1` (scripts/test.sh, which installs it on
//! Debian) it fails instead.

use crate::common::{fresh_copy, harness, run};

fn tesseract() -> bool {
    let found = std::process::Command::new("tesseract")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found || std::env::var("HARNESS_E2E").is_err(),
        "HARNESS_E2E is set but `tesseract` is not on PATH (Debian: tesseract-ocr, -eng, -rus)"
    );
    if !found {
        eprintln!("skipping: `tesseract` is not on PATH (Debian: tesseract-ocr, -eng, -rus)");
    }
    found
}

const ARGS: [&str; 7] = [
    "run",
    "specs/ocr_lines.toml",
    "-m",
    "exec:tesseract",
    "-m",
    "exec:tesseract_eng",
    "--no-progress",
];

#[test]
fn tesseract_reproduces_the_golden_transcripts_and_reruns_from_cache() {
    if !tesseract() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let repo = fresh_copy(tmp.path());
    // CI makes golden differences fail the run.
    let (code, out) = run(harness(&repo).args(ARGS).env("CI", "true"));
    assert_eq!(code, 0, "live transcripts differ from the golden ones:\n{out}");
    assert!(
        out.contains("96 records written (0 from cache, 96 HTTP attempts)"),
        "{out}"
    );
    assert!(!out.contains("golden transcript"), "{out}");
    // Russian read with the English pack alone fails; with both, most pass.
    let by_lang = out
        .split("by lang")
        .nth(1)
        .unwrap_or_else(|| panic!("no per-language table:\n{out}"));
    let row = |model: &str| {
        by_lang
            .lines()
            .find(|l| l.split_whitespace().next() == Some(model))
            .unwrap_or_else(|| panic!("no {model} row:\n{out}"))
            .to_owned()
    };
    assert!(row("tesseract_eng").contains("0.0%"), "{out}");
    assert!(row("tesseract").starts_with("tesseract "), "{out}");
    let (code, out) = run(harness(&repo).args(ARGS).env("CI", "true"));
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("96 records written (96 from cache, 0 HTTP attempts)"),
        "{out}"
    );
}
