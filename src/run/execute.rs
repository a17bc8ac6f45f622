//! One task: render the instance, ask the model (cache, pacing, retries,
//! re-asks for unparseable structured output), verify, and make a record.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

use super::cache::{Cache, cache_key};
use super::limits::{RateLimiter, backoff};
use super::record::{Record, failure_label};
use crate::extract::{first_json_object, strip_think};
use crate::provider::{
    ChatRequest, Completion, ModelSpec, OutputFormat, Provider, ProviderError, RequestKey,
};
use crate::spec::Spec;

/// A model ready to be asked.
pub struct ModelRuntime {
    /// Its configuration.
    pub spec: ModelSpec,
    /// The client.
    pub provider: Provider,
    /// The resolved base URL, or a managed model's `llamacpp:<file>` (part of cache keys).
    pub base_url: String,
    /// Bounds requests in flight to the endpoint.
    pub semaphore: Arc<Semaphore>,
    /// Optional requests-per-minute pacing.
    pub limiter: Option<RateLimiter>,
    /// The managed server behind this model, watched for its death.
    pub server: Option<crate::provider::managed::ServerWatch>,
}

/// A spec ready to be run.
pub struct SpecRuntime {
    /// The loaded spec.
    pub spec: Arc<Spec>,
    /// Instances to run.
    pub runs: u32,
    /// The answer shape requested.
    pub format: OutputFormat,
    /// Compiled schema for checking structured answers before accepting them.
    pub validator: Option<jsonschema::Validator>,
    /// Total asks allowed when a structured answer does not parse (1 = no re-ask).
    pub max_asks: u32,
}

/// Backoff bounds.
const BACKOFF_BASE: Duration = Duration::from_millis(250);
const BACKOFF_CAP: Duration = Duration::from_secs(30);

/// Builds the provider-neutral request for an instance.
pub fn build_request(
    spec: &SpecRuntime,
    model: &ModelSpec,
    messages: Vec<crate::prompt::Message>,
) -> ChatRequest {
    let r = &spec.spec.def.request;
    let o = &model.options;
    let default = Default::default();
    let s = spec.spec.def.sampling.as_ref().unwrap_or(&default);
    ChatRequest {
        messages,
        temperature: o
            .temperature
            .or(s.temperature)
            .or(r.temperature)
            .unwrap_or(0.0),
        max_tokens: o
            .max_tokens
            .or(s.max_tokens)
            .or(r.max_tokens)
            .unwrap_or(1024),
        top_p: o.top_p.or(s.top_p).or(r.top_p),
        seed: o.seed.or(s.seed).or(r.seed),
        stop: r.stop.clone(),
        format: spec.format.clone(),
        num_ctx: o.num_ctx.or(r.num_ctx),
        extra: o.extra_body.clone().unwrap_or_default(),
    }
}

/// The request of sample `sample`: the seed, when set, becomes `seed + sample`, so
/// samples differ on a seeded server yet every sample reproduces (sample 0 keeps the seed).
pub fn sample_request(base: &ChatRequest, sample: u32) -> ChatRequest {
    let mut request = base.clone();
    request.seed = base.seed.map(|s| s.wrapping_add(u64::from(sample)));
    request
}

fn structured_ok(spec: &SpecRuntime, text: &str) -> bool {
    if spec.format == OutputFormat::Text {
        return true;
    }
    let Some(json) = first_json_object(strip_think(text)) else {
        return false;
    };
    match (
        &spec.validator,
        serde_json::from_str::<serde_json::Value>(json),
    ) {
        (_, Err(_)) => false,
        (Some(v), Ok(value)) => v.is_valid(&value),
        (None, Ok(_)) => true,
    }
}

/// What asking produced: the answer or error, and how it was obtained.
pub(crate) struct Asked {
    /// The last answer, or the error that ended the asks.
    pub(crate) result: Result<Completion, ProviderError>,
    /// HTTP attempts made (0 for a cache hit).
    pub(crate) attempts: u32,
    /// The last attempt's latency.
    pub(crate) latency: Duration,
    /// Answered from the cache.
    pub(crate) cached: bool,
    /// Why earlier attempts were not accepted, in order.
    pub(crate) retries: Vec<String>,
}

/// Sends with retries on retryable errors, logging each failed attempt into `retries`.
async fn send_logged(
    model: &ModelRuntime,
    request: &ChatRequest,
    key: RequestKey<'_>,
    retries: &mut Vec<String>,
) -> (Result<Completion, ProviderError>, u32, Duration) {
    with_retries(model, retries, || model.provider.complete(request, key)).await
}

/// Sends one request for `n` choices, with the same retries as [`send_logged`].
async fn send_batch(
    model: &ModelRuntime,
    request: &ChatRequest,
    n: u32,
    retries: &mut Vec<String>,
) -> (Result<Vec<Completion>, ProviderError>, u32, Duration) {
    with_retries(model, retries, || model.provider.complete_n(request, n)).await
}

/// Pacing, the endpoint's concurrency limit and bounded retries with backoff
/// around one kind of request; returns the result, attempts and last latency.
async fn with_retries<T, F, Fut>(
    model: &ModelRuntime,
    retries: &mut Vec<String>,
    send: F,
) -> (Result<T, ProviderError>, u32, Duration)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, ProviderError>>,
{
    let mut attempts = 0;
    loop {
        if let Some(limiter) = &model.limiter {
            limiter.acquire().await;
        }
        let result = {
            let _permit = model.semaphore.acquire().await.expect("semaphore open");
            attempts += 1;
            let started = Instant::now();
            let r = send().await;
            (r, started.elapsed())
        };
        match result {
            (Err(e), _) if e.retryable() && attempts <= model.spec.max_retries => {
                retries.push(format!("attempt {attempts}: {} ({e})", e.kind()));
                tokio::time::sleep(backoff(
                    attempts - 1,
                    BACKOFF_BASE,
                    BACKOFF_CAP,
                    e.retry_after(),
                ))
                .await;
            }
            (r, latency) => return (r, attempts, latency),
        }
    }
}

/// Asks for several samples of one instance: cached ones come from the cache, the
/// rest in one request with OpenAI's `n` (asked with the first missing sample's seed).
/// Each answer is cached under its own sample's key, so no sample can receive another's.
async fn ask_batch(
    model: &ModelRuntime,
    requests: &[(u32, ChatRequest)],
    cache: Option<&Cache>,
) -> Vec<Asked> {
    let keys: Vec<Option<String>> = requests
        .iter()
        .map(|(sample, r)| cache.map(|_| cache_key(&model.spec, &model.base_url, r, *sample)))
        .collect();
    let mut out: Vec<Option<Asked>> = keys
        .iter()
        .map(|k| {
            let hit = cache.zip(k.as_ref())?.0.get(k.as_ref()?).ok()??;
            Some(Asked {
                result: Ok(hit),
                attempts: 0,
                latency: Duration::ZERO,
                cached: true,
                retries: Vec::new(),
            })
        })
        .collect();
    let missing: Vec<usize> = (0..requests.len()).filter(|&i| out[i].is_none()).collect();
    if let Some(&first) = missing.first() {
        let mut retries = Vec::new();
        let n = missing.len() as u32;
        let (result, attempts, latency) =
            send_batch(model, &requests[first].1, n, &mut retries).await;
        let mut choices = match result {
            Ok(list) => list.into_iter().map(Ok).collect::<Vec<_>>(),
            Err(e) => vec![Err(e); missing.len()],
        };
        for (j, &i) in missing.iter().enumerate() {
            let result = if j < choices.len() {
                std::mem::replace(&mut choices[j], Err(ProviderError::Config(String::new())))
            } else {
                Err(ProviderError::Malformed(format!(
                    "asked for {n} choices, the server returned {}",
                    choices.len()
                )))
            };
            if let (Some(cache), Some(k), Ok(c)) = (cache, &keys[i], &result) {
                let _ = cache.put(k, &model.spec, c);
            }
            // The request's attempts are counted once, on its first sample.
            out[i] = Some(Asked {
                result,
                attempts: if j == 0 { attempts } else { 0 },
                latency,
                cached: false,
                retries: if j == 0 { retries.clone() } else { Vec::new() },
            });
        }
    }
    out.into_iter()
        .map(|a| a.expect("every sample asked"))
        .collect()
}

/// Asks `model` once, from the cache when possible, re-asking (up to `max_asks`
/// in all, varying the seed) while `accept` rejects the answer; the last answer
/// is kept either way and cached. Used for models under test and for judges.
pub(crate) async fn ask_checked(
    model: &ModelRuntime,
    request: &ChatRequest,
    key: RequestKey<'_>,
    cache: Option<&Cache>,
    max_asks: u32,
    accept: impl Fn(&str) -> Result<(), String>,
) -> Asked {
    // A judge's answers are told apart by the judge sample; the answer judged is in the prompt.
    let sample = key.judge.map_or(key.sample, |(_, k)| k);
    let cache_key = cache.map(|_| cache_key(&model.spec, &model.base_url, request, sample));
    if let (Some(cache), Some(k)) = (cache, &cache_key)
        && let Ok(Some(hit)) = cache.get(k)
    {
        return Asked {
            result: Ok(hit),
            attempts: 0,
            latency: Duration::ZERO,
            cached: true,
            retries: Vec::new(),
        };
    }
    let mut total_attempts = 0;
    let mut asks = 0;
    let mut retries = Vec::new();
    loop {
        asks += 1;
        // Re-asks vary the seed when one is set, so a deterministic server can answer differently.
        let mut this_request = request.clone();
        if asks > 1 {
            this_request.seed = request.seed.map(|s| s.wrapping_add(u64::from(asks - 1)));
        }
        let (result, attempts, latency) =
            send_logged(model, &this_request, key, &mut retries).await;
        total_attempts += attempts;
        let rejected = match &result {
            Ok(c) if asks < max_asks && model.provider.is_remote() => accept(&c.text).err(),
            _ => None,
        };
        if let Some(why) = rejected {
            retries.push(format!("ask {asks}: {why}; asking again"));
        } else {
            if let (Some(cache), Some(k), Ok(c)) = (cache, &cache_key, &result)
                && model.provider.is_remote()
            {
                let _ = cache.put(k, &model.spec, c);
            }
            return Asked {
                result,
                attempts: total_attempts,
                latency,
                cached: false,
                retries,
            };
        }
    }
}

async fn ask(
    model: &ModelRuntime,
    spec: &SpecRuntime,
    request: &ChatRequest,
    key: RequestKey<'_>,
    cache: Option<&Cache>,
) -> Asked {
    ask_checked(model, request, key, cache, spec.max_asks, |text| {
        if structured_ok(spec, text) {
            Ok(())
        } else {
            Err("the answer is not valid structured JSON".into())
        }
    })
    .await
}

/// Runs one instance's `samples` to one record each; never fails (errors become records).
pub async fn run_task(
    model: &ModelRuntime,
    judge: Option<&ModelRuntime>,
    spec: &SpecRuntime,
    instance: u64,
    samples: &[u32],
    cache: Option<&Cache>,
) -> Vec<Record> {
    let s = &spec.spec;
    let blank = |sample: u32| Record {
        model: model.spec.name.clone(),
        spec: s.id.clone(),
        instance,
        sample,
        instance_id: format!("{}/{instance}", s.id),
        messages: Vec::new(),
        vars: Default::default(),
        expected: Default::default(),
        response: None,
        answer: None,
        passed: false,
        score: 0.0,
        detail: String::new(),
        rules: Vec::new(),
        failure: None,
        latency_ms: 0,
        tokens_in: None,
        tokens_out: None,
        shared: None,
        attempts: 0,
        error: None,
        cached: false,
        retries: Vec::new(),
        judge_attempts: 0,
    };
    let inst = match s.instance(instance) {
        Ok(i) => i,
        Err(d) => {
            return samples
                .iter()
                .map(|&sample| {
                    let mut record = blank(sample);
                    record.error = Some(d.to_string());
                    record.failure = Some("generation_error".into());
                    record
                })
                .collect();
        }
    };
    let base = build_request(spec, &model.spec, inst.messages.clone());
    let requests: Vec<(u32, ChatRequest)> = samples
        .iter()
        .map(|&sample| (sample, sample_request(&base, sample)))
        .collect();
    // Structured answers may need re-asks one by one, so only free text is batched.
    let batched =
        requests.len() > 1 && model.provider.supports_n() && spec.format == OutputFormat::Text;
    let asked = if batched {
        ask_batch(model, &requests, cache).await
    } else {
        let mut all = Vec::new();
        for (sample, request) in &requests {
            let key = RequestKey {
                spec: &s.id,
                instance,
                sample: *sample,
                judge: None,
            };
            all.push(ask(model, spec, request, key, cache).await);
        }
        all
    };
    let mut records = Vec::new();
    for (&sample, asked) in samples.iter().zip(asked) {
        let mut record = blank(sample);
        record.expected = s.rules.expected(&inst.vars);
        record.messages = inst.messages.clone();
        record.vars = inst.vars.clone();
        let key = RequestKey {
            spec: &s.id,
            instance,
            sample,
            judge: None,
        };
        finish(model, judge, s, key, asked, cache, &mut record).await;
        records.push(record);
    }
    records
}

/// Fills `record` from the answer: the judge's verdicts, the verdict, tokens, timing.
async fn finish(
    model: &ModelRuntime,
    judge: Option<&ModelRuntime>,
    s: &Arc<Spec>,
    key: RequestKey<'_>,
    asked: Asked,
    cache: Option<&Cache>,
    record: &mut Record,
) {
    let vars = &record.vars;
    record.attempts = if model.provider.is_remote() {
        asked.attempts
    } else {
        0
    };
    record.cached = asked.cached;
    record.retries = asked.retries;
    record.latency_ms = asked.latency.as_millis() as u64;
    match asked.result {
        Ok(completion) => {
            // A replayed model's recorded judgements replay too, unless a judge is named.
            let judge = judge.or((!model.provider.is_remote()).then_some(model));
            let judged = match judge {
                Some(judge) if s.rules.needs_judge() => {
                    let j = super::judge::judge_response(
                        judge,
                        s,
                        &record.messages,
                        &completion.text,
                        vars,
                        key,
                        cache,
                    )
                    .await;
                    record.retries.extend(j.retries);
                    record.judge_attempts = j.attempts;
                    j.judged
                }
                _ => Default::default(),
            };
            let verdict = if s.rules.needs_sandbox() {
                // Running code blocks for up to its time limit: not on a runtime worker.
                let (spec, text, vars) = (s.clone(), completion.text.clone(), vars.clone());
                match tokio::task::spawn_blocking(move || spec.verify_judged(&text, &vars, &judged))
                    .await
                {
                    Ok(verdict) => verdict,
                    Err(e) => std::panic::resume_unwind(e.into_panic()),
                }
            } else {
                s.verify_judged(&completion.text, vars, &judged)
            };
            record.tokens_in = completion.usage.tokens_in;
            record.tokens_out = completion.usage.tokens_out;
            record.shared = completion.shared;
            record.answer = verdict
                .rules
                .iter()
                .find(|r| !r.report_only)
                .and_then(|r| r.answer.clone());
            record.passed = verdict.passed;
            record.score = verdict.score;
            record.detail = verdict.failure_details();
            record.failure = verdict
                .rules
                .iter()
                .filter(|r| !r.report_only)
                .find_map(|r| r.verdict.failure)
                .map(|f| failure_label(f).to_owned());
            record.rules = verdict.rules;
            record.response = Some(completion.text);
        }
        Err(e) => {
            record.failure = Some(e.kind().to_owned());
            record.error = Some(e.to_string());
        }
    }
}
