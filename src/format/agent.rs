//! The `[agent]` table: a multi-turn episode in which the model calls the
//! spec's tools, each implemented by a Rhai `script` on its `[[tools]]`
//! table, until a final answer, a named tool's call or `max_turns`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The most model turns an episode may allow: each turn is a request.
pub(crate) const MAX_TURNS_CEILING: u32 = 50;

/// Model turns of an episode when `max_turns` is not set.
pub(crate) const DEFAULT_MAX_TURNS: u32 = 8;

/// `[agent]`: the model is asked again after each turn with calls, its
/// calls run by the tools' scripts against a per-instance `state`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Agent {
    /// Model turns at most (1 to 50, default 8); an episode still going
    /// after them fails as `max_turns`.
    pub max_turns: Option<u32>,
    /// What ends an episode besides a turn without calls (a final answer):
    /// `{ tool = "submit" }` ends it once that tool was called (its result is
    /// still recorded); a final answer without that call fails as `no_end_call`.
    pub end: Option<AgentEnd>,
    /// The instance variable holding the tools' initial state, a map
    /// (default `state`; an instance without it starts from an empty map).
    pub state: Option<String>,
    /// Operation budget of one tool call (default 1,000,000).
    pub max_operations: Option<u64>,
}

/// `[agent] end`: the tool whose call ends an episode.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentEnd {
    /// The tool's name, one of `[[tools]]`.
    pub tool: String,
}

impl Agent {
    /// `max_turns`, or its default.
    pub fn turns(&self) -> u32 {
        self.max_turns.unwrap_or(DEFAULT_MAX_TURNS)
    }

    /// The variable seeding the state.
    pub fn state_var(&self) -> &str {
        self.state.as_deref().unwrap_or("state")
    }

    /// Why `max_turns` cannot be used, if it cannot.
    pub fn turns_problem(&self) -> Option<String> {
        let turns = self.max_turns?;
        (!(1..=MAX_TURNS_CEILING).contains(&turns)).then(|| {
            format!("max_turns must be within 1..={MAX_TURNS_CEILING} (each turn is a request), not {turns}")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_table_and_bounds_turns() {
        let agent: Agent =
            toml::from_str("max_turns = 4\nend = { tool = \"submit\" }\nstate = \"shop\"").unwrap();
        assert_eq!(agent.turns(), 4);
        assert_eq!(agent.state_var(), "shop");
        assert_eq!(agent.end.unwrap().tool, "submit");
        assert_eq!(Agent::default().turns(), DEFAULT_MAX_TURNS);
        assert_eq!(Agent::default().state_var(), "state");
        for (turns, ok) in [(0, false), (1, true), (50, true), (51, false)] {
            let agent = Agent {
                max_turns: Some(turns),
                ..Agent::default()
            };
            assert_eq!(agent.turns_problem().is_none(), ok, "{turns}");
        }
        assert!(toml::from_str::<Agent>("turns = 3").is_err());
    }
}
