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
    /// Calls one model turn may make (1 to 1,024, default 32); a turn with
    /// more ends the episode as `too_many_calls`, none of its calls run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_calls_per_turn: Option<u32>,
    /// Calls a whole episode may make (1 to 10,000, default 256); the calls
    /// past it are not run, and the episode ends as `max_calls`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_calls: Option<u32>,
    /// Bytes of one tool result as the model reads it, JSON (64 to
    /// 16,777,216, default 65,536); a larger result reaches the model as an
    /// error, and the call leaves the state unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_result_bytes: Option<u64>,
    /// Bytes of an error message given to the model (64 to 65,536, default
    /// 2,048): a longer `throw` is cut, and an unknown tool's error lists at
    /// most 20 tools and says how many more there are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_error_bytes: Option<u64>,
    /// Bytes of the state as JSON (64 to 67,108,864, default 1,048,576): a
    /// call that would leave a larger state gets an error, the state
    /// unchanged. It bounds the work every call spends reading and writing
    /// the state, outside its script's operation budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_state_bytes: Option<u64>,
    /// Wall-clock seconds an episode may take, its model turns and tool
    /// calls together (1 to 86,400, default 1,800); past them it ends as
    /// `episode_timeout`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_episode_secs: Option<u64>,
    /// A simulated user who answers the model's replies: the prompt's user
    /// message opens the conversation, then each turn the model ends
    /// without a call goes to this user, until the end tool, the user's
    /// stop marker or `max_turns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<AgentUser>,
}

/// The stop marker a simulated user says when its goal is met (τ-bench's).
pub(crate) const DEFAULT_USER_STOP: &str = "###STOP###";

/// `[agent.user]`: a model playing the user, with a persona and a goal.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentUser {
    /// The model playing the user: a name from harness.toml or a model
    /// reference (`openai:...`, `exec:NAME`, `replay:NAME`); `--user-model`
    /// overrides it. A replayed agent replays its recorded user turns too.
    pub model: Option<String>,
    /// The user's persona and goal, a template rendered per instance with
    /// its variables (and `stop`): the user model's system prompt.
    pub persona: Option<String>,
    /// Instructions put before the persona in the user model's system
    /// prompt, a template like it (default: an English text on how to play
    /// the user and when to say the stop marker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// What the user says to end the conversation (default `###STOP###`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<String>,
    /// Tokens of one user turn at most (1 to 65,536, default 512).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
}

impl AgentUser {
    /// The stop marker.
    pub(crate) fn stop_marker(&self) -> &str {
        self.stop.as_deref().unwrap_or(DEFAULT_USER_STOP)
    }
}

/// `[agent] end`: the tool whose call ends an episode.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentEnd {
    /// The tool's name, one of `[[tools]]`.
    pub tool: String,
}

/// An episode's bounds: `[agent]`'s keys or their defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EpisodeLimits {
    /// `max_calls_per_turn`.
    pub calls_per_turn: usize,
    /// `max_calls`.
    pub calls: usize,
    /// `max_result_bytes`.
    pub result_bytes: usize,
    /// `max_error_bytes`.
    pub error_bytes: usize,
    /// `max_state_bytes`.
    pub state_bytes: usize,
    /// `max_episode_secs`.
    pub wall: std::time::Duration,
}

impl Default for EpisodeLimits {
    /// Every key's default.
    fn default() -> Self {
        Agent::default().limits()
    }
}

/// One limit key of `[agent]`: its name, default and range.
struct LimitKey {
    key: &'static str,
    default: u64,
    range: std::ops::RangeInclusive<u64>,
    /// What the limit bounds, for the message of a value out of range.
    what: &'static str,
}

/// The limit keys; their defaults and ranges are documented on [`Agent`].
const LIMIT_KEYS: [LimitKey; 6] = [
    LimitKey {
        key: "max_calls_per_turn",
        default: 32,
        range: 1..=MAX_CALLS_PER_TURN_CEILING,
        what: "the calls one turn may make (an answer keeps at most 1,024)",
    },
    LimitKey {
        key: "max_calls",
        default: 256,
        range: 1..=10_000,
        what: "the calls of an episode",
    },
    LimitKey {
        key: "max_result_bytes",
        default: 65_536,
        range: 64..=16 << 20,
        what: "the bytes of one tool result",
    },
    LimitKey {
        key: "max_error_bytes",
        default: 2_048,
        range: 64..=65_536,
        what: "the bytes of an error given to the model",
    },
    LimitKey {
        key: "max_state_bytes",
        default: 1 << 20,
        range: 64..=64 << 20,
        what: "the bytes of the state",
    },
    LimitKey {
        key: "max_episode_secs",
        default: 1_800,
        range: 1..=86_400,
        what: "an episode's seconds",
    },
];

/// The most calls `max_calls_per_turn` may allow: what a provider's answer keeps.
pub(crate) const MAX_CALLS_PER_TURN_CEILING: u64 = super::tool_call::ToolCall::MOST_KEPT as u64;

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

    /// The limit keys as set, in [`LIMIT_KEYS`] order.
    fn limit_values(&self) -> [Option<u64>; 6] {
        [
            self.max_calls_per_turn.map(u64::from),
            self.max_calls.map(u64::from),
            self.max_result_bytes,
            self.max_error_bytes,
            self.max_state_bytes,
            self.max_episode_secs,
        ]
    }

    /// Each limit key set out of its range: (key, why).
    pub fn limit_problems(&self) -> Vec<(&'static str, String)> {
        LIMIT_KEYS
            .iter()
            .zip(self.limit_values())
            .filter_map(|(limit, value)| {
                let value = value?;
                (!limit.range.contains(&value)).then(|| {
                    let (lo, hi) = (limit.range.start(), limit.range.end());
                    let message = format!(
                        "{} bounds {} and must be within {lo}..={hi}, not {value}",
                        limit.key, limit.what
                    );
                    (limit.key, message)
                })
            })
            .collect()
    }

    /// The episode's limits, each key clamped into its range (a spec with
    /// one out of range does not load; see [`Agent::limit_problems`]).
    pub(crate) fn limits(&self) -> EpisodeLimits {
        let [per_turn, calls, result, error, state, secs] = std::array::from_fn(|i| {
            let limit = &LIMIT_KEYS[i];
            let value = self.limit_values()[i].unwrap_or(limit.default);
            value.clamp(*limit.range.start(), *limit.range.end())
        });
        let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        EpisodeLimits {
            calls_per_turn: size(per_turn),
            calls: size(calls),
            result_bytes: size(result),
            error_bytes: size(error),
            state_bytes: size(state),
            wall: std::time::Duration::from_secs(secs),
        }
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

    #[test]
    fn limits_have_defaults_and_ranges() {
        let defaults = Agent::default().limits();
        assert_eq!(
            defaults,
            EpisodeLimits {
                calls_per_turn: 32,
                calls: 256,
                result_bytes: 65_536,
                error_bytes: 2_048,
                state_bytes: 1 << 20,
                wall: std::time::Duration::from_secs(1_800),
            }
        );
        let agent: Agent = toml::from_str(
            "max_calls_per_turn = 1025\nmax_calls = 3\nmax_result_bytes = 10\nmax_episode_secs = 0",
        )
        .unwrap();
        let keys: Vec<&str> = agent.limit_problems().iter().map(|(k, _)| *k).collect();
        assert_eq!(
            keys,
            ["max_calls_per_turn", "max_result_bytes", "max_episode_secs"]
        );
        assert!(
            agent.limit_problems()[0]
                .1
                .contains("within 1..=1024, not 1025"),
            "{:?}",
            agent.limit_problems()
        );
        assert_eq!(agent.limits().calls, 3);
        assert_eq!(agent.limits().calls_per_turn, 1_024);
    }
}
