//! A server that admits R requests per second and refuses the rest with
//! 429, as a rate-limited API does: a token bucket refilled at R per
//! second, holding at most a tenth of a second's worth (so a burst cannot
//! borrow the next second's allowance).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{FakeServer, Reply, Request};

/// The bucket: tokens left, and when they were last counted.
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl FakeServer {
    /// Admits `per_second` requests a second, each answered correctly after
    /// `latency`; a request beyond is answered 429 at once (no `Retry-After`:
    /// the client's own backoff decides).
    pub fn rate_limited(per_second: f64, latency: Duration) -> FakeServer {
        let burst = (per_second / 10.0).max(1.0);
        let bucket = Mutex::new(Bucket {
            tokens: burst,
            at: Instant::now(),
        });
        FakeServer::start(move |r: &Request| {
            let mut b = bucket.lock().unwrap();
            let refill = r.at.saturating_duration_since(b.at).as_secs_f64() * per_second;
            b.tokens = (b.tokens + refill).min(burst);
            b.at = b.at.max(r.at);
            if b.tokens >= 1.0 {
                b.tokens -= 1.0;
                Reply::Slow(latency, Box::new(Reply::Correct))
            } else {
                Reply::Status(429, None)
            }
        })
    }
}
