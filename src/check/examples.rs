//! `harness check`'s self-check examples: each one's response (its text,
//! its calls, or a whole episode) judged by the spec's rules, with fixed
//! judge responses where the spec has a judge.

use crate::provider::split_think;
use serde_json::{Map, Value};

use crate::error::{Diagnostic, ErrorKind};
use crate::format::key_path;
use crate::format::{ChoiceMethod, Example, Role, Tool, ToolCall};
use crate::prompt::{Continuation, Logprobs, Message, TokenLogprob};
use crate::spec::Spec;
use crate::text::visible_line;
use crate::verify::Judged;
use crate::verify::judge::combine;
use crate::verify::{InstanceVerdict, JudgeOutcome};

fn example_vars(
    spec: &Spec,
    index: usize,
    example: &Example,
) -> Result<Map<String, Value>, Diagnostic> {
    let at = spec.source_map().locate(key_path!["example", index]);
    let mut vars = match example.instance {
        Some(i) => spec.vars(u64::from(i))?,
        None if example.vars.is_none() => {
            return Err(Diagnostic::new(
                ErrorKind::Invalid,
                at,
                "an example needs `vars = { ... }` or `instance = N`",
            ));
        }
        None => Map::new(),
    };
    vars.extend(example.vars.clone().unwrap_or_default());
    Ok(vars)
}

/// What an example's answer actually got from the rules (`check -v`).
#[derive(Debug, Clone, PartialEq)]
pub struct ExampleVerdict {
    /// `example 2 (name)`.
    pub label: String,
    /// Whether it passed.
    pub passed: bool,
    /// Its score.
    pub score: f64,
    /// The failure details (empty when it passed).
    pub detail: String,
    /// With `[choices]`: the picked choice's index.
    pub picked: Option<usize>,
}

/// Judges example `index`: what it got, when it could be judged, and
/// whether that is what it expects.
pub(super) fn run_example(
    spec: &Spec,
    index: usize,
    example: &Example,
) -> (Option<ExampleVerdict>, Result<(), Diagnostic>) {
    let label = match &example.name {
        Some(name) => format!("example {} ({name})", index + 1),
        None => format!("example {}", index + 1),
    };
    let verdict = match judge_example(spec, index, example, &label) {
        Ok(v) => v,
        Err(d) => return (None, Err(d)),
    };
    let problems = problems(example, &verdict);
    let outcome = if problems.is_empty() {
        Ok(())
    } else {
        Err(Diagnostic::new(
            ErrorKind::Example,
            spec.source_map().locate(key_path!["example", index]),
            format!("{label}: {}", problems.join("; ")),
        ))
    };
    (Some(verdict), outcome)
}

/// The example's answer judged by the spec's rules (or its own).
fn judge_example(
    spec: &Spec,
    index: usize,
    example: &Example,
    label: &str,
) -> Result<ExampleVerdict, Diagnostic> {
    let vars = example_vars(spec, index, example)?;
    let at = || spec.source_map().locate(key_path!["example", index]);
    if spec.choices().is_some() {
        return choice_example(spec, index, example, &vars)
            .map(|(verdict, picked)| ExampleVerdict {
                label: label.to_owned(),
                passed: verdict.passed,
                score: verdict.score,
                detail: verdict.failure_details(),
                picked,
            })
            .map_err(|e| Diagnostic::new(ErrorKind::Example, at(), format!("{label}: {e}")));
    }
    if let Some((rule, key, var)) = spec.rules.missing_variables(&vars).into_iter().next() {
        let rule_name = &spec.rules.rules()[rule].name;
        return Err(Diagnostic::new(
            ErrorKind::Example,
            at(),
            format!(
                "{label}: rule `{rule_name}` reads `{var}` (its `{key}`), which the example's vars do not set"
            ),
        ));
    }
    let judged = example_judgements(spec, example, &vars)
        .map_err(|e| Diagnostic::new(ErrorKind::Example, at(), format!("{label}: {e}")))?;
    let own_rules = spec.example_rules(index)?;
    let (trajectory, tools) = example_episode(spec, index, example, &vars)?;
    let text = match trajectory.iter().rev().find(|m| m.role == Role::Assistant) {
        Some(last) if example.response.is_empty() => last.content.as_str(),
        _ => example.response.as_str(),
    };
    // A `<think>` block in an example is reasoning, as in a model's answer.
    let (text, reasoning) = split_think(text);
    let reasoning = reasoning.unwrap_or_default();
    let reply = crate::verify::Reply {
        text: &text,
        reasoning: &reasoning.text,
        trajectory: &trajectory,
        state: example.state.as_ref(),
        tools: &tools,
        replay: spec.replayer(),
    };
    let verdict = own_rules
        .as_ref()
        .unwrap_or(&spec.rules)
        .verify_judged(&reply, &vars, &judged);
    if let Some(fault) = spec_fault(spec, label, &verdict) {
        // The spec itself is broken, whatever the example expected: say where.
        return Err(fault);
    }
    Ok(ExampleVerdict {
        label: label.to_owned(),
        passed: verdict.passed,
        score: verdict.score,
        detail: verdict.failure_details(),
        picked: None,
    })
}

/// A `[choices]` example scored as a model's answer would be: its
/// `response` (`generate`), its first token's `top_logprobs` (the likeliest
/// is the token generated) or each choice's `loglikelihoods`.
fn choice_example(
    spec: &Spec,
    index: usize,
    example: &Example,
    vars: &Map<String, Value>,
) -> Result<(InstanceVerdict, Option<usize>), String> {
    let choices = spec.choices().expect("a [choices] spec");
    let set = spec
        .choice_set(u64::try_from(index).unwrap_or(0), vars)
        .map_err(|d| d.message)?
        .expect("a [choices] spec");
    let method = choices.method;
    let given = |key: &str, given: bool, wanted: ChoiceMethod| match (given, method == wanted) {
        (true, false) => Err(format!(
            "`{key}` is read by method = \"{}\" only",
            wanted.name()
        )),
        (false, true) => Err(format!("a {} example gives `{key}`", wanted.name())),
        _ => Ok(()),
    };
    given(
        "top_logprobs",
        !example.top_logprobs.is_empty(),
        ChoiceMethod::FirstToken,
    )?;
    given(
        "loglikelihoods",
        !example.loglikelihoods.is_empty(),
        ChoiceMethod::Loglikelihood,
    )?;
    let logprobs = Logprobs {
        tokens: example
            .top_logprobs
            .iter()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(token, lp)| TokenLogprob::bounded(token, *lp, example.top_logprobs.clone()))
            .into_iter()
            .collect(),
        continuations: example
            .loglikelihoods
            .iter()
            .map(|&logprob| Continuation {
                logprob,
                greedy: false,
                tokens: Vec::new(),
            })
            .collect(),
    };
    let (outcome, verdict) = choices
        .score(&set, &example.response, Some(&logprobs))
        .map_err(|e| e.to_string())?;
    Ok((verdict, outcome.picked))
}

/// How `verdict` differs from what `example` expects.
fn problems(example: &Example, verdict: &ExampleVerdict) -> Vec<String> {
    let mut problems = Vec::new();
    if verdict.passed != example.passes {
        problems.push(if example.passes {
            format!(
                "expected to pass, but failed: {}",
                visible_line(&verdict.detail)
            )
        } else {
            "expected to fail, but passed".to_owned()
        });
    }
    if let Some(picked) = example.picked
        && verdict.picked != Some(picked)
    {
        let got = verdict.picked.map_or("none".to_owned(), |p| p.to_string());
        problems.push(format!("expected choice {picked} to be picked, got {got}"));
    }
    if let Some(score) = example.score
        && (score - verdict.score).abs() > 1e-9
    {
        problems.push(format!("expected score {score}, got {}", verdict.score));
    }
    if let Some(detail) = &example.detail
        && !verdict.detail.contains(detail.as_str())
    {
        problems.push(format!(
            "expected the failure detail to mention «{detail}», got «{}»",
            visible_line(&verdict.detail)
        ));
    }
    problems
}

/// An example's episode as the rules see it (its one turn of `tool_calls`,
/// or its `trajectory`), and its instance's tools.
fn example_episode(
    spec: &Spec,
    index: usize,
    example: &Example,
    vars: &Map<String, Value>,
) -> Result<(Vec<Message>, Vec<Tool>), Diagnostic> {
    let at = |key: &str| spec.source_map().locate(key_path!["example", index, key]);
    if !example.tool_calls.is_empty() && !example.trajectory.is_empty() {
        return Err(Diagnostic::new(
            ErrorKind::Invalid,
            at("trajectory"),
            "an example gives `tool_calls` (one turn) or `trajectory` (an episode), not both",
        ));
    }
    let conversation = spec.agent().is_some_and(|a| a.user.is_some());
    let allowed = |role: Role| {
        matches!(role, Role::Assistant | Role::Tool) || (conversation && role == Role::User)
    };
    if let Some(i) = example.trajectory.iter().position(|m| !allowed(m.role)) {
        let also = if conversation {
            ", and the simulated user's `user` turns"
        } else {
            ""
        };
        return Err(Diagnostic::new(
            ErrorKind::Invalid,
            spec.source_map()
                .locate(key_path!["example", index, "trajectory", i, "role"]),
            format!("an episode's messages are `assistant` turns and `tool` results{also}"),
        ));
    }
    // Arguments written as text are read as a wire's are: not JSON is a failure to judge.
    let calls = |calls: &[ToolCall]| -> Vec<ToolCall> {
        calls
            .iter()
            .map(|c| match (&c.arguments, &c.invalid) {
                (Value::String(text), None) => {
                    ToolCall::from_text(c.id.clone(), c.name.clone(), text)
                }
                _ => c.clone(),
            })
            .collect()
    };
    let trajectory = if example.tool_calls.is_empty() {
        example
            .trajectory
            .iter()
            .map(|m| Message {
                tool_calls: calls(&m.tool_calls),
                tool_call_id: m.tool_call_id.clone(),
                tool_name: m.tool_name.clone(),
                ..Message::text(m.role, m.content.clone())
            })
            .collect()
    } else {
        vec![Message::assistant(
            example.response.clone(),
            calls(&example.tool_calls),
        )]
    };
    let tools = spec.instance_tools(example.instance.map_or(0, u64::from), vars)?;
    Ok((trajectory, tools))
}

/// The first rule failure that the spec caused, at its key in the rule.
fn spec_fault(spec: &Spec, label: &str, verdict: &InstanceVerdict) -> Option<Diagnostic> {
    verdict
        .rules
        .iter()
        .enumerate()
        .find_map(|(i, o)| spec.fault_diagnostic(i, label, &o.name, &o.verdict))
}

/// Why an example's fixed judge responses cannot be judged.
#[derive(Debug, thiserror::Error)]
enum ExampleJudgeError {
    /// Judge responses on a spec without a `judge` rule.
    #[error("`judge` responses are given, but the spec has no `judge` rule")]
    NoJudgeRule,
    /// The example's instance does not render.
    #[error("{0}")]
    Render(Box<Diagnostic>),
    /// A judge rule's prompt does not render for the example.
    #[error("rule `{rule}`: {source}")]
    Prompt {
        /// The rule's name.
        rule: String,
        /// Why.
        source: crate::verify::judge::JudgeError,
    },
    /// As many responses as the rule's `samples` are needed.
    #[error("{given} judge responses given; rule `{rule}` takes {samples} (its `samples`)")]
    Samples {
        /// Responses given.
        given: usize,
        /// The rule's name.
        rule: String,
        /// The rule's `samples`.
        samples: u32,
    },
}

/// Judge rules' verdicts from an example's fixed judge responses (`judge = [...]`):
/// the judge's prompt must render for the example, and the responses are read and
/// combined exactly as a live judge's would be.
fn example_judgements(
    spec: &Spec,
    example: &Example,
    vars: &serde_json::Map<String, serde_json::Value>,
) -> Result<Judged, ExampleJudgeError> {
    let mut judged = Judged::new();
    let (answer, reasoning) = split_think(&example.response);
    let reasoning = reasoning.unwrap_or_default();
    let tasks = spec.rules.judge_tasks(&answer, &reasoning.text);
    if example.judge.is_empty() {
        return Ok(judged);
    }
    if tasks.is_empty() && !spec.rules.needs_judge() {
        return Err(ExampleJudgeError::NoJudgeRule);
    }
    let messages = spec
        .render(example.instance.map_or(0, u64::from), vars)
        .map_err(|d| ExampleJudgeError::Render(Box::new(d)))?;
    let task = crate::verify::judge::task_of(&messages);
    for (rule_index, name, rule, answer) in tasks {
        rule.prompt(task, &answer, vars)
            .map_err(|source| ExampleJudgeError::Prompt {
                rule: name.to_owned(),
                source,
            })?;
        if example.judge.len() != rule.samples as usize {
            return Err(ExampleJudgeError::Samples {
                given: example.judge.len(),
                rule: name.to_owned(),
                samples: rule.samples,
            });
        }
        let samples = example
            .judge
            .iter()
            .map(|r| rule.sample(r.clone()))
            .collect();
        let outcome = JudgeOutcome {
            judge: "example".into(),
            rubric: rule.hash.clone(),
            ..JudgeOutcome::default()
        };
        judged.insert(
            rule_index,
            combine(&rule.rubric, rule.threshold, samples, outcome),
        );
    }
    Ok(judged)
}
