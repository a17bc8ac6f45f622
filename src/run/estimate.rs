//! `harness run --dry-run`: what the rest of a plan would ask and the most
//! it could cost, from the prompts' token counts and `max_tokens`, without a
//! request. The response cache is not consulted: the estimate is for asking
//! everything live. Re-asks count: a JSON answer that does not parse or fit
//! its schema is asked again, up to the spec's `attempts`, and each ask is
//! billed. Retries of failed requests do not: a failed request returns no
//! answer, and the budget charges none (the dry run says so).

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use super::cost::prompt_tokens;
use super::queue::Tasks;
use super::record::TaskKey;
use super::{Manifest, RunError, SpecRuntime, build_request, journal};
use crate::format::Role;
use crate::prompt::Message;
use crate::provider::{ChatRequest, ModelSetup, OutputKind, PER_MILLION, Price, ProviderKind};
use crate::verify::judge::task_of;

/// What one model's part of one spec would ask.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Estimate {
    /// The model's name.
    pub model: String,
    /// The spec id.
    pub spec: String,
    /// Requests to the model, re-asks not counted.
    pub requests: u64,
    /// The most re-asks those requests may add (JSON answers asked again).
    pub reasks: u64,
    /// Their prompt tokens, by the estimating tokenizer.
    pub prompt_tokens: u64,
    /// The most tokens the answers may have: `max_tokens` each, re-asks
    /// included; reasoning tokens are among them (they count against `max_tokens`).
    pub max_output_tokens: u64,
    /// The prompts at the input price plus `max_output_tokens` at the output
    /// price, or the reasoning price when that is higher (any of them may be
    /// reasoning); `None` when the model is not priced by the token.
    pub cost: Option<f64>,
    /// The requests go in a provider's batch, at its discount (in `cost`).
    pub batched: bool,
    /// Agent episodes among them: each counted as `max_turns` requests.
    pub episodes: u64,
    /// Requests to the judge.
    pub judge_requests: u64,
    /// The same bound for the judge, each answer judged taken at its
    /// `max_tokens`; `None` when nothing is judged or the judge is not priced by the token.
    pub judge_cost: Option<f64>,
    /// Requests to the simulated user (`[agent.user]`): up to `max_turns`
    /// per episode, one after each agent turn.
    pub user_requests: u64,
    /// The same bound for the user model, its turns at its `max_tokens`;
    /// `None` when no user talks or its model is not priced.
    pub user_cost: Option<f64>,
}

/// Token counts of requests to one model, priced once summed.
#[derive(Default)]
struct Tokens {
    requests: u64,
    episodes: u64,
    reasks: u64,
    prompt: u64,
    output: u64,
}

impl Tokens {
    fn cost(&self, model: &ModelSetup) -> Option<f64> {
        match model.price {
            Some(Price::Tokens(p)) => {
                let output = self.output as f64 * p.highest_output();
                Some((self.prompt as f64 * p.input + output) / PER_MILLION)
            }
            Some(Price::PerCall(amount)) => Some(amount * (self.requests + self.reasks) as f64),
            _ => None,
        }
    }
}

/// The share of the price a cell's requests pay: less the discount when they go in a batch.
fn batch_price(model: &ModelSetup, spec: &SpecRuntime) -> f64 {
    match model.batch {
        Some(b) if super::batch::batchable(spec) => 1.0 - b.discount,
        _ => 1.0,
    }
}

/// The estimate of every (model, spec) cell with requests left, in plan
/// order; requests already in the journal at `journal_path` are left out.
pub(crate) fn estimate(
    manifest: &Manifest,
    specs: &[Arc<SpecRuntime>],
    journal_path: &Path,
) -> Result<Vec<Estimate>, RunError> {
    let mut done: HashSet<TaskKey> = HashSet::new();
    if journal_path.exists() {
        journal::for_each_record(journal_path, |r| {
            done.insert(r.key());
        })?;
    }
    let done = Arc::new(done);
    let mut out = Vec::new();
    for model in &manifest.models {
        let batches = matches!(
            model.provider,
            ProviderKind::OpenAi
                | ProviderKind::LlamaCpp
                | ProviderKind::Vllm
                | ProviderKind::Gemini
        );
        let per_request = if batches { model.max_n.max(1) } else { 1 };
        let items: Vec<_> = Tasks::new(
            manifest,
            &model.name,
            per_request as usize,
            specs,
            done.clone(),
        )
        .collect();
        for (si, spec) in specs.iter().enumerate() {
            let mine = items.iter().filter(|(s, _, _)| *s == si);
            let (asked, judged, user) = spec_tokens(manifest, model, spec, mine);
            if asked.requests == 0 {
                continue;
            }
            let judge = manifest.judge.as_ref();
            out.push(Estimate {
                model: model.name.clone(),
                spec: spec.spec.id.clone(),
                requests: asked.requests,
                reasks: asked.reasks,
                prompt_tokens: asked.prompt,
                max_output_tokens: asked.output,
                cost: asked.cost(model).map(|c| c * batch_price(model, spec)),
                batched: model.batch.is_some() && super::batch::batchable(spec),
                episodes: asked.episodes,
                judge_requests: judged.requests,
                judge_cost: judge
                    .filter(|_| judged.requests > 0)
                    .and_then(|j| judged.cost(j)),
                user_requests: user.requests,
                user_cost: manifest
                    .users
                    .get(&spec.spec.id)
                    .filter(|_| user.requests > 0)
                    .and_then(|u| user.cost(u)),
            });
        }
    }
    Ok(out)
}

/// The tokens of one model's requests on one spec, of their judging, and
/// of the simulated user's turns.
fn spec_tokens<'a>(
    manifest: &Manifest,
    model: &ModelSetup,
    spec: &SpecRuntime,
    items: impl Iterator<Item = &'a super::queue::QueueItem>,
) -> (Tokens, Tokens, Tokens) {
    let (mut asked, mut judged) = (Tokens::default(), Tokens::default());
    let mut user = Tokens::default();
    for (_, instance, samples) in items {
        // An instance that does not generate asks nothing: it becomes an error record.
        let Ok(inst) = spec.spec.instance(*instance) else {
            continue;
        };
        let request = build_request(spec, model, inst.messages.clone(), &inst.tools);
        let answers = samples.len() as u64;
        if let Some(agent) = spec.spec.agent() {
            let turns = u64::from(agent.max_turns);
            episode_tokens(&mut asked, turns, answers, &request);
            if let Some(runtime) = &agent.user {
                let setup = manifest.users.get(&spec.spec.id);
                let max = setup.and_then(|u| u.options.max_tokens);
                let turn = Turns {
                    count: turns,
                    agent: u64::from(request.max_tokens),
                    user: u64::from(max.unwrap_or(runtime.max_tokens)),
                };
                user_tokens(&mut user, turn, answers, &inst);
            }
        } else {
            single_tokens(&mut asked, spec, answers, &request);
        }
        let Some(judge) = manifest.judge.as_ref() else {
            continue;
        };
        for rule in spec.spec.rules.judge_rules() {
            let prompt = Message::text(
                Role::User,
                rule.prompt(task_of(&inst.messages), "", &inst.vars)
                    .unwrap_or_default(),
            );
            let n = answers * u64::from(rule.samples);
            let max_tokens = judge.options.max_tokens.unwrap_or(rule.max_tokens);
            judged.requests += n;
            let answer = u64::from(request.max_tokens);
            judged.prompt += n * (prompt_tokens(std::slice::from_ref(&prompt)) + answer);
            judged.output += n * u64::from(max_tokens);
        }
    }
    (asked, judged, user)
}

/// An episode's turns and each side's `max_tokens`.
struct Turns {
    count: u64,
    agent: u64,
    user: u64,
}

/// The simulated user's bound: a turn after each of the `turns` agent
/// turns, turn `t`'s prompt its system prompt and the opening, then the
/// `t` agent replies and `t - 1` turns of its own at their `max_tokens`.
fn user_tokens(user: &mut Tokens, turns: Turns, answers: u64, inst: &crate::spec::Instance) {
    let opening = inst
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .take(1);
    let system = inst.user_system.clone().unwrap_or_default();
    let mut seen = vec![Message::text(Role::System, system)];
    seen.extend(opening.cloned());
    let base = prompt_tokens(&seen);
    let t = turns.count;
    user.requests += answers * t;
    user.prompt += answers
        * (t * base + turns.agent * t * (t + 1) / 2 + turns.user * t * t.saturating_sub(1) / 2);
    user.output += answers * t * turns.user;
}

/// An episode's bound: `turns` requests per answer, turn `t`'s prompt the
/// instance's plus the `t` answers before it at `max_tokens` (the tools'
/// results, which no one can bound, not counted).
fn episode_tokens(asked: &mut Tokens, turns: u64, answers: u64, request: &ChatRequest) {
    let prompt = prompt_tokens(&request.messages);
    let out = u64::from(request.max_tokens);
    asked.episodes += answers;
    asked.requests += answers * turns;
    asked.prompt += answers * (turns * prompt + out * turns * (turns - 1) / 2);
    asked.output += answers * turns * out;
}

/// A single-turn request's bound, its re-asks included.
fn single_tokens(asked: &mut Tokens, spec: &SpecRuntime, answers: u64, request: &ChatRequest) {
    let requests = if answers > 1 && spec.format == OutputKind::Text {
        1
    } else {
        answers
    };
    // Every ask of a request may be billed in full; only structured
    // answers are asked again.
    let asks = u64::from(spec.max_asks.max(1));
    asked.requests += requests;
    asked.reasks += requests * (asks - 1);
    asked.prompt += asks * requests * prompt_tokens(&request.messages);
    asked.output += asks * answers * u64::from(request.max_tokens);
}
