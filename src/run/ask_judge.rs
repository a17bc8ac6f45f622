//! Asking the judge: every judge rule of a spec gets its samples of the
//! judge model's verdict on an answer, through the judge's cache, retries
//! and re-asks, exactly like a request to a model under test.

use serde_json::{Map, Value};

use super::cost::priced_cost;
use super::exec_call::with_exec;
use super::record::Cost;
use crate::client::cache::Cache;
use crate::client::{ModelClient, ask};
use crate::format::Role;
use crate::prompt::Message;
use crate::provider::{ChatRequest, Completion, OutputKind, Provider, RequestKey};
use crate::spec::Spec;
use crate::verify::JudgeOutcome;
use crate::verify::judge::{JudgeError, JudgeSample, combine, prompt::answer_schema, task_of};
use crate::verify::{FailureKind, JudgeRule, Judged, Verdict};

/// What judging one answer produced: verdicts by rule index and the judge's retry log.
pub(super) struct Judgement {
    /// Verdicts and outcomes of the judge rules.
    pub judged: Judged,
    /// Why judge requests were retried or re-asked, prefixed with the rule.
    pub retries: Vec<String>,
    /// The judge's HTTP attempts.
    pub attempts: u32,
    /// What judging cost, when the judge is priced by the token.
    pub cost: Option<Cost>,
}

/// The request of judge sample 0 for `prompt`: the rule's settings, overridden by the judge model's options.
fn judge_request(judge: &ModelClient, rule: &JudgeRule, prompt: String) -> ChatRequest {
    let o = &judge.setup.options;
    let messages = vec![Message::text(Role::User, prompt)];
    ChatRequest {
        seed: Some(o.seed.unwrap_or(0)),
        format: OutputKind::JsonSchema(answer_schema(&rule.rubric)),
        // The judge thinks as its own configuration says, never as the spec it judges.
        reasoning: judge.setup.reasoning,
        ..ChatRequest::with_options(o, messages, rule.temperature, rule.max_tokens)
    }
}

/// Judges `completion` (the answer to `messages`) by every judge rule of `spec`.
pub(super) async fn ask_judge(
    judge: &ModelClient,
    spec: &Spec,
    messages: &[Message],
    completion: &Completion,
    vars: &Map<String, Value>,
    key: RequestKey<'_>,
    cache: Option<&Cache>,
) -> Judgement {
    let task = task_of(messages);
    let mut out = Judgement {
        judged: Judged::new(),
        retries: Vec::new(),
        attempts: 0,
        cost: None,
    };
    let reasoning = completion.reasoning_text();
    for (index, name, rule, answer) in spec.rules.judge_tasks(&completion.text, reasoning) {
        let mut outcome = JudgeOutcome {
            judge: judge.setup.name.clone(),
            rubric: rule.hash.clone(),
            ..JudgeOutcome::default()
        };
        let prompt = match rule.prompt(task, &answer, vars) {
            Ok(p) => p,
            Err(e) => {
                let verdict = Verdict::failed(FailureKind::JudgeError, format!("judge error: {e}"));
                out.judged.insert(index, (verdict, outcome));
                continue;
            }
        };
        let mut base = judge_request(judge, rule, prompt);
        if let Err(e) = with_exec(&mut base, &judge.setup, vars, spec) {
            let verdict = Verdict::failed(FailureKind::JudgeError, format!("judge error: {e}"));
            out.judged.insert(index, (verdict, outcome));
            continue;
        }
        let mut samples = Vec::new();
        for k in 0..rule.samples {
            let judge_key = RequestKey {
                judge: Some((name, k)),
                ..key
            };
            let request = base.for_sample(k);
            let asked = ask(judge, &request, judge_key, cache, rule.attempts, |text| {
                rule.read(text).map(|_| ())
            })
            .await;
            // The judge shares the gate of a model under test, whose budget refused it.
            let asked = match asked {
                Ok(asked) => asked,
                Err(refused) => {
                    samples.push(JudgeSample {
                        response: None,
                        result: Err(JudgeError::Request(refused.to_string())),
                    });
                    continue;
                }
            };
            let priced = judge.setup.price.as_ref();
            if let Some(cost) = priced.and_then(|p| priced_cost(p, &request.messages, &asked)) {
                out.cost = Some(out.cost.unwrap_or_default().plus(cost));
            }
            // Replayed answers cost no request.
            if judge.provider().is_remote() {
                outcome.attempts += asked.attempts;
            }
            outcome.cached += u32::from(asked.cached);
            out.retries.extend(
                asked
                    .retries
                    .into_iter()
                    .map(|r| format!("judge `{name}` sample {k}: {r}")),
            );
            samples.push(match asked.result {
                Ok(c) => {
                    add(&mut outcome.tokens_in, c.usage.tokens_in);
                    add(&mut outcome.tokens_out, c.usage.tokens_out);
                    rule.sample(c.text)
                }
                Err(e) => JudgeSample {
                    response: None,
                    result: Err(JudgeError::Request(e.to_string())),
                },
            });
        }
        if let Provider::Replay(replay) = judge.provider()
            && let Some(recorded) = replay.recorded_judge(key, name)
        {
            // Replayed judgements keep the name of the judge that made them.
            outcome.judge = recorded;
        }
        out.attempts += outcome.attempts;
        out.judged.insert(
            index,
            combine(&rule.rubric, rule.threshold, samples, outcome),
        );
    }
    out
}

fn add(total: &mut Option<u64>, n: Option<u64>) {
    if let Some(n) = n {
        *total = Some(total.unwrap_or(0) + n);
    }
}
