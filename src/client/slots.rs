//! An endpoint's requests in flight: a fixed number (`concurrency = N`), or
//! one that adapts to the server (`concurrency = "auto"`).
//!
//! The adaptive limit is AIMD, as TCP congestion control: it is cut by a
//! quarter (multiplicative decrease) when the server says it is throttling
//! (429, 503, 529, or an answer whose rate-limit headers say the allowance
//! is spent) and grows by one per round of successes (additive
//! increase). Before the first throttle it grows by one per success (slow
//! start), so a generous server is found in a few rounds; the first
//! throttle halves it, as slow start overshoots. A burst of throttles caused by
//! one limit is one signal: only a request started under the current limit
//! lowers it again, so a limit is not cut once per refused request.

use std::sync::Mutex;

use tokio::sync::Notify;

use crate::provider::{Completion, ProviderError};

/// The adaptive limit's start: the fixed default, below the ceiling.
const START: usize = crate::provider::model_ref::DEFAULT_CONCURRENCY;
/// What a throttle leaves of the limit. Gentler than TCP's half: a rate
/// limit is a steady ceiling, not a queue that must drain, and a half
/// would idle a quarter of the allowed rate over each sawtooth.
const DECREASE: f64 = 0.75;

/// What one finished request says about the server's load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signal {
    /// Answered: room for more.
    Success,
    /// Refused for load (429, 503, 529), or answered with the allowance
    /// spent (rate-limit headers at 0): fewer.
    Throttled,
    /// Anything else (a timeout, a bad request): no news about load.
    Neutral,
}

impl Signal {
    /// The signal of an attempt's outcome; `answers` finds a result's
    /// answers, whose rate-limit headers may say the allowance is spent.
    pub(crate) fn of<T>(
        result: &Result<T, ProviderError>,
        answers: impl Fn(&T) -> &[Completion],
    ) -> Signal {
        match result {
            Ok(v) if answers(v).iter().any(|c| c.allowance_spent) => Signal::Throttled,
            Ok(_) => Signal::Success,
            Err(ProviderError::Status {
                status: 429 | 503 | 529,
                ..
            }) => Signal::Throttled,
            Err(_) => Signal::Neutral,
        }
    }
}

/// The AIMD controller: the limit and what moves it, without any waiting.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Aimd {
    /// Requests allowed in flight now, 1 to `ceiling`.
    pub limit: usize,
    ceiling: usize,
    /// Bumped by each decrease; a permit remembers the one it started under.
    epoch: u64,
    /// Successes since the last change of the limit.
    successes: usize,
    /// No throttle seen yet: grow by one per success.
    slow_start: bool,
    /// What the limit did, for the run's summary.
    pub trace: Trace,
}

/// How an adaptive limit moved over a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Trace {
    /// Where it started.
    pub start: usize,
    /// The highest it reached.
    pub highest: usize,
    /// The lowest a cut left it at (`None`: never cut).
    pub lowest: Option<usize>,
    /// Cuts: throttles that lowered it.
    pub cuts: usize,
    /// Raises after the first cut.
    pub raises: usize,
}

impl std::fmt::Display for Trace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at the start, up to {}", self.start, self.highest)?;
        match self.lowest {
            None => write!(f, "; the server never throttled"),
            Some(low) => write!(
                f,
                "; cuts on throttling: {} (down to {low}); raises after the first cut: {}",
                self.cuts, self.raises
            ),
        }
    }
}

impl Aimd {
    /// A controller under `ceiling` (at least 1).
    pub(crate) fn new(ceiling: usize) -> Aimd {
        let ceiling = ceiling.max(1);
        let limit = START.min(ceiling);
        Aimd {
            limit,
            ceiling,
            epoch: 0,
            successes: 0,
            slow_start: true,
            trace: Trace {
                start: limit,
                highest: limit,
                lowest: None,
                cuts: 0,
                raises: 0,
            },
        }
    }

    /// Learns from a request started under `epoch`.
    pub(crate) fn learn(&mut self, signal: Signal, epoch: u64) {
        match signal {
            Signal::Neutral => {}
            Signal::Success => {
                self.successes += 1;
                if (self.slow_start || self.successes >= self.limit) && self.limit < self.ceiling {
                    self.limit += 1;
                    self.successes = 0;
                    self.trace.highest = self.trace.highest.max(self.limit);
                    self.trace.raises += usize::from(self.trace.cuts > 0);
                }
            }
            // A request started before the last decrease saw the old limit.
            Signal::Throttled if epoch != self.epoch => {}
            Signal::Throttled => {
                // Slow start overshoots by up to twice the server's room: halve, as TCP does.
                let keep = if self.slow_start { 0.5 } else { DECREASE };
                self.slow_start = false;
                self.limit = ((self.limit as f64 * keep) as usize).max(1);
                self.epoch += 1;
                self.successes = 0;
                self.trace.cuts += 1;
                self.trace.lowest =
                    Some(self.trace.lowest.map_or(self.limit, |l| l.min(self.limit)));
            }
        }
    }
}

/// Bounds an endpoint's requests in flight; shared by every model at it.
pub(crate) struct Slots {
    state: Mutex<State>,
    freed: Notify,
}

struct State {
    in_flight: usize,
    /// `None`: a fixed limit.
    aimd: Option<Aimd>,
    fixed: usize,
}

impl State {
    fn limit(&self) -> usize {
        self.aimd.as_ref().map_or(self.fixed, |a| a.limit)
    }
}

/// One request's place in flight; [`Permit::finish`] tells how it went.
pub(crate) struct Permit<'a> {
    slots: &'a Slots,
    epoch: u64,
}

impl Slots {
    /// Exactly `n` in flight (at least 1).
    pub(crate) fn fixed(n: usize) -> Slots {
        Slots::with(None, n.max(1))
    }

    /// An adaptive number in flight, at most `ceiling`.
    pub(crate) fn adaptive(ceiling: usize) -> Slots {
        Slots::with(Some(Aimd::new(ceiling)), ceiling.max(1))
    }

    fn with(aimd: Option<Aimd>, fixed: usize) -> Slots {
        Slots {
            state: Mutex::new(State {
                in_flight: 0,
                aimd,
                fixed,
            }),
            freed: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The limit now.
    #[cfg(test)]
    fn limit(&self) -> usize {
        self.lock().limit()
    }

    /// How an adaptive limit moved so far, and where it is; `None` for a fixed one.
    pub(crate) fn trace(&self) -> Option<(Trace, usize)> {
        self.lock().aimd.as_ref().map(|a| (a.trace, a.limit))
    }

    /// Waits for a place under the current limit.
    pub(crate) async fn acquire(&self) -> Permit<'_> {
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            // Registered before the check, so a release between the two is not lost.
            freed.as_mut().enable();
            {
                let mut state = self.lock();
                if state.in_flight < state.limit() {
                    state.in_flight += 1;
                    let epoch = state.aimd.as_ref().map_or(0, |a| a.epoch);
                    return Permit { slots: self, epoch };
                }
            }
            freed.await;
        }
    }
}

impl Permit<'_> {
    /// Ends the request, teaching an adaptive limit what its outcome says.
    pub(crate) fn finish(self, signal: Signal) {
        if let Some(aimd) = &mut self.slots.lock().aimd {
            aimd.learn(signal, self.epoch);
        }
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.slots.lock().in_flight -= 1;
        // Every waiter checks again: a raised limit may admit several.
        self.slots.freed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Signal::{Neutral, Success, Throttled};

    /// Feeds `signals` (each under the epoch current when it is fed) to a
    /// controller under `ceiling`; returns the limit after each.
    fn run(ceiling: usize, signals: &[Signal]) -> Vec<usize> {
        let mut aimd = Aimd::new(ceiling);
        signals
            .iter()
            .map(|&s| {
                aimd.learn(s, aimd.epoch);
                aimd.limit
            })
            .collect()
    }

    #[test]
    fn limit_follows_signals() {
        let cases: &[(&str, usize, &[Signal], &[usize])] = &[
            (
                "slow start grows by one per success",
                64,
                &[Success; 3],
                &[5, 6, 7],
            ),
            ("the ceiling holds", 5, &[Success; 3], &[5, 5, 5]),
            ("a ceiling below the start", 2, &[Success], &[2]),
            (
                "the first throttle halves, a later one cuts a quarter",
                64,
                &[Success, Success, Success, Success, Throttled, Throttled],
                &[5, 6, 7, 8, 4, 3],
            ),
            ("never below one", 64, &[Throttled; 4], &[2, 1, 1, 1]),
            ("neutral changes nothing", 64, &[Neutral; 2], &[4, 4]),
            (
                "after a throttle: one more per round of `limit` successes",
                64,
                &[Throttled, Success, Success, Success, Success],
                &[2, 2, 3, 3, 3],
            ),
        ];
        for (name, ceiling, signals, want) in cases {
            assert_eq!(&run(*ceiling, signals), want, "{name}");
        }
    }

    #[test]
    fn a_burst_of_throttles_from_one_limit_cuts_once() {
        let mut aimd = Aimd::new(64);
        let started = aimd.epoch;
        for _ in 0..10 {
            aimd.learn(Throttled, started);
        }
        assert_eq!(aimd.limit, 2, "ten refusals of one round are one signal");
        aimd.learn(Throttled, aimd.epoch);
        assert_eq!(
            aimd.limit, 1,
            "a request started under the new limit cuts again"
        );
    }

    #[test]
    fn the_trace_tells_the_rise_the_cuts_and_the_rise_after() {
        let mut aimd = Aimd::new(64);
        for s in [
            Success, Success, Throttled, Throttled, Success, Success, Success, Success,
        ] {
            aimd.learn(s, aimd.epoch);
        }
        let want = Trace {
            start: 4,
            highest: 6,
            lowest: Some(2),
            cuts: 2,
            raises: 1,
        };
        assert_eq!(aimd.trace, want);
        assert_eq!(
            want.to_string(),
            "4 at the start, up to 6; cuts on throttling: 2 (down to 2); raises after the first cut: 1"
        );
        assert!(Aimd::new(8).trace.to_string().ends_with("never throttled"));
    }

    #[test]
    fn statuses_map_to_signals() {
        let status = |status| {
            Err::<(), _>(ProviderError::Status {
                status,
                body: String::new(),
                retry_after: None,
            })
        };
        fn none(_: &()) -> &[Completion] {
            &[]
        }
        for (code, want) in [(429, Throttled), (503, Throttled), (529, Throttled)] {
            assert_eq!(Signal::of(&status(code), none), want, "{code}");
        }
        for code in [400, 408, 500, 502] {
            assert_eq!(Signal::of(&status(code), none), Neutral, "{code}");
        }
        let timeout = Err::<(), _>(ProviderError::Timeout(std::time::Duration::ZERO));
        assert_eq!(Signal::of(&timeout, none), Neutral);
        let answer = |allowance_spent| {
            Ok::<_, ProviderError>(vec![Completion {
                allowance_spent,
                ..Completion::new("4", Default::default())
            }])
        };
        assert_eq!(Signal::of(&answer(false), Vec::as_slice), Success);
        assert_eq!(
            Signal::of(&answer(true), Vec::as_slice),
            Throttled,
            "headers at 0"
        );
    }

    #[tokio::test]
    async fn slots_hold_at_most_the_limit_and_free_on_drop() {
        let slots = Slots::adaptive(64);
        let held: Vec<_> = futures_held(&slots, 4).await;
        assert_eq!(slots.limit(), 4);
        let waiting =
            tokio::time::timeout(std::time::Duration::from_millis(50), slots.acquire()).await;
        assert!(waiting.is_err(), "a fifth waits under a limit of four");
        let mut held = held.into_iter();
        held.next().expect("four held").finish(Throttled);
        assert_eq!(slots.limit(), 2);
        drop(held);
        let again = tokio::time::timeout(std::time::Duration::from_secs(1), slots.acquire()).await;
        assert!(again.is_ok(), "a freed place admits the next");
        let fixed = Slots::fixed(2);
        fixed.acquire().await.finish(Throttled);
        assert_eq!(fixed.limit(), 2, "a fixed limit never moves");
    }

    async fn futures_held(slots: &Slots, n: usize) -> Vec<Permit<'_>> {
        let mut held = Vec::new();
        for _ in 0..n {
            held.push(slots.acquire().await);
        }
        held
    }
}
