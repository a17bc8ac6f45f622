//! Limits cases: config (see `tests/limits.rs`).
