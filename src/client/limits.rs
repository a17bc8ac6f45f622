//! Request pacing: a requests-per-minute limiter and retry backoff.

use std::time::{Duration, Instant};

use tokio::sync::Mutex;

/// Spaces request starts at least `60 / rpm` seconds apart.
pub(crate) struct RateLimiter {
    interval: Duration,
    next: Mutex<Instant>,
}

impl RateLimiter {
    /// A limiter for `rpm` requests per minute.
    pub(crate) fn new(rpm: u32) -> RateLimiter {
        RateLimiter {
            interval: Duration::from_secs_f64(60.0 / f64::from(rpm.max(1))),
            next: Mutex::new(Instant::now()),
        }
    }

    /// Waits for the next free slot.
    pub(crate) async fn acquire(&self) {
        let slot = {
            let mut next = self.next.lock().await;
            let slot = (*next).max(Instant::now());
            *next = slot + self.interval;
            slot
        };
        tokio::time::sleep_until(slot.into()).await;
    }
}

/// Exponential backoff with full jitter: a random delay in
/// `[base·2^attempt / 2, base·2^attempt]`, capped, never shorter than the
/// server's `Retry-After`.
pub(crate) fn backoff(
    attempt: u32,
    base: Duration,
    cap: Duration,
    retry_after: Option<Duration>,
) -> Duration {
    let exp = base.saturating_mul(1u32 << attempt.min(16)).min(cap);
    let jitter = 0.5 + 0.5 * unit_noise();
    let delay = exp.mul_f64(jitter);
    match retry_after {
        Some(ra) => delay.max(ra.min(Duration::from_secs(600))),
        None => delay,
    }
}

/// Cheap non-cryptographic noise in [0, 1) for jitter; determinism is not wanted here.
fn unit_noise() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(Instant::now().elapsed().as_nanos());
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_is_capped_and_honors_retry_after() {
        let base = Duration::from_millis(100);
        let cap = Duration::from_secs(2);
        for attempt in 0..6 {
            let d = backoff(attempt, base, cap, None);
            let full = base.saturating_mul(1 << attempt).min(cap);
            assert!(d >= full / 2 && d <= full, "{attempt}: {d:?}");
        }
        assert!(backoff(0, base, cap, Some(Duration::from_secs(3))) >= Duration::from_secs(3));
    }

    #[tokio::test]
    async fn limiter_spaces_requests() {
        let limiter = RateLimiter::new(600); // 100 ms apart
        let started = Instant::now();
        for _ in 0..3 {
            limiter.acquire().await;
        }
        assert!(started.elapsed() >= Duration::from_millis(200));
    }
}
