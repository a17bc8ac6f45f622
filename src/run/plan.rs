//! A whole plan: models with fixed endpoints run together, then each managed
//! model (`llamacpp`, `vllm`) with its own server, one after another, so only
//! one set of weights is in memory at a time.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use super::{
    Manifest, Pending, RunError, RunOutcome, RunSettings, SpecRuntime, execute, managed_runtime,
    model_runtimes, pending,
};

/// The URL of a managed model answered wholly from the cache: port 9 (discard),
/// which nothing on loopback serves, so a request would fail loudly, not hang.
const NO_SERVER: &str = "http://127.0.0.1:9/v1";
use crate::provider::managed::ManagedServer;

impl RunOutcome {
    fn add(&mut self, other: RunOutcome) {
        self.written += other.written;
        self.cached += other.cached;
        self.attempts += other.attempts;
        self.interrupted |= other.interrupted;
    }
}

/// Runs every model of the plan. A managed model's server is started (its
/// output appended to `<run_dir>/server.log`) only when some of its answers
/// are in neither the journal nor the cache, serves all its specs, and is
/// stopped when its part ends, fails or is interrupted.
pub async fn execute_plan(
    manifest: &Manifest,
    specs: &[Arc<SpecRuntime>],
    run_dir: &Path,
    settings: &RunSettings,
) -> Result<RunOutcome, RunError> {
    let journal_path = run_dir.join("journal.jsonl");
    let (managed, fixed): (Vec<_>, Vec<_>) = manifest
        .models
        .iter()
        .cloned()
        .partition(|m| m.provider.is_managed());
    let mut outcome = RunOutcome::default();
    if !fixed.is_empty() {
        let models = model_runtimes(&fixed, &manifest.golden_dir)?;
        outcome.add(execute(manifest, &models, specs, &journal_path, settings).await?);
    }
    let log = run_dir.join("server.log");
    for model in &managed {
        if outcome.interrupted {
            break;
        }
        let cache = settings.use_cache.then_some(settings.cache_path.as_path());
        match pending(manifest, model, specs, &journal_path, cache)? {
            Pending::Nothing => continue,
            Pending::Cached => {
                // Every answer is cached: no server, no memory, no start-up wait.
                let mut offline = model.clone();
                offline.base_url = Some(NO_SERVER.to_owned());
                let models = model_runtimes(&[offline], &manifest.golden_dir)?;
                outcome.add(execute(manifest, &models, specs, &journal_path, settings).await?);
                continue;
            }
            Pending::Requests => {}
        }
        eprintln!(
            "model {}: starting its {} server (log: {})",
            model.name,
            model.provider.prefix(),
            log.display()
        );
        let started = Instant::now();
        let server = tokio::select! {
            server = ManagedServer::start(model, &log) => server?,
            // Dropping the start stops the half-started server.
            _ = tokio::signal::ctrl_c() => {
                outcome.interrupted = true;
                break;
            }
        };
        eprintln!(
            "model {}: ready at {} after {:.1} s (pid {})",
            model.name,
            server.base_url(),
            started.elapsed().as_secs_f64(),
            server.pid()
        );
        let result = match managed_runtime(model, &server, &manifest.golden_dir) {
            Ok(runtime) => execute(manifest, &[runtime], specs, &journal_path, settings).await,
            Err(e) => Err(e),
        };
        server.stop();
        outcome.add(result?);
    }
    Ok(outcome)
}
