//! One finished request: the unit the journal stores and every report reads.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::golden::transcript::{JudgeTranscript, ScoredAnswer, TranscriptLine};
use crate::prompt::Message;
use crate::verify::{FailureKind, RuleOutcome};

/// Identifies one request of a run plan.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub(crate) struct TaskKey {
    /// The model's display name.
    pub model: String,
    /// The spec id.
    pub spec: String,
    /// Instance index.
    pub instance: u64,
    /// Sample index.
    pub sample: u32,
}

/// Everything known about one answered (or failed) request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Record {
    /// The model's display name.
    pub model: String,
    /// The spec id.
    pub spec: String,
    /// Instance index.
    pub instance: u64,
    /// Sample index.
    pub sample: u32,
    /// `<spec>/<index>`.
    pub instance_id: String,
    /// The rendered prompt.
    pub messages: Vec<Message>,
    /// The instance variables (for group-by and reports).
    pub vars: Map<String, Value>,
    /// Each rule's expected value.
    pub expected: Map<String, Value>,
    /// The answer and its score: what a golden transcript keeps.
    #[serde(flatten)]
    pub scored: ScoredAnswer,
    /// Each rule's outcome.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<RuleOutcome>,
    /// What failed it: a rule's kind (`no_answer`, `wrong_value`, ...), the
    /// request's (`timeout`, `server_error`, ...) or the episode's (`max_turns`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<FailureKind>,
    /// Wall time of the successful attempt, in milliseconds.
    pub latency_ms: u64,
    /// Set when the answer was one choice of a multi-choice request: the request's usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<crate::provider::SharedUsage>,
    /// HTTP attempts made (retries and re-asks included; 0 when cached).
    pub attempts: u32,
    /// Whether the answer came from the cache.
    #[serde(default)]
    pub cached: bool,
    /// Why earlier attempts were retried or re-asked, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retries: Vec<String>,
    /// HTTP attempts the judge made for this answer (0 when cached or unjudged).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub judge_attempts: u32,
    /// In a pool, the endpoint (base URL) that answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The model the server said answered (the response's `model` field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_model: Option<String>,
    /// The server's `system_fingerprint` with the answer, when it sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_fingerprint: Option<String>,
    /// Of `tokens_in`, those the provider read from its prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_cached: Option<u64>,
    /// What the answer cost; absent when the model has no price (unknown, not free).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
    /// What judging the answer cost; absent when unjudged or the judge has no price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_cost: Option<Cost>,
    /// HTTP attempts the simulated user (`[agent.user]`) made in the episode.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub user_attempts: u32,
    /// What the simulated user's turns cost, apart from the model's; absent
    /// without a user or a price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_cost: Option<Cost>,
}

/// What one answer (or its judging) cost, in the run's currency.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Cost {
    /// Spent: 0 for an answer from the response cache.
    pub amount: f64,
    /// What an answer from the response cache would have cost asked live.
    #[serde(default, skip_serializing_if = "is_zero_amount")]
    pub saved: f64,
    /// Some token count was estimated with the tokenizer: the server reported none.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
}

impl Cost {
    /// Both costs together, estimated when either is.
    pub(crate) fn plus(self, other: Cost) -> Cost {
        Cost {
            amount: self.amount + other.amount,
            saved: self.saved + other.saved,
            estimated: self.estimated || other.estimated,
        }
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_zero_amount(x: &f64) -> bool {
    *x == 0.0
}

impl Record {
    /// Takes `verdict` in: the first scoring rule's answer, pass, score,
    /// the failing rules' details, the first failure and every rule's outcome.
    pub(crate) fn take_verdict(&mut self, verdict: crate::verify::InstanceVerdict) {
        let scoring = || verdict.rules.iter().filter(|r| !r.report_only);
        self.scored.answer = scoring().next().and_then(|r| r.answer.clone());
        self.scored.passed = verdict.passed;
        self.scored.score = verdict.score;
        self.scored.detail = verdict.failure_details();
        self.failure = scoring().find_map(|r| r.verdict.failure);
        self.rules = verdict.rules;
    }

    /// A record of `model` on `spec`'s instance and sample before anything
    /// was asked: no messages, no answer, no rules, nothing spent.
    pub(crate) fn blank(model: &str, spec: &str, instance: u64, sample: u32) -> Record {
        Record {
            model: model.to_owned(),
            spec: spec.to_owned(),
            instance,
            sample,
            instance_id: format!("{spec}/{instance}"),
            messages: Vec::new(),
            vars: Default::default(),
            expected: Default::default(),
            scored: ScoredAnswer::default(),
            rules: Vec::new(),
            failure: None,
            latency_ms: 0,
            shared: None,
            attempts: 0,
            cached: false,
            retries: Vec::new(),
            judge_attempts: 0,
            endpoint: None,
            served_model: None,
            system_fingerprint: None,
            tokens_cached: None,
            cost: None,
            judge_cost: None,
            user_attempts: 0,
            user_cost: None,
        }
    }

    /// The plan key of this record.
    pub(crate) fn key(&self) -> TaskKey {
        TaskKey {
            model: self.model.clone(),
            spec: self.spec.clone(),
            instance: self.instance,
            sample: self.sample,
        }
    }

    /// Whether a usable response was obtained (no request error).
    pub(crate) fn has_response(&self) -> bool {
        self.scored.error.is_none()
    }

    /// The record's line in a golden transcript.
    pub(crate) fn transcript_line(&self) -> TranscriptLine {
        TranscriptLine {
            id: self.instance_id.clone(),
            instance: self.instance,
            sample: self.sample,
            model: self.model.clone(),
            scored: self.scored.clone(),
            judge: self
                .rules
                .iter()
                .filter_map(|rule| {
                    let j = rule.judge.as_ref()?;
                    let transcript = JudgeTranscript {
                        judge: j.judge.clone(),
                        rubric: j.rubric.clone(),
                        responses: j.responses.clone(),
                    };
                    Some((rule.name.clone(), transcript))
                })
                .collect(),
        }
    }

    /// Whether the response was valid: obtained, and every rule could extract an answer.
    pub(crate) fn is_valid(&self) -> bool {
        self.has_response()
            && self.rules.iter().filter(|r| !r.report_only).all(|r| {
                !matches!(
                    r.verdict.failure,
                    Some(
                        FailureKind::NoAnswer
                            | FailureKind::InvalidJson
                            | FailureKind::SchemaMismatch
                    )
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::journal::for_each_record;

    /// Every kind as a journal before the typed vocabulary wrote it.
    const OLD_NAMES: [(&str, FailureKind); 50] = [
        ("no_answer", FailureKind::NoAnswer),
        ("wrong_value", FailureKind::WrongValue),
        ("invalid_json", FailureKind::InvalidJson),
        ("schema_mismatch", FailureKind::SchemaMismatch),
        ("script_error", FailureKind::ScriptError),
        ("runtime_error", FailureKind::RuntimeError),
        ("timeout", FailureKind::Timeout),
        ("resource_limit", FailureKind::ResourceLimit),
        ("sandbox_error", FailureKind::SandboxError),
        ("judge_error", FailureKind::JudgeError),
        ("invalid_tool_arguments", FailureKind::InvalidToolArguments),
        ("wrong_tool", FailureKind::WrongTool),
        ("missing_call", FailureKind::MissingCall),
        ("unexpected_call", FailureKind::UnexpectedCall),
        ("wrong_argument", FailureKind::WrongArgument),
        ("wrong_argument_type", FailureKind::WrongArgumentType),
        ("missing_argument", FailureKind::MissingArgument),
        ("unexpected_argument", FailureKind::UnexpectedArgument),
        ("connection_error", FailureKind::ConnectionError),
        ("rate_limited", FailureKind::RateLimited),
        ("server_error", FailureKind::ServerError),
        ("client_error", FailureKind::ClientError),
        ("malformed_response", FailureKind::MalformedResponse),
        ("not_recorded", FailureKind::NotRecorded),
        ("config_error", FailureKind::ConfigError),
        ("program_error", FailureKind::ProgramError),
        ("response_too_large", FailureKind::ResponseTooLarge),
        ("image_changed", FailureKind::ImageChanged),
        ("generation_error", FailureKind::GenerationError),
        ("max_turns", FailureKind::MaxTurns),
        ("no_end_call", FailureKind::NoEndCall),
        ("too_many_calls", FailureKind::TooManyCalls),
        ("max_calls", FailureKind::MaxCalls),
        ("too_deep", FailureKind::TooDeep),
        ("episode_timeout", FailureKind::EpisodeTimeout),
        ("unfinished_reasoning", FailureKind::UnfinishedReasoning),
        ("batch_failed", FailureKind::BatchFailed),
        ("batch_expired", FailureKind::BatchExpired),
        ("batch_cancelled", FailureKind::BatchCancelled),
        ("no_logprobs", FailureKind::NoLogprobs),
        ("no_prompt_logprobs", FailureKind::NoPromptLogprobs),
        ("user_error", FailureKind::UserError),
        ("mcp_start", FailureKind::McpStart),
        ("mcp_died", FailureKind::McpDied),
        ("mcp_malformed", FailureKind::McpMalformed),
        ("mcp_flood", FailureKind::McpFlood),
        ("mcp_timeout", FailureKind::McpTimeout),
        ("mcp_error", FailureKind::McpError),
        ("wrong_state", FailureKind::WrongState),
        ("not_communicated", FailureKind::NotCommunicated),
    ];

    fn fixture() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/journals/every_failure.jsonl")
    }

    #[test]
    fn an_old_journal_reads_every_kind_and_writes_it_back_alike() {
        let text = std::fs::read_to_string(fixture()).unwrap();
        let mut records = Vec::new();
        for_each_record(&fixture(), |r| records.push(r)).unwrap();
        assert_eq!(records.len(), OLD_NAMES.len());
        for ((line, record), (name, kind)) in text.lines().zip(&records).zip(OLD_NAMES) {
            assert_eq!(record.failure, Some(kind), "{line}");
            let old: Value = serde_json::from_str(line).unwrap();
            let new = serde_json::to_value(record).unwrap();
            assert_eq!(
                (&old["failure"], &new["failure"]),
                (&name.into(), &name.into())
            );
            assert_eq!(old["rules"], new["rules"], "{line}");
            // Reasoning reads back and writes alike; a line without it gets no key.
            assert_eq!(old.get("reasoning"), new.get("reasoning"), "{line}");
            assert_eq!(old.get("tokens_reasoning"), new.get("tokens_reasoning"));
        }
        let mut seen: Vec<FailureKind> = records.iter().filter_map(|r| r.failure).collect();
        seen.sort();
        let mut all = FailureKind::ALL.to_vec();
        all.sort();
        assert_eq!(seen, all, "the fixture holds every kind once");
    }

    #[test]
    fn a_kind_this_build_does_not_know_fails_at_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        let text = std::fs::read_to_string(fixture()).unwrap();
        let mut lines: Vec<&str> = text.lines().take(2).collect();
        let unknown = lines[1].replace("\"wrong_value\"", "\"not_started\"");
        lines[1] = &unknown;
        lines.push(lines[0]);
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let e = for_each_record(&path, |_| ()).unwrap_err().to_string();
        assert!(e.contains("journal.jsonl, line 2"), "{e}");
        assert!(e.contains("not_started"), "{e}");
    }
}
