//! The run's meter: what it has spent (money and tokens), what the requests
//! in flight could still spend, and the clocks of models priced by the hour.
//! As the client's [`Gate`] it refuses to start a request once the spent
//! amount plus the worst case of every request in flight, this one included,
//! would pass `--max-cost` or `--max-tokens-total`; after one refusal it
//! refuses every later first attempt too, so the run winds down: what is in
//! flight finishes and is journaled.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use super::cost::{answers_cost, billed, prompt_tokens, record_tokens};
use super::journal;
use super::record::{Cost, Record};
use crate::client::{Attempt, Gate, Reservation};
use crate::provider::{Completion, ModelSetup, PER_MILLION, Price};

/// The budget of a run; unset limits do not stop it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Limits {
    /// The most the run may cost, in its currency (`--max-cost`).
    pub max_cost: Option<f64>,
    /// The most tokens it may use, prompts and answers together (`--max-tokens-total`).
    pub max_tokens: Option<u64>,
}

/// What was spent: money in the run's currency, and tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Spent {
    /// Money.
    pub cost: f64,
    /// Tokens, prompts and answers together.
    pub tokens: u64,
}

/// A model priced by the hour, running since `since` (charged up to then).
#[derive(Debug, Clone, Copy)]
struct Clock {
    per_hour: f64,
    since: Instant,
}

#[derive(Debug, Default)]
struct State {
    spent: Spent,
    reserved: Spent,
    refused: bool,
    clocks: BTreeMap<String, Clock>,
}

impl State {
    /// Spent so far, counting the running clocks up to `now`.
    fn spent_at(&self, now: Instant) -> f64 {
        self.spent.cost
            + self
                .clocks
                .values()
                .map(|c| hours(now - c.since) * c.per_hour)
                .sum::<f64>()
    }

    /// Frees `r` of what requests in flight hold.
    fn unreserve(&mut self, r: Reservation) {
        self.reserved.cost = (self.reserved.cost - r.cost).max(0.0);
        self.reserved.tokens = self.reserved.tokens.saturating_sub(r.tokens);
    }
}

/// The clock of a judge, apart from a model under test of the same name.
pub(crate) fn judge_clock(name: &str) -> String {
    format!("judge:{name}")
}

/// The clock of the model `name` playing a simulated user, apart from its
/// clock as a model under test (its hours go to `user_cost`).
pub(crate) fn user_clock(name: &str) -> String {
    format!("user:{name}")
}

fn hours(d: std::time::Duration) -> f64 {
    d.as_secs_f64() / 3600.0
}

/// The run's meter and budget.
#[derive(Debug, Default)]
pub(crate) struct Meter {
    limits: Limits,
    state: Mutex<State>,
}

impl Meter {
    /// A meter that starts from `before` (what earlier parts of the run spent).
    pub(crate) fn new(limits: Limits, before: Spent) -> Meter {
        if limits != Limits::default() {
            // The tokenizer loads in a fraction of a second: before the first
            // request, not inside it, where it would bunch paced requests up.
            super::cost::text_tokens("");
        }
        let state = State {
            spent: before,
            ..State::default()
        };
        Meter {
            limits,
            state: Mutex::new(state),
        }
    }

    /// A meter starting from what the journal at `path` (if any) records as
    /// spent: a resumed run's budget covers the whole run. Without limits
    /// nothing is read, since nothing is checked.
    pub(crate) fn for_journal(limits: Limits, path: &Path) -> std::io::Result<Meter> {
        let mut before = Spent::default();
        if limits != Limits::default() && path.exists() {
            journal::for_each_record(path, |r| {
                let costs = r.cost.iter().chain(&r.judge_cost).chain(&r.user_cost);
                before.cost += costs.map(|c| c.amount).sum::<f64>();
                if limits.max_tokens.is_some() {
                    before.tokens += record_tokens(&r);
                }
            })?;
        }
        Ok(Meter::new(limits, before))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What the run has spent so far, running clocks included.
    pub(crate) fn spent(&self) -> Spent {
        let state = self.state();
        Spent {
            cost: state.spent_at(Instant::now()),
            tokens: state.spent.tokens,
        }
    }

    /// Whether a request was refused: the budget stopped the run.
    pub(crate) fn refused(&self) -> bool {
        self.state().refused
    }

    /// The limits.
    pub(crate) fn limits(&self) -> Limits {
        self.limits
    }

    /// Starts `key`'s clock when `price` is by the hour and it is not running yet.
    pub(crate) fn start_clock(&self, key: &str, price: Option<Price>) {
        if let Some(Price::PerHour(per_hour)) = price {
            let since = Instant::now();
            self.state()
                .clocks
                .entry(key.to_owned())
                .or_insert(Clock { per_hour, since });
        }
    }

    /// Charges `key`'s clock up to now and returns the amount, when it runs.
    pub(crate) fn charge_clock(&self, key: &str) -> Option<f64> {
        let now = Instant::now();
        let mut state = self.state();
        let clock = state.clocks.get_mut(key)?;
        let amount = super::cost::round(hours(now - clock.since) * clock.per_hour);
        clock.since = now;
        state.spent.cost += amount;
        Some(amount)
    }

    /// Stops `key`'s clock; time since its last charge is not billed.
    pub(crate) fn stop_clock(&self, key: &str) {
        self.state().clocks.remove(key);
    }

    /// Charges the hours of a model (and judge) priced by the hour to the
    /// record that ends each stretch of their server's time: the sum over the
    /// records is the time from the clock's start to the last answer. An
    /// answer from the response cache took none of it.
    pub(crate) fn charge_hours(
        &self,
        model: &ModelSetup,
        (judge, user): (Option<&ModelSetup>, Option<&ModelSetup>),
        record: &mut Record,
    ) {
        let hourly = |m: &ModelSetup| matches!(m.price, Some(Price::PerHour(_)));
        let charge = |key: &str, live: bool| {
            let amount = if live {
                self.charge_clock(key)
            } else {
                Some(0.0)
            };
            amount.map(|amount| Cost {
                amount,
                ..Cost::default()
            })
        };
        if hourly(model) {
            record.cost = charge(&model.name, !record.cached);
        }
        if let Some(judge) = judge.filter(|j| hourly(j))
            && record.rules.iter().any(|r| r.judge.is_some())
        {
            record.judge_cost = charge(&judge_clock(&judge.name), record.judge_attempts > 0);
        }
        if let Some(user) = user.filter(|u| hourly(u)) {
            record.user_cost = charge(&user_clock(&user.name), record.user_attempts > 0);
        }
    }

    /// The worst case of an attempt's request: for each of its asks, the
    /// prompt and every choice's `max_tokens`, all at the model's highest
    /// token price.
    pub(crate) fn worst_case(attempt: Attempt<'_>) -> Reservation {
        let Attempt {
            model,
            request,
            n,
            asks,
        } = attempt;
        let one =
            prompt_tokens(&request.messages) + u64::from(n.max(1)) * u64::from(request.max_tokens);
        let tokens = one * u64::from(asks.max(1));
        let cost = match model.price {
            Some(Price::Tokens(p)) => tokens as f64 * p.highest() / PER_MILLION,
            Some(Price::PerCall(amount)) => amount * f64::from(n.max(1)) * f64::from(asks.max(1)),
            _ => 0.0,
        };
        Reservation { cost, tokens }
    }

    /// Whether `extra` more in flight keeps the run within its limits.
    fn fits(&self, state: &State, extra: Reservation) -> bool {
        let cost = state.spent_at(Instant::now()) + state.reserved.cost + extra.cost;
        let tokens = state.spent.tokens + state.reserved.tokens + extra.tokens;
        self.limits.max_cost.is_none_or(|max| cost <= max)
            && self.limits.max_tokens.is_none_or(|max| tokens <= max)
    }
}

impl Gate for Meter {
    fn admit(&self, attempt: Attempt<'_>, refusable: bool) -> Option<Reservation> {
        let worst = Meter::worst_case(attempt);
        let mut state = self.state();
        if refusable && (state.refused || !self.fits(&state, worst)) {
            state.refused = true;
            return None;
        }
        state.reserved.cost += worst.cost;
        state.reserved.tokens += worst.tokens;
        Some(worst)
    }

    fn settle(
        &self,
        attempt: Attempt<'_>,
        reservation: Reservation,
        answers: &[Completion],
    ) -> Reservation {
        let Attempt { model, request, .. } = attempt;
        let tokens: u64 = answers
            .iter()
            .map(|a| billed(&request.messages, a).0.total())
            .sum();
        let cost = match model.price {
            Some(Price::Tokens(p)) => answers_cost(&p, &request.messages, answers).amount,
            Some(Price::PerCall(amount)) => amount * answers.len() as f64,
            _ => 0.0,
        };
        // An answered ask gives up its own worst case; the request keeps the rest.
        let one = Meter::worst_case(Attempt { asks: 1, ..attempt });
        let freed = if answers.is_empty() {
            Reservation::default()
        } else {
            Reservation {
                cost: one.cost.min(reservation.cost),
                tokens: one.tokens.min(reservation.tokens),
            }
        };
        let mut state = self.state();
        state.unreserve(freed);
        state.spent.cost += cost;
        state.spent.tokens += tokens;
        Reservation {
            cost: reservation.cost - freed.cost,
            tokens: reservation.tokens - freed.tokens,
        }
    }

    fn release(&self, reservation: Reservation) {
        self.state().unreserve(reservation);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Role;
    use crate::prompt::Message;
    use crate::provider::{ChatRequest, ProviderKind, TokenPrice, Usage};

    fn model() -> ModelSetup {
        let mut m = ModelSetup::new(ProviderKind::OpenAi, "m");
        m.price = Some(Price::Tokens(TokenPrice {
            input: 1.0,
            output: 10.0,
            cached_input: 1.0,
            reasoning: 10.0,
        }));
        m
    }

    /// A model without a price, and a budget of `max_tokens` tokens alone.
    fn unpriced(max_tokens: u64) -> (ModelSetup, Limits) {
        let mut m = model();
        m.price = None;
        let limits = Limits {
            max_cost: None,
            max_tokens: Some(max_tokens),
        };
        (m, limits)
    }

    fn request() -> ChatRequest {
        let question = Message::text(Role::User, "What is the capital of France?");
        ChatRequest::new(vec![question], 86)
    }

    /// An answer to [`request`] (its 14 prompt tokens) of `tokens_out` tokens.
    fn answer(text: &str, tokens_out: u64) -> Completion {
        let usage = Usage {
            tokens_in: Some(14),
            tokens_out: Some(tokens_out),
            ..Usage::default()
        };
        Completion::new(text, usage)
    }

    /// One choice of `request` to `model`, asked once.
    fn at<'a>(model: &'a ModelSetup, request: &'a ChatRequest) -> Attempt<'a> {
        Attempt {
            model,
            request,
            n: 1,
            asks: 1,
        }
    }

    #[test]
    fn requests_start_while_the_worst_case_fits() {
        // Worst case: (14 prompt + 86 max_tokens) × 10 per million = 0.001.
        let (m, r) = (model(), request());
        assert_eq!(Meter::worst_case(at(&m, &r)).tokens, 100);
        let limits = Limits {
            max_cost: Some(0.0025),
            max_tokens: None,
        };
        let meter = Meter::new(limits, Spent::default());
        let first = meter.admit(at(&m, &r), true).unwrap();
        let _second = meter.admit(at(&m, &r), true).unwrap();
        assert!(
            meter.admit(at(&m, &r), false).is_some(),
            "retries always start"
        );
        assert!(meter.admit(at(&m, &r), true).is_none());
        assert!(meter.refused());
        // Once refused, a freed reservation does not restart the run.
        let answer = answer("Paris", 1);
        let left = meter.settle(at(&m, &r), first, &[answer]);
        assert_eq!(left, Reservation::default(), "one ask, answered");
        assert!(meter.admit(at(&m, &r), true).is_none());
        let spent = meter.spent();
        assert_eq!(spent.tokens, 15);
        assert!((spent.cost - 24e-6).abs() < 1e-12, "{spent:?}");
    }

    #[test]
    fn a_request_holds_room_for_every_re_ask_until_it_ends() {
        // 100 tokens an ask; a JSON request may ask 3 times: 300 held at once.
        let ((m, limits), r) = (unpriced(450), request());
        let meter = Meter::new(limits, Spent::default());
        let json = Attempt {
            asks: 3,
            ..at(&m, &r)
        };
        let held = meter.admit(json, true).unwrap();
        assert_eq!(held.tokens, 300);
        // Another 3-ask request would not fit: 300 + 300 > 450.
        assert!(meter.admit(json, true).is_none());
        let meter = Meter::new(limits, Spent::default());
        let held = meter.admit(json, true).unwrap();
        // A failed attempt bills nothing and keeps everything held for its retry.
        let held = meter.settle(json, held, &[]);
        assert_eq!(held.tokens, 300);
        // An answer (rejected, asked again) bills its tokens and frees one ask.
        let answer = answer("not json", 86);
        let held = meter.settle(json, held, std::slice::from_ref(&answer));
        assert_eq!(held.tokens, 200);
        // Spent 100 + held 200 leaves room for a one-ask request of 100.
        assert!(meter.admit(at(&m, &r), true).is_some());
        meter.release(held);
        assert_eq!(meter.spent().tokens, 100);
    }

    #[test]
    fn token_budgets_need_no_price() {
        let ((m, limits), r) = (unpriced(150), request());
        let meter = Meter::new(limits, Spent::default());
        assert!(meter.admit(at(&m, &r), true).is_some());
        assert!(meter.admit(at(&m, &r), true).is_none());
    }

    #[test]
    fn hourly_clocks_charge_the_time_between_answers() {
        let meter = Meter::new(Limits::default(), Spent::default());
        meter.start_clock("gpu", Some(Price::PerHour(3600.0)));
        std::thread::sleep(std::time::Duration::from_millis(20));
        let first = meter.charge_clock("gpu").unwrap();
        assert!((0.02..1.0).contains(&first), "{first}");
        let second = meter.charge_clock("gpu").unwrap();
        assert!(second < first);
        meter.stop_clock("gpu");
        assert_eq!(meter.charge_clock("gpu"), None);
        assert!((meter.spent().cost - first - second).abs() < 1e-9);
    }
}
