//! The rules of one spec, built and ready: each with its extractor, weight,
//! gate and report-only flag, combined into one [`InstanceVerdict`].

use std::path::Path;

use serde_json::{Map, Value};

use super::registry::{CompiledRule, build_one};
use super::{
    BuildContext, FailureKind, InstanceVerdict, JudgeOutcome, JudgeRule, Judged, Reads, Reply,
    RuleOutcome, Verdict, lookup,
};
use crate::error::Diagnostic;
use crate::format::locate::SourceMap;
use crate::format::{ExtractDef, RuleTable};

/// The rules of a spec.
pub struct RuleSet {
    rules: Vec<CompiledRule>,
}

impl RuleSet {
    /// Builds every `[[verify]]` entry; returns all problems found.
    /// `code_timeout` replaces every `code` rule's CPU limit (an example's).
    pub fn build(
        defs: &[RuleTable],
        map: &SourceMap,
        spec_dir: &Path,
        code_timeout: Option<f64>,
    ) -> Result<RuleSet, Vec<Diagnostic>> {
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        for index in 0..defs.len() {
            let cx = BuildContext {
                rule: "",
                code_timeout,
                map,
                spec_dir,
                index,
            };
            match build_one(&cx) {
                Ok(rule) => rules.push(rule),
                Err(mut e) => errors.append(&mut e),
            }
        }
        if errors.is_empty() && !defs.is_empty() && rules.iter().all(|r| r.report_only) {
            // Every rule outside the score would make every answer pass at 100%.
            errors.push(
                Diagnostic::new(
                    crate::error::ErrorKind::Invalid,
                    map.locate(crate::format::key_path!["verify", 0]),
                    "every [[verify]] rule is `report_only`: nothing would score the answers",
                )
                .with_help("let at least one rule count: remove `report_only = true` from it"),
            );
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
        self.judge_rules().next().is_some()
    }

    /// The judge rules, in spec order, without answers (a dry run's estimate).
    pub fn judge_rules(&self) -> impl Iterator<Item = &JudgeRule> {
        self.rules.iter().filter_map(|r| judge_of(r))
    }

    /// The judge rules with the answer each extracts from `response` (or
    /// from `reasoning`, for a rule that asks for it):
    /// `(rule index, rule name, rule, answer)`; rules that extract nothing are left out.
    pub fn judge_tasks<'a>(
        &'a self,
        response: &str,
        reasoning: &str,
    ) -> Vec<(usize, &'a str, &'a JudgeRule, String)> {
        self.rules
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                let judge = judge_of(r)?;
                let source = Reply::source(response, reasoning, r.extractor.def().from);
                Some((i, r.name.as_str(), judge, r.extractor.apply(source)?))
            })
            .collect()
    }

    /// Verifies `response` for an instance with `vars`.
    pub fn verify(&self, response: &str, vars: &Map<String, Value>) -> InstanceVerdict {
        self.verify_judged(&Reply::text(response), vars, &Judged::new())
    }

    /// Verifies `reply`, taking judge rules' verdicts from `judged` (by rule index).
    pub(crate) fn verify_judged(
        &self,
        reply: &Reply,
        vars: &Map<String, Value>,
        judged: &Judged,
    ) -> InstanceVerdict {
        let mut outcomes = Vec::with_capacity(self.rules.len());
        let (mut weighted, mut total_weight, mut gates_hold) = (0.0, 0.0, true);
        for (index, rule) in self.rules.iter().enumerate() {
            let mut judge = None;
            let (answer, verdict) = match rule.rule.reads() {
                Reads::Reply(rule) => {
                    let (answer, verdict) = rule.verify(reply, vars);
                    (Some(answer), verdict)
                }
                reads => {
                    let judged = judged.get(&index).cloned();
                    let from = rule.extractor.def().from;
                    let response = Reply::source(reply.text, reply.reasoning, from);
                    verify_text(&reads, rule, response, vars, judged, &mut judge)
                }
            };
            if rule.report_only {
                // Verified for the reports only.
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

    /// `(rule index, key, why)` for each value in `vars` a rule cannot use
    /// whatever the answer (see [`super::Rule::value_problems`]).
    pub fn value_problems(&self, vars: &Map<String, Value>) -> Vec<(usize, &'static str, String)> {
        self.rules
            .iter()
            .enumerate()
            .flat_map(|(i, r)| {
                r.rule
                    .value_problems(vars)
                    .into_iter()
                    .map(move |(key, why)| (i, key, why))
            })
            .collect()
    }

    /// `(rule index, rule name, verdict)` on an empty answer for the rules that
    /// run a spec's own code ([`super::Rule::probe`]): a stalling script shows
    /// before any model is asked.
    pub fn probe(&self, vars: &Map<String, Value>) -> Vec<(usize, &str, Verdict)> {
        self.rules
            .iter()
            .enumerate()
            .filter_map(|(i, r)| Some((i, r.name.as_str(), r.rule.probe(vars)?)))
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

/// The LLM judge of `rule`, when it is a `judge` rule.
fn judge_of(rule: &CompiledRule) -> Option<&JudgeRule> {
    match rule.rule.reads() {
        Reads::Judge(judge) => Some(judge),
        Reads::Text(_) | Reads::Reply(_) => None,
    }
}

/// The answer a rule over text extracts from `response`, and its verdict:
/// the judge's (`judged`) for a `judge` rule.
fn verify_text(
    reads: &Reads,
    rule: &CompiledRule,
    response: &str,
    vars: &Map<String, Value>,
    judged: Option<(Verdict, JudgeOutcome)>,
    judge: &mut Option<JudgeOutcome>,
) -> (Option<String>, Verdict) {
    let Some(answer) = rule.extractor.apply(response) else {
        let why = format!(
            "no answer extracted ({})",
            describe_extract(rule.extractor.def())
        );
        return (None, Verdict::failed(FailureKind::NoAnswer, why));
    };
    let verdict = match (reads, judged) {
        (Reads::Text(text), _) => text.verify(&answer, response, vars),
        (_, Some((verdict, outcome))) => {
            *judge = Some(outcome);
            verdict
        }
        // Reached only when nobody asked the judge: say so rather than score it.
        (_, None) => Verdict::failed(
            FailureKind::JudgeError,
            "judge error: no judge model (pass --judge MODEL or set [judge] in harness.toml)",
        ),
    };
    (Some(answer), verdict)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::Extractor;
    use crate::verify::{ReadsText, Rule};

    fn rule(name: &str, weight: f64, gate: bool, passes_on: &'static str) -> CompiledRule {
        struct Fixed(&'static str);
        impl Rule for Fixed {
            fn reads(&self) -> Reads<'_> {
                Reads::Text(self)
            }
        }
        impl ReadsText for Fixed {
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
    fn report_only_rules_are_verified_but_leave_pass_score_and_details_alone() {
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

    /// The rules of a spec whose text is `text`.
    fn built(text: &str) -> RuleSet {
        let map = SourceMap::parse(Path::new("s.toml"), text).expect("a spec");
        let table: toml::Table = toml::from_str(text).expect("TOML");
        let defs: Vec<RuleTable> = table["verify"]
            .as_array()
            .expect("[[verify]]")
            .iter()
            .map(|t| RuleTable(t.as_table().expect("a table").clone()))
            .collect();
        RuleSet::build(&defs, &map, Path::new("."), None).unwrap_or_else(|e| panic!("{e:?}"))
    }

    #[test]
    fn a_rule_s_name_replaces_its_kind_in_the_failure_text() {
        let cases = [
            ("", "contains: does not contain «1889»"),
            (
                "name = \"mentions the year\"\n",
                "mentions the year: does not contain «1889»",
            ),
        ];
        for (name, details) in cases {
            let set = built(&format!(
                "[[verify]]\nrule = \"contains\"\nvalue = \"1889\"\n{name}"
            ));
            let verdict = set.verify("in 1890", &Map::new());
            assert_eq!(verdict.failure_details(), details);
        }
    }
}
