//! Golden transcripts: `golden/<spec>/<model>.jsonl`, one line per instance
//! and sample with the response, extracted answer, verdict and score.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::departure::line_changes;
use super::fields::FieldChange;
use crate::text::file_stem;

/// What a model answered to one instance and sample, and how it scored: the
/// part of a run's record that golden transcripts keep.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ScoredAnswer {
    /// The response, when the request succeeded.
    pub response: Option<String>,
    /// The first scoring rule's extracted answer.
    pub answer: Option<String>,
    /// Whether the instance passed.
    pub passed: bool,
    /// The instance score (0 on request errors).
    pub score: f64,
    /// Failure details, one per failing rule.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
    /// Prompt tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_in: Option<u64>,
    /// Generated tokens (unset when the answer shared a request with other samples).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_out: Option<u64>,
    /// What the model reasoned before the response, kept apart from it (the
    /// last turn's, in an episode: earlier turns keep theirs in `trajectory`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<crate::prompt::Reasoning>,
    /// Of the generated tokens, those the server counted as reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_reasoning: Option<u64>,
    /// The request error, when no response was obtained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// With tools: the messages the answer added after the prompt, each
    /// assistant turn with its calls and each tool result (whole episodes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trajectory: Vec<crate::prompt::Message>,
    /// With `[agent]`: the tools' state when the episode ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<serde_json::Value>,
    /// The log-probabilities the answer carried (`logprobs = true`,
    /// `first_token`), or its scored continuations (`loglikelihood`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Box<crate::prompt::Logprobs>>,
    /// With `[choices]`: the pick, and each choice's probability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choice: Option<crate::prompt::ChoiceOutcome>,
}

/// One recorded answer: a line of a golden transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TranscriptLine {
    /// Instance id.
    pub id: String,
    /// Instance index.
    pub instance: u64,
    /// Sample index.
    pub sample: u32,
    /// The model's display name.
    pub model: String,
    /// The answer and its score.
    #[serde(flatten)]
    pub scored: ScoredAnswer,
    /// Judge rules' recorded judgements by rule name: replay answers the judge with them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub judge: BTreeMap<String, JudgeTranscript>,
}

#[cfg(test)]
impl TranscriptLine {
    /// Model `m`'s first sample of instance `<spec>/<instance>`: `response`,
    /// scored `score`, with `detail` when it did not pass.
    pub(crate) fn sample(
        spec: &str,
        instance: u64,
        response: &str,
        (passed, score): (bool, f64),
        detail: &str,
    ) -> TranscriptLine {
        let detail = if passed { "" } else { detail };
        TranscriptLine {
            id: format!("{spec}/{instance}"),
            instance,
            sample: 0,
            model: "m".into(),
            scored: ScoredAnswer {
                response: Some(response.into()),
                passed,
                score,
                detail: detail.into(),
                ..ScoredAnswer::default()
            },
            judge: BTreeMap::new(),
        }
    }
}

/// What a judge said about one answer, as much as replay needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct JudgeTranscript {
    /// The judge model's display name.
    pub judge: String,
    /// The rubric hash.
    pub rubric: String,
    /// Each judge sample's raw response (`null` when its request failed).
    pub responses: Vec<Option<String>>,
}

/// Where a model's transcript for a spec lives.
pub(crate) fn transcript_path(golden_dir: &Path, spec: &str, model: &str) -> PathBuf {
    golden_dir
        .join(spec)
        .join(format!("{}.jsonl", file_stem(model)))
}

/// Reads a transcript file.
pub(crate) fn read_transcript(path: &Path) -> io::Result<Vec<TranscriptLine>> {
    let text = crate::files::read_text(path, crate::files::FileKind::Golden)?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| {
                io::Error::new(io::ErrorKind::InvalidData, format!("line {}: {e}", i + 1))
            })
        })
        .collect()
}

/// Renders transcript lines as the file's text, sorted by instance and sample.
pub(crate) fn render_transcript(mut lines: Vec<TranscriptLine>) -> String {
    lines.sort_by_key(|l| (l.instance, l.sample));
    lines
        .iter()
        .map(|l| serde_json::to_string(l).expect("transcripts serialize") + "\n")
        .collect()
}

/// Models with a recorded transcript for `spec`.
pub(crate) fn recorded_models(golden_dir: &Path, spec: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(golden_dir.join(spec)) else {
        return Vec::new();
    };
    let mut models: Vec<String> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .filter(|p| p.file_stem().is_some_and(|s| s != "instances"))
        .filter_map(|p| read_transcript(&p).ok()?.first().map(|l| l.model.clone()))
        .collect();
    models.sort();
    models.dedup();
    models
}

/// What changed between a golden transcript and a new one.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct TranscriptDiff {
    /// No golden transcript existed.
    pub new: bool,
    /// Instances that passed before and fail now: (id, new detail).
    pub regressions: Vec<(String, String)>,
    /// Instances that failed before and pass now.
    pub fixes: Vec<String>,
    /// Score changes without a verdict flip: (id, old, new).
    pub score_changes: Vec<(String, f64, f64)>,
    /// Response text changes: (id, old, new).
    pub response_changes: Vec<(String, String, String)>,
    /// Instances only in one of the two: (id, in golden?).
    pub membership: Vec<(String, bool)>,
    /// Every field that changed, per instance in both: (id, changes).
    pub fields: Vec<(String, Vec<FieldChange>)>,
}

impl TranscriptDiff {
    /// Whether anything differs (a missing golden transcript does not count).
    pub(crate) fn differs(&self) -> bool {
        !(self.regressions.is_empty()
            && self.fixes.is_empty()
            && self.score_changes.is_empty()
            && self.response_changes.is_empty()
            && self.membership.is_empty())
    }
}

fn label(l: &TranscriptLine) -> String {
    if l.sample == 0 {
        l.id.clone()
    } else {
        format!("{}#{}", l.id, l.sample)
    }
}

/// Compares a golden transcript (None when absent) with new lines.
pub(crate) fn compare_transcripts(
    golden: Option<&[TranscriptLine]>,
    new: &[TranscriptLine],
) -> TranscriptDiff {
    let Some(golden) = golden else {
        return TranscriptDiff {
            new: true,
            ..TranscriptDiff::default()
        };
    };
    let mut diff = TranscriptDiff::default();
    let old: std::collections::BTreeMap<_, _> =
        golden.iter().map(|l| ((l.instance, l.sample), l)).collect();
    let fresh: std::collections::BTreeMap<_, _> =
        new.iter().map(|l| ((l.instance, l.sample), l)).collect();
    for (key, n) in &fresh {
        let Some(o) = old.get(key) else {
            diff.membership.push((label(n), false));
            continue;
        };
        match (o.scored.passed, n.scored.passed) {
            (true, false) => diff.regressions.push((
                label(n),
                n.scored
                    .error
                    .clone()
                    .unwrap_or_else(|| n.scored.detail.clone()),
            )),
            (false, true) => diff.fixes.push(label(n)),
            _ if (o.scored.score - n.scored.score).abs() > 1e-9 => {
                diff.score_changes
                    .push((label(n), o.scored.score, n.scored.score))
            }
            _ => {}
        }
        if o != n {
            let value =
                |l: &TranscriptLine| serde_json::to_value(l).expect("transcripts serialize");
            diff.fields
                .push((label(n), line_changes(&value(o), &value(n))));
        }
        if o.scored.response != n.scored.response {
            diff.response_changes.push((
                label(n),
                o.scored.response.clone().unwrap_or_default(),
                n.scored.response.clone().unwrap_or_default(),
            ));
        }
    }
    for (key, o) in &old {
        if !fresh.contains_key(key) {
            diff.membership.push((label(o), true));
        }
    }
    diff
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(instance: u64, passed: bool, score: f64, response: &str) -> TranscriptLine {
        TranscriptLine::sample("s", instance, response, (passed, score), "wrong")
    }

    #[test]
    fn flips_scores_and_responses_are_reported() {
        let golden = vec![
            line(0, true, 1.0, "a"),
            line(1, false, 0.0, "b"),
            line(2, false, 0.2, "c"),
            line(3, true, 1.0, "d"),
        ];
        let new = vec![
            line(0, false, 0.0, "a2"),
            line(1, true, 1.0, "b"),
            line(2, false, 0.5, "c"),
            line(4, true, 1.0, "e"),
        ];
        let d = compare_transcripts(Some(&golden), &new);
        assert_eq!(
            d.regressions,
            vec![("s/0".to_string(), "wrong".to_string())]
        );
        assert_eq!(d.fixes, vec!["s/1".to_string()]);
        assert_eq!(d.score_changes, vec![("s/2".to_string(), 0.2, 0.5)]);
        assert_eq!(d.response_changes.len(), 1);
        let fields: Vec<(&str, Vec<String>)> = d
            .fields
            .iter()
            .map(|(id, f)| (id.as_str(), f.iter().map(|c| c.render(false)).collect()))
            .collect();
        assert_eq!(
            fields,
            vec![
                (
                    "s/0",
                    vec![
                        "detail: (absent) → \"wrong\"".to_string(),
                        "passed: true → false".to_string(),
                        "response: \"a\" → \"a2\"".to_string(),
                        "score: 1.0 → 0.0".to_string(),
                    ]
                ),
                (
                    "s/1",
                    vec![
                        "detail: \"wrong\" → (absent)".to_string(),
                        "passed: false → true".to_string(),
                        "score: 0.0 → 1.0".to_string(),
                    ]
                ),
                ("s/2", vec!["score: 0.2 → 0.5".to_string()]),
            ]
        );
        assert_eq!(
            d.membership,
            vec![("s/4".to_string(), false), ("s/3".to_string(), true)]
        );
        assert!(d.differs());
        assert!(!compare_transcripts(Some(&golden), &golden).differs());
        assert!(compare_transcripts(None, &new).new);
    }
}
