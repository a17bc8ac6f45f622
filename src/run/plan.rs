//! A whole plan: models with fixed endpoints run together, then each managed
//! model (`llamacpp`, `vllm`) with its own server, one after another, so only
//! one set of weights is in memory at a time.

use crate::output::errln;
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use super::budget::{Meter, judge_clock};
use super::queue::Tasks;
use super::record::TaskKey;
use super::scheduler::schedule;
use super::{Manifest, RunError, RunOutcome, RunSettings, SpecRuntime, build_request, journal};
use crate::client::cache::{self, Cache};
use crate::client::managed::ManagedServer;
use crate::client::{ModelClient, cache_identity, connect, connect_managed};
use crate::provider::ModelSetup;

/// The URL of a managed model answered wholly from the cache: port 9 (discard),
/// which nothing on loopback serves, so a request would fail loudly, not hang.
const NO_SERVER: &str = "http://127.0.0.1:9/v1";

/// Runs every model of the plan. A managed model's server is started (its
/// output appended to `<run_dir>/server.log`) only when some of its answers
/// are in neither the journal nor the cache, serves all its specs, and is
/// stopped when its part ends, fails or is interrupted.
pub(crate) async fn run_plan(
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
    let meter = Arc::new(Meter::for_journal(settings.limits, &journal_path)?);
    let log = run_dir.join("server.log");
    // The judge grades every model's answers, so it lives for the whole plan:
    // a managed judge's server runs beside each model's, a fixed judge is built
    // with the fixed models so a shared endpoint shares its concurrency limit.
    let mut judge_server = None;
    // The simulated users' models connect with the fixed models too: a user
    // played by a model under test shares its endpoints' slots, so neither
    // side's requests batch with the other's on a server asked one at a time.
    let users = super::user_turn::user_setups(manifest);
    let connect_all = |models: &[ModelSetup]| -> Result<_, RunError> {
        let mut all = models.to_vec();
        all.extend(users.iter().cloned());
        let mut runtimes = connect(&all, &manifest.golden_dir)?;
        let user_clients = runtimes.split_off(models.len());
        Ok((runtimes, user_clients))
    };
    let (judge, (fixed_models, user_clients)) = match &manifest.judge {
        Some(j) if j.provider.is_managed() => {
            meter.start_clock(&judge_clock(&j.name), j.price);
            errln!(
                "judge {}: starting its {} server (log: {})",
                j.name,
                j.provider.prefix(),
                log.display()
            );
            let server = ManagedServer::start(j, &log).await?;
            let runtime = connect_managed(j, &server, &manifest.golden_dir)?;
            judge_server = Some(server);
            (Some(runtime), connect_all(&fixed)?)
        }
        Some(j) => {
            let mut all = fixed.clone();
            all.push(j.clone());
            let (mut runtimes, users) = connect_all(&all)?;
            (runtimes.pop(), (runtimes, users))
        }
        None => (None, connect_all(&fixed)?),
    };
    super::user_turn::give_users(manifest, specs, &meter, &user_clients);
    let parts = Parts {
        manifest,
        specs,
        journal_path: &journal_path,
        settings,
        meter: &meter,
        judge: judge.as_ref(),
    };
    if !fixed_models.is_empty() {
        outcome.add(parts.schedule(&fixed_models).await?);
    }
    for model in &managed {
        if outcome.interrupted || outcome.budget_stopped {
            break;
        }
        outcome.add(parts.managed(model, &log).await?);
    }
    if let Some(server) = judge_server {
        server.stop();
    }
    if let Some(j) = &manifest.judge {
        meter.stop_clock(&judge_clock(&j.name));
    }
    outcome.spent = meter.spent();
    outcome.budget_stopped |= meter.refused();
    Ok(outcome)
}

/// What every part of a plan shares: the plan, its specs, the journal, the
/// settings, the meter and the judge.
struct Parts<'a> {
    manifest: &'a Manifest,
    specs: &'a [Arc<SpecRuntime>],
    journal_path: &'a Path,
    settings: &'a RunSettings,
    meter: &'a Arc<Meter>,
    judge: Option<&'a Arc<ModelClient>>,
}

impl Parts<'_> {
    /// Runs `models` through the scheduler.
    async fn schedule(&self, models: &[Arc<ModelClient>]) -> Result<RunOutcome, RunError> {
        schedule(
            self.manifest,
            models,
            self.judge,
            self.specs,
            self.journal_path,
            self.settings,
            self.meter,
        )
        .await
    }

    /// One managed model's part: its server started only when some answer
    /// is in neither the journal nor the cache, stopped when the part ends.
    async fn managed(&self, model: &ModelSetup, log: &Path) -> Result<RunOutcome, RunError> {
        let (manifest, settings) = (self.manifest, self.settings);
        let cache = settings.use_cache.then_some(settings.cache_path.as_path());
        match pending(manifest, model, self.specs, self.journal_path, cache)? {
            Pending::Nothing => return Ok(RunOutcome::default()),
            Pending::Cached => {
                // Every answer is cached: no server, no memory, no start-up wait.
                let mut offline = model.clone();
                offline.base_url = Some(NO_SERVER.to_owned());
                let models = connect(&[offline], &manifest.golden_dir)?;
                return self.schedule(&models).await;
            }
            Pending::Requests => {}
        }
        errln!(
            "model {}: starting its {} server (log: {})",
            model.name,
            model.provider.prefix(),
            log.display()
        );
        let started = Instant::now();
        // A GPU box is billed from the start of its server, loading included.
        self.meter.start_clock(&model.name, model.price);
        let server = tokio::select! {
            server = ManagedServer::start(model, log) => server?,
            // Dropping the start stops the half-started server.
            _ = crate::interrupt::wait() => {
                self.meter.stop_clock(&model.name);
                return Ok(RunOutcome { interrupted: true, ..RunOutcome::default() });
            }
        };
        errln!(
            "model {}: ready at {} after {:.1} s (pid {})",
            model.name,
            server.base_url(),
            started.elapsed().as_secs_f64(),
            server.pid()
        );
        let result = match connect_managed(model, &server, &manifest.golden_dir) {
            Ok(runtime) => self.schedule(&[runtime]).await,
            Err(e) => Err(e.into()),
        };
        server.stop();
        self.meter.stop_clock(&model.name);
        result
    }
}

/// What a managed model still needs before its server is worth starting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pending {
    /// The journal has every answer.
    Nothing,
    /// Every missing answer is in the response cache.
    Cached,
    /// Some answers must be asked.
    Requests,
}

/// What `model`'s part of the plan still needs: the journal at `journal_path`
/// is read for finished samples and, with `cache`, the cache for the rest
/// (a request is cached under the same key the scheduler would look up).
pub(crate) fn pending(
    manifest: &Manifest,
    model: &ModelSetup,
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
    let mut items = Tasks::new(manifest, &model.name, 1, specs, Arc::new(done)).peekable();
    if items.peek().is_none() {
        return Ok(Pending::Nothing);
    }
    let Some(cache) = cache else {
        return Ok(Pending::Requests);
    };
    let cache = Cache::open(cache)?;
    let identity = cache_identity(model, "");
    let served = cache.identity(&crate::client::endpoint_key(model, &identity))?;
    for (si, instance, samples) in items {
        let Ok(inst) = specs[si].spec.instance(instance) else {
            return Ok(Pending::Requests);
        };
        let base = build_request(&specs[si], model, inst.messages, &inst.tools);
        for sample in samples {
            let request = base.for_sample(sample);
            let key = cache::cache_key(model, &identity, &request, sample, served.as_ref());
            if cache.get(&key)?.is_none() {
                return Ok(Pending::Requests);
            }
        }
    }
    Ok(Pending::Cached)
}
