//! One row of the HTML report's instance list per record, written as it is read,
//! with what the drill-down shows: prompt (once per instance), response, expected
//! value, extracted answer, each rule's verdict and the judge's reasoning, and the
//! differences against the golden transcript.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::golden::transcript::{ScoredAnswer, TranscriptLine, read_transcript, transcript_path};
use crate::metrics::expected_output;
use crate::run::record::Record;
use crate::text::{clip, one_line};
use crate::verify::FailureKind;

use super::super::SpecInfo;
use super::super::calls::answer_text;
use super::episode::{self, Episode, TEXT_CHARS};
use super::thumbs::{PromptRow, prompt_row};

/// Characters of one judge reasoning or rule detail kept.
const NOTE_CHARS: usize = 4_000;
/// Characters of an episode's one-line text (the list shows 200).
const LINE_CHARS: usize = 1_000;
/// Responses longer than this are shown whole on both sides instead of diffed,
/// so the diff stays cheap and its result does not depend on a time limit.
const DIFF_CHARS: usize = 4_000;

/// Flags of a row, a bit each.
pub(super) const FLAKY: u8 = 1;
/// The instance flipped between compared runs.
pub(super) const RUN_FLIP: u8 = 2;

/// One record as the page sees it; short keys keep a 10,000-row page small.
#[derive(Serialize)]
pub(super) struct Row<'a> {
    /// Model index into the page's models.
    pub m: usize,
    /// Spec index into the page's specs.
    pub s: usize,
    /// Instance index.
    pub i: u64,
    /// Sample.
    pub k: u32,
    /// Passed.
    pub ok: bool,
    /// Score.
    pub sc: f64,
    /// Failure label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub f: Option<&'a str>,
    /// Extracted answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub a: Option<String>,
    /// Response.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub r: Option<String>,
    /// Expected value as JSON text.
    pub x: String,
    /// Failure details.
    #[serde(skip_serializing_if = "str::is_empty")]
    pub d: String,
    /// Request error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub e: Option<String>,
    /// Latency in ms when timed now (not cached or replayed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l: Option<u64>,
    /// Output tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<u64>,
    /// What the model reasoned before the response, shown folded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub th: Option<String>,
    /// Of the output tokens, those the server counted as reasoning.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tt: Option<u64>,
    /// The prompt, `[role, content]` per message (`[role, content, thumbs]`
    /// with images): on the first row of an instance only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p: Option<Vec<PromptRow>>,
    /// `group_by` values, for specs that group.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gv: Option<BTreeMap<&'a str, String>>,
    /// Rules' outcomes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ru: Vec<RuleRow>,
    /// [`FLAKY`] | [`RUN_FLIP`].
    #[serde(skip_serializing_if = "is_zero")]
    pub fl: u8,
    /// Against the golden transcript, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub g: Option<GoldenRow>,
    /// With tools: every step as one line of text, for the list and the search.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rt: Option<String>,
    /// With tools: the episode's steps, final state, tools and failed arguments.
    #[serde(flatten)]
    pub episode: Episode,
    /// With `[choices]`: the pick, the right one, each choice's label,
    /// text, probability and log-likelihood.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ch: Option<&'a crate::prompt::ChoiceOutcome>,
    /// Token log-probabilities: the generated tokens', or each scored
    /// continuation's, at most [`SHADED_TOKENS`] a sequence.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lp: Vec<&'a [crate::prompt::TokenLogprob]>,
}

/// Tokens of one sequence the drill-down shades; the journal keeps them all.
const SHADED_TOKENS: usize = 256;

/// The token sequences of `r`'s log-probabilities, each cut to [`SHADED_TOKENS`].
fn shaded(r: &Record) -> Vec<&[crate::prompt::TokenLogprob]> {
    let Some(lp) = r.scored.logprobs.as_deref() else {
        return Vec::new();
    };
    let cut = |t: &'_ [crate::prompt::TokenLogprob]| t.len().min(SHADED_TOKENS);
    let mut out: Vec<&[crate::prompt::TokenLogprob]> = Vec::new();
    if !lp.tokens.is_empty() {
        out.push(&lp.tokens[..cut(&lp.tokens)]);
    }
    out.extend(lp.continuations.iter().map(|c| &c.tokens[..cut(&c.tokens)]));
    out
}

fn is_zero(n: &u8) -> bool {
    *n == 0
}

/// One rule's outcome.
#[derive(Serialize)]
pub(super) struct RuleRow {
    /// Rule name.
    pub n: String,
    /// Passed.
    pub ok: bool,
    /// Score.
    pub sc: f64,
    /// Detail.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub d: String,
    /// The rule's extracted answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub a: Option<String>,
    /// Reported beside the verdict, outside it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ro: bool,
    /// For judge rules: (judge, level, sampled levels, reasoning).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub j: Option<JudgeRow>,
}

/// A judge's verdict: (judge, level, sampled levels, reasoning per sample).
pub(super) type JudgeRow = (String, Option<f64>, Vec<i64>, Vec<String>);

/// A record against its golden transcript line.
#[derive(Serialize)]
pub(super) struct GoldenRow {
    /// The golden verdict.
    pub ok: bool,
    /// The golden score.
    pub sc: f64,
    /// The response differs: `[op, text]` with op `=`, `-` (golden only), `+` (new only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<Vec<(char, String)>>,
}

/// What one (model, spec) showed against its golden transcript.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct GoldenCell {
    /// Shown model name.
    pub model: String,
    /// Spec id.
    pub spec: String,
    /// Records that have a golden line.
    pub compared: u64,
    /// Records with no golden line.
    pub missing: u64,
    /// Passed in the golden transcript, fail now.
    pub regressions: u64,
    /// Failed in the golden transcript, pass now.
    pub fixes: u64,
    /// Responses that differ.
    pub changed: u64,
}

/// Reads golden transcripts one (model, spec) at a time, as the records arrive in
/// that order, so only one transcript is in memory.
pub(super) struct Golden<'a> {
    dir: Option<&'a Path>,
    current: Option<(String, String)>,
    lines: HashMap<(u64, u32), TranscriptLine>,
    /// Per (model, spec) with a golden transcript.
    pub cells: Vec<GoldenCell>,
}

impl<'a> Golden<'a> {
    /// Golden transcripts under `dir`, when given.
    pub(super) fn new(dir: Option<&'a Path>) -> Golden<'a> {
        Golden {
            dir,
            current: None,
            lines: HashMap::new(),
            cells: Vec::new(),
        }
    }

    /// `r` (shown as `shown`, named `model` in its run) against its golden line.
    pub(super) fn check(&mut self, shown: &str, model: &str, r: &Record) -> Option<GoldenRow> {
        let dir = self.dir?;
        let key = (shown.to_owned(), r.spec.clone());
        if self.current.as_ref() != Some(&key) {
            let path = transcript_path(dir, &r.spec, model);
            let lines = read_transcript(&path).unwrap_or_default();
            if !lines.is_empty() {
                self.cells.push(GoldenCell {
                    model: shown.to_owned(),
                    spec: r.spec.clone(),
                    ..GoldenCell::default()
                });
            }
            self.lines = lines
                .into_iter()
                .map(|l| ((l.instance, l.sample), l))
                .collect();
            self.current = Some(key);
        }
        if self.lines.is_empty() {
            return None;
        }
        let cell = self.cells.last_mut()?;
        let Some(old) = self.lines.get(&(r.instance, r.sample)) else {
            cell.missing += 1;
            return None;
        };
        cell.compared += 1;
        match (old.scored.passed, r.scored.passed) {
            (true, false) => cell.regressions += 1,
            (false, true) => cell.fixes += 1,
            _ => {}
        }
        let (before, after) = (answered(&old.scored), answered(&r.scored));
        let diff = (before != after).then(|| {
            cell.changed += 1;
            diff(&before, &after)
        });
        Some(GoldenRow {
            ok: old.scored.passed,
            sc: old.scored.score,
            diff,
        })
    }
}

/// What an answer shows: its response, with tools every step of it.
fn answered(a: &ScoredAnswer) -> String {
    answer_text(a.response.as_deref(), &a.trajectory).unwrap_or_default()
}

/// A word diff of two responses, or both whole when either is long.
fn diff(before: &str, after: &str) -> Vec<(char, String)> {
    if before.chars().count() > DIFF_CHARS || after.chars().count() > DIFF_CHARS {
        return vec![
            ('-', clip(before, TEXT_CHARS)),
            ('+', clip(after, TEXT_CHARS)),
        ];
    }
    let mut ops: Vec<(char, String)> = Vec::new();
    for change in similar::TextDiff::from_words(before, after).iter_all_changes() {
        let op = match change.tag() {
            similar::ChangeTag::Equal => '=',
            similar::ChangeTag::Delete => '-',
            similar::ChangeTag::Insert => '+',
        };
        match ops.last_mut() {
            Some((last, text)) if *last == op => text.push_str(change.value()),
            _ => ops.push((op, change.value().to_owned())),
        }
    }
    ops
}

/// The row of `r`, its prompt included when its instance is `new` to the page.
pub(super) fn row<'a>(
    r: &'a Record,
    (m, s): (usize, usize),
    spec: &'a SpecInfo,
    new: bool,
    flags: u8,
    golden: Option<GoldenRow>,
) -> Row<'a> {
    let text = |t: &str| clip(t, TEXT_CHARS);
    let note = |t: &str| clip(t, NOTE_CHARS);
    let prompt = new.then(|| {
        r.messages
            .iter()
            .map(|msg| {
                let role = serde_json::to_value(msg.role)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                prompt_row(msg, role, text(&msg.content), spec.dir.as_deref())
            })
            .collect()
    });
    let group_by = &spec.group_by;
    let groups = (!group_by.is_empty()).then(|| {
        group_by
            .iter()
            .map(|var| (var.as_str(), crate::metrics::group_value(r, var)))
            .collect()
    });
    let steps = answer_text(r.scored.response.as_deref(), &r.scored.trajectory)
        .filter(|_| !r.scored.trajectory.is_empty());
    let expected = match expected_output(r) {
        Value::Null => String::new(),
        v => text(&v.to_string()),
    };
    Row {
        m,
        s,
        i: r.instance,
        k: r.sample,
        ok: r.scored.passed,
        sc: r.scored.score,
        f: r.failure.map(FailureKind::name),
        a: r.scored.answer.as_deref().map(text),
        r: r.scored.response.as_deref().map(text),
        x: expected,
        d: note(&r.scored.detail),
        e: r.scored.error.as_deref().map(note),
        l: crate::metrics::timed(r).then_some(r.latency_ms),
        to: r.scored.tokens_out,
        th: r.scored.reasoning.as_ref().map(|t| text(&t.text)),
        tt: r.scored.tokens_reasoning,
        p: prompt,
        gv: groups,
        ru: r
            .rules
            .iter()
            .map(|rule| RuleRow {
                n: rule.name.clone(),
                ok: rule.verdict.passed,
                sc: rule.verdict.score,
                d: note(&rule.verdict.detail),
                a: rule.answer.as_deref().map(note),
                ro: rule.report_only,
                j: rule.judge.as_ref().map(|j| {
                    let reasoning = j.reasoning.iter().map(|t| note(t)).collect();
                    (j.judge.clone(), j.level, j.levels.clone(), reasoning)
                }),
            })
            .collect(),
        fl: flags,
        g: golden,
        rt: steps.map(|t| one_line(&t, LINE_CHARS)),
        episode: episode::of(r),
        ch: r.scored.choice.as_ref(),
        lp: shaded(r),
    }
}
