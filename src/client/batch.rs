//! Asking through a provider's batch API: the cache before a request goes
//! into a batch, and after its answer comes back; the provider's batch
//! calls with the model's own endpoint. What a batch is for, and how a run
//! uses one, is the runner's (`run/batch.rs`).

use std::time::Duration;

use super::ModelClient;
use super::ask::Asked;
use super::cache::{Cache, cache_key};
use crate::provider::{BatchApi, BatchStatus, ChatRequest, Completion, ProviderError};

impl ModelClient {
    /// The batch API of this model's wire, when it has one the harness
    /// speaks (one endpoint: a pool's replicas do not share batches).
    pub(crate) fn batch_api(&self) -> Option<BatchApi<'_>> {
        match self.endpoints.as_slice() {
            [one] => one.provider.batch_client(),
            _ => None,
        }
    }

    /// Whether requests of this model can go through a batch.
    pub(crate) fn can_batch(&self) -> bool {
        self.batch_api().is_some()
    }

    fn batch_api_or_err(&self) -> Result<BatchApi<'_>, ProviderError> {
        self.batch_api().ok_or_else(|| {
            ProviderError::Config(format!(
                "model `{}`: its provider has no batch API",
                self.setup.name
            ))
        })
    }

    /// Uploads `lines` and creates a batch of them: its id.
    pub(crate) async fn submit_batch(&self, lines: &[String]) -> Result<String, ProviderError> {
        self.batch_api_or_err()?.submit_batch(lines).await
    }

    /// One poll of batch `id`.
    pub(crate) async fn poll_batch(&self, id: &str) -> Result<BatchStatus, ProviderError> {
        self.batch_api_or_err()?.poll_batch(id).await
    }
}

/// The cached answer to `request` (sample `sample`), as an ask that cost nothing.
pub(crate) fn cached(
    model: &ModelClient,
    request: &ChatRequest,
    sample: u32,
    cache: Option<&Cache>,
) -> Option<Asked> {
    let cache = cache?;
    let served = model.served(Some(cache));
    let key = cache_key(
        &model.setup,
        &model.base_url,
        request,
        sample,
        served.as_ref(),
    );
    let hit = cache.get(&key).ok()??;
    Some(Asked::from_cache(hit))
}

/// A batch entry's answer (or error) as an ask, cached when it is an answer.
/// `attempts` counts the batch's HTTP calls once, on its first entry.
pub(crate) fn answered(
    model: &ModelClient,
    (request, sample): (&ChatRequest, u32),
    result: Result<Completion, ProviderError>,
    attempts: u32,
    cache: Option<&Cache>,
) -> Asked {
    if let Ok(answer) = &result {
        model.observe(cache, answer.served.as_ref());
        if let Some(cache) = cache {
            let served = answer.served.as_ref();
            let key = cache_key(&model.setup, &model.base_url, request, sample, served);
            let _ = cache.put(&key, &model.setup, answer);
        }
    }
    Asked {
        result,
        attempts,
        latency: Duration::ZERO,
        cached: false,
        retries: Vec::new(),
        rejected: Vec::new(),
        endpoint: None,
    }
}
