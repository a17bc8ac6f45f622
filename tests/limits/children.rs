//! Limits cases: children (see `tests/limits.rs`).
