//! Building one `[[verify]]` table: the rule its `rule` key names (from the
//! registry in `verify/mod.rs`), its keys checked against the ones that rule
//! reads, its extraction and its common keys.

use super::kind::{Common, Entry, common_keys};
use super::{BuildContext, RULES, Reads, Rule};
use crate::error::{Diagnostic, ErrorKind, did_you_mean};
use crate::extract::{ExtractError, Extractor};
use crate::format::key_path;

/// The largest rule `weight`.
const MAX_WEIGHT: f64 = 1_000_000.0;
use crate::format::locate::SourceMap;
use crate::format::{ExtractDef, ExtractKind};

/// The names of every rule, for documentation and hints.
pub(crate) fn rule_names() -> impl Iterator<Item = &'static str> {
    RULES.iter().map(|r| r.name)
}

pub(super) fn build_one(cx: &BuildContext) -> Result<CompiledRule, Vec<Diagnostic>> {
    let path = key_path!["verify", cx.index];
    let common: Common = cx.map.read_table(path, &[]).map_err(|e| vec![e])?;
    let Some(kind) = RULES.iter().find(|k| k.name == common.rule) else {
        let mut d = cx.error(
            ErrorKind::Invalid,
            "rule",
            format!("unknown rule `{}`", common.rule),
        );
        d = match did_you_mean(&common.rule, rule_names()) {
            Some(s) => d.with_help(format!("did you mean `{s}`?")),
            None => d.with_help(format!(
                "rules: {}",
                rule_names().collect::<Vec<_>>().join(", ")
            )),
        };
        return Err(vec![d]);
    };
    let cx = &BuildContext {
        rule: kind.name,
        ..*cx
    };
    let mut skip: Vec<&str> = common_keys().to_vec();
    let mut errors = Vec::new();
    let present = cx.map.table_keys(path);
    let keys = kind.keys();
    for key in &present {
        if !skip.contains(&key.as_str()) && !keys.contains(&key.as_str()) {
            errors.push(unknown_key(kind, cx, key));
        }
    }
    skip.extend(
        present
            .iter()
            .map(String::as_str)
            .filter(|k| !keys.contains(k)),
    );
    // Above a million, a few weights add up to infinity and the score to NaN.
    if let Some(w) = common.weight
        && !(w.is_finite() && (0.0..=MAX_WEIGHT).contains(&w))
    {
        errors.push(cx.error(
            ErrorKind::Invalid,
            "weight",
            format!("weight must be a non-negative number of at most {MAX_WEIGHT}"),
        ));
    }
    let built = kind.build(cx, &skip);
    if let Ok(built) = &built
        && matches!(built.rule.reads(), Reads::Reply(_))
        && common.extract.is_some()
    {
        errors.push(cx.error(
            ErrorKind::Invalid,
            "extract",
            format!(
                "rule `{}` reads tool calls or the episode, not text: `extract` does not apply",
                kind.name
            ),
        ));
    }
    let mut extract_def = common
        .extract
        .clone()
        .unwrap_or_else(|| ExtractDef::of(kind.default_extract));
    if extract_def.kind == ExtractKind::CodeBlock && extract_def.language.is_none() {
        // A code rule's fence language follows its runtime's language.
        let fence = built.as_ref().ok().and_then(|b| b.fence_language.clone());
        extract_def.language = Some(fence.unwrap_or_else(|| "python".into()));
    }
    let extractor = match Extractor::new(extract_def) {
        Ok(x) => Some(x),
        Err(e) => {
            let loc = match e.key() {
                (key, Some(i)) => cx
                    .map
                    .locate(key_path!["verify", cx.index, "extract", key, i]),
                (key, None) => cx.map.locate(key_path!["verify", cx.index, "extract", key]),
            };
            let kind = match e {
                ExtractError::Pattern { .. } => ErrorKind::Regex,
                _ => ErrorKind::Invalid,
            };
            errors.push(Diagnostic::new(kind, loc, e.to_string()));
            None
        }
    };
    let rule = match built {
        Ok(built) => Some(built.rule),
        Err(e) => {
            errors.push(e);
            None
        }
    };
    // A literal `value` is known now: refuse one no answer could be compared with.
    for (key, why) in rule
        .iter()
        .flat_map(|r| r.value_problems(&Default::default()))
    {
        errors.push(cx.error(ErrorKind::Invalid, value_key(cx.map, cx.index, key), why));
    }
    match (rule, extractor) {
        (Some(rule), Some(extractor)) if errors.is_empty() => Ok(CompiledRule {
            name: common.name.clone().unwrap_or_else(|| common.rule.clone()),
            weight: common.weight.unwrap_or(1.0),
            gate: common.gate.unwrap_or(false),
            report_only: common.report_only.unwrap_or(false),
            extractor,
            rule,
        }),
        _ => Err(errors),
    }
}

/// The error for a key rule `kind` does not read: one another rule reads,
/// or one no rule reads (a typo, with its did-you-mean).
fn unknown_key(kind: &Entry, cx: &BuildContext, key: &str) -> Diagnostic {
    let location = cx.map.locate_key(key_path!["verify", cx.index, key]);
    let reads = format!("`{}` reads: {}", kind.name, kind.keys().join(", "));
    if RULES.iter().any(|k| k.keys().contains(&key)) {
        return Diagnostic::new(
            ErrorKind::UnknownKey,
            location,
            format!("rule `{}` does not read `{key}`", kind.name),
        )
        .with_help(reads);
    }
    let own = common_keys().iter().copied().chain(kind.keys());
    let every = RULES.iter().flat_map(|k| k.keys());
    let guess = did_you_mean(key, own).or_else(|| did_you_mean(key, every));
    let help = match guess {
        Some(s) => format!("did you mean `{s}`? {reads}"),
        None => reads,
    };
    Diagnostic::new(
        ErrorKind::UnknownKey,
        location,
        format!("unknown key `{key}` (at `verify[{}].{key}`)", cx.index),
    )
    .with_help(help)
}

/// The key a value problem is reported at: a rule's `expected` stands for
/// its `value` when the spec wrote a literal.
pub(crate) fn value_key<'a>(map: &SourceMap, index: usize, key: &'a str) -> &'a str {
    let keys = map.table_keys(key_path!["verify", index]);
    let has = |k: &str| keys.iter().any(|x| x == k);
    if key == "expected" && !has("expected") && has("value") {
        "value"
    } else {
        key
    }
}

/// One built rule with its extractor.
pub struct CompiledRule {
    /// The rule's display name.
    pub name: String,
    /// Weight in the instance score.
    pub weight: f64,
    /// Whether the rule gates the score instead of adding to it.
    pub gate: bool,
    /// Reported beside the others, outside the instance's pass and score.
    pub report_only: bool,
    /// How the answer is extracted.
    pub extractor: Extractor,
    pub(super) rule: Box<dyn Rule>,
}
