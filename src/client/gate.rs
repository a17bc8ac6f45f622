//! The run's say over which requests start: hooks the client calls around
//! every HTTP attempt, so a budget sees each request's worst case before it
//! is sent and its real usage after. The run layer implements them; the
//! client knows nothing about prices.

use crate::provider::{ChatRequest, Completion, ModelSetup};

/// What a started request holds until it ends: the worst case of its asks.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Reservation {
    /// The most the attempt can cost.
    pub cost: f64,
    /// The most tokens it can use.
    pub tokens: u64,
}

/// One HTTP attempt as a gate sees it: which model, what request, how many
/// choices, and how many asks its request may make in all.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Attempt<'a> {
    /// The model asked.
    pub model: &'a ModelSetup,
    /// The request sent.
    pub request: &'a ChatRequest,
    /// Choices asked for.
    pub n: u32,
    /// Asks the request may make, this one included (a rejected JSON answer
    /// is asked again): each may be billed in full.
    pub asks: u32,
}

/// Admits or refuses requests and learns what each attempt used. A request
/// is admitted once, for the worst case of all its asks, and holds that
/// reservation across its retries and re-asks until it ends, so nothing it
/// can be billed for is ever started without room in the budget.
pub(crate) trait Gate: Send + Sync {
    /// Reserves the worst case of `attempt` and its request's later asks;
    /// `None` refuses it, which only a `refusable` attempt may be.
    fn admit(&self, attempt: Attempt<'_>, refusable: bool) -> Option<Reservation>;

    /// Charges the answers one attempt returned and hands back what the
    /// request still holds: one ask's worst case less after an answer, all
    /// of it after an error (an error returns no answer to bill).
    fn settle(
        &self,
        attempt: Attempt<'_>,
        reservation: Reservation,
        answers: &[Completion],
    ) -> Reservation;

    /// Frees what a finished request still held.
    fn release(&self, reservation: Reservation);
}
