//! The `[[verify]]` table: one rule's keys, the entities of `set_equal`, and rubric levels.

use std::collections::BTreeMap;

use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::extract::ExtractDef;

/// One `[[verify]]` rule. Which keys apply depends on `rule`; `harness check`
/// rejects keys the chosen rule does not read.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuleDef {
    /// The rule: exact, contains, not_contains, exclusive, regex, set_equal,
    /// numeric, json_field, similarity, script, code.
    pub rule: String,
    /// A name for reports (defaults to the rule).
    pub name: Option<String>,
    /// Weight in the instance score (default 1).
    pub weight: Option<f64>,
    /// A gate adds nothing to the score, but when it fails the instance scores 0.
    pub gate: Option<bool>,
    /// Judged and reported beside the other rules (a flexible extraction beside a strict
    /// one), but not part of the instance's pass or score.
    pub report_only: Option<bool>,
    /// How the answer is taken from the response.
    pub extract: Option<ExtractDef>,
    /// The instance variable holding the expected value (dotted path); the judge's reference answer.
    pub expected: Option<String>,
    /// A literal expected value, instead of `expected`.
    pub value: Option<Value>,
    /// Compare case-sensitively (default false).
    pub case_sensitive: Option<bool>,
    /// Match whole words only (contains family; default true).
    pub whole_word: Option<bool>,
    /// `all` (default) or `any` of the expected strings (contains).
    pub mode: Option<String>,
    /// Variable with every candidate answer (exclusive).
    pub candidates: Option<String>,
    /// Regular expression the answer must match (regex).
    pub pattern: Option<String>,
    /// Absolute tolerance (numeric; json_field's numbers).
    pub tolerance: Option<f64>,
    /// Relative tolerance, a fraction of the expected value (numeric; json_field's numbers).
    pub relative_tolerance: Option<f64>,
    /// Entity groups (set_equal).
    pub entities: Option<Vec<EntityDef>>,
    /// Score by F1 instead of all-or-nothing (set_equal).
    pub partial: Option<bool>,
    /// JSON Schema file the answer must satisfy (json_field), relative to the spec.
    pub schema: Option<String>,
    /// JSON pointer -> instance variable to compare (json_field).
    pub fields: Option<BTreeMap<String, String>>,
    /// `chrf` (default) or `levenshtein` (similarity).
    pub metric: Option<String>,
    /// Minimum score to pass (similarity, script, judge; default 0.5).
    pub threshold: Option<f64>,
    /// Rhai expression returning a bool, a score or `#{passed, score, detail}` (script).
    pub script: Option<String>,
    /// The instance variable holding the tests: a list of snippets (code).
    pub tests: Option<String>,
    /// minijinja template making each test's source from `test` (code); `| py` writes Python literals.
    pub test_template: Option<String>,
    /// Instance variable with code put before the answer: the task's imports and helpers (code).
    pub prelude: Option<String>,
    /// The solution's language: fence to extract and runtime (code; default python);
    /// the built-in judge prompt's language, `ru` or `en` (judge; default ru).
    pub language: Option<String>,
    /// `all` (default: every test must pass) or `fraction` of tests passed (code).
    pub score: Option<String>,
    /// Wall-clock and CPU limit in seconds (code; default 10).
    pub timeout_secs: Option<f64>,
    /// Address-space limit in MiB (code; default 512).
    pub memory_mb: Option<u64>,
    /// Command line of a custom runtime, run in the working directory (code).
    pub command: Option<Vec<String>>,
    /// A custom runtime's runner file, relative to the spec (code).
    pub runner: Option<String>,
    /// File name the solution is written to (code; default `solution.py`).
    pub solution_file: Option<String>,
    /// Keeps the tests' built-ins, modules, globals and objects out of the
    /// program's reach, where plain Python would not (code; default false).
    pub guard: Option<bool>,
    /// The rubric's levels (judge).
    pub rubric: Option<Vec<Level>>,
    /// A rubric file of `[[level]]` tables, relative to the spec (judge).
    pub rubric_file: Option<String>,
    /// The judge's prompt, a minijinja template over `task`, `reference`, `answer`, `levels`,
    /// `min_level`, `max_level` and `vars` (judge; default: a built-in prompt in `language`).
    pub template: Option<String>,
    /// Judge samples per answer; the median level counts and the spread is reported (judge; default 1).
    pub samples: Option<u32>,
    /// The judge's temperature (judge; default 0, or 0.7 with several samples).
    pub temperature: Option<f64>,
    /// The judge's generation limit (judge; default 512).
    pub max_tokens: Option<u32>,
    /// Asks per judge sample when its answer does not parse (judge; default 3).
    pub attempts: Option<u32>,
}

/// One entity group of a `set_equal` rule.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntityDef {
    /// The group's name, shown in details (`email`, `phone`, ...).
    pub name: String,
    /// Regex finding the entities in the answer; group 1 if present, else the whole match.
    pub pattern: String,
    /// Normalizers applied to found and expected values, in order: a list,
    /// or one name.
    #[serde(default, deserialize_with = "one_or_many")]
    #[schemars(schema_with = "one_or_many_schema")]
    pub normalize: Vec<Normalizer>,
    /// The instance variable holding the expected list.
    pub expected: String,
}

/// A normalization applied to entities before comparing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Normalizer {
    /// Lower-case.
    Lowercase,
    /// Keep digits only.
    Digits,
    /// Digits only, and a Russian trunk prefix 8 read as country code 7.
    Phone,
    /// Trim surrounding whitespace and punctuation.
    Trim,
    /// Dates in common formats to YYYY-MM-DD.
    Date,
}

/// `normalize = "lowercase"` or `normalize = ["lowercase", "trim"]`; an
/// unknown name keeps its did-you-mean error either way.
fn one_or_many<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Normalizer>, D::Error> {
    struct OneOrMany;
    impl<'de> Visitor<'de> for OneOrMany {
        type Value = Vec<Normalizer>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a normalizer name or a list of them")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Normalizer::deserialize(de::value::StrDeserializer::<E>::new(v)).map(|n| vec![n])
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            Vec::deserialize(de::value::SeqAccessDeserializer::new(seq))
        }
    }
    deserializer.deserialize_any(OneOrMany)
}

fn one_or_many_schema(generator: &mut SchemaGenerator) -> Schema {
    let one = generator.subschema_for::<Normalizer>();
    json_schema!({
        "description": "Normalizers applied to found and expected values, in order: a list, or one name.",
        "anyOf": [one, {"type": "array", "items": one}]
    })
}

/// One level of a rubric.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Level {
    /// The level's number (any integers; the lowest scores 0, the highest 1).
    pub level: i64,
    /// A short name: `Отлично`, `Good`.
    pub name: String,
    /// What an answer at this level looks like.
    pub criteria: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entity(normalize: &str) -> Result<EntityDef, String> {
        let text = format!("name = \"e\"\npattern = '\\d+'\nexpected = \"v\"\n{normalize}");
        toml::from_str(&text).map_err(|e| e.to_string())
    }

    #[test]
    fn normalize_takes_one_name_or_a_list() {
        let cases: [(&str, &[Normalizer]); 4] = [
            ("", &[]),
            ("normalize = \"digits\"", &[Normalizer::Digits]),
            ("normalize = [\"trim\"]", &[Normalizer::Trim]),
            (
                "normalize = [\"trim\", \"lowercase\"]",
                &[Normalizer::Trim, Normalizer::Lowercase],
            ),
        ];
        for (text, want) in cases {
            assert_eq!(entity(text).unwrap().normalize, want, "{text}");
        }
        for bad in ["normalize = \"lowercas\"", "normalize = [\"lowercas\"]"] {
            let e = entity(bad).unwrap_err();
            assert!(e.contains("unknown variant `lowercas`"), "{bad}: {e}");
        }
        let e = entity("normalize = 3").unwrap_err();
        assert!(e.contains("a normalizer name or a list of them"), "{e}");
    }
}
