//! What the tests share now that they run in one process, and the lock
//! that keeps them from getting in each other's way: the real llama.cpp
//! servers. The e2e tests need `scripts/test.sh`'s servers to themselves
//! (llama.cpp batches concurrent requests, which changes greedy output), and
//! a managed-server or pool test starts llama-servers of its own on machines
//! with two cores: one such test at a time in a process. `scripts/test.sh`
//! runs the two kinds in separate processes, since they share no server.

use std::sync::{Mutex, MutexGuard};

static LLAMA: Mutex<()> = Mutex::new(());

/// Held by a test that uses a real llama.cpp server (shared or its own).
pub fn real_llama() -> MutexGuard<'static, ()> {
    LLAMA.lock().unwrap_or_else(|e| e.into_inner())
}
