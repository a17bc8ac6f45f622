//! Values crossing between the `code` rule's program and its checker: the
//! built-in types compare as in one process, exceptions keep their class and
//! message, imported modules serve the tests, and what cannot cross fails
//! with a clear reason (`tests/fixtures/code/values.toml`).

use crate::common::{check_examples, root};

#[test]
fn every_built_in_value_crosses() {
    let (code, out) = check_examples(&root().join("tests/fixtures/code/values.toml"), &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("5/5 examples"), "{out}");
}
