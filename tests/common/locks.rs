//! What the tests share now that they run in one process, and the locks
//! that keep them from getting in each other's way.
//!
//! - The real llama.cpp servers: the e2e tests need `scripts/test.sh`'s two
//!   servers to themselves (llama.cpp batches concurrent requests, which
//!   changes greedy output), and a managed-server test starts one more
//!   llama-server on machines with two cores. One such test at a time.
//! - Sandboxed programs: the hostile-code suite counts every process of a
//!   sandbox uid on the machine to prove none outlived its sandbox, so it
//!   runs while no other test has sandboxed programs running.

use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

static LLAMA: Mutex<()> = Mutex::new(());
static SANDBOXES: RwLock<()> = RwLock::new(());

/// Held by a test that uses a real llama.cpp server (shared or its own).
pub fn real_llama() -> MutexGuard<'static, ()> {
    LLAMA.lock().unwrap_or_else(|e| e.into_inner())
}

/// Held by a test that runs sandboxed programs, in this process or through the binary.
pub fn sandboxes() -> RwLockReadGuard<'static, ()> {
    SANDBOXES.read().unwrap_or_else(|e| e.into_inner())
}

/// Held by the test that must be the only one with sandboxed programs running.
pub fn sandboxes_alone() -> RwLockWriteGuard<'static, ()> {
    SANDBOXES.write().unwrap_or_else(|e| e.into_inner())
}
