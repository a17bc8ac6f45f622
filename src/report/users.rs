//! Simulated users beside the agents (`[agent.user]`): per cell, the
//! episodes the user failed (`user_error`: its request failed, it said
//! nothing, it never said its stop marker) counted apart from the agent's
//! own failures, so a weak user simulator is not read as a weak agent. The
//! terminal and the Markdown report show the table when some cell has any.

use super::View;
use crate::metrics::Metrics;
use crate::verify::FailureKind;

/// The episodes of `c` its simulated user failed.
fn user_errors(c: &Metrics) -> u64 {
    c.failures
        .get(&FailureKind::UserError)
        .map_or(0, |f| f.count)
}

/// The rows of the table: per cell with a user's failure, its count and
/// the cell's other failures (errors aside).
pub(crate) fn rows<'a>(v: &'a View) -> Vec<super::cell_table::Row<'a>> {
    super::cell_table::cells(v, |c| {
        let users = user_errors(c);
        let agent = (c.total - c.passed).saturating_sub(c.errors + users);
        (users > 0).then(|| vec![users.to_string(), agent.to_string()])
    })
    .collect()
}
