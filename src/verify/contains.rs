//! `contains`, `not_contains` and `exclusive`: substring checks (the logic
//! category's answers). Case-insensitive and whole-word by default; `exclusive`
//! passes only when the right candidate is named and no other one is, so an
//! answer that lists everybody does not pass.

use serde_json::{Map, Value};

use super::expected::{ComparesText, Expected, as_text_list, lookup, text_problem};
use super::kind::RuleKind;
use super::{BuildContext, Reads, ReadsText, Rule, Verdict};
use crate::error::Diagnostic;

#[derive(Clone, Copy)]
struct Matcher {
    case_sensitive: bool,
    whole_word: bool,
}

impl Matcher {
    fn new(case_sensitive: Option<bool>, whole_word: Option<bool>) -> Matcher {
        Matcher {
            case_sensitive: case_sensitive.unwrap_or(false),
            whole_word: whole_word.unwrap_or(true),
        }
    }

    fn normalize(&self, text: &str) -> String {
        let text = super::exact::normalize_whitespace(text);
        if self.case_sensitive {
            text
        } else {
            text.to_lowercase().replace('ё', "е")
        }
    }

    /// Whether `needle` occurs in `haystack` (both already normalized); an
    /// empty needle occurs nowhere, so it can never pass an answer.
    fn occurs(&self, haystack: &str, needle: &str) -> bool {
        if needle.is_empty() {
            return false;
        }
        haystack.match_indices(needle).any(|(start, m)| {
            !self.whole_word || {
                let before = haystack[..start].chars().next_back();
                let after = haystack[start + m.len()..].chars().next();
                !before.is_some_and(char::is_alphanumeric)
                    && !after.is_some_and(char::is_alphanumeric)
            }
        })
    }
}

/// Which of the expected strings the answer must contain.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum ContainsMode {
    /// Every one.
    #[default]
    All,
    /// At least one.
    Any,
    /// None of them (`not_contains`; no spec writes it).
    #[serde(skip)]
    None,
}

/// `contains`: the answer contains the expected string(s).
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ContainsKeys {
    /// Compare case-sensitively (default false).
    pub case_sensitive: Option<bool>,
    /// Match whole words only (default true).
    pub whole_word: Option<bool>,
    /// `all` (default) or `any` of the expected strings.
    pub mode: Option<ContainsMode>,
}

impl ComparesText for ContainsKeys {
    // An empty needle occurs in every answer: refused like a missing one.
    const NEEDLE: bool = true;

    fn compare(&self, answer: &str, needles: &[String]) -> Verdict {
        let matcher = Matcher::new(self.case_sensitive, self.whole_word);
        contains(matcher, self.mode.unwrap_or_default(), answer, needles)
    }
}

/// `not_contains`: the answer contains none of the expected strings.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct NotContainsKeys {
    /// Compare case-sensitively (default false).
    pub case_sensitive: Option<bool>,
    /// Match whole words only (default true).
    pub whole_word: Option<bool>,
}

impl ComparesText for NotContainsKeys {
    const NEEDLE: bool = true;

    fn compare(&self, answer: &str, needles: &[String]) -> Verdict {
        let matcher = Matcher::new(self.case_sensitive, self.whole_word);
        contains(matcher, ContainsMode::None, answer, needles)
    }
}

/// The verdict on an answer containing the `needles` as `mode` asks.
fn contains(matcher: Matcher, mode: ContainsMode, answer: &str, needles: &[String]) -> Verdict {
    let haystack = matcher.normalize(answer);
    let (present, absent): (Vec<_>, Vec<_>) = needles
        .iter()
        .partition(|n| matcher.occurs(&haystack, &matcher.normalize(n)));
    match mode {
        ContainsMode::All if absent.is_empty() => Verdict::pass(),
        ContainsMode::All => Verdict::fail(format!("does not contain {}", quoted(&absent))),
        ContainsMode::Any if !present.is_empty() => Verdict::pass(),
        ContainsMode::Any => Verdict::fail(format!("contains none of {}", quoted(&absent))),
        ContainsMode::None if present.is_empty() => Verdict::pass(),
        ContainsMode::None => Verdict::fail(format!("contains forbidden {}", quoted(&present))),
    }
}

struct Exclusive {
    expected: Expected,
    candidates: String,
    matcher: Matcher,
}

/// `exclusive`: the right candidate is named and no other candidate is (an
/// answer naming everyone fails).
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ExclusiveKeys {
    /// The instance variable with every candidate answer (a list).
    pub candidates: Option<String>,
    /// Compare case-sensitively (default false).
    pub case_sensitive: Option<bool>,
    /// Match whole words only (default true).
    pub whole_word: Option<bool>,
}

impl RuleKind for ExclusiveKeys {
    fn build(self, cx: &BuildContext) -> Result<Box<dyn Rule>, Diagnostic> {
        let example = "\"names\"  # a list variable";
        let candidates = cx
            .required(self.candidates.as_ref(), cx.rule, "candidates", example)?
            .clone();
        Ok(Box::new(Exclusive {
            expected: cx.expected()?,
            candidates,
            matcher: Matcher::new(self.case_sensitive, self.whole_word),
        }))
    }
}

impl Rule for Exclusive {
    fn reference(&self) -> Option<&Expected> {
        Some(&self.expected)
    }

    fn variables(&self) -> Vec<(&'static str, &str)> {
        let mut vars = self.expected.as_variables();
        vars.push(("candidates", &self.candidates));
        vars
    }

    fn value_problems(&self, vars: &Map<String, Value>) -> Vec<(&'static str, String)> {
        let mut problems = self.expected.text_problems(vars, true);
        match lookup(vars, &self.candidates) {
            Some(Value::Array(items)) => {
                if let Some(p) = items.iter().find_map(|c| text_problem(c, true)) {
                    problems.push((
                        "candidates",
                        format!("a candidate in `{}` {p}", self.candidates),
                    ));
                }
            }
            Some(other) => problems.push((
                "candidates",
                format!(
                    "`{}` must be a list of candidate names, but it is {}",
                    self.candidates,
                    crate::text::json_kind(other)
                ),
            )),
            None => {}
        }
        problems
    }

    fn reads(&self) -> Reads<'_> {
        Reads::Text(self)
    }
}

impl ReadsText for Exclusive {
    fn verify(&self, answer: &str, _response: &str, vars: &Map<String, Value>) -> Verdict {
        let (Some(expected), Some(candidates)) =
            (self.expected.resolve(vars), lookup(vars, &self.candidates))
        else {
            return Verdict::fail(
                "the expected value or the candidates are missing from the instance",
            );
        };
        if let Some((_, problem)) = self.value_problems(vars).pop() {
            return Verdict::fail(problem);
        }
        let haystack = self.matcher.normalize(answer);
        let right = as_text_list(expected);
        let named = |c: &String| self.matcher.occurs(&haystack, &self.matcher.normalize(c));
        let missing: Vec<_> = right.iter().filter(|r| !named(r)).collect();
        let wrong: Vec<_> = as_text_list(candidates)
            .into_iter()
            .filter(|c| !right.contains(c) && named(c))
            .collect();
        match (missing.is_empty(), wrong.is_empty()) {
            (true, true) => Verdict::pass(),
            (false, _) => Verdict::fail(format!(
                "does not name the right answer {}",
                quoted(&missing)
            )),
            (true, false) => {
                Verdict::fail(format!("names wrong candidates too: {}", quoted(&wrong)))
            }
        }
    }
}

/// `«a», «b»`.
fn quoted(items: &[impl std::fmt::Display]) -> String {
    items
        .iter()
        .map(|s| format!("«{s}»"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Map<String, Value> {
        serde_json::from_str(r#"{"answer": "Вера", "names": ["Анна", "Борис", "Вера", "Ян"]}"#)
            .unwrap()
    }

    fn exclusive() -> Exclusive {
        Exclusive {
            expected: Expected::Var("answer".into()),
            candidates: "names".into(),
            matcher: Matcher {
                case_sensitive: false,
                whole_word: true,
            },
        }
    }

    #[test]
    fn exclusive_rejects_answers_naming_everyone() {
        let r = exclusive();
        assert!(r.verify("Самая высокая — ВЕРА.", "", &vars()).passed);
        let v = r.verify("Анна, Борис или Вера", "", &vars());
        assert!(!v.passed && v.detail.contains("«Анна»"), "{}", v.detail);
        assert!(!r.verify("Борис", "", &vars()).passed);
    }

    #[test]
    fn whole_words_do_not_match_inside_longer_names() {
        let m = Matcher {
            case_sensitive: false,
            whole_word: true,
        };
        assert!(!m.occurs("яна", "ян"));
        assert!(m.occurs("это ян.", "ян"));
        assert!(m.occurs("семен", &m.normalize("Семён")));
        assert!(!m.occurs("any answer", ""));
    }

    #[test]
    fn empty_needles_and_scalar_candidates_fail_with_a_message() {
        let r = exclusive();
        let cases = [
            ("answer", "", "empty string"),
            ("names", "Анна, Вера", "must be a list"),
        ];
        let with = |variable: &str, value: &str| {
            let mut v = vars();
            v.insert(variable.into(), Value::from(value));
            v
        };
        for (variable, value, problem) in cases {
            let verdict = r.verify("Вера", "", &with(variable, value));
            let detail = &verdict.detail;
            assert!(!verdict.passed && detail.contains(problem), "{detail}");
        }
        let scalar = with("names", "Анна, Вера");
        assert_eq!(r.value_problems(&scalar)[0].0, "candidates");
    }
}
