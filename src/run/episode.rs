//! One agent episode: ask the model, run the tools it called (their Rhai
//! scripts, off the async workers), give it the results, and ask again until
//! a final answer, the `end` tool's call, `max_turns` or another of the
//! episode's limits (calls per turn and in all, wall time).
//! With a simulated user (`[agent.user]`, `user_turn.rs`), a turn without
//! calls is a reply to that user, whose answer (or stop marker) follows.
//!
//! Every turn is an ordinary request through the client: cached (so a rerun
//! or a resumed run asks no finished turn again), paced, retried, admitted
//! and priced by the budget one turn at a time. `RequestKey.turn` tells the
//! turns apart; the messages so far make each turn's cache key.
//!
//! The history is one shared `Arc<Vec<Message>>`: a turn's request holds it
//! while asking and lets go, so the next turn's messages are pushed onto
//! the same vector and no turn copies the turns before it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::mcp_tools::McpTools;
use super::record::Cost;
use super::rhai_tools::run_tools;
use super::user_turn::{Said, User, UserSpent};
use crate::client::cache::Cache;
use crate::client::{Asked, ModelClient, Refused, ask};
use crate::format::EpisodeLimits;
use crate::prompt::{Message, Role};
use crate::provider::{ChatRequest, Completion, Provider, ProviderError, RequestKey, Usage};
use crate::spec::agent::{AgentRuntime, CallSite};
use crate::spec::{Instance, Spec};
use crate::verify::FailureKind;

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
    /// Why the episode failed whatever the rules say: `max_turns`,
    /// `no_end_call`, `too_many_calls`, `max_calls`, `episode_timeout`,
    /// `too_deep`, `user_error`.
    pub ended: Option<(FailureKind, String)>,
    /// What the simulated user's turns spent, apart from the model's.
    pub user: UserSpent,
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
            self.usage.tokens_reasoning =
                add(self.usage.tokens_reasoning, c.usage.tokens_reasoning);
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

    fn into_asked(self, result: Result<Completion, ProviderError>, last: Last) -> Asked {
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

/// What the record keeps of the last turn's ask besides its answer.
#[derive(Default)]
struct Last {
    rejected: Vec<Completion>,
    endpoint: Option<String>,
}

/// What ends an episode whose deadline passed.
fn late(limits: &EpisodeLimits) -> (FailureKind, String) {
    let why = format!(
        "the episode ran past max_episode_secs = {}",
        limits.wall.as_secs()
    );
    (FailureKind::EpisodeTimeout, why)
}

/// How many calls `calls` stands for: past what an answer keeps, at least that many.
fn count(calls: &[crate::format::ToolCall]) -> String {
    let most = crate::format::ToolCall::MOST_KEPT;
    if calls.len() > most {
        format!("more than {most}")
    } else {
        calls.len().to_string()
    }
}

/// How an episode that runs out of turns ends: `max_turns`, the agent's
/// failure, unless a simulated user talks and no end tool is set, when the
/// conversation was the user's to end.
fn unended(agent: &AgentRuntime, user: Option<&User<'_>>) -> (FailureKind, String) {
    let turns = agent.max_turns;
    match user {
        Some(user) if agent.end_tool.is_none() => (
            FailureKind::UserError,
            format!(
                "the user did not say `{}` within max_turns = {turns}",
                user.stop
            ),
        ),
        _ => (
            FailureKind::MaxTurns,
            format!("the episode did not end within max_turns = {turns}"),
        ),
    }
}

/// Whether an episode goes on after a turn, or how it ended (`None`: well).
enum Step {
    Next,
    End(Option<(FailureKind, String)>),
}

/// An episode so far: the messages (the prompt first), the tools' state,
/// the calls run, and the first value refused for its depth.
struct Progress<'m> {
    mcp: Option<&'m mut McpTools>,
    messages: Arc<Vec<Message>>,
    user: UserSpent,
    user_turns: u32,
    prompt_len: usize,
    state: Value,
    calls_made: usize,
    too_deep: Option<String>,
}

impl Progress<'_> {
    /// Runs one turn's `calls` within the episode's limits; their results
    /// join the messages.
    async fn act(
        &mut self,
        spec: &Arc<Spec>,
        calls: Vec<crate::format::ToolCall>,
        (at, deadline): (CallSite, Instant),
    ) -> Step {
        let agent = spec.agent().expect("an episode runs only with [agent]");
        let limits = &agent.limits;
        if calls.is_empty() {
            return Step::End(agent.end_tool.as_ref().map(|tool| {
                let why =
                    format!("the episode ended with a final answer, without calling `{tool}`");
                (FailureKind::NoEndCall, why)
            }));
        }
        let ends = agent
            .end_tool
            .as_ref()
            .is_some_and(|tool| calls.iter().any(|c| &c.name == tool));
        let allowed = limits.calls.saturating_sub(self.calls_made);
        let unrun = calls.len().saturating_sub(allowed);
        let runs: Vec<_> = calls.into_iter().take(allowed).collect();
        let state = std::mem::take(&mut self.state);
        let (results, after, ran) = match self.mcp.as_deref_mut() {
            Some(mcp) => super::mcp_tools::run_calls(spec, mcp, runs, state, (at, deadline)).await,
            None => run_tools(spec, runs, state, (at, deadline)).await,
        };
        self.calls_made += results.len();
        self.state = after;
        Arc::make_mut(&mut self.messages).extend(results);
        if self.too_deep.is_none() {
            self.too_deep = ran.too_deep;
        }
        if let Some(fault) = ran.fault {
            return Step::End(Some(fault));
        }
        if ran.late {
            return Step::End(Some(late(limits)));
        }
        if unrun > 0 {
            let why = format!(
                "the episode made more than max_calls = {} calls; the last {unrun} did not run",
                limits.calls
            );
            return Step::End(Some((FailureKind::MaxCalls, why)));
        }
        if ends { Step::End(None) } else { Step::Next }
    }

    /// Hands the agent's reply to the simulated `user` and adds its answer
    /// to the messages, asked under `key` as the user's next turn.
    async fn hand_over(
        &mut self,
        user: &User<'_>,
        key: RequestKey<'_>,
        cache: Option<&Cache>,
        (deadline, limits): (Instant, &EpisodeLimits),
    ) -> Result<Step, Refused> {
        if Instant::now() >= deadline {
            return Ok(Step::End(Some(late(limits))));
        }
        let key = RequestKey {
            turn: self.user_turns,
            ..key
        };
        self.user_turns += 1;
        let said = user
            .answer(&self.messages, key, cache, &mut self.user)
            .await?;
        let (text, step) = match said {
            Said::Reply(text) => (text, Step::Next),
            Said::Stop(text) => (text, Step::End(None)),
            Said::Failed(why) => return Ok(Step::End(Some((FailureKind::UserError, why)))),
        };
        Arc::make_mut(&mut self.messages).push(Message::text(Role::User, text));
        Ok(step)
    }

    /// The episode as it ended with `last` turn's answer (none when it
    /// ended before one) and `ended`, or `too_deep` when nothing else failed it.
    fn finish(
        mut self,
        (totals, last): (Totals, Option<(Completion, Last)>),
        ended: Option<(FailureKind, String)>,
        limits: &EpisodeLimits,
    ) -> Episode {
        let ended = ended.or_else(|| self.too_deep.take().map(|why| (FailureKind::TooDeep, why)));
        let (result, last, ended) = match last {
            Some((completion, last)) => (Ok(completion), last, ended),
            // Ended before its first answer: its deadline passed while waiting to ask.
            None => {
                let timeout = Err(ProviderError::Timeout(limits.wall));
                (timeout, Last::default(), Some(late(limits)))
            }
        };
        self.ended(totals, (result, last), ended)
    }

    /// The episode ended with `result` and what `last` kept of its ask.
    fn ended(
        mut self,
        totals: Totals,
        (result, last): (Result<Completion, ProviderError>, Last),
        ended: Option<(FailureKind, String)>,
    ) -> Episode {
        let cost = totals.cost;
        let trajectory = Arc::make_mut(&mut self.messages).split_off(self.prompt_len);
        Episode {
            trajectory,
            asked: totals.into_asked(result, last),
            state: Some(self.state),
            cost,
            ended,
            user: self.user,
        }
    }
}

/// Runs one sample's episode of `inst`, starting from `request`, with the
/// spec's `[[mcp]]` servers (if any) started before it and ended after it,
/// and the simulated `user` answering each reply without calls when the
/// spec has one.
pub(super) async fn run_episode(
    model: &ModelClient,
    spec: &Arc<Spec>,
    inst: &Instance,
    (mut request, sample): (ChatRequest, u32),
    (user, cache): (Option<User<'_>>, Option<&Cache>),
) -> Result<Episode, Refused> {
    let opened = match model.provider() {
        // A replay answers from the transcript, the servers' results too.
        Provider::Replay(replay) => {
            let key = RequestKey {
                spec: &spec.id,
                instance: inst.index,
                sample,
                judge: None,
                turn: 0,
                user: false,
            };
            let recorded = replay.recorded_episode(key).ok();
            let (trajectory, state) = recorded.unwrap_or_default();
            Ok(McpTools::recorded(spec, &trajectory, state.as_ref()))
        }
        _ => McpTools::open(spec).await,
    };
    let mut mcp = match opened {
        Ok(mcp) => mcp,
        Err(ended) => return Ok(unstarted(ended)),
    };
    if let Some(mcp) = &mcp {
        request.tools.extend(mcp.offered.iter().cloned());
        request.mcp_servers = spec.mcp().iter().map(|s| s.identity()).collect();
    }
    let mut episode = run_turns(
        model,
        spec,
        inst,
        (request, sample),
        (user, cache),
        mcp.as_mut(),
    )
    .await?;
    if let Some(mcp) = mcp
        && let Some(fault) = mcp.finish(&mut episode.state).await
    {
        episode.ended.get_or_insert(fault);
    }
    Ok(episode)
}

/// An episode whose servers did not start: no turn, the fault as its end.
fn unstarted((kind, why): (FailureKind, String)) -> Episode {
    Episode {
        asked: Asked::failed(ProviderError::Program(why.clone())),
        trajectory: Vec::new(),
        state: None,
        cost: None,
        ended: Some((kind, why)),
        user: UserSpent::default(),
    }
}

/// The turns of one sample's episode of `inst`, starting from `request`.
///
/// Its limits (`[agent]`): the calls of a turn and of the episode, and its
/// wall time, checked before every turn and every call (a request in flight
/// runs to its own timeout). The tools' own limits (result, state and error
/// sizes, depth) give the model an error result and the episode goes on; a
/// value nested too deep still fails the record as `too_deep` in the end.
/// `Err(Refused)` when the run's budget refused a turn.
async fn run_turns(
    model: &ModelClient,
    spec: &Arc<Spec>,
    inst: &Instance,
    (request, sample): (ChatRequest, u32),
    (user, cache): (Option<User<'_>>, Option<&Cache>),
    mcp: Option<&mut McpTools>,
) -> Result<Episode, Refused> {
    let agent = spec.agent().expect("an episode runs only with [agent]");
    let limits = agent.limits;
    let deadline = Instant::now() + limits.wall;
    let (state, too_deep) = match agent.initial_state(&inst.vars) {
        Ok(state) => (state, None),
        Err(e) => (
            Value::Object(Default::default()),
            e.too_deep.then_some(e.message),
        ),
    };
    let mut progress = Progress {
        mcp,
        prompt_len: request.messages.len(),
        messages: Arc::clone(&request.messages),
        state,
        calls_made: 0,
        too_deep,
        user: UserSpent::default(),
        user_turns: 0,
    };
    let mut totals = Totals {
        usage: Usage::default(),
        attempts: 0,
        latency: Duration::ZERO,
        cached: true,
        retries: Vec::new(),
        cost: None,
    };
    let mut ended = Some(unended(agent, user.as_ref()));
    let mut last = None;
    for turn in 0..agent.max_turns {
        if Instant::now() >= deadline {
            ended = Some(late(&limits));
            break;
        }
        let asking = request.with_messages(Arc::clone(&progress.messages));
        let key = RequestKey {
            spec: &spec.id,
            instance: inst.index,
            sample,
            judge: None,
            turn,
            user: false,
        };
        let asked = ask(model, &asking, key, cache, 1, |_| Ok::<(), &str>(())).await?;
        let cost = model
            .setup
            .price
            .as_ref()
            .and_then(|p| super::cost::priced_cost(p, &asking.messages, &asked));
        // The history is the episode's alone again, so the next push copies nothing.
        drop(asking);
        totals.add(turn, &asked, cost);
        let Asked {
            result,
            rejected,
            endpoint,
            ..
        } = asked;
        let last_ask = Last { rejected, endpoint };
        let mut completion = match result {
            Ok(c) => c,
            // The turns before stay in the trajectory; the record is an error.
            Err(e) => return Ok(progress.ended(totals, (Err(e), last_ask), None)),
        };
        let made = count(&completion.tool_calls);
        // A flood of calls keeps only what the limit allows in the journal.
        let too_many = completion.tool_calls.len() > limits.calls_per_turn;
        completion.tool_calls.truncate(limits.calls_per_turn);
        let calls = completion.tool_calls.clone();
        // The turn's reasoning stays in the history (a signing wire sends it back).
        let said = Message {
            reasoning: completion.reasoning.clone(),
            ..Message::assistant(completion.text.clone(), calls.clone())
        };
        Arc::make_mut(&mut progress.messages).push(said);
        last = Some((completion, last_ask));
        let step = if too_many {
            let why = format!(
                "turn {} made {made} calls, more than max_calls_per_turn = {}; none of them ran",
                turn + 1,
                limits.calls_per_turn
            );
            Step::End(Some((FailureKind::TooManyCalls, why)))
        } else if let Some(user) = user.as_ref().filter(|_| calls.is_empty()) {
            let key = RequestKey { user: true, ..key };
            progress
                .hand_over(user, key, cache, (deadline, &limits))
                .await?
        } else {
            let at = CallSite {
                instance: inst.index,
                sample,
                turn,
                call: 0,
            };
            progress.act(spec, calls, (at, deadline)).await
        };
        if let Step::End(how) = step {
            ended = how;
            break;
        }
    }
    Ok(progress.finish((totals, last), ended, &limits))
}
