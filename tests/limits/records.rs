//! Limits cases: records (see `tests/limits.rs`).
