//! A model's endpoints: one, or a pool of replicas serving the same model.
//!
//! Each endpoint keeps its own concurrency limit, pacing and health. A
//! request goes to the endpoint with the fewest requests in flight among
//! those up. An endpoint that refuses a connection, or fails
//! [`FAILURES_TO_EJECT`] times in a row, is taken out; after a wait (1 s,
//! doubling up to 30 s) one request probes it, and a success brings it back.
//! When every endpoint is out, a request waits for the soonest probe, and the
//! caller's retries (with their backoff) decide when to give up.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::limits::RateLimiter;
use super::slots::Slots;
use crate::provider::{Provider, ProviderError};

/// Consecutive retryable failures that take an endpoint out.
pub(crate) const FAILURES_TO_EJECT: u32 = 3;
const FIRST_PROBE_WAIT: Duration = Duration::from_secs(1);
const LONGEST_PROBE_WAIT: Duration = Duration::from_secs(30);

/// One endpoint of a model.
pub(crate) struct Endpoint {
    /// Its base URL as shown, credentials redacted (or `replay:<name>`,
    /// or a managed model's URL); `provider` holds the one requests go to.
    pub url: String,
    /// The client speaking to it.
    pub provider: Provider,
    /// Bounds its requests in flight (shared with other models at the same URL).
    pub slots: Arc<Slots>,
    /// Optional requests-per-minute pacing.
    pub limiter: Option<RateLimiter>,
    /// Requests assigned to it and not finished (waiting for a permit included).
    in_flight: AtomicUsize,
    health: Mutex<Health>,
}

#[derive(Debug, Default)]
struct Health {
    /// Retryable failures since the last success.
    failures: u32,
    /// Out until then (a probe may go at that time).
    out_until: Option<Instant>,
    /// The wait before the next probe, doubled by each failed one.
    wait: Duration,
    /// A probe is in flight: others stay away until it ends.
    probing: bool,
    /// What the last failure was.
    last_error: String,
}

impl Endpoint {
    /// An endpoint at `url`, up.
    pub(crate) fn new(
        url: String,
        provider: Provider,
        slots: Arc<Slots>,
        limiter: Option<RateLimiter>,
    ) -> Endpoint {
        Endpoint {
            url,
            provider,
            slots,
            limiter,
            in_flight: AtomicUsize::new(0),
            health: Mutex::new(Health::default()),
        }
    }

    fn health(&self) -> std::sync::MutexGuard<'_, Health> {
        self.health.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A request's hold on an endpoint: counted in flight until dropped.
pub(crate) struct Assigned<'a> {
    /// The endpoint.
    pub endpoint: &'a Endpoint,
    /// Its position in the model's endpoints.
    pub index: usize,
    /// Whether this request probes an endpoint that was out.
    probe: bool,
}

impl Drop for Assigned<'_> {
    fn drop(&mut self) {
        self.endpoint.in_flight.fetch_sub(1, Ordering::Relaxed);
        if self.probe {
            self.endpoint.health().probing = false;
        }
    }
}

/// Every endpoint is out: the soonest probe, and what each last said.
#[derive(Debug)]
pub(crate) struct AllDown {
    /// Until the soonest probe may go.
    pub wait: Duration,
    /// `url: last error` per endpoint.
    pub errors: Vec<String>,
}

/// Picks the endpoint for the next attempt: among those up (or due a probe
/// nobody is sending), the one with the fewest requests in flight, the first
/// listed on a tie.
pub(crate) fn assign(endpoints: &[Endpoint]) -> Result<Assigned<'_>, AllDown> {
    let now = Instant::now();
    let mut best: Option<(usize, bool, usize)> = None;
    for (i, e) in endpoints.iter().enumerate() {
        let h = e.health();
        let (usable, probe) = match h.out_until {
            None => (true, false),
            Some(until) => (until <= now && !h.probing, true),
        };
        if !usable {
            continue;
        }
        let load = e.in_flight.load(Ordering::Relaxed);
        if best.is_none_or(|(_, _, l)| load < l) {
            best = Some((i, probe, load));
        }
    }
    match best {
        Some((i, probe, _)) => {
            let endpoint = &endpoints[i];
            if probe {
                endpoint.health().probing = true;
            }
            endpoint.in_flight.fetch_add(1, Ordering::Relaxed);
            Ok(Assigned {
                endpoint,
                index: i,
                probe,
            })
        }
        None => {
            let wait = endpoints
                .iter()
                .filter_map(|e| e.health().out_until)
                .min()
                .map_or(FIRST_PROBE_WAIT, |t| t.saturating_duration_since(now))
                .max(Duration::from_millis(10));
            let errors = endpoints
                .iter()
                .map(|e| format!("{}: {}", e.url, e.health().last_error))
                .collect();
            Err(AllDown { wait, errors })
        }
    }
}

impl Assigned<'_> {
    /// Notes how the attempt ended; returns whether the endpoint was taken
    /// out by it (its request may go to another at once).
    pub(crate) fn finished(&self, result: Result<(), &ProviderError>) -> bool {
        let mut h = self.endpoint.health();
        let Err(e) = result else {
            *h = Health::default();
            return false;
        };
        if !e.retryable() {
            return false;
        }
        h.failures += 1;
        h.last_error = e.to_string();
        let refused = matches!(e, ProviderError::Connection(_));
        if !(refused || h.failures >= FAILURES_TO_EJECT || self.probe) {
            return false;
        }
        h.wait = if h.out_until.is_some() {
            (h.wait * 2).min(LONGEST_PROBE_WAIT)
        } else {
            FIRST_PROBE_WAIT
        };
        h.out_until = Some(Instant::now() + h.wait);
        true
    }
}

/// When no endpoint is up (each is out, or waits for a probe to come back):
/// `url: last error` of each.
pub(crate) fn all_out(endpoints: &[Endpoint]) -> Option<Vec<String>> {
    let down = |e: &Endpoint| e.health().out_until.is_some();
    endpoints.iter().all(down).then(|| {
        endpoints
            .iter()
            .map(|e| format!("{}: {}", e.url, e.health().last_error))
            .collect()
    })
}

/// Whether the endpoint is out now.
#[cfg(test)]
fn is_out(endpoint: &Endpoint) -> bool {
    endpoint
        .health()
        .out_until
        .is_some_and(|t| t > Instant::now())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ReplayProvider;

    fn pool(n: usize) -> Vec<Endpoint> {
        (0..n)
            .map(|i| {
                Endpoint::new(
                    format!("http://e{i}"),
                    Provider::Replay(ReplayProvider::new(std::path::Path::new("."), "m")),
                    Arc::new(Slots::fixed(1)),
                    None,
                )
            })
            .collect()
    }

    #[test]
    fn requests_go_to_the_endpoint_with_the_fewest_in_flight() {
        let endpoints = pool(3);
        let a = assign(&endpoints).unwrap();
        let b = assign(&endpoints).unwrap();
        let c = assign(&endpoints).unwrap();
        let urls: Vec<&str> = [&a, &b, &c]
            .iter()
            .map(|x| x.endpoint.url.as_str())
            .collect();
        assert_eq!(urls, ["http://e0", "http://e1", "http://e2"]);
        drop(b);
        assert_eq!(assign(&endpoints).unwrap().endpoint.url, "http://e1");
    }

    #[test]
    fn a_refusing_endpoint_is_taken_out_then_probed_and_restored() {
        let endpoints = pool(2);
        let refused = ProviderError::Connection("refused".into());
        let first = assign(&endpoints).unwrap();
        assert!(
            first.finished(Err(&refused)),
            "a refused connection takes it out"
        );
        drop(first);
        for _ in 0..3 {
            let next = assign(&endpoints).unwrap();
            assert_eq!(next.endpoint.url, "http://e1", "the other one serves");
        }
        endpoints[1].health().out_until = Some(Instant::now() + Duration::from_secs(60));
        endpoints[0].health().out_until = Some(Instant::now());
        let probe = assign(&endpoints).unwrap();
        assert_eq!(probe.endpoint.url, "http://e0");
        let down = assign(&endpoints).err().expect("one probe at a time");
        assert!(down.errors[0].contains("refused"), "{:?}", down.errors);
        assert!(!probe.finished(Ok(())));
        drop(probe);
        assert!(!is_out(&endpoints[0]));
        assert_eq!(assign(&endpoints).unwrap().endpoint.url, "http://e0");
    }

    #[test]
    fn repeated_failures_take_an_endpoint_out_and_a_failed_probe_doubles_the_wait() {
        let endpoints = pool(1);
        let timeout = ProviderError::Timeout(Duration::from_secs(1));
        for i in 1..=FAILURES_TO_EJECT {
            let a = assign(&endpoints).unwrap();
            assert_eq!(a.finished(Err(&timeout)), i == FAILURES_TO_EJECT);
        }
        assert!(is_out(&endpoints[0]));
        let down = assign(&endpoints).err().expect("all down");
        assert!(down.wait <= FIRST_PROBE_WAIT);
        endpoints[0].health().out_until = Some(Instant::now());
        let probe = assign(&endpoints).unwrap();
        assert!(probe.finished(Err(&timeout)));
        assert_eq!(endpoints[0].health().wait, FIRST_PROBE_WAIT * 2);
        let bad_request = ProviderError::Config("no".into());
        drop(probe);
        endpoints[0].health().out_until = None;
        assert!(!assign(&endpoints).unwrap().finished(Err(&bad_request)));
    }
}
