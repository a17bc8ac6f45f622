//! What ended an instance badly: one vocabulary for a rule's failure, a
//! request's error and an agent episode's end. Records, journals, metrics
//! and reports all hold a [`FailureKind`]; its names are the journal's.
//!
//! A leaf: it imports nothing from the rest of the crate, so the rules
//! (`verify`), the wire formats (`provider`), the runner and the reports
//! can all name the same kinds.
//!
//! No catch-all: a journal naming a kind this build does not know fails to
//! read, located at its line, like any other malformed journal line. Kinds
//! are added, never renamed, so an older journal always reads.

use serde::{Deserialize, Serialize};

/// Declares [`FailureKind`] with each variant's journal name written once:
/// serde reads and writes it, and [`FailureKind::name`] returns it.
macro_rules! failure_kinds {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
        /// Why an instance failed, for reports that group failures.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum FailureKind {
            $($(#[$doc])* #[serde(rename = $name)] $variant,)*
        }

        impl FailureKind {
            /// Every kind, in declaration order.
            #[cfg(test)]
            pub(crate) const ALL: &[FailureKind] = &[$(FailureKind::$variant),*];

            /// The kind's name in journals and reports: `wrong_value`, `timeout`, ...
            pub fn name(self) -> &'static str {
                match self {
                    $(FailureKind::$variant => $name,)*
                }
            }
        }
    };
}

failure_kinds! {
    // What a rule concludes about an answer.
    /// The extractor found nothing.
    NoAnswer = "no_answer",
    /// An answer was found but is wrong.
    WrongValue = "wrong_value",
    /// The answer is not valid JSON.
    InvalidJson = "invalid_json",
    /// The JSON does not satisfy the schema.
    SchemaMismatch = "schema_mismatch",
    /// A `script` rule failed to run.
    ScriptError = "script_error",
    /// A program raised an error or crashed.
    RuntimeError = "runtime_error",
    /// A program ran out of time (wall clock or CPU), or a request got no
    /// complete answer within its timeout.
    Timeout = "timeout",
    /// A program hit a memory, recursion or output limit.
    ResourceLimit = "resource_limit",
    /// The sandbox could not run the program.
    SandboxError = "sandbox_error",
    /// The judge model gave no usable level (request failed, bad JSON, level out of range).
    JudgeError = "judge_error",
    /// A tool call's arguments are not a JSON object.
    InvalidToolArguments = "invalid_tool_arguments",
    /// A call names another tool than the one expected.
    WrongTool = "wrong_tool",
    /// Fewer calls than expected, or an expected tool never called.
    MissingCall = "missing_call",
    /// More calls than expected, or a call where none should be.
    UnexpectedCall = "unexpected_call",
    /// An argument's value is not one of the acceptable ones.
    WrongArgument = "wrong_argument",
    /// An argument's type is not the schema's.
    WrongArgumentType = "wrong_argument_type",
    /// A required or expected argument is missing.
    MissingArgument = "missing_argument",
    /// An argument the tool or the expected call does not have.
    UnexpectedArgument = "unexpected_argument",
    /// The state an agent episode left is not the one its gold actions leave.
    WrongState = "wrong_state",
    /// The agent never said a piece of information it had to communicate.
    NotCommunicated = "not_communicated",

    // Why a request got no answer.
    /// The connection failed or broke.
    ConnectionError = "connection_error",
    /// HTTP 429.
    RateLimited = "rate_limited",
    /// HTTP 5xx.
    ServerError = "server_error",
    /// Any other HTTP error status.
    ClientError = "client_error",
    /// The body was not the expected JSON.
    MalformedResponse = "malformed_response",
    /// The replay transcript has no answer for the request.
    NotRecorded = "not_recorded",
    /// The request could not be built: the model's or the spec's configuration.
    ConfigError = "config_error",
    /// An `exec` model's program could not start or ended with an error.
    ProgramError = "program_error",
    /// The response body ran past the model's `max_response_bytes`.
    ResponseTooLarge = "response_too_large",
    /// An image of the request is no longer the file that was loaded.
    ImageChanged = "image_changed",
    /// The instance could not be made (its script or dataset row failed).
    GenerationError = "generation_error",
    /// The request asked for log-probabilities and the server returned none.
    NoLogprobs = "no_logprobs",
    /// Continuations were to be scored (`loglikelihood`) and the server
    /// returned no log-probabilities for the prompt (llama.cpp's llama-server).
    NoPromptLogprobs = "no_prompt_logprobs",

    // How an agent episode ended, whatever its rules concluded.
    /// No end within `max_turns`.
    MaxTurns = "max_turns",
    /// A final answer without calling the `end` tool.
    NoEndCall = "no_end_call",
    /// A turn made more calls than `max_calls_per_turn`.
    TooManyCalls = "too_many_calls",
    /// The episode made more calls than `max_calls`.
    MaxCalls = "max_calls",
    /// The episode ran past `max_episode_secs`.
    EpisodeTimeout = "episode_timeout",
    /// A call's arguments, a tool's result or the state nested past the depth limit.
    TooDeep = "too_deep",
    /// The simulated user (`[agent.user]`) failed, not the model under
    /// test: its request failed, it said nothing, or it never said its stop
    /// marker within `max_turns`.
    UserError = "user_error",
    /// An `[[mcp]]` server could not start, did not answer `initialize` or
    /// `tools/list` in time, or lists a tool that collides with another.
    McpStart = "mcp_start",
    /// An `[[mcp]]` server exited (or its connection closed) during the episode.
    McpDied = "mcp_died",
    /// An `[[mcp]]` server wrote something that is not a JSON-RPC message.
    McpMalformed = "mcp_malformed",
    /// An `[[mcp]]` server wrote more than a message or a session may hold.
    McpFlood = "mcp_flood",
    /// An `[[mcp]]` server's tool call got no answer within `call_timeout_secs`.
    McpTimeout = "mcp_timeout",
    /// An `[[mcp]]` server broke the protocol otherwise (an unexpected answer).
    McpError = "mcp_error",

    // How an answer ended, whatever its rules concluded.
    /// Generation stopped while the model was still reasoning: a length stop
    /// with reasoning and no answer, or an unclosed `<think>` block.
    UnfinishedReasoning = "unfinished_reasoning",

    // Why a request sent in a provider's batch got no answer.
    /// The batch refused the request (or the whole batch failed validation).
    BatchFailed = "batch_failed",
    /// The batch's completion window passed before the request ran.
    BatchExpired = "batch_expired",
    /// The batch was cancelled before the request ran.
    BatchCancelled = "batch_cancelled",
}

/// Kinds sort by name, as reports list them and older reports did.
impl Ord for FailureKind {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.name().cmp(other.name())
    }
}

impl PartialOrd for FailureKind {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Display for FailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_its_serde_form_and_reads_back() {
        let mut names = std::collections::BTreeSet::new();
        for &kind in FailureKind::ALL {
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.name()));
            assert_eq!(serde_json::from_str::<FailureKind>(&json).unwrap(), kind);
            assert!(names.insert(kind.name()), "{kind} named twice");
        }
    }

    #[test]
    fn an_unknown_kind_does_not_read() {
        let e = serde_json::from_str::<FailureKind>("\"not_started\"").unwrap_err();
        assert!(
            e.to_string().contains("unknown variant `not_started`"),
            "{e}"
        );
    }
}
