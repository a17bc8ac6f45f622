//! Limits cases: io (see `tests/limits.rs`).
