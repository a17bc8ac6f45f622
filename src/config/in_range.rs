//! Every number `harness.toml` holds, with its range: one table, checked
//! after the file is read and located at the value, so a bad number is an
//! exit 2 with file:line:col like any TOML error. What lies outside would
//! otherwise panic (`timeout_secs = inf` in `Duration::from_secs_f64`),
//! hang (`requests_per_minute = 0`) or be quietly changed (`concurrency = 0`
//! ran as 1). Integers too large for their type are refused by the TOML
//! reader itself, also located; `inf` and `nan` anywhere by
//! [`crate::format::locate::SourceMap::non_finite_floats`].

use std::path::Path;

use crate::error::{Diagnostic, ErrorKind, Location};
use crate::format::locate::{Key, SourceMap};
use crate::format::range::{Bounds, Number, RUNS, TEMPERATURE, TOKENS, TOP_P};
use crate::provider::model_ref::MAX_TIMEOUT_SECS;

use super::{Config, ModelConfig};

/// `[run] max_cost`: an amount of money.
const AMOUNT: Bounds = Bounds::Within(0.0, f64::MAX);
/// `[run] max_tokens_total`: a budget of no tokens would run nothing.
const TOKEN_BUDGET: Bounds = Bounds::Count(1, u64::MAX);
/// `concurrency`: requests (or programs) in flight; each is a worker.
pub(crate) const CONCURRENCY: Bounds = Bounds::Count(1, 1024);
/// `requests_per_minute`: 0 would wait forever.
pub(crate) const REQUESTS_PER_MINUTE: Bounds = Bounds::Count(1, 1_000_000);
/// `timeout_secs`, `server.ready_timeout_secs`: above 0, at most a day.
pub(crate) const TIMEOUT: Bounds = Bounds::Above(0.0, MAX_TIMEOUT_SECS);
/// `max_retries`: each retry waits up to 30 s of backoff.
pub(crate) const MAX_RETRIES: Bounds = Bounds::Count(0, 100);
/// `max_n`: OpenAI's own ceiling of `n`.
pub(crate) const MAX_N: Bounds = Bounds::Count(1, 128);
/// `max_prompts`: a question's choices fit many times over; more only
/// makes one request's answer larger.
const MAX_PROMPTS: Bounds = Bounds::Count(1, 64);
/// `server.threads`, `server.parallel`.
pub(crate) const SERVER_COUNT: Bounds = Bounds::Count(1, 1024);
/// `server.gpu_memory_utilization`: a fraction.
const FRACTION: Bounds = Bounds::Above(0.0, 1.0);
/// `max_response_bytes`: below 1 KiB no answer fits; above 4 GiB a body
/// would not fit in memory before it is refused.
const RESPONSE_BYTES: Bounds = Bounds::Count(1 << 10, 4 << 30);
/// `[limits]`: a file cap. Below 1 KiB no spec or row fits; above 1 TiB
/// the file would not fit in any machine's memory, where it is read whole.
const FILE_BYTES: Bounds = Bounds::Count(1 << 10, 1 << 40);

/// Fails at the first float of `text` (read from `path`) that is infinite
/// or NaN; a file that does not parse is the TOML reader's to report.
pub(super) fn finite(path: &Path, text: &str) -> Result<(), Diagnostic> {
    let Ok(map) = SourceMap::parse(path, text) else {
        return Ok(());
    };
    match map.non_finite_floats().into_iter().next() {
        Some((at, value)) => Err(Diagnostic::new(
            ErrorKind::Invalid,
            at,
            format!("{value} is not a finite number: no key of harness.toml takes one"),
        )
        .with_source(text)),
        None => Ok(()),
    }
}

/// Fails at the first number of `config` (read from `text` at `path`)
/// outside its range.
pub(super) fn in_range(path: &Path, text: &str, config: &Config) -> Result<(), Diagnostic> {
    let Some((key, problem)) = problems(config).into_iter().next() else {
        return Ok(());
    };
    let at = SourceMap::parse(path, text)
        .map_or_else(|_| Location::file_start(path), |map| map.locate(&key));
    Err(Diagnostic::new(ErrorKind::Invalid, at, problem).with_source(text))
}

/// One number found out of range: the path of its key and why.
pub(super) type Problem<'a> = (Vec<Key<'a>>, String);

/// Every number of `config` outside its range, `[run]` first, then
/// `[limits]`, then the models in name order.
pub(super) fn problems(config: &Config) -> Vec<Problem<'_>> {
    let mut found = Vec::new();
    let run = &config.run;
    let mut at = |path: &[Key<'static>], value: Option<Number>, bounds: Bounds| {
        check(&mut found, path.to_vec(), value, bounds);
    };
    at(
        &[Key::Name("run"), Key::Name("runs")],
        run.runs.map(Number::from),
        RUNS,
    );
    let max_cost = run.max_cost.map(Number::from);
    at(&[Key::Name("run"), Key::Name("max_cost")], max_cost, AMOUNT);
    let tokens = run.max_tokens_total.map(Number::from);
    at(
        &[Key::Name("run"), Key::Name("max_tokens_total")],
        tokens,
        TOKEN_BUDGET,
    );
    for (kind, cap) in config.limits.entries() {
        let key = kind.key().unwrap_or("value");
        check(
            &mut found,
            vec![Key::Name("limits"), Key::Name(key)],
            cap.map(Number::from),
            FILE_BYTES,
        );
    }
    for (name, model) in &config.models {
        model_problems(&mut found, name, model);
        found.extend(super::batch::problems(name, model));
    }
    found
}

/// The numbers of `[models.<name>]`.
fn model_problems<'a>(found: &mut Vec<Problem<'a>>, name: &'a str, m: &'a ModelConfig) {
    let path = |keys: &[&'static str]| {
        let mut path = vec![Key::Name("models"), Key::Name(name)];
        path.extend(keys.iter().map(|k| Key::Name(k)));
        path
    };
    let o = &m.options;
    let checks: [(&[&str], Option<Number>, Bounds); 12] = [
        (
            &["max_response_bytes"],
            m.max_response_bytes.map(Number::from),
            RESPONSE_BYTES,
        ),
        (
            &["concurrency"],
            m.concurrency
                .and_then(super::Concurrency::fixed)
                .map(Number::from),
            CONCURRENCY,
        ),
        (
            &["max_concurrency"],
            m.max_concurrency.map(Number::from),
            CONCURRENCY,
        ),
        (
            &["requests_per_minute"],
            m.requests_per_minute.map(Number::from),
            REQUESTS_PER_MINUTE,
        ),
        (&["timeout_secs"], m.timeout_secs.map(Number::from), TIMEOUT),
        (
            &["max_retries"],
            m.max_retries.map(Number::from),
            MAX_RETRIES,
        ),
        (&["max_n"], m.max_n.map(Number::from), MAX_N),
        (
            &["max_prompts"],
            m.max_prompts.map(Number::from),
            MAX_PROMPTS,
        ),
        (
            &["options", "temperature"],
            o.temperature.map(Number::from),
            TEMPERATURE,
        ),
        (&["options", "top_p"], o.top_p.map(Number::from), TOP_P),
        (
            &["options", "max_tokens"],
            o.max_tokens.map(Number::from),
            TOKENS,
        ),
        (&["options", "num_ctx"], o.num_ctx.map(Number::from), TOKENS),
    ];
    for (keys, value, bounds) in checks {
        check(found, path(keys), value, bounds);
    }
    let auto = m.concurrency == Some(super::Concurrency::Auto);
    // A ceiling nothing adapts under would be silently ignored.
    if m.max_concurrency.is_some() && !auto {
        found.push((
            path(&["max_concurrency"]),
            "max_concurrency is the ceiling of concurrency = \"auto\": set that, or drop max_concurrency".to_owned(),
        ));
    }
    // A server the harness starts gets one slot per request in flight, and a
    // program is never throttled: both need a number.
    if auto && (m.provider.is_managed() || m.provider == crate::provider::ProviderKind::Exec) {
        found.push((
            path(&["concurrency"]),
            format!(
                "concurrency = \"auto\" adapts to a remote server's throttling; a `{}` model needs a number",
                m.provider.prefix()
            ),
        ));
    }
    // A model's reasoning: its budget, and a key its provider's wire cannot carry.
    let r = &m.reasoning;
    let wire = crate::provider::reasoning_setting::unsupported(m.provider, r);
    for (key, why) in r
        .problems(o.max_tokens, "options.max_tokens")
        .into_iter()
        .chain(wire)
    {
        found.push((path(&["reasoning", key]), why));
    }
    let Some(s) = &m.server else { return };
    let checks: [(&str, Option<Number>, Bounds); 5] = [
        ("ctx_size", s.ctx_size.map(Number::from), TOKENS),
        ("threads", s.threads.map(Number::from), SERVER_COUNT),
        ("parallel", s.parallel.map(Number::from), SERVER_COUNT),
        (
            "gpu_memory_utilization",
            s.gpu_memory_utilization.map(Number::from),
            FRACTION,
        ),
        (
            "ready_timeout_secs",
            s.ready_timeout_secs.map(Number::from),
            TIMEOUT,
        ),
    ];
    for (key, value, bounds) in checks {
        check(found, path(&["server", key]), value, bounds);
    }
}

/// Adds the problem of the number at `path`, if it has one.
fn check<'a>(
    found: &mut Vec<Problem<'a>>,
    path: Vec<Key<'a>>,
    value: Option<Number>,
    bounds: Bounds,
) {
    let key = match path.last() {
        Some(Key::Name(key)) => *key,
        _ => "value",
    };
    if let Some(problem) = value.and_then(|v| bounds.problem(key, v)) {
        found.push((path, problem));
    }
}

#[cfg(test)]
#[path = "in_range_tests.rs"]
mod tests;
