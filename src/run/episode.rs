//! One agent episode: ask the model, run the tools it called (their Rhai
//! scripts, off the async workers), give it the results, and ask again until
//! a final answer, the `end` tool's call or `max_turns`.
//!
//! Every turn is an ordinary request through the client: cached (so a rerun
//! or a resumed run asks no finished turn again), paced, retried, admitted
//! and priced by the budget one turn at a time. `RequestKey.turn` tells the
//! turns apart; the messages so far make each turn's cache key.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::record::Cost;
use crate::client::cache::Cache;
use crate::client::{Asked, ModelClient, ask};
use crate::prompt::Message;
use crate::provider::{ChatRequest, Completion, ProviderError, RequestKey, Usage};
use crate::spec::agent::{CallSite, result_text};
use crate::spec::{Instance, Spec};

/// What an episode came to, ready to be judged and recorded.
pub(super) struct Episode {
    /// The turns' asks as one: the last answer (its usage the sum of every
    /// turn's), attempts, latencies and retries summed; cached when every turn was.
    pub asked: Asked,
    /// The messages the episode added after the prompt.
    pub trajectory: Vec<Message>,
    /// The tools' state when it ended.
    pub state: Option<Value>,
    /// Every turn priced and summed; `None` without a price per token or call.
    pub cost: Option<Cost>,
    /// Why the episode failed whatever the rules say: `max_turns`, `no_end_call`.
    pub ended: Option<(&'static str, String)>,
}

/// The sum of two optional counts: known when either is.
fn add(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    }
}

/// Turns' asks folded into one, as a record shows a single request.
struct Totals {
    usage: Usage,
    attempts: u32,
    latency: Duration,
    cached: bool,
    retries: Vec<String>,
    cost: Option<Cost>,
}

impl Totals {
    fn add(&mut self, turn: u32, asked: &Asked, cost: Option<Cost>) {
        if let Ok(c) = &asked.result {
            self.usage.tokens_in = add(self.usage.tokens_in, c.usage.tokens_in);
            self.usage.tokens_out = add(self.usage.tokens_out, c.usage.tokens_out);
            self.usage.tokens_cached = add(self.usage.tokens_cached, c.usage.tokens_cached);
        }
        self.attempts += asked.attempts;
        self.latency += asked.latency;
        self.cached &= asked.cached;
        self.retries
            .extend(asked.retries.iter().map(|r| format!("turn {turn}: {r}")));
        self.cost = match (self.cost.take(), cost) {
            (Some(a), Some(b)) => Some(a.plus(b)),
            (a, b) => a.or(b),
        };
    }

    fn into_asked(self, result: Result<Completion, ProviderError>, last: Asked) -> Asked {
        let result = result.map(|mut c| {
            c.usage = self.usage;
            c
        });
        Asked {
            result,
            attempts: self.attempts,
            latency: self.latency,
            cached: self.cached,
            retries: self.retries,
            rejected: last.rejected,
            endpoint: last.endpoint,
        }
    }
}

/// Runs the tools of one turn's `calls` in order on a blocking thread:
/// each call's result message, and the state after them.
async fn run_tools(
    spec: &Arc<Spec>,
    calls: Vec<crate::format::ToolCall>,
    state: Value,
    at: CallSite,
) -> (Vec<Message>, Value) {
    let spec = spec.clone();
    let work = move || {
        let agent = spec.agent().expect("an episode runs only with [agent]");
        let mut state = state;
        let results = calls
            .iter()
            .enumerate()
            .map(|(i, call)| {
                let site = CallSite {
                    call: u32::try_from(i).unwrap_or(u32::MAX),
                    ..at
                };
                let result = agent.call(call, &mut state, site);
                Message::tool_result(call, result_text(&result))
            })
            .collect();
        (results, state)
    };
    match tokio::task::spawn_blocking(work).await {
        Ok(done) => done,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

/// Runs one sample's episode of `inst`, starting from `request`.
pub(super) async fn run_episode(
    model: &ModelClient,
    spec: &Arc<Spec>,
    inst: &Instance,
    (request, sample): (ChatRequest, u32),
    cache: Option<&Cache>,
) -> Episode {
    let agent = spec.agent().expect("an episode runs only with [agent]");
    let mut state = agent
        .initial_state(&inst.vars)
        .unwrap_or_else(|_| Value::Object(Default::default()));
    let mut totals = Totals {
        usage: Usage::default(),
        attempts: 0,
        latency: Duration::ZERO,
        cached: true,
        retries: Vec::new(),
        cost: None,
    };
    let mut messages = request.messages.clone();
    let prompt_len = messages.len();
    let mut ended = Some((
        "max_turns",
        format!(
            "the episode did not end within max_turns = {}",
            agent.max_turns
        ),
    ));
    let mut last = None;
    for turn in 0..agent.max_turns {
        let asking = ChatRequest {
            messages: messages.clone(),
            ..request.clone()
        };
        let key = RequestKey {
            spec: &spec.id,
            instance: inst.index,
            sample,
            judge: None,
            turn,
        };
        let mut asked = ask(model, &asking, key, cache, 1, |_| Ok::<(), &str>(())).await;
        let cost = model
            .setup
            .price
            .as_ref()
            .and_then(|p| super::cost::priced_cost(p, &asking.messages, &asked));
        totals.add(turn, &asked, cost);
        let completion = match std::mem::replace(&mut asked.result, Err(ProviderError::NotStarted))
        {
            Ok(c) => c,
            Err(e) => {
                // The turns before stay in the trajectory; the record is an error.
                let cost = totals.cost;
                return Episode {
                    trajectory: messages.split_off(prompt_len),
                    asked: totals.into_asked(Err(e), asked),
                    state: Some(state),
                    cost,
                    ended: None,
                };
            }
        };
        let calls = completion.tool_calls.clone();
        messages.push(Message::assistant(completion.text.clone(), calls.clone()));
        last = Some((completion, asked));
        if calls.is_empty() {
            ended = agent.end_tool.as_ref().map(|tool| {
                let why =
                    format!("the episode ended with a final answer, without calling `{tool}`");
                ("no_end_call", why)
            });
            break;
        }
        let ends = agent
            .end_tool
            .as_ref()
            .is_some_and(|tool| calls.iter().any(|c| &c.name == tool));
        let at = CallSite {
            instance: inst.index,
            sample,
            turn,
            call: 0,
        };
        let (results, after) = run_tools(spec, calls, state, at).await;
        state = after;
        messages.extend(results);
        if ends {
            ended = None;
            break;
        }
    }
    let (completion, asked) = last.expect("max_turns is at least 1");
    let cost = totals.cost;
    Episode {
        trajectory: messages.split_off(prompt_len),
        asked: totals.into_asked(Ok(completion), asked),
        state: Some(state),
        cost,
        ended,
    }
}
