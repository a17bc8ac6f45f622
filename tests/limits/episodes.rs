//! Limits cases: episodes (see `tests/limits.rs`).
