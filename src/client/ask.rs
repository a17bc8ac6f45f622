//! One request to one model: from the cache when possible, else through the
//! endpoint's pacing and concurrency limit, with bounded retries and backoff
//! on retryable errors and bounded re-asks of answers the caller rejects.

use std::time::{Duration, Instant};

use super::cache::{Cache, cache_key};
use super::limits::backoff;
use super::{Attempt, ModelClient, pool};
use crate::provider::exec::ExecContext;
use crate::provider::{ChatRequest, Completion, ProviderError, RequestKey};

/// Backoff bounds.
const BACKOFF_BASE: Duration = Duration::from_millis(250);

const BACKOFF_CAP: Duration = Duration::from_secs(30);

/// What asking produced: the answer or error, and how it was obtained.
pub(crate) struct Asked {
    /// The last answer, or the error that ended the asks.
    pub result: Result<Completion, ProviderError>,
    /// HTTP attempts made (0 for a cache hit).
    pub attempts: u32,
    /// The last attempt's latency.
    pub latency: Duration,
    /// Answered from the cache.
    pub cached: bool,
    /// Why earlier attempts were not accepted, in order.
    pub retries: Vec<String>,
    /// Answers asked again because the caller rejected them: paid for, not kept.
    pub rejected: Vec<Completion>,
    /// In a pool, the endpoint that gave the result.
    pub endpoint: Option<String>,
}

/// The model's gate refused a request before its first attempt: the run's
/// budget (`--max-cost`, `--max-tokens-total`) would not cover it, so
/// nothing was sent and the caller keeps no record (`--resume` asks it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not started: the run's budget would not cover this request")]
pub(crate) struct Refused;

impl Asked {
    /// The last attempt's latency in whole milliseconds, as journals keep it.
    pub(crate) fn latency_ms(&self) -> u64 {
        u64::try_from(self.latency.as_millis()).unwrap_or(u64::MAX)
    }

    /// A request that failed before any attempt.
    pub(crate) fn failed(e: ProviderError) -> Asked {
        Asked {
            result: Err(e),
            attempts: 0,
            latency: Duration::ZERO,
            cached: false,
            retries: Vec::new(),
            rejected: Vec::new(),
            endpoint: None,
        }
    }

    /// An answer the cache held: no attempt made, no time spent.
    pub(super) fn from_cache(hit: Completion) -> Asked {
        Asked {
            result: Ok(hit),
            attempts: 0,
            latency: Duration::ZERO,
            cached: true,
            retries: Vec::new(),
            rejected: Vec::new(),
            endpoint: None,
        }
    }
}

/// How an attempt meets the model's gate: the attempt as the gate sees it,
/// whether its first try may be refused, and where a result keeps its answers.
struct Gated<'a, T> {
    attempt: Attempt<'a>,
    refusable: bool,
    answers: fn(&T) -> &[Completion],
}

/// What a request holds in the model's gate across its retries and re-asks:
/// admitted once, freed when the request ends.
#[derive(Default)]
struct Hold(Option<super::gate::Reservation>);

impl Hold {
    /// Frees what is left once the request has ended.
    fn release(self, model: &ModelClient) {
        if let (Some(r), Some((gate, _))) = (self.0, model.gate()) {
            gate.release(r);
        }
    }
}

/// An `exec` model's request made without its command line (a synth
/// step's): the command rendered without an instance, so the cache key
/// holds it as for a spec's requests. `None` when nothing is to be rendered.
fn outside_spec(
    model: &ModelClient,
    request: &ChatRequest,
) -> Option<Result<ChatRequest, ProviderError>> {
    let exec = model
        .setup
        .exec
        .as_ref()
        .filter(|_| request.exec.is_none())?;
    let context = ExecContext {
        model: &model.setup.name,
        vars: &serde_json::Map::new(),
        spec_dir: None,
        messages: &request.messages,
    };
    Some(match exec.call(&context) {
        Ok(call) => {
            let mut rendered = request.clone();
            rendered.exec = Some(call);
            Ok(rendered)
        }
        Err(e) => Err(ProviderError::Config(format!(
            "model `{}`: {e}",
            model.setup.name
        ))),
    })
}

/// Sends with retries on retryable errors, logging each failed attempt into
/// `retries`; only a `refusable` request may be refused by the gate.
async fn send_logged(
    model: &ModelClient,
    request: &ChatRequest,
    (key, asks): (RequestKey<'_>, u32),
    hold: &mut Hold,
    retries: &mut Vec<String>,
) -> Sent<Completion> {
    let attempt = Attempt {
        model: &model.setup,
        request,
        n: 1,
        asks,
    };
    let gated = Gated {
        attempt,
        refusable: true,
        answers: std::slice::from_ref,
    };
    with_retries(model, gated, hold, retries, |i| {
        model.endpoints[i].provider.complete(request, key)
    })
    .await
}

/// Sends one request for `n` choices, with the same retries as [`send_logged`].
async fn send_batch(
    model: &ModelClient,
    request: &ChatRequest,
    n: u32,
    retries: &mut Vec<String>,
) -> Sent<Vec<Completion>> {
    let attempt = Attempt {
        model: &model.setup,
        request,
        n,
        asks: 1,
    };
    let gated = Gated {
        attempt,
        refusable: true,
        answers: Vec::as_slice,
    };
    let mut hold = Hold::default();
    let sent = with_retries(model, gated, &mut hold, retries, |i| {
        model.endpoints[i].provider.complete_n(request, n)
    })
    .await;
    hold.release(model);
    sent
}

/// What sending a request came to: the result, HTTP attempts, the last
/// attempt's latency, and (in a pool) the endpoint that gave the result;
/// `Err` when the gate refused it before any attempt.
type Sent<T> = Result<(Result<T, ProviderError>, u32, Duration, Option<String>), Refused>;

/// Picks an endpoint, paces, takes a place in the endpoint's [`super::slots`], asks the
/// gate and sends, with bounded retries and backoff, around one kind of
/// request. The gate is asked once the request holds its permit, so what it
/// admits is what is in flight; an admitted request (`hold`) is never
/// refused again, its retries and re-asks draw on what it holds. In a pool, an attempt that takes its endpoint out goes to another
/// at once without using a retry; when every endpoint is out, waiting for the
/// soonest probe uses one.
async fn with_retries<T, F, Fut>(
    model: &ModelClient,
    gated: Gated<'_, T>,
    hold: &mut Hold,
    retries: &mut Vec<String>,
    send: F,
) -> Sent<T>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Result<T, ProviderError>>,
{
    let (mut attempts, mut failovers, mut waits) = (0u32, 0u32, 0u32);
    let pool = model.is_pool();
    loop {
        let assigned = match pool::assign(&model.endpoints) {
            Ok(a) => a,
            Err(down) => {
                let e = all_out(model, &down.errors);
                waits += 1;
                if attempts - failovers + waits > model.setup.max_retries {
                    return Ok((Err(e), attempts, Duration::ZERO, None));
                }
                retries.push(format!(
                    "{e}; waiting {:.1} s for a probe",
                    down.wait.as_secs_f64()
                ));
                tokio::time::sleep(down.wait).await;
                continue;
            }
        };
        let endpoint = assigned.endpoint;
        if let Some(limiter) = &endpoint.limiter {
            limiter.acquire().await;
        }
        let result = {
            let permit = endpoint.slots.acquire().await;
            let gate = model.gate();
            let reservation = match (gate, hold.0.take()) {
                (Some((gate, _)), Some(held)) => Some((gate, held)),
                (Some((gate, may_refuse)), None) => {
                    let refusable = may_refuse && gated.refusable && attempts == 0;
                    match gate.admit(gated.attempt, refusable) {
                        Some(r) => Some((gate, r)),
                        None => return Err(Refused),
                    }
                }
                (None, _) => None,
            };
            attempts += 1;
            let started = Instant::now();
            let r = send(assigned.index).await;
            // An adaptive limit learns from each attempt, before its backoff.
            permit.finish(super::slots::Signal::of(&r, gated.answers));
            if let Some((gate, reservation)) = reservation {
                let answers = r.as_ref().map_or(&[][..], gated.answers);
                hold.0 = Some(gate.settle(gated.attempt, reservation, answers));
            }
            (r, started.elapsed())
        };
        let taken_out = pool && assigned.finished(result.0.as_ref().map(|_| ()));
        let url = pool.then(|| endpoint.url.clone());
        drop(assigned);
        match result {
            (Err(e), _)
                if e.retryable() && taken_out && failovers < model.setup.max_retries + 1 =>
            {
                failovers += 1;
                retries.push(format!(
                    "attempt {attempts}: {} at {} ({e}); the endpoint is out, asking another",
                    e.kind(),
                    endpoint.url
                ));
            }
            (Err(e), _)
                if e.retryable() && attempts - failovers + waits <= model.setup.max_retries =>
            {
                retries.push(format!("attempt {attempts}: {} ({e})", e.kind()));
                tokio::time::sleep(backoff(
                    attempts - failovers + waits - 1,
                    BACKOFF_BASE,
                    BACKOFF_CAP,
                    e.retry_after(),
                ))
                .await;
            }
            (Err(e), latency) if pool && e.retryable() => {
                // Out of retries with the whole pool out: say so, naming each endpoint.
                let e = pool::all_out(&model.endpoints).map_or(e, |errors| all_out(model, &errors));
                return Ok((Err(e), attempts, latency, url));
            }
            (r, latency) => return Ok((r, attempts, latency, url)),
        }
    }
}

/// The error of a request that found every endpoint of `model`'s pool out.
fn all_out(model: &ModelClient, errors: &[String]) -> ProviderError {
    ProviderError::Connection(format!(
        "every endpoint of `{}` is out ({})",
        model.setup.name,
        errors.join("; ")
    ))
}

/// Asks for several samples of one instance: cached ones come from the cache, the
/// rest in one request with OpenAI's `n` (asked with the first missing sample's seed).
/// Each answer is cached under its own sample's key, so no sample can receive another's.
/// A sample the gate refused is `Err(Refused)`.
pub(crate) async fn ask_batch(
    model: &ModelClient,
    requests: &[(u32, ChatRequest)],
    cache: Option<&Cache>,
) -> Vec<Result<Asked, Refused>> {
    let served = model.served(cache);
    let keys: Vec<Option<String>> = requests
        .iter()
        .map(|(sample, r)| {
            cache.map(|_| cache_key(&model.setup, &model.base_url, r, *sample, served.as_ref()))
        })
        .collect();
    let mut out: Vec<Option<Result<Asked, Refused>>> = keys
        .iter()
        .map(|k| {
            let hit = cache.zip(k.as_ref())?.0.get(k.as_ref()?).ok()??;
            Some(Ok(Asked::from_cache(hit)))
        })
        .collect();
    let missing: Vec<usize> = (0..requests.len()).filter(|&i| out[i].is_none()).collect();
    if let Some(&first) = missing.first() {
        let mut retries = Vec::new();
        let n = missing.len() as u32;
        let Ok((result, attempts, latency, endpoint)) =
            send_batch(model, &requests[first].1, n, &mut retries).await
        else {
            for &i in &missing {
                out[i] = Some(Err(Refused));
            }
            return out.into_iter().flatten().collect();
        };
        let choices = match result {
            Ok(list) => list.into_iter().map(Ok).collect::<Vec<_>>(),
            Err(e) => vec![Err(e); missing.len()],
        };
        if let Some(Ok(first)) = choices.first() {
            model.observe(cache, first.served.as_ref());
        }
        let returned = choices.len();
        let mut choices = choices.into_iter();
        for (j, &i) in missing.iter().enumerate() {
            let result = choices.next().unwrap_or_else(|| {
                Err(ProviderError::Malformed(format!(
                    "asked for {n} choices, the server returned {returned}"
                )))
            });
            if let (Some(cache), Ok(c)) = (cache, &result) {
                let (sample, request) = &requests[i];
                let k = cache_key(
                    &model.setup,
                    &model.base_url,
                    request,
                    *sample,
                    c.served.as_ref(),
                );
                let _ = cache.put(&k, &model.setup, c);
            }
            // The request's attempts are counted once, on its first sample.
            out[i] = Some(Ok(Asked {
                result,
                attempts: if j == 0 { attempts } else { 0 },
                latency,
                cached: false,
                retries: if j == 0 { retries.clone() } else { Vec::new() },
                rejected: Vec::new(),
                endpoint: endpoint.clone(),
            }));
        }
    }
    out.into_iter()
        .map(|a| a.expect("every sample asked"))
        .collect()
}

/// Asks `model` once, from the cache when possible, re-asking (up to `max_asks`
/// in all, varying the seed) while `accept` rejects the answer; the last answer
/// is kept either way and cached. Used for models under test and for judges.
/// `Err(Refused)` when the model's gate refused the first ask.
pub(crate) async fn ask<R: std::fmt::Display>(
    model: &ModelClient,
    request: &ChatRequest,
    key: RequestKey<'_>,
    cache: Option<&Cache>,
    max_asks: u32,
    accept: impl Fn(&str) -> Result<(), R>,
) -> Result<Asked, Refused> {
    let rendered;
    let request = match outside_spec(model, request) {
        None => request,
        Some(Ok(r)) => {
            rendered = r;
            &rendered
        }
        Some(Err(e)) => return Ok(Asked::failed(e)),
    };
    // A judge's answers are told apart by the judge sample; the answer judged is in the prompt.
    let sample = key.judge.map_or(key.sample, |(_, k)| k);
    let served = if model.provider().is_remote() {
        model.served(cache)
    } else {
        None
    };
    let lookup = cache.map(|_| {
        cache_key(
            &model.setup,
            &model.base_url,
            request,
            sample,
            served.as_ref(),
        )
    });
    if let (Some(cache), Some(k)) = (cache, &lookup)
        && let Ok(Some(hit)) = cache.get(k)
    {
        return Ok(Asked::from_cache(hit));
    }
    let mut total_attempts = 0;
    let mut asks = 0;
    let mut hold = Hold::default();
    let mut retries = Vec::new();
    let mut rejected_answers = Vec::new();
    loop {
        asks += 1;
        // Re-asks vary the seed when one is set, so a deterministic server can answer differently.
        let mut this_request = request.clone();
        if asks > 1 {
            this_request.seed = request.seed.map(|s| s.wrapping_add(u64::from(asks - 1)));
        }
        // A re-ask belongs to a request already started: it draws on the room
        // the first ask reserved for every ask, and the gate may not refuse it.
        let asks_allowed = if model.provider().is_remote() {
            max_asks
        } else {
            1
        };
        let (result, attempts, latency, endpoint) = send_logged(
            model,
            &this_request,
            (key, asks_allowed),
            &mut hold,
            &mut retries,
        )
        .await?;
        total_attempts += attempts;
        let rejected = match &result {
            Ok(c) if asks < max_asks && model.provider().is_remote() => accept(&c.text).err(),
            _ => None,
        };
        if let Some(why) = rejected {
            retries.push(format!("ask {asks}: {why}; asking again"));
            rejected_answers.extend(result.ok());
        } else {
            if let (Ok(c), true) = (&result, model.provider().is_remote()) {
                model.observe(cache, c.served.as_ref());
                // Kept under the identity that answered, which later lookups now use.
                if let Some(cache) = cache {
                    let served = c.served.as_ref().or(served.as_ref());
                    let k = cache_key(&model.setup, &model.base_url, request, sample, served);
                    let _ = cache.put(&k, &model.setup, c);
                }
            }
            hold.release(model);
            return Ok(Asked {
                result,
                attempts: total_attempts,
                latency,
                cached: false,
                retries,
                rejected: rejected_answers,
                endpoint,
            });
        }
    }
}
