//! The `replay` provider: answers from recorded golden transcripts
//! (`golden/<spec>/<model>.jsonl`), so a fresh clone re-verifies offline.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{Completion, ProviderError, RequestKey, Usage};
use crate::golden::transcript::{TranscriptLine, read_transcript, transcript_path};

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
        if let Some((rule, k)) = key.judge {
            return Self::judge_response(line, rule, k);
        }
        match &line.scored.response {
            Some(text) => Ok(Completion {
                text: text.clone(),
                usage: Usage {
                    tokens_in: line.scored.tokens_in,
                    tokens_out: line.scored.tokens_out,
                    tokens_cached: None,
                },
                finish_reason: None,
                shared: None,
                served: None,
                tool_calls: Vec::new(),
            }),
            None => Err(ProviderError::NotRecorded(format!(
                "the recorded run failed here: {}",
                line.scored.error.as_deref().unwrap_or("unknown error")
            ))),
        }
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
            Some(Some(text)) => Ok(Completion {
                text: text.clone(),
                usage: Usage::default(),
                finish_reason: None,
                shared: None,
                served: None,
                tool_calls: Vec::new(),
            }),
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
