//! The simulated user's side of an agent episode (`[agent.user]`): the
//! conversation as the user sees it, one user turn asked through the
//! client, and what the turn said.
//!
//! The user sees only what a person at the other end would: its own
//! instructions as the system prompt, the agent's visible replies as *user*
//! messages and its own earlier words (the prompt's user message first) as
//! *assistant* messages. No tool calls, no tool results, no reasoning and no
//! system prompt of the agent's reach it.
//!
//! A user turn is an ordinary request: cached, paced, priced and admitted by
//! the budget like an agent turn. `RequestKey.user` gives user turns their own
//! key space, so a replay answers them from the recorded user messages.

use std::sync::Arc;

use super::budget::Meter;
use super::record::{Cost, Record};
use super::{Manifest, SpecRuntime};
use crate::client::cache::Cache;
use crate::client::{Asked, ModelClient, Refused, ask};
use crate::extract::strip_think;
use crate::prompt::{Message, Role};
use crate::provider::{ChatRequest, ModelSetup, RequestKey};
use crate::spec::Instance;
use crate::verify::FailureKind;

/// What one user turn came to.
#[derive(Debug, PartialEq)]
pub(super) enum Said {
    /// A message for the agent: the conversation goes on.
    Reply(String),
    /// The stop marker, with whatever came with it: the conversation is over.
    Stop(String),
    /// The user's own failure (an error, an empty turn): `user_error`.
    Failed(String),
}

/// The user's requests of an episode summed: for the record, apart from the agent's.
#[derive(Debug, Default)]
pub(super) struct UserSpent {
    /// HTTP attempts (0 for turns from the cache).
    pub attempts: u32,
    /// Every user turn priced; `None` without a price.
    pub cost: Option<Cost>,
}

/// The text of `message` a person would read: no reasoning, no `<think>` block.
fn visible(message: &Message) -> &str {
    strip_think(&message.content).trim()
}

/// The episode's `messages` (the agent's prompt first) as the user sees
/// them after its `system` prompt: roles swapped, only visible text, and
/// consecutive messages of one side joined, so the sides alternate.
fn user_view(system: &str, messages: &[Message]) -> Vec<Message> {
    let mut view = vec![Message::text(Role::System, system)];
    for message in messages {
        let role = match message.role {
            Role::User => Role::Assistant,
            Role::Assistant => Role::User,
            Role::System | Role::Tool => continue,
        };
        let text = visible(message);
        if text.is_empty() {
            continue;
        }
        match view.last_mut() {
            Some(last) if last.role == role => {
                last.content.push_str("\n\n");
                last.content.push_str(text);
            }
            _ => view.push(Message::text(role, text)),
        }
    }
    view
}

impl UserSpent {
    /// Puts what the user spent in its episode's `record`.
    pub(super) fn fill(self, record: &mut Record) {
        record.user_attempts = self.attempts;
        record.user_cost = self.cost;
    }
}

/// `record` failed before its episode began, since no user could play: `user_error`.
pub(super) fn failed(mut record: Record, why: String) -> Record {
    record.scored.error = Some(why);
    record.failure = Some(FailureKind::UserError);
    record
}

/// What the user's answer `text` says, given its `stop` marker.
fn classify(text: &str, stop: &str) -> Said {
    let said = strip_think(text).trim();
    if said.contains(stop) {
        Said::Stop(said.to_owned())
    } else if said.is_empty() {
        Said::Failed("the user's turn was empty".into())
    } else {
        Said::Reply(said.to_owned())
    }
}

/// A simulated user ready for one episode: the model playing it, that
/// model's request settings, the rendered system prompt and the stop marker.
pub(super) struct User<'a> {
    client: &'a ModelClient,
    base: ChatRequest,
    system: &'a str,
    pub stop: &'a str,
}

impl User<'_> {
    /// The user's answer to the conversation so far (`messages`, the
    /// agent's prompt first), asked under `key`; what it spent joins `spent`.
    pub(super) async fn answer(
        &self,
        messages: &[Message],
        key: RequestKey<'_>,
        cache: Option<&Cache>,
        spent: &mut UserSpent,
    ) -> Result<Said, Refused> {
        let request = self
            .base
            .with_messages(Arc::new(user_view(self.system, messages)));
        ask_user(self.client, &request, key, cache, (self.stop, spent)).await
    }
}

/// The simulated user of sample `sample` of `inst`, when `spec` has
/// `[agent.user]`: played by the plan's user model, or by `model` itself
/// when that is a replay, whose transcript holds both sides. `Err` says
/// why no user can play (no model connected, an `exec` command that does
/// not render).
pub(super) fn user_for<'a>(
    model: &'a ModelClient,
    spec: &'a SpecRuntime,
    inst: &'a Instance,
    sample: u32,
) -> Result<Option<User<'a>>, String> {
    let s = &spec.spec;
    let Some(runtime) = s.agent().and_then(|a| a.user.as_ref()) else {
        return Ok(None);
    };
    let client = if model.provider().is_remote() {
        let named = spec.user.get().map(Arc::as_ref);
        named.ok_or_else(|| format!("no model plays the user (`{}`)", runtime.model))?
    } else {
        model
    };
    let system = inst
        .user_system
        .as_deref()
        .ok_or("the instance has no user persona")?;
    let o = &client.setup.options;
    let mut base = ChatRequest {
        reasoning: client.setup.reasoning_for(Default::default()),
        ..ChatRequest::with_options(o, Vec::new(), 0.0, runtime.max_tokens)
    }
    .for_sample(sample);
    super::exec_call::with_exec(&mut base, &client.setup, &inst.vars, s)
        .map_err(|e| format!("the user model: {e}"))?;
    Ok(Some(User {
        client,
        base,
        system,
        stop: &runtime.stop,
    }))
}

/// One user turn: asks `user` with `request` (its messages the user's
/// view), adds what it spent to `spent`, and says what the user said.
/// `Err(Refused)` when the run's budget refused it.
async fn ask_user(
    user: &ModelClient,
    request: &ChatRequest,
    key: RequestKey<'_>,
    cache: Option<&Cache>,
    (stop, spent): (&str, &mut UserSpent),
) -> Result<Said, Refused> {
    let turn = key.turn + 1;
    let asked: Asked = ask(user, request, key, cache, 1, |_| Ok::<(), &str>(())).await?;
    let cost = user
        .setup
        .price
        .as_ref()
        .and_then(|p| super::cost::priced_cost(p, &request.messages, &asked));
    spent.attempts += asked.attempts;
    spent.cost = match (spent.cost.take(), cost) {
        (Some(a), Some(b)) => Some(a.plus(b)),
        (a, b) => a.or(b),
    };
    Ok(match asked.result {
        Ok(completion) => match classify(&completion.text, stop) {
            Said::Failed(why) => Said::Failed(format!("user turn {turn}: {why}")),
            said => said,
        },
        Err(e) => Said::Failed(format!("user turn {turn} failed: {e}")),
    })
}

/// The plan's user models, each once.
pub(super) fn user_setups(manifest: &Manifest) -> Vec<ModelSetup> {
    let mut setups: Vec<ModelSetup> = Vec::new();
    for setup in manifest.users.values() {
        if !setups.iter().any(|s| s.name == setup.name) {
            setups.push(setup.clone());
        }
    }
    setups
}

/// Gives each spec runtime its user model among `clients` (connected from
/// [`user_setups`]). Under a budget their requests go through the meter,
/// refusable like the model's turns, so a refused user turn leaves its
/// episode for `--resume`; a user model priced by the hour runs a clock of
/// its own, charged to the records whose episodes asked it.
pub(super) fn give_users(
    manifest: &Manifest,
    specs: &[Arc<SpecRuntime>],
    meter: &Arc<Meter>,
    clients: &[Arc<ModelClient>],
) {
    let gated = meter.limits() != Default::default();
    for client in clients.iter().filter(|c| c.provider().is_remote()) {
        if gated {
            client.set_gate(meter.clone(), true);
        }
        meter.start_clock(
            &super::budget::user_clock(&client.setup.name),
            client.setup.price,
        );
    }
    for runtime in specs {
        let named = manifest.users.get(&runtime.spec.id);
        if let Some(client) = named.and_then(|n| clients.iter().find(|c| c.setup.name == n.name)) {
            // Set once per plan: a second part of the plan finds it set.
            let _ = runtime.user.set(client.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::ToolCall;

    #[test]
    fn the_user_sees_replies_only_with_roles_swapped() {
        let call = ToolCall {
            id: "c1".into(),
            name: "list_orders".into(),
            arguments: serde_json::json!({}),
            invalid: None,
        };
        let messages = vec![
            Message::text(Role::System, "agent policy: secret"),
            Message::text(Role::User, "Отмените заказ."),
            Message::assistant("Проверяю.", vec![call.clone()]),
            Message::tool_result(&call, "[{\"id\": \"A-1\"}]"),
            Message::assistant("<think>hmm</think>Какой номер?", Vec::new()),
            Message::text(Role::User, "A-1"),
            Message::assistant("", vec![call]),
        ];
        let view = user_view("you are a client", &messages);
        let shown: Vec<(Role, &str)> = view.iter().map(|m| (m.role, m.content.as_str())).collect();
        assert_eq!(
            shown,
            [
                (Role::System, "you are a client"),
                (Role::Assistant, "Отмените заказ."),
                (Role::User, "Проверяю.\n\nКакой номер?"),
                (Role::Assistant, "A-1"),
            ]
        );
        assert!(view.iter().all(|m| m.tool_calls.is_empty()));
    }

    #[test]
    fn a_turn_stops_replies_or_fails_empty() {
        let stop = "###STOP###";
        let cases = [
            (
                "Спасибо! ###STOP###",
                Said::Stop("Спасибо! ###STOP###".into()),
            ),
            ("  A-1002  ", Said::Reply("A-1002".into())),
            (
                "<think>done</think>",
                Said::Failed("the user's turn was empty".into()),
            ),
            ("", Said::Failed("the user's turn was empty".into())),
        ];
        for (text, want) in cases {
            assert_eq!(classify(text, stop), want, "{text:?}");
        }
    }
}
