//! Values crossing between the `code` rule's program and its checker: the
//! built-in types compare as in one process, exceptions keep their class and
//! message, imported modules serve the tests, and what cannot cross fails
//! with a clear reason (`tests/fixtures/code/values.toml`).

use crate::common::{harness, root, run};

#[test]
fn every_built_in_value_crosses() {
    let golden = tempfile::tempdir().unwrap();
    let (code, out) = run(harness(&root())
        .arg("check")
        .arg(root().join("tests/fixtures/code/values.toml"))
        .arg("--bless")
        .arg("--golden")
        .arg(golden.path()));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("2/2 examples"), "{out}");
}
