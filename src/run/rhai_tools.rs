//! The Rhai tools of one agent turn: each call's script run in order over
//! the episode's state, off the async workers (a script may loop until its
//! own limits stop it), until the episode's deadline.

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use crate::prompt::Message;
use crate::spec::Spec;
use crate::spec::agent::{CallSite, result_text};
use crate::verify::FailureKind;

/// How a turn's tool calls ended besides their results.
#[derive(Default)]
pub(super) struct Ran {
    /// The episode's deadline passed before every call ran.
    pub late: bool,
    /// The first refusal of a value nested too deep (arguments, result or state).
    pub too_deep: Option<String>,
    /// An `[[mcp]]` server's fault, which ends the episode.
    pub fault: Option<(FailureKind, String)>,
}

/// Runs the tools of one turn's `calls` in order on a blocking thread until
/// `deadline`: each call's result message, the state after them, and how they ended.
pub(super) async fn run_tools(
    spec: &Arc<Spec>,
    calls: Vec<crate::format::ToolCall>,
    state: Value,
    (at, deadline): (CallSite, Instant),
) -> (Vec<Message>, Value, Ran) {
    let spec = spec.clone();
    let work = move || {
        let agent = spec.agent().expect("an episode runs only with [agent]");
        let (mut state, mut ran, mut results) = (state, Ran::default(), Vec::new());
        for (i, call) in calls.iter().enumerate() {
            if Instant::now() >= deadline {
                ran.late = true;
                break;
            }
            let site = CallSite {
                call: at.call.saturating_add(u32::try_from(i).unwrap_or(u32::MAX)),
                ..at
            };
            let result = agent.call(call, &mut state, site);
            if let Err(e) = &result
                && e.too_deep
            {
                ran.too_deep.get_or_insert_with(|| e.message.clone());
            }
            results.push(Message::tool_result(call, result_text(&result)));
        }
        (results, state, ran)
    };
    match tokio::task::spawn_blocking(work).await {
        Ok(done) => done,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}
