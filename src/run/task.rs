//! One task: render the instance, ask the model (cache, pacing, retries,
//! re-asks for unparseable structured output), verify, and make a record.

use std::path::Path;
use std::sync::Arc;

use super::RunError;
use super::ask_judge::ask_judge;
use super::exec_call::with_exec;
use super::record::Record;
use crate::client::cache::Cache;
use crate::client::{Asked, ModelClient, Refused, ask, ask_batch};
use crate::extract::{first_json_object, strip_think};
use crate::format::{ResponseFormat, ToolChoice, ToolMode};
use crate::prompt::Message;
use crate::provider::{ChatRequest, ModelSetup, OutputKind, RequestKey};
use crate::spec::Spec;
use crate::verify::{FailureKind, Reply};

/// A spec ready to be run.
pub(crate) struct SpecRuntime {
    /// The loaded spec.
    pub spec: Arc<Spec>,
    /// Instances to run.
    pub runs: u32,
    /// The instances the golden transcripts record (`[golden] instances`), when a subset.
    pub golden: Option<Vec<u64>>,
    /// The answer shape requested.
    pub format: OutputKind,
    /// Compiled schema for checking structured answers before accepting them.
    pub validator: Option<jsonschema::Validator>,
    /// Total asks allowed when a structured answer does not parse (1 = no re-ask).
    pub max_asks: u32,
    /// The model playing `[agent.user]`, set once the plan connects it.
    pub user: std::sync::OnceLock<Arc<ModelClient>>,
}

/// Builds the provider-neutral request for an instance.
pub(crate) fn build_request(
    spec: &SpecRuntime,
    model: &ModelSetup,
    messages: Vec<crate::prompt::Message>,
    tools: &[crate::prompt::Tool],
) -> ChatRequest {
    let r = &spec.spec.def.request;
    let o = &model.options;
    let default = Default::default();
    let s = spec.spec.def.sampling.as_ref().unwrap_or(&default);
    let max_tokens = spec.spec.max_tokens_for(o.max_tokens);
    ChatRequest {
        temperature: o
            .temperature
            .or(s.temperature)
            .or(r.temperature)
            .unwrap_or(0.0),
        top_p: o.top_p.or(s.top_p).or(r.top_p),
        seed: o.seed.or(s.seed).or(r.seed),
        stop: r.stop.clone(),
        format: spec.format.clone(),
        num_ctx: o.num_ctx.or(r.num_ctx),
        extra: o.extra_body.clone().unwrap_or_default(),
        tools: tools.to_vec(),
        // Without tools the options mean nothing, and would change old cache keys.
        tool_choice: r.tool_choice.clone().filter(|_| !tools.is_empty()),
        parallel_tool_calls: r.parallel_tool_calls.filter(|_| !tools.is_empty()),
        prefill: o.tool_prefill.clone().filter(|_| {
            !tools.is_empty()
                && matches!(
                    r.tool_choice,
                    Some(ToolChoice::Mode(ToolMode::Required) | ToolChoice::Function { .. })
                )
        }),
        reasoning: model.reasoning_for(r.reasoning),
        logprobs: (r.logprobs == Some(true)).then(|| r.top_logprobs.unwrap_or(0)),
        ..ChatRequest::new(messages, max_tokens)
    }
}

impl SpecRuntime {
    /// The instances a model runs: the golden subset when `golden_subset`
    /// and the spec declares one (within `runs`), else `0..runs`.
    pub(crate) fn instances(&self, golden_subset: bool) -> Vec<u64> {
        match (&self.golden, golden_subset) {
            (Some(subset), true) => subset
                .iter()
                .copied()
                .filter(|&i| i < u64::from(self.runs))
                .collect(),
            _ => (0..u64::from(self.runs)).collect(),
        }
    }
}

fn structured_ok(spec: &SpecRuntime, text: &str) -> bool {
    if spec.format == OutputKind::Text {
        return true;
    }
    let Some(json) = first_json_object(strip_think(text)) else {
        return false;
    };
    match (
        &spec.validator,
        serde_json::from_str::<serde_json::Value>(json),
    ) {
        (_, Err(_)) => false,
        (Some(v), Ok(value)) => v.is_valid(&value),
        (None, Ok(_)) => true,
    }
}

/// Asks for one sample, re-asking (up to the spec's budget) while a structured answer does not parse.
async fn ask_structured(
    model: &ModelClient,
    spec: &SpecRuntime,
    request: &ChatRequest,
    key: RequestKey<'_>,
    cache: Option<&Cache>,
) -> Result<Asked, Refused> {
    ask(model, request, key, cache, spec.max_asks, |text| {
        if structured_ok(spec, text) {
            Ok(())
        } else {
            Err("the answer is not valid structured JSON")
        }
    })
    .await
}

/// Runs one instance's `samples` to one record each; never fails (errors become records).
pub(super) async fn run_task(
    model: &ModelClient,
    judge: Option<&ModelClient>,
    spec: &SpecRuntime,
    instance: u64,
    samples: &[u32],
    cache: Option<&Cache>,
) -> Vec<Record> {
    let s = &spec.spec;
    let blank = |sample: u32| Record::blank(&model.setup.name, &s.id, instance, sample);
    let failed = |failure: FailureKind, error: String| -> Vec<Record> {
        samples
            .iter()
            .map(|&sample| {
                let mut record = blank(sample);
                record.scored.error = Some(error.clone());
                record.failure = Some(failure);
                record
            })
            .collect()
    };
    let inst = match s.instance(instance) {
        Ok(i) => i,
        Err(d) => return failed(FailureKind::GenerationError, d.to_string()),
    };
    let mut base = build_request(spec, &model.setup, inst.messages.clone(), &inst.tools);
    if let Err(d) = super::choice_task::choice_request(s, &inst, &mut base) {
        return failed(FailureKind::GenerationError, d.to_string());
    }
    if let Err(e) = with_exec(&mut base, &model.setup, &inst.vars, s) {
        return failed(FailureKind::ConfigError, e.to_string());
    }
    if s.agent().is_some() {
        return run_episodes(model, judge, spec, (&inst, &base), samples, cache).await;
    }
    let requests: Vec<(u32, ChatRequest)> = samples
        .iter()
        .map(|&sample| (sample, base.for_sample(sample)))
        .collect();
    // Structured answers may need re-asks one by one, so only free text is batched.
    let batched =
        requests.len() > 1 && model.provider().supports_n() && spec.format == OutputKind::Text;
    let asked = if batched {
        ask_batch(model, &requests, cache).await
    } else {
        let mut all = Vec::new();
        for (sample, request) in &requests {
            let key = RequestKey {
                spec: &s.id,
                instance,
                sample: *sample,
                judge: None,
                turn: 0,
                user: false,
            };
            all.push(ask_structured(model, spec, request, key, cache).await);
        }
        all
    };
    let mut records = Vec::new();
    for (&sample, asked) in samples.iter().zip(asked) {
        // Refused by the budget: no answer and no record, so `--resume` asks it.
        let Ok(asked) = asked else { continue };
        records.push(answer_record(model, judge, s, (&inst, sample), asked, cache).await);
    }
    records
}

/// The record of one single-turn answer (asked live, from the cache, or
/// from a provider's batch): priced, judged and verified.
pub(super) async fn answer_record(
    model: &ModelClient,
    judge: Option<&ModelClient>,
    s: &Arc<Spec>,
    (inst, sample): (&crate::spec::Instance, u32),
    asked: Asked,
    cache: Option<&Cache>,
) -> Record {
    let (mut record, key) = unanswered(model, s, inst, sample);
    let cost = model
        .setup
        .price
        .as_ref()
        .and_then(|p| super::cost::priced_cost(p, &record.messages, &asked));
    let answered = Answered {
        asked,
        tools: &inst.tools,
        trajectory: None,
        state: None,
        cost,
        ended: None,
    };
    finish(model, judge, s, key, answered, cache, &mut record).await;
    record
}

/// Runs one episode per sample of an `[agent]` spec's instance, to one record each.
async fn run_episodes(
    model: &ModelClient,
    judge: Option<&ModelClient>,
    spec: &SpecRuntime,
    (inst, base): (&crate::spec::Instance, &ChatRequest),
    samples: &[u32],
    cache: Option<&Cache>,
) -> Vec<Record> {
    let s = &spec.spec;
    let mut records = Vec::new();
    for &sample in samples {
        let request = (base.for_sample(sample), sample);
        let (mut record, key) = unanswered(model, s, inst, sample);
        let user = match super::user_turn::user_for(model, spec, inst, sample) {
            Ok(user) => user,
            Err(why) => {
                records.push(super::user_turn::failed(record, why));
                continue;
            }
        };
        // A turn the budget refused: no record, so `--resume` reruns it (its done turns cached).
        let run = super::episode::run_episode(model, s, inst, request, (user, cache));
        let Ok(episode) = run.await else { continue };
        episode.user.fill(&mut record);
        let answered = Answered {
            asked: episode.asked,
            tools: &inst.tools,
            trajectory: Some(episode.trajectory),
            state: episode.state,
            cost: episode.cost,
            ended: episode.ended,
        };
        finish(model, judge, s, key, answered, cache, &mut record).await;
        records.push(record);
    }
    records
}

/// The record of `sample` of `inst` before its answer, and its requests' key.
fn unanswered<'a>(
    model: &ModelClient,
    s: &'a Spec,
    inst: &crate::spec::Instance,
    sample: u32,
) -> (Record, RequestKey<'a>) {
    let mut record = Record::blank(&model.setup.name, &s.id, inst.index, sample);
    record.expected = s.rules.expected(&inst.vars);
    record.messages = inst.messages.clone();
    record.vars = inst.vars.clone();
    let key = RequestKey {
        spec: &s.id,
        instance: inst.index,
        sample,
        judge: None,
        turn: 0,
        user: false,
    };
    (record, key)
}

/// An answer (or an episode) ready to be judged and recorded.
struct Answered<'a> {
    /// The ask, or an episode's turns folded into one.
    asked: Asked,
    /// The tools the request offered.
    tools: &'a [crate::prompt::Tool],
    /// An episode's messages after the prompt; `None` for a single turn,
    /// whose calls (if any) make a trajectory of one message.
    trajectory: Option<Vec<Message>>,
    /// The tools' state after an episode.
    state: Option<serde_json::Value>,
    /// What it cost (every turn of an episode summed).
    cost: Option<super::record::Cost>,
    /// A failure the episode itself named, which the rules cannot undo.
    ended: Option<(FailureKind, String)>,
}

/// Fills `record` from the answer: the judge's verdicts, the verdict, tokens, timing.
async fn finish(
    model: &ModelClient,
    judge: Option<&ModelClient>,
    s: &Arc<Spec>,
    key: RequestKey<'_>,
    answered: Answered<'_>,
    cache: Option<&Cache>,
    record: &mut Record,
) {
    let Answered {
        asked,
        tools,
        trajectory,
        state,
        cost,
        ended,
    } = answered;
    let vars = &record.vars;
    record.latency_ms = asked.latency_ms();
    record.attempts = if model.provider().is_remote() {
        asked.attempts
    } else {
        0
    };
    record.cost = cost;
    record.cached = asked.cached;
    record.retries = asked.retries;
    record.endpoint = asked.endpoint;
    match asked.result {
        Ok(completion) => {
            // A replayed model's recorded judgements replay too, unless a judge is named.
            let judge = judge.or((!model.provider().is_remote()).then_some(model));
            let judged = match judge {
                Some(judge) if s.rules.needs_judge() => {
                    let j =
                        ask_judge(judge, s, &record.messages, &completion, vars, key, cache).await;
                    record.retries.extend(j.retries);
                    record.judge_attempts = j.attempts;
                    record.judge_cost = j.cost;
                    j.judged
                }
                _ => Default::default(),
            };
            // A single turn's calls are a trajectory of one assistant message.
            let trajectory = trajectory.unwrap_or_else(|| single_turn(&completion));
            let ended = ended
                .or_else(|| too_deep_call(&trajectory))
                .or_else(|| unfinished(&completion));
            let choice = super::choice_task::verdict(s, record.instance, vars, &completion);
            let verdict = if let Some((outcome, verdict)) = choice {
                record.scored.choice = outcome;
                verdict
            } else if s.rules.needs_sandbox() {
                // Running code blocks for up to its time limit: not on a runtime worker.
                let (spec, text, vars) = (s.clone(), completion.text.clone(), vars.clone());
                let (steps, tools, after) = (trajectory.clone(), tools.to_vec(), state.clone());
                let reasoning = completion.reasoning_text().to_owned();
                let verify = move || {
                    let reply = Reply {
                        text: &text,
                        reasoning: &reasoning,
                        trajectory: &steps,
                        state: after.as_ref(),
                        tools: &tools,
                        replay: spec.replayer(),
                    };
                    spec.verify_judged(&reply, &vars, &judged)
                };
                match tokio::task::spawn_blocking(verify).await {
                    Ok(verdict) => verdict,
                    Err(e) => std::panic::resume_unwind(e.into_panic()),
                }
            } else {
                let reply = Reply {
                    text: &completion.text,
                    reasoning: completion.reasoning_text(),
                    trajectory: &trajectory,
                    state: state.as_ref(),
                    tools,
                    replay: s.replayer(),
                };
                s.verify_judged(&reply, vars, &judged)
            };
            record.scored.trajectory = trajectory;
            record.scored.tokens_in = completion.usage.tokens_in;
            record.scored.tokens_out = completion.usage.tokens_out;
            record.scored.tokens_reasoning = completion.usage.tokens_reasoning;
            record.scored.reasoning = completion.reasoning;
            record.scored.logprobs = super::choice_task::kept(s, completion.logprobs);
            record.tokens_cached = completion.usage.tokens_cached;
            record.shared = completion.shared;
            if let Some(served) = completion.served {
                record.served_model = Some(served.model);
                record.system_fingerprint = served.fingerprint;
            }
            record.take_verdict(verdict);
            record.scored.response = Some(completion.text);
            record.scored.state = state;
            if let Some(ended) = ended {
                episode_failed(record, ended);
            }
        }
        Err(e) => {
            // An episode's own end (its deadline) names it, else the request's error.
            let (failure, error) = ended.unwrap_or_else(|| (e.kind(), e.to_string()));
            record.failure = Some(failure);
            record.scored.error = Some(error);
            record.scored.trajectory = trajectory.unwrap_or_default();
            record.scored.state = state;
        }
    }
}

/// A single turn's calls as a trajectory of one assistant message (none without calls).
fn single_turn(completion: &crate::provider::Completion) -> Vec<Message> {
    if completion.tool_calls.is_empty() {
        return Vec::new();
    }
    vec![Message::assistant(
        completion.text.clone(),
        completion.tool_calls.clone(),
    )]
}

/// The `too_deep` failure of an answer with a call whose arguments nested
/// past the depth limit: the model's own fault, whatever the rules say.
fn too_deep_call(trajectory: &[Message]) -> Option<(FailureKind, String)> {
    let call = trajectory
        .iter()
        .flat_map(|m| &m.tool_calls)
        .find(|c| c.too_deep())?;
    let why = format!(
        "a call of `{}`: {}",
        call.name,
        call.invalid.as_deref().unwrap_or_default()
    );
    Some((FailureKind::TooDeep, why))
}

/// The `unfinished_reasoning` failure of an answer cut off while the model
/// was still reasoning: whatever the rules make of its text, it never answered.
fn unfinished(completion: &crate::provider::Completion) -> Option<(FailureKind, String)> {
    let reasoning = completion.reasoning.as_ref().filter(|r| r.unfinished)?;
    // Only what a replay reproduces: the finish reason is not recorded.
    let why = format!(
        "generation stopped while the model was still reasoning ({} characters of reasoning)",
        reasoning.chars()
    );
    Some((FailureKind::UnfinishedReasoning, why))
}

/// An episode that ended badly (`max_turns`, `no_end_call`, a limit), or an
/// answer cut off while reasoning, fails whatever its rules concluded; their
/// details stay after the reason.
fn episode_failed(record: &mut Record, (failure, why): (FailureKind, String)) {
    record.scored.passed = false;
    record.scored.score = 0.0;
    record.scored.detail = if record.scored.detail.is_empty() {
        why
    } else {
        format!("{why}; {}", record.scored.detail)
    };
    record.failure = Some(failure);
}

/// Prepares a spec for running: its answer format and re-ask budget.
pub(crate) fn spec_runtime(spec: Arc<Spec>, runs: Option<u32>) -> Result<SpecRuntime, RunError> {
    let request = &spec.def.request;
    let dir = spec.file.parent().unwrap_or(Path::new("."));
    let (format, validator) = match request.response_format {
        None | Some(ResponseFormat::Text) => (OutputKind::Text, None),
        Some(ResponseFormat::Json) => (OutputKind::Json, None),
        Some(ResponseFormat::JsonSchema) => {
            let path = request.schema.as_deref().unwrap_or_default();
            let (schema, validator) = crate::verify::read_schema(dir, path)?;
            (OutputKind::JsonSchema(schema), Some(validator))
        }
    };
    let max_asks = if format == OutputKind::Text {
        1
    } else {
        request.attempts.unwrap_or(3).max(1)
    };
    let golden = spec
        .golden_subset()
        .map_err(|d| RunError::Spec(Box::new(d)))?;
    Ok(SpecRuntime {
        runs: spec.runs_for(runs),
        golden,
        spec,
        format,
        validator,
        max_asks,
        user: std::sync::OnceLock::new(),
    })
}
