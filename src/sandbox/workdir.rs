//! A run's working directory on the host: made by `spawn.rs` for each run
//! and by `zygote.rs` for each zygote, removed when dropped.

use std::path::PathBuf;

/// A run's working directory on the host, removed when dropped.
pub(super) struct Workdir(pub(super) PathBuf);

impl Drop for Workdir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
