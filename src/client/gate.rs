//! The run's say over which requests start: hooks the client calls around
//! every HTTP attempt, so a budget sees each request's worst case before it
//! is sent and its real usage after. The run layer implements them; the
//! client knows nothing about prices.

use crate::provider::{ChatRequest, Completion, ModelSpec};

/// What a started attempt holds until it ends: its worst case.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Reservation {
    /// The most the attempt can cost.
    pub cost: f64,
    /// The most tokens it can use.
    pub tokens: u64,
}

/// One HTTP attempt as a gate sees it: which model, what request, how many choices.
#[derive(Debug, Clone, Copy)]
pub struct Attempt<'a> {
    /// The model asked.
    pub model: &'a ModelSpec,
    /// The request sent.
    pub request: &'a ChatRequest,
    /// Choices asked for.
    pub n: u32,
}

/// Admits or refuses attempts and learns what each one used.
pub trait Gate: Send + Sync {
    /// Reserves the worst case of `attempt`; `None` refuses it, which only a
    /// `refusable` attempt may be.
    fn admit(&self, attempt: Attempt<'_>, refusable: bool) -> Option<Reservation>;

    /// Ends `reservation` with the answers the attempt returned (none for an error).
    fn settle(&self, attempt: Attempt<'_>, reservation: Reservation, answers: &[Completion]);
}
