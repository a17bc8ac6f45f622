//! The rule registry: each `rule = "..."` name with the keys it reads, its
//! default extraction and its builder.

use super::{BuildContext, Rule};
use super::{
    code, contains, exact, json_field, judge, numeric, regex, script, set_equal, similarity,
};
use crate::error::{Diagnostic, ErrorKind, did_you_mean};
use crate::extract::{ExtractError, Extractor};
use crate::format::{ExtractDef, ExtractKind, RuleDef};
use crate::key_path;

type Builder = fn(&RuleDef, &BuildContext) -> Result<Box<dyn Rule>, Diagnostic>;

/// A rule's registry entry.
struct RuleKind {
    name: &'static str,
    keys: &'static [&'static str],
    default_extract: ExtractKind,
    build: Builder,
}

const COMMON_KEYS: &[&str] = &["rule", "name", "weight", "gate", "report_only", "extract"];

/// A registry entry: the rule's name, default extraction, builder and own keys.
const fn kind(
    name: &'static str,
    default_extract: ExtractKind,
    build: Builder,
    keys: &'static [&'static str],
) -> RuleKind {
    RuleKind {
        name,
        keys,
        default_extract,
        build,
    }
}

const RULES: &[RuleKind] = &[
    kind(
        "exact",
        ExtractKind::Text,
        exact::build,
        &["expected", "value", "case_sensitive"],
    ),
    kind(
        "contains",
        ExtractKind::Text,
        contains::build_contains,
        &["expected", "value", "case_sensitive", "whole_word", "mode"],
    ),
    kind(
        "not_contains",
        ExtractKind::Text,
        contains::build_not_contains,
        &["expected", "value", "case_sensitive", "whole_word"],
    ),
    kind(
        "exclusive",
        ExtractKind::Text,
        contains::build_exclusive,
        &[
            "expected",
            "value",
            "candidates",
            "case_sensitive",
            "whole_word",
        ],
    ),
    kind("regex", ExtractKind::Text, regex::build, &["pattern"]),
    kind(
        "set_equal",
        ExtractKind::Text,
        set_equal::build,
        &["entities", "partial"],
    ),
    kind(
        "numeric",
        ExtractKind::LastNumber,
        numeric::build,
        &["expected", "value", "tolerance", "relative_tolerance"],
    ),
    kind(
        "json_field",
        ExtractKind::Json,
        json_field::build,
        &["schema", "fields", "tolerance", "relative_tolerance"],
    ),
    kind(
        "similarity",
        ExtractKind::Text,
        similarity::build,
        &["expected", "value", "metric", "threshold"],
    ),
    kind(
        "code",
        ExtractKind::CodeBlock,
        code::build,
        &[
            "tests",
            "test_template",
            "prelude",
            "language",
            "score",
            "timeout_secs",
            "memory_mb",
            "command",
            "runner",
            "solution_file",
            "guard",
        ],
    ),
    kind(
        "judge",
        ExtractKind::Text,
        judge::build,
        &[
            "rubric",
            "rubric_file",
            "template",
            "language",
            "expected",
            "value",
            "threshold",
            "samples",
            "temperature",
            "max_tokens",
            "attempts",
        ],
    ),
    kind(
        "script",
        ExtractKind::Text,
        script::build,
        &["script", "threshold"],
    ),
];

/// The names of every rule, for documentation and hints.
pub fn rule_names() -> impl Iterator<Item = &'static str> {
    RULES.iter().map(|r| r.name)
}

pub(super) fn build_one(def: &RuleDef, cx: &BuildContext) -> Result<CompiledRule, Vec<Diagnostic>> {
    let Some(kind) = RULES.iter().find(|k| k.name == def.rule) else {
        let mut d = cx.error(
            ErrorKind::Invalid,
            "rule",
            format!("unknown rule `{}`", def.rule),
        );
        d = match did_you_mean(&def.rule, rule_names()) {
            Some(s) => d.with_help(format!("did you mean `{s}`?")),
            None => d.with_help(format!(
                "rules: {}",
                rule_names().collect::<Vec<_>>().join(", ")
            )),
        };
        return Err(vec![d]);
    };
    let mut errors = Vec::new();
    for key in cx.map.table_keys(key_path!["verify", cx.index]) {
        if !COMMON_KEYS.contains(&key.as_str()) && !kind.keys.contains(&key.as_str()) {
            errors.push(
                Diagnostic::new(
                    ErrorKind::UnknownKey,
                    cx.map
                        .locate_key(key_path!["verify", cx.index, key.as_str()]),
                    format!("rule `{}` does not read `{key}`", kind.name),
                )
                .with_help(format!(
                    "`{}` reads: {}",
                    kind.name,
                    kind.keys.join(", ")
                )),
            );
        }
    }
    if let Some(w) = def.weight
        && !(w.is_finite() && w >= 0.0)
    {
        errors.push(cx.error(
            ErrorKind::Invalid,
            "weight",
            "weight must be a non-negative number",
        ));
    }
    let mut extract_def = def
        .extract
        .clone()
        .unwrap_or_else(|| ExtractDef::of(kind.default_extract));
    if extract_def.kind == ExtractKind::CodeBlock && extract_def.language.is_none() {
        // A code rule's fence language follows its runtime's language.
        extract_def.language = Some(def.language.clone().unwrap_or_else(|| "python".into()));
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
    let rule = match (kind.build)(def, cx) {
        Ok(rule) => Some(rule),
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
        errors.push(cx.error(ErrorKind::Invalid, value_key(def, key), why));
    }
    match (rule, extractor) {
        (Some(rule), Some(extractor)) if errors.is_empty() => Ok(CompiledRule {
            name: def.name.clone().unwrap_or_else(|| def.rule.clone()),
            weight: def.weight.unwrap_or(1.0),
            gate: def.gate.unwrap_or(false),
            report_only: def.report_only.unwrap_or(false),
            extractor,
            rule,
        }),
        _ => Err(errors),
    }
}

/// The key a value problem is reported at: a rule's `expected` stands for
/// its `value` when the spec wrote a literal.
pub fn value_key<'a>(def: &RuleDef, key: &'a str) -> &'a str {
    if key == "expected" && def.expected.is_none() && def.value.is_some() {
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
