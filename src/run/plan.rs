//! A whole plan: models with fixed endpoints run together, then each managed
//! model (`llamacpp`, `vllm`) with its own server, one after another, so only
//! one set of weights is in memory at a time.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use super::record::TaskKey;
use super::{
    Manifest, ModelRuntime, RunError, RunOutcome, RunSettings, SpecRuntime, build_request, cache,
    cache_identity, execute, journal, model_queue, model_runtimes,
};
use crate::provider::ModelSpec;
use crate::provider::managed::ManagedServer;

/// The URL of a managed model answered wholly from the cache: port 9 (discard),
/// which nothing on loopback serves, so a request would fail loudly, not hang.
const NO_SERVER: &str = "http://127.0.0.1:9/v1";

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
    let log = run_dir.join("server.log");
    // The judge grades every model's answers, so it lives for the whole plan:
    // a managed judge's server runs beside each model's, a fixed judge is built
    // with the fixed models so a shared endpoint shares its concurrency limit.
    let mut judge_server = None;
    let (judge, fixed_models) = match &manifest.judge {
        Some(j) if j.provider.is_managed() => {
            eprintln!(
                "judge {}: starting its {} server (log: {})",
                j.name,
                j.provider.prefix(),
                log.display()
            );
            let server = ManagedServer::start(j, &log).await?;
            let runtime = managed_runtime(j, &server, &manifest.golden_dir)?;
            judge_server = Some(server);
            (Some(runtime), model_runtimes(&fixed, &manifest.golden_dir)?)
        }
        Some(j) => {
            let mut all = fixed.clone();
            all.push(j.clone());
            let mut runtimes = model_runtimes(&all, &manifest.golden_dir)?;
            (runtimes.pop(), runtimes)
        }
        None => (None, model_runtimes(&fixed, &manifest.golden_dir)?),
    };
    let judge = judge.as_ref();
    if !fixed_models.is_empty() {
        outcome.add(
            execute(
                manifest,
                &fixed_models,
                judge,
                specs,
                &journal_path,
                settings,
            )
            .await?,
        );
    }
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
                outcome
                    .add(execute(manifest, &models, judge, specs, &journal_path, settings).await?);
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
            Ok(runtime) => {
                execute(manifest, &[runtime], judge, specs, &journal_path, settings).await
            }
            Err(e) => Err(e),
        };
        server.stop();
        outcome.add(result?);
    }
    if let Some(server) = judge_server {
        server.stop();
    }
    Ok(outcome)
}

/// The runtime of a managed model whose server is up: an `openai` client at
/// the server's URL that also watches the server, so its death stops the run.
pub fn managed_runtime(
    model: &ModelSpec,
    server: &ManagedServer,
    golden_dir: &Path,
) -> Result<Arc<ModelRuntime>, RunError> {
    let mut live = model.clone();
    live.base_url = Some(server.base_url().to_owned());
    let runtime = model_runtimes(std::slice::from_ref(&live), golden_dir)?
        .pop()
        .expect("one model in, one runtime out");
    let mut runtime = Arc::into_inner(runtime).expect("not shared yet");
    runtime.server = Some(server.watch());
    Ok(Arc::new(runtime))
}

/// What a managed model still needs before its server is worth starting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pending {
    /// The journal has every answer.
    Nothing,
    /// Every missing answer is in the response cache.
    Cached,
    /// Some answers must be asked.
    Requests,
}

/// What `model`'s part of the plan still needs: the journal at `journal_path`
/// is read for finished samples and, with `cache`, the cache for the rest
/// (a request is cached under the same key [`execute`] would look up).
pub fn pending(
    manifest: &Manifest,
    model: &ModelSpec,
    specs: &[Arc<SpecRuntime>],
    journal_path: &Path,
    cache: Option<&Path>,
) -> Result<Pending, RunError> {
    let mut done: HashSet<TaskKey> = HashSet::new();
    if journal_path.exists() {
        journal::for_each_record(journal_path, |r| {
            done.insert(r.key());
        })?;
    }
    let items = model_queue(manifest, &model.name, 1, specs, &done).0;
    if items.is_empty() {
        return Ok(Pending::Nothing);
    }
    let Some(cache) = cache else {
        return Ok(Pending::Requests);
    };
    let cache = cache::Cache::open(cache)?;
    let identity = cache_identity(model, "");
    for (si, instance, samples) in items {
        let Ok(inst) = specs[si].spec.instance(instance) else {
            return Ok(Pending::Requests);
        };
        let base = build_request(&specs[si], model, inst.messages);
        for sample in samples {
            let request = super::execute::sample_request(&base, sample);
            let key = cache::cache_key(model, &identity, &request, sample);
            if cache.get(&key)?.is_none() {
                return Ok(Pending::Requests);
            }
        }
    }
    Ok(Pending::Cached)
}
