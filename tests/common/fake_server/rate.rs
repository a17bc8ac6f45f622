//! A server that admits R requests per second and refuses the rest with
//! 429, as a rate-limited API does: a token bucket refilled at R per
//! second, holding a quarter of a second's worth (APIs enforce a per-minute
//! limit over short windows). Each answer takes the latency asked for, give
//! or take half of it, as a real server's do, so a client's workers started
//! together do not stay in step and arrive in bursts forever.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{FakeServer, Reply, Request};

/// What a rate-limited server did: when it admitted each request, and how
/// many it refused.
#[derive(Debug, Default)]
pub struct RateLog {
    admitted: Mutex<Vec<Instant>>,
    refused: Mutex<usize>,
}

impl RateLog {
    /// Requests refused with 429.
    pub fn refused(&self) -> usize {
        *self.refused.lock().unwrap()
    }

    /// Requests admitted.
    pub fn admitted(&self) -> usize {
        self.admitted.lock().unwrap().len()
    }

    /// Admitted requests a second, from the first admission to the last
    /// one's answer (about `latency` after it).
    pub fn throughput(&self, latency: Duration) -> f64 {
        let at = self.admitted.lock().unwrap();
        match (at.first(), at.last()) {
            (Some(first), Some(last)) => at.len() as f64 / (*last + latency - *first).as_secs_f64(),
            _ => 0.0,
        }
    }
}

/// `latency` scaled by a factor from 0.5 to 1.5, fixed by `index` (a
/// multiplicative hash: the same run of requests gets the same latencies).
fn jitter(latency: Duration, index: usize) -> Duration {
    let spread = (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11;
    latency.mul_f64(0.5 + spread as f64 / (1u64 << 53) as f64)
}

/// The bucket: tokens left, and when they were last counted.
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl FakeServer {
    /// Admits `per_second` requests a second, each answered correctly after
    /// about `latency`; a request beyond is answered 429 at once (no `Retry-After`:
    /// the client's own backoff decides). The log tells what it did.
    pub fn rate_limited(per_second: f64, latency: Duration) -> (FakeServer, Arc<RateLog>) {
        let burst = (per_second / 4.0).max(1.0);
        let bucket = Mutex::new(Bucket {
            tokens: burst,
            at: Instant::now(),
        });
        let log = Arc::new(RateLog::default());
        let seen = log.clone();
        let server = FakeServer::start(move |r: &Request| {
            let mut b = bucket.lock().unwrap();
            let refill = r.at.saturating_duration_since(b.at).as_secs_f64() * per_second;
            b.tokens = (b.tokens + refill).min(burst);
            b.at = b.at.max(r.at);
            if b.tokens >= 1.0 {
                b.tokens -= 1.0;
                seen.admitted.lock().unwrap().push(r.at);
                Reply::Slow(jitter(latency, r.index), Box::new(Reply::Correct))
            } else {
                *seen.refused.lock().unwrap() += 1;
                Reply::Status(429, None)
            }
        });
        (server, log)
    }
}
