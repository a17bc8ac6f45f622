//! The `replay` provider: answers from recorded golden transcripts
//! (`golden/<spec>/<model>.jsonl`), so a fresh clone re-verifies offline.
//! A line with a trajectory answers per turn: turn k gets the k-th
//! assistant message of it, its text and its calls.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{Completion, ProviderError, RequestKey, Usage};
use crate::golden::transcript::{TranscriptLine, read_transcript, transcript_path};
use crate::prompt::Role;

/// One spec's recorded lines by (instance, sample).
type SpecLines = HashMap<(u64, u32), TranscriptLine>;

/// Answers recorded for one model, loaded per spec on first use.
pub(crate) struct ReplayProvider {
    golden_dir: PathBuf,
    model: String,
    loaded: Mutex<HashMap<String, SpecLines>>,
}

impl ReplayProvider {
    /// A replay of `model`'s transcripts under `golden_dir`.
    pub(crate) fn new(golden_dir: &Path, model: &str) -> ReplayProvider {
        ReplayProvider {
            golden_dir: golden_dir.to_path_buf(),
            model: model.to_owned(),
            loaded: Mutex::new(HashMap::new()),
        }
    }

    /// The recorded answer for `key`.
    pub(crate) fn complete(&self, key: RequestKey<'_>) -> Result<Completion, ProviderError> {
        self.with_line(key, |line| match key.judge {
            Some((rule, k)) => Self::judge_response(line, rule, k),
            None if key.user => Self::user_response(line, key.turn),
            None => Self::turn_response(line, key.turn),
        })?
    }

    /// The episode `key` names as recorded: its messages after the prompt
    /// (the tools' results among them) and the state it ended with, so a
    /// replayed episode needs none of its tool servers.
    pub(crate) fn recorded_episode(
        &self,
        key: RequestKey<'_>,
    ) -> Result<(Vec<crate::prompt::Message>, Option<serde_json::Value>), ProviderError> {
        self.with_line(key, |line| {
            (line.scored.trajectory.clone(), line.scored.state.clone())
        })
    }

    /// `f` of the transcript line of `key`'s instance and sample, its spec's
    /// transcript read once.
    fn with_line<T>(
        &self,
        key: RequestKey<'_>,
        f: impl FnOnce(&TranscriptLine) -> T,
    ) -> Result<T, ProviderError> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if !loaded.contains_key(key.spec) {
            let path = transcript_path(&self.golden_dir, key.spec, &self.model);
            let lines = read_transcript(&path)
                .map_err(|e| ProviderError::NotRecorded(format!("{}: {e}", path.display())))?;
            let by_key = lines
                .into_iter()
                .map(|l| ((l.instance, l.sample), l))
                .collect();
            loaded.insert(key.spec.to_owned(), by_key);
        }
        let line = loaded[key.spec]
            .get(&(key.instance, key.sample))
            .ok_or_else(|| {
                ProviderError::NotRecorded(format!(
                    "{}/{} sample {} is not in the transcript of `{}`",
                    key.spec, key.instance, key.sample, self.model
                ))
            })?;
        Ok(f(line))
    }

    /// The simulated user's recorded turn `turn` (0-based) of `line`'s
    /// episode: the trajectory's user messages in order (the prompt's own
    /// opening is not in the trajectory).
    fn user_response(line: &TranscriptLine, turn: u32) -> Result<Completion, ProviderError> {
        let said = line
            .scored
            .trajectory
            .iter()
            .filter(|m| m.role == Role::User)
            .nth(turn as usize)
            .ok_or_else(|| {
                ProviderError::NotRecorded(format!(
                    "{} sample {} recorded no user turn {}",
                    line.id,
                    line.sample,
                    turn + 1
                ))
            })?;
        Ok(text_only(said.content.clone()))
    }

    /// The recorded answer of turn `turn` (0-based) of `line`'s episode.
    fn turn_response(line: &TranscriptLine, turn: u32) -> Result<Completion, ProviderError> {
        let scored = &line.scored;
        let failed = || {
            ProviderError::NotRecorded(format!(
                "the recorded run failed here: {}",
                scored.error.as_deref().unwrap_or("unknown error")
            ))
        };
        let recorded = |text: &str, reasoning: &Option<_>, calls, usage| Completion {
            reasoning: Option::clone(reasoning),
            tool_calls: calls,
            ..Completion::new(text, usage)
        };
        let usage = Usage {
            tokens_in: scored.tokens_in,
            tokens_out: scored.tokens_out,
            tokens_cached: None,
            tokens_reasoning: scored.tokens_reasoning,
        };
        let turns: Vec<_> = scored
            .trajectory
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .collect();
        if turns.is_empty() {
            return match (&scored.response, turn) {
                (Some(text), 0) => Ok(Completion {
                    logprobs: scored.logprobs.clone(),
                    ..recorded(text, &scored.reasoning, Vec::new(), usage)
                }),
                (None, 0) => Err(failed()),
                _ => Err(ProviderError::NotRecorded(format!(
                    "{} sample {} recorded a single answer, and this episode asks for turn {}",
                    line.id,
                    line.sample,
                    turn + 1
                ))),
            };
        }
        let Some(message) = turns.get(turn as usize) else {
            if scored.error.is_some() {
                return Err(failed());
            }
            return Err(ProviderError::NotRecorded(format!(
                "{} sample {} recorded {} turns, and this episode asks for turn {}",
                line.id,
                line.sample,
                turns.len(),
                turn + 1
            )));
        };
        // The transcript keeps one token count per episode, not per turn, and
        // the runner adds its turns up: so the count goes on one turn, the
        // last, which is when the recorded episode had spent all of it (a
        // replay that ends sooner did not).
        let usage = if turn as usize + 1 == turns.len() {
            usage
        } else {
            Usage::default()
        };
        Ok(recorded(
            &message.content,
            &message.reasoning,
            message.tool_calls.clone(),
            usage,
        ))
    }

    /// The judge that graded rule `rule` of `key`'s recorded answer.
    pub(crate) fn recorded_judge(&self, key: RequestKey<'_>, rule: &str) -> Option<String> {
        let loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        let line = loaded.get(key.spec)?.get(&(key.instance, key.sample))?;
        line.judge.get(rule).map(|j| j.judge.clone())
    }

    fn judge_response(
        line: &TranscriptLine,
        rule: &str,
        k: u32,
    ) -> Result<Completion, ProviderError> {
        let recorded = line.judge.get(rule).ok_or_else(|| {
            ProviderError::NotRecorded(format!(
                "{} has no recorded judgement of rule `{rule}`",
                line.id
            ))
        })?;
        match recorded.responses.get(k as usize) {
            Some(Some(text)) => Ok(text_only(text.clone())),
            Some(None) => Err(ProviderError::NotRecorded(format!(
                "the recorded judge request of {} failed here",
                line.id
            ))),
            None => Err(ProviderError::NotRecorded(format!(
                "{} has {} recorded judge samples of rule `{rule}`, not {}",
                line.id,
                recorded.responses.len(),
                k + 1
            ))),
        }
    }
}

/// A recorded answer of text alone, counting no tokens (a judge's, a user's).
fn text_only(text: String) -> Completion {
    Completion {
        text,
        ..Completion::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A replay of model `m` whose spec `s` recorded these lines (instance = position).
    fn replay(lines: &[serde_json::Value]) -> (tempfile::TempDir, ReplayProvider) {
        let dir = tempfile::tempdir().unwrap();
        let path = transcript_path(dir.path(), "s", "m");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&path, text).unwrap();
        let provider = ReplayProvider::new(dir.path(), "m");
        (dir, provider)
    }

    fn line(instance: u64, extra: serde_json::Value) -> serde_json::Value {
        let mut line = json!({"id": format!("s/{instance}"), "instance": instance, "sample": 0,
            "model": "m", "passed": true, "score": 1.0, "tokens_in": 30, "tokens_out": 9});
        line.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        line
    }

    fn key(instance: u64, turn: u32) -> RequestKey<'static> {
        RequestKey {
            spec: "s",
            instance,
            sample: 0,
            judge: None,
            turn,
            user: false,
        }
    }

    #[test]
    fn an_episode_answers_turn_by_turn_with_its_calls() {
        let call =
            |id: &str, n: u64| json!({"id": id, "name": "math.factorial", "arguments": {"n": n}});
        let trajectory = json!([
            {"role": "assistant", "content": "", "tool_calls": [call("c1", 5)]},
            {"role": "tool", "content": "120", "tool_call_id": "c1", "tool_name": "math.factorial"},
            {"role": "assistant", "content": "Сначала 6!", "tool_calls": [call("c2", 6), call("c3", 7)]},
            {"role": "tool", "content": "720", "tool_call_id": "c2", "tool_name": "math.factorial"},
            {"role": "tool", "content": "5040", "tool_call_id": "c3", "tool_name": "math.factorial"},
            {"role": "assistant", "content": "Ответ: 5040"}
        ]);
        let (_dir, replay) = replay(&[line(
            0,
            json!({"response": "Ответ: 5040", "trajectory": trajectory}),
        )]);
        let turns: Vec<Completion> = (0..3)
            .map(|t| replay.complete(key(0, t)).unwrap())
            .collect();
        assert_eq!(turns[0].text, "");
        assert_eq!(turns[0].tool_calls.len(), 1);
        assert_eq!(turns[0].tool_calls[0].name, "math.factorial");
        assert_eq!(turns[0].tool_calls[0].arguments, json!({"n": 5}));
        assert_eq!(turns[1].text, "Сначала 6!");
        let ids: Vec<&str> = turns[1].tool_calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["c2", "c3"]);
        assert_eq!(
            (turns[2].text.as_str(), turns[2].tool_calls.len()),
            ("Ответ: 5040", 0)
        );
        // The episode's tokens once, on its last turn: the turns add up to the record's.
        let usage: Vec<(Option<u64>, Option<u64>)> = turns
            .iter()
            .map(|c| (c.usage.tokens_in, c.usage.tokens_out))
            .collect();
        assert_eq!(usage, [(None, None), (None, None), (Some(30), Some(9))]);
        let beyond = replay.complete(key(0, 3)).unwrap_err();
        assert_eq!(beyond.kind(), crate::failure::FailureKind::NotRecorded);
        assert!(
            beyond.to_string().contains("recorded 3 turns")
                && beyond.to_string().contains("turn 4"),
            "{beyond}"
        );
    }

    #[test]
    fn a_single_answer_is_turn_zero_only() {
        let single_call = json!([{"role": "assistant", "content": "",
            "tool_calls": [{"id": "c", "name": "f", "arguments": "{bad", "invalid": "EOF"}]}]);
        let (_dir, replay) = replay(&[
            line(0, json!({"response": "42"})),
            line(1, json!({"response": "", "trajectory": single_call})),
            line(2, json!({"response": null, "error": "HTTP 500: boom"})),
        ]);
        let text = replay.complete(key(0, 0)).unwrap();
        assert_eq!((text.text.as_str(), text.usage.tokens_out), ("42", Some(9)));
        assert!(text.tool_calls.is_empty());
        let second = replay.complete(key(0, 1)).unwrap_err();
        assert!(
            second.to_string().contains("recorded a single answer")
                && second.to_string().contains("turn 2"),
            "{second}"
        );
        let call = replay.complete(key(1, 0)).unwrap();
        assert_eq!(call.tool_calls[0].arguments, json!("{bad"));
        assert_eq!(call.tool_calls[0].invalid.as_deref(), Some("EOF"));
        assert_eq!(call.usage.tokens_in, Some(30), "one turn is the last turn");
        let failed = replay.complete(key(2, 0)).unwrap_err();
        assert!(failed.to_string().contains("HTTP 500: boom"), "{failed}");
    }

    #[test]
    fn an_episode_that_failed_midway_says_so_past_its_turns() {
        let trajectory = json!([{"role": "assistant", "content": "",
            "tool_calls": [{"id": "c", "name": "f", "arguments": {}}]},
            {"role": "tool", "content": "ok", "tool_call_id": "c", "tool_name": "f"}]);
        let (_dir, replay) = replay(&[line(
            0,
            json!({"response": null, "error": "timed out after 5s", "trajectory": trajectory}),
        )]);
        assert_eq!(replay.complete(key(0, 0)).unwrap().tool_calls.len(), 1);
        let err = replay.complete(key(0, 1)).unwrap_err();
        assert!(err.to_string().contains("timed out after 5s"), "{err}");
    }

    #[test]
    fn a_conversation_answers_each_side_from_its_own_turns() {
        let trajectory = json!([
            {"role": "assistant", "content": "Номер заказа?"},
            {"role": "user", "content": "A-1002"},
            {"role": "assistant", "content": "Отменён."},
            {"role": "user", "content": "###STOP###"}
        ]);
        let (_dir, replay) = replay(&[line(
            0,
            json!({"response": "Отменён.", "trajectory": trajectory}),
        )]);
        let user = |turn| RequestKey {
            user: true,
            ..key(0, turn)
        };
        let said: Vec<String> = (0..2)
            .map(|t| replay.complete(user(t)).unwrap().text)
            .collect();
        assert_eq!(said, ["A-1002", "###STOP###"]);
        assert_eq!(replay.complete(key(0, 1)).unwrap().text, "Отменён.");
        let err = replay.complete(user(2)).unwrap_err().to_string();
        assert!(err.contains("recorded no user turn 3"), "{err}");
    }
}
