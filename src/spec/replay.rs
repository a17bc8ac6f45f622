//! A compiled `[agent]`'s tools as the rules' [`Replay`]: a `gold_state`
//! rule runs an instance's gold actions through the very tools the episode
//! ran, from the same initial state, when it scores the answer.

use serde_json::{Map, Value};

use super::agent::{AgentRuntime, CallSite};
use crate::format::ToolCall;
use crate::verify::{Replay, ReplayError};

impl Replay for AgentRuntime {
    fn replay(&self, vars: &Map<String, Value>, calls: &[ToolCall]) -> Result<Value, ReplayError> {
        let mut state = self
            .initial_state(vars)
            .map_err(|e| ReplayError(e.message))?;
        for (i, call) in calls.iter().enumerate() {
            // The gold actions' own RNG stream: turn 0, one call after another.
            let at = CallSite {
                instance: 0,
                sample: 0,
                turn: 0,
                call: u32::try_from(i).unwrap_or(u32::MAX),
            };
            // A call that fails leaves the state as it was, as in an episode
            // (and as τ²-bench's replay of gold actions does).
            let _ = self.call(call, &mut state, at);
        }
        Ok(state)
    }
}
