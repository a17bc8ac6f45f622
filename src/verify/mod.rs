//! Verification: declarative rules, one file each, that judge an answer.
//!
//! A rule gets the answer its extractor took from the response, the raw
//! response and the instance variables, and returns a [`Verdict`]. The
//! registry below maps `rule = "..."` names to builders and to the keys each
//! rule reads, so a key the chosen rule ignores is an error, not a silent no-op.

mod code;
mod contains;
mod exact;
mod expected;
mod json_field;
mod judge;
mod numeric;
mod regex;
mod script;
mod set_equal;
mod similarity;

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Diagnostic, ErrorKind, did_you_mean};
use crate::extract::{ExtractDef, ExtractKind, Extractor};
use crate::key_path;
use crate::spec::locate::SourceMap;
use crate::spec::model::RuleDef;

pub use expected::lookup;
pub use judge::JudgeRule;

use crate::judge::JudgeOutcome;

/// Why an answer failed, for reports that group failures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The extractor found nothing.
    NoAnswer,
    /// An answer was found but is wrong.
    WrongValue,
    /// The answer is not valid JSON.
    InvalidJson,
    /// The JSON does not satisfy the schema.
    SchemaMismatch,
    /// A `script` rule failed to run.
    ScriptError,
    /// A program raised an error or crashed.
    RuntimeError,
    /// A program ran out of time (wall clock or CPU).
    Timeout,
    /// A program hit a memory, recursion or output limit.
    ResourceLimit,
    /// The sandbox could not run the program.
    SandboxError,
    /// The judge model gave no usable level (request failed, bad JSON, level out of range).
    JudgeError,
}

/// One rule's judgement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Whether the rule passed.
    pub passed: bool,
    /// A score in [0, 1].
    pub score: f64,
    /// What went wrong (or, for soft rules, how close it was), for a human.
    pub detail: String,
    /// The failure's category, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<FailureKind>,
}

impl Verdict {
    /// A full pass.
    pub fn pass() -> Verdict {
        Verdict::scored(true, 1.0, String::new())
    }

    /// A wrong answer, with an explanation.
    pub fn fail(detail: impl Into<String>) -> Verdict {
        Verdict::failed(FailureKind::WrongValue, detail)
    }

    /// A failure of a given kind.
    pub fn failed(kind: FailureKind, detail: impl Into<String>) -> Verdict {
        Verdict {
            passed: false,
            score: 0.0,
            detail: detail.into(),
            failure: Some(kind),
        }
    }

    /// A verdict with an explicit score.
    pub fn scored(passed: bool, score: f64, detail: String) -> Verdict {
        Verdict {
            passed,
            score: score.clamp(0.0, 1.0),
            detail,
            failure: (!passed).then_some(FailureKind::WrongValue),
        }
    }
}

/// The behavior every rule implements.
pub trait Rule: Send + Sync {
    /// Instance variables the rule reads; `harness check` makes sure each instance sets them.
    fn variables(&self) -> Vec<(&'static str, &str)>;
    /// The expected value for golden files, if the rule has one.
    fn expected(&self, vars: &Map<String, Value>) -> Option<Value>;
    /// Judges `answer` (extracted from `response`) for an instance with `vars`.
    fn verify(&self, answer: &str, response: &str, vars: &Map<String, Value>) -> Verdict;
    /// Whether verifying runs model-written code (and so needs the sandbox).
    fn needs_sandbox(&self) -> bool {
        false
    }
    /// The rule as a judge rule, when an LLM judges it.
    fn judge(&self) -> Option<&JudgeRule> {
        None
    }
}

/// What a rule builder may look at.
pub struct BuildContext<'a> {
    /// Source positions of the spec.
    pub map: &'a SourceMap,
    /// The directory relative paths in the spec start from.
    pub spec_dir: &'a Path,
    /// The index of the `[[verify]]` entry.
    pub index: usize,
}

impl BuildContext<'_> {
    /// A diagnostic pointing at key `key` of this rule.
    pub fn error(&self, kind: ErrorKind, key: &str, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(
            kind,
            self.map.locate(key_path!["verify", self.index, key]),
            message,
        )
    }

    /// A diagnostic for a key this rule needs but does not have.
    pub fn missing(&self, rule: &str, key: &str, example: &str) -> Diagnostic {
        Diagnostic::new(
            ErrorKind::Invalid,
            self.map.locate(key_path!["verify", self.index]),
            format!("rule `{rule}` needs `{key}`"),
        )
        .with_help(format!("add, for example: {key} = {example}"))
    }

    /// The rule's `threshold` (or `default`), which must lie within 0..1.
    pub fn threshold(&self, def: &RuleDef, default: f64) -> Result<f64, Diagnostic> {
        let threshold = def.threshold.unwrap_or(default);
        if (0.0..=1.0).contains(&threshold) {
            Ok(threshold)
        } else {
            Err(self.error(
                ErrorKind::Invalid,
                "threshold",
                "threshold must be within 0..1",
            ))
        }
    }

    /// The location of a position inside the string value of `key`.
    pub fn locate_in(&self, key: &str, line: usize, column: usize) -> crate::error::Location {
        self.map
            .locate_in_string(key_path!["verify", self.index, key], line, column)
    }
}

type Builder = fn(&RuleDef, &BuildContext) -> Result<Box<dyn Rule>, Diagnostic>;

/// A rule's registry entry.
struct RuleKind {
    name: &'static str,
    keys: &'static [&'static str],
    default_extract: ExtractKind,
    build: Builder,
}

const COMMON_KEYS: &[&str] = &["rule", "name", "weight", "gate", "report_only", "extract"];

const RULES: &[RuleKind] = &[
    RuleKind {
        name: "exact",
        keys: &["expected", "value", "case_sensitive"],
        default_extract: ExtractKind::Text,
        build: exact::build,
    },
    RuleKind {
        name: "contains",
        keys: &["expected", "value", "case_sensitive", "whole_word", "mode"],
        default_extract: ExtractKind::Text,
        build: contains::build_contains,
    },
    RuleKind {
        name: "not_contains",
        keys: &["expected", "value", "case_sensitive", "whole_word"],
        default_extract: ExtractKind::Text,
        build: contains::build_not_contains,
    },
    RuleKind {
        name: "exclusive",
        keys: &[
            "expected",
            "value",
            "candidates",
            "case_sensitive",
            "whole_word",
        ],
        default_extract: ExtractKind::Text,
        build: contains::build_exclusive,
    },
    RuleKind {
        name: "regex",
        keys: &["pattern"],
        default_extract: ExtractKind::Text,
        build: regex::build,
    },
    RuleKind {
        name: "set_equal",
        keys: &["entities", "partial"],
        default_extract: ExtractKind::Text,
        build: set_equal::build,
    },
    RuleKind {
        name: "numeric",
        keys: &["expected", "value", "tolerance", "relative_tolerance"],
        default_extract: ExtractKind::LastNumber,
        build: numeric::build,
    },
    RuleKind {
        name: "json_field",
        keys: &["schema", "fields"],
        default_extract: ExtractKind::Json,
        build: json_field::build,
    },
    RuleKind {
        name: "similarity",
        keys: &["expected", "value", "metric", "threshold"],
        default_extract: ExtractKind::Text,
        build: similarity::build,
    },
    RuleKind {
        name: "code",
        keys: &[
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
        ],
        default_extract: ExtractKind::CodeBlock,
        build: code::build,
    },
    RuleKind {
        name: "judge",
        keys: &[
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
        default_extract: ExtractKind::Text,
        build: judge::build,
    },
    RuleKind {
        name: "script",
        keys: &["script", "threshold"],
        default_extract: ExtractKind::Text,
        build: script::build,
    },
];

/// The names of every rule, for documentation and hints.
pub fn rule_names() -> impl Iterator<Item = &'static str> {
    RULES.iter().map(|r| r.name)
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
    rule: Box<dyn Rule>,
}

/// One rule's outcome within an instance verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleOutcome {
    /// The rule's name.
    pub name: String,
    /// The extracted answer, if any.
    pub answer: Option<String>,
    /// Reported beside the other rules, outside the instance's pass and score.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub report_only: bool,
    /// The judgement.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// For judge rules: levels, reasoning and who judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeOutcome>,
}

/// The judgement of one response to one instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstanceVerdict {
    /// All rules passed.
    pub passed: bool,
    /// Weighted mean of the rule scores.
    pub score: f64,
    /// Each rule's outcome.
    pub rules: Vec<RuleOutcome>,
}

impl InstanceVerdict {
    /// The details of failing rules, one line each.
    pub fn failure_details(&self) -> String {
        self.rules
            .iter()
            .filter(|r| !r.verdict.passed && !r.report_only)
            .map(|r| format!("{}: {}", r.name, r.verdict.detail))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Judge rules' verdicts and outcomes by rule index, filled in by whoever asked the judge.
pub type Judged = std::collections::BTreeMap<usize, (Verdict, JudgeOutcome)>;

/// The rules of a spec.
pub struct RuleSet {
    rules: Vec<CompiledRule>,
}

impl RuleSet {
    /// Builds every `[[verify]]` entry; returns all problems found.
    pub fn build(
        defs: &[RuleDef],
        map: &SourceMap,
        spec_dir: &Path,
    ) -> Result<RuleSet, Vec<Diagnostic>> {
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        for (index, def) in defs.iter().enumerate() {
            let cx = BuildContext {
                map,
                spec_dir,
                index,
            };
            match build_one(def, &cx) {
                Ok(rule) => rules.push(rule),
                Err(mut e) => errors.append(&mut e),
            }
        }
        if errors.is_empty() {
            Ok(RuleSet { rules })
        } else {
            Err(errors)
        }
    }

    /// Whether any rule runs model-written code.
    pub fn needs_sandbox(&self) -> bool {
        self.rules.iter().any(|r| r.rule.needs_sandbox())
    }

    /// The rules, in spec order.
    pub fn rules(&self) -> &[CompiledRule] {
        &self.rules
    }

    /// Whether any rule is graded by an LLM judge.
    pub fn needs_judge(&self) -> bool {
        self.rules.iter().any(|r| r.rule.judge().is_some())
    }

    /// The judge rules with the answer each extracts from `response`:
    /// `(rule index, rule name, rule, answer)`; rules that extract nothing are left out.
    pub fn judge_tasks<'a>(
        &'a self,
        response: &str,
    ) -> Vec<(usize, &'a str, &'a JudgeRule, String)> {
        self.rules
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                let judge = r.rule.judge()?;
                Some((i, r.name.as_str(), judge, r.extractor.apply(response)?))
            })
            .collect()
    }

    /// Judges `response` for an instance with `vars`.
    pub fn verify(&self, response: &str, vars: &Map<String, Value>) -> InstanceVerdict {
        self.verify_judged(response, vars, &Judged::new())
    }

    /// Judges `response`, taking judge rules' verdicts from `judged` (by rule index).
    pub fn verify_judged(
        &self,
        response: &str,
        vars: &Map<String, Value>,
        judged: &Judged,
    ) -> InstanceVerdict {
        let mut outcomes = Vec::with_capacity(self.rules.len());
        let (mut weighted, mut total_weight, mut gates_hold) = (0.0, 0.0, true);
        for (index, rule) in self.rules.iter().enumerate() {
            let answer = rule.extractor.apply(response);
            let mut judge = None;
            let verdict = match &answer {
                Some(_) if judged.contains_key(&index) => {
                    let (verdict, outcome) = judged[&index].clone();
                    judge = Some(outcome);
                    verdict
                }
                Some(answer) => rule.rule.verify(answer, response, vars),
                None => Verdict::failed(
                    FailureKind::NoAnswer,
                    format!(
                        "no answer extracted ({})",
                        describe_extract(rule.extractor.def())
                    ),
                ),
            };
            if rule.report_only {
                // Judged for the reports only.
            } else if rule.gate {
                gates_hold &= verdict.passed;
            } else {
                weighted += verdict.score * rule.weight;
                total_weight += rule.weight;
            }
            outcomes.push(RuleOutcome {
                name: rule.name.clone(),
                answer,
                report_only: rule.report_only,
                verdict,
                judge,
            });
        }
        InstanceVerdict {
            passed: outcomes.iter().all(|o| o.report_only || o.verdict.passed),
            score: match (gates_hold, total_weight > 0.0) {
                (true, true) => weighted / total_weight,
                (true, false) => 1.0,
                (false, _) => 0.0,
            },
            rules: outcomes,
        }
    }

    /// The expected values of every rule for an instance, keyed by rule name.
    pub fn expected(&self, vars: &Map<String, Value>) -> Map<String, Value> {
        self.rules
            .iter()
            .filter_map(|r| r.rule.expected(vars).map(|v| (r.name.clone(), v)))
            .collect()
    }

    /// `(rule index, key, variable)` for each variable a rule reads that `vars` lacks.
    pub fn missing_variables(
        &self,
        vars: &Map<String, Value>,
    ) -> Vec<(usize, &'static str, String)> {
        let mut missing = Vec::new();
        for (i, rule) in self.rules.iter().enumerate() {
            for (key, var) in rule.rule.variables() {
                if lookup(vars, var).is_none() {
                    missing.push((i, key, var.to_owned()));
                }
            }
        }
        missing
    }
}

fn describe_extract(def: &ExtractDef) -> String {
    let kind = serde_json::to_value(def.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    if def.patterns.is_empty() {
        format!("extract = {kind}")
    } else {
        format!(
            "none of {} patterns matched, then {kind}",
            def.patterns.len()
        )
    }
}

fn build_one(def: &RuleDef, cx: &BuildContext) -> Result<CompiledRule, Vec<Diagnostic>> {
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
            let loc = cx.map.locate(key_path![
                "verify", cx.index, "extract", "patterns", e.index
            ]);
            errors.push(Diagnostic::new(ErrorKind::Regex, loc, e.to_string()));
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

/// Reads and compiles the JSON Schema file at `path` (relative to `spec_dir`).
pub fn read_schema(spec_dir: &Path, path: &str) -> Result<jsonschema::Validator, String> {
    let full = spec_dir.join(path);
    let text = std::fs::read_to_string(&full)
        .map_err(|e| format!("cannot read schema file {}: {e}", full.display()))?;
    let schema: Value = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}:{}:{}: not valid JSON: {e}",
            full.display(),
            e.line(),
            e.column()
        )
    })?;
    jsonschema::validator_for(&schema)
        .map_err(|e| format!("{} is not a valid JSON Schema: {e}", full.display()))
}

/// Quotes a value for details: strings in «», others as JSON.
pub fn quote(value: &Value) -> String {
    match value {
        Value::String(s) => format!("«{s}»"),
        other => other.to_string(),
    }
}

/// Shortens long text for details.
pub fn clip(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        text.to_owned()
    } else {
        format!("{}…", text.chars().take(max_chars).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(name: &str, weight: f64, gate: bool, passes_on: &'static str) -> CompiledRule {
        struct Fixed(&'static str);
        impl Rule for Fixed {
            fn variables(&self) -> Vec<(&'static str, &str)> {
                Vec::new()
            }
            fn expected(&self, _: &Map<String, Value>) -> Option<Value> {
                None
            }
            fn verify(&self, answer: &str, _: &str, _: &Map<String, Value>) -> Verdict {
                if answer.contains(self.0) {
                    Verdict::pass()
                } else {
                    Verdict::fail("no")
                }
            }
        }
        CompiledRule {
            name: name.into(),
            weight,
            gate,
            report_only: false,
            extractor: Extractor::new(ExtractDef::text()).unwrap(),
            rule: Box::new(Fixed(passes_on)),
        }
    }

    #[test]
    fn scores_are_weighted_means_and_gates_zero_them() {
        let set = RuleSet {
            rules: vec![
                rule("a", 2.0, false, "a"),
                rule("b", 1.0, false, "b"),
                rule("g", 1.0, true, "ok"),
            ],
        };
        let v = set.verify("a ok", &Map::new());
        assert!(!v.passed);
        assert!((v.score - 2.0 / 3.0).abs() < 1e-12);
        let v = set.verify("a b", &Map::new());
        assert_eq!((v.passed, v.score), (false, 0.0));
        let v = set.verify("a b ok", &Map::new());
        assert_eq!((v.passed, v.score), (true, 1.0));
    }

    #[test]
    fn report_only_rules_are_judged_but_leave_pass_score_and_details_alone() {
        let mut flexible = rule("flexible", 1.0, false, "x");
        flexible.report_only = true;
        let set = RuleSet {
            rules: vec![rule("strict", 1.0, false, "a"), flexible],
        };
        let v = set.verify("a", &Map::new());
        assert_eq!((v.passed, v.score), (true, 1.0));
        assert!(!v.rules[1].verdict.passed && v.rules[1].report_only);
        assert_eq!(v.failure_details(), "");
        let v = set.verify("x", &Map::new());
        assert_eq!((v.passed, v.score), (false, 0.0));
        assert!(v.rules[1].verdict.passed);
        assert!(
            v.failure_details().starts_with("strict:"),
            "got {}",
            v.failure_details()
        );
    }
}
