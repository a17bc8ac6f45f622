//! `set_equal`: the set of entities found in the answer equals the expected
//! set (the extraction category). Each entity group has a finding regex
//! and normalizers applied to both sides, so `+7 (912) 345-67-89` and
//! `8 912 345 67 89` are one phone; missing and extra entities are listed.

use std::collections::BTreeSet;
use std::fmt;

use regex::Regex;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::expected::{as_text_list, lookup};
use super::kind::RuleKind;
use super::{BuildContext, Reads, ReadsText, Rule, Verdict};
use crate::error::{Diagnostic, ErrorKind};
use crate::format::key_path;

struct Group {
    name: String,
    pattern: Regex,
    normalize: Vec<Normalizer>,
    expected: String,
}

struct SetEqual {
    groups: Vec<Group>,
    partial: bool,
}

/// `set_equal`: the entities found equal the expected sets; missing and
/// extra are listed.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct SetEqualKeys {
    /// Entity groups: `{ name, pattern, normalize, expected }` each.
    pub entities: Option<Vec<EntityDef>>,
    /// Score by F1 instead of all-or-nothing (default false).
    pub partial: Option<bool>,
}

/// One entity group of a `set_equal` rule.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct EntityDef {
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
pub(super) enum Normalizer {
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

impl RuleKind for SetEqualKeys {
    fn build(self, cx: &BuildContext) -> Result<Box<dyn Rule>, Diagnostic> {
        let example = "[{ name = \"email\", pattern = '\\S+@\\S+', normalize = [\"lowercase\"], expected = \"emails\" }]";
        let entities = self.entities.as_ref().filter(|e| !e.is_empty());
        let entities = cx.required(entities, cx.rule, "entities", example)?;
        let mut groups = Vec::new();
        for (i, e) in entities.iter().enumerate() {
            let pattern = Regex::new(&e.pattern).map_err(|err| {
                Diagnostic::new(
                    ErrorKind::Regex,
                    cx.map
                        .locate(key_path!["verify", cx.index, "entities", i, "pattern"]),
                    format!("the pattern of entity `{}` does not compile: {err}", e.name),
                )
            })?;
            groups.push(Group {
                name: e.name.clone(),
                pattern,
                normalize: e.normalize.clone(),
                expected: e.expected.clone(),
            });
        }
        Ok(Box::new(SetEqual {
            groups,
            partial: self.partial.unwrap_or(false),
        }))
    }
}

impl Group {
    fn norm(&self, raw: &str) -> String {
        self.normalize
            .iter()
            .fold(raw.to_owned(), |s, n| apply(*n, &s))
    }

    fn found(&self, answer: &str) -> BTreeSet<String> {
        self.pattern
            .captures_iter(answer)
            .filter_map(|c| c.get(1).or_else(|| c.get(0)))
            .map(|m| self.norm(m.as_str()))
            .filter(|s| !s.is_empty())
            .collect()
    }
}

/// Applies one normalizer.
pub(super) fn apply(normalizer: Normalizer, text: &str) -> String {
    match normalizer {
        Normalizer::Lowercase => text.to_lowercase(),
        Normalizer::Digits => text.chars().filter(char::is_ascii_digit).collect(),
        Normalizer::Phone => {
            let digits: String = text.chars().filter(char::is_ascii_digit).collect();
            match digits.strip_prefix('8') {
                Some(rest) if digits.len() == 11 => format!("7{rest}"),
                _ => digits,
            }
        }
        Normalizer::Trim => text
            .trim_matches(|c: char| c.is_whitespace() || ".,;:!?()[]<>\"'«»".contains(c))
            .to_owned(),
        Normalizer::Date => normalize_date(text).unwrap_or_else(|| text.trim().to_owned()),
    }
}

const MONTHS: [(&str, &str); 24] = [
    ("январ", "01"),
    ("феврал", "02"),
    ("март", "03"),
    ("апрел", "04"),
    ("ма", "05"),
    ("июн", "06"),
    ("июл", "07"),
    ("август", "08"),
    ("сентябр", "09"),
    ("октябр", "10"),
    ("ноябр", "11"),
    ("декабр", "12"),
    ("jan", "01"),
    ("feb", "02"),
    ("mar", "03"),
    ("apr", "04"),
    ("may", "05"),
    ("jun", "06"),
    ("jul", "07"),
    ("aug", "08"),
    ("sep", "09"),
    ("oct", "10"),
    ("nov", "11"),
    ("dec", "12"),
];

fn month_number(word: &str) -> Option<&'static str> {
    let word = word.to_lowercase();
    if word == "мая" || word == "май" {
        return Some("05");
    }
    MONTHS
        .iter()
        .filter(|(stem, _)| *stem != "ма")
        .find(|(stem, _)| word.starts_with(stem))
        .map(|(_, n)| *n)
}

/// Dates like `05.03.2024`, `5/3/2024`, `2024-03-05`, `5 марта 2024`, `March 5, 2024` → `2024-03-05`.
pub(super) fn normalize_date(text: &str) -> Option<String> {
    let parts: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || ".-/,".contains(c))
        .filter(|s| !s.is_empty())
        .collect();
    let [a, b, c] = parts[..] else { return None };
    let num = |s: &str| s.parse::<u32>().ok();
    let (year, month, day) = if a.len() == 4 {
        (num(a)?, num(b)?, num(c)?)
    } else if let Some(m) = month_number(b).filter(|_| num(b).is_none()) {
        (num(c)?, m.parse().ok()?, num(a)?)
    } else if let Some(m) = month_number(a).filter(|_| num(a).is_none()) {
        (num(c)?, m.parse().ok()?, num(b)?)
    } else {
        (num(c)?, num(b)?, num(a)?)
    };
    let year = if year < 100 { 2000 + year } else { year };
    ((1..=12).contains(&month) && (1..=31).contains(&day))
        .then(|| format!("{year:04}-{month:02}-{day:02}"))
}

impl Rule for SetEqual {
    fn variables(&self) -> Vec<(&'static str, &str)> {
        self.groups
            .iter()
            .map(|g| ("entities", g.expected.as_str()))
            .collect()
    }

    fn expected(&self, vars: &Map<String, Value>) -> Option<Value> {
        Some(Value::Object(
            self.groups
                .iter()
                .map(|g| {
                    (
                        g.name.clone(),
                        lookup(vars, &g.expected).cloned().unwrap_or(Value::Null),
                    )
                })
                .collect(),
        ))
    }

    fn reads(&self) -> Reads<'_> {
        Reads::Text(self)
    }
}

impl ReadsText for SetEqual {
    fn verify(&self, answer: &str, _response: &str, vars: &Map<String, Value>) -> Verdict {
        let (mut hits, mut found_total, mut expected_total) = (0usize, 0usize, 0usize);
        let mut problems = Vec::new();
        for group in &self.groups {
            let Some(expected) = lookup(vars, &group.expected) else {
                return Verdict::fail(format!("the instance has no `{}`", group.expected));
            };
            let expected: BTreeSet<String> = as_text_list(expected)
                .iter()
                .map(|e| group.norm(e))
                .collect();
            let found = group.found(answer);
            hits += found.intersection(&expected).count();
            found_total += found.len();
            expected_total += expected.len();
            let missing: Vec<_> = expected.difference(&found).cloned().collect();
            let extra: Vec<_> = found.difference(&expected).cloned().collect();
            if !missing.is_empty() {
                problems.push(format!("{}: missing {}", group.name, missing.join(", ")));
            }
            if !extra.is_empty() {
                problems.push(format!("{}: extra {}", group.name, extra.join(", ")));
            }
        }
        let f1 = if found_total + expected_total == 0 {
            1.0
        } else {
            2.0 * hits as f64 / (found_total + expected_total) as f64
        };
        if problems.is_empty() {
            Verdict::pass()
        } else {
            let score = if self.partial { f1 } else { 0.0 };
            Verdict::scored(
                false,
                score,
                format!("{} (F1 {f1:.2})", problems.join("; ")),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entity(normalize: &str) -> Result<EntityDef, toml::de::Error> {
        let text = format!("name = \"e\"\npattern = '\\d+'\nexpected = \"v\"\n{normalize}");
        toml::from_str(&text)
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
            let e = entity(bad).unwrap_err().to_string();
            assert!(e.contains("unknown variant `lowercas`"), "{bad}: {e}");
        }
        let e = entity("normalize = 3").unwrap_err().to_string();
        assert!(e.contains("a normalizer name or a list of them"), "{e}");
    }

    #[test]
    fn dates_in_many_formats_normalize_alike() {
        for text in [
            "05.03.2024",
            "5/3/2024",
            "2024-03-05",
            "5 марта 2024",
            "March 5, 2024",
            "5 Mar 2024",
        ] {
            assert_eq!(
                normalize_date(text).as_deref(),
                Some("2024-03-05"),
                "{text}"
            );
        }
        assert_eq!(normalize_date("1 мая 2023").as_deref(), Some("2023-05-01"));
        assert_eq!(normalize_date("not a date"), None);
    }

    #[test]
    fn phones_written_differently_are_equal() {
        let a = apply(Normalizer::Phone, "+7 (912) 345-67-89");
        assert_eq!(a, apply(Normalizer::Phone, "8 912 345 67 89"));
        assert_eq!(a, "79123456789");
    }

    #[test]
    fn missing_and_extra_entities_are_listed_with_f1() {
        let rule = SetEqual {
            groups: vec![Group {
                name: "email".into(),
                pattern: Regex::new(r"[\w.+-]+@[\w-]+\.[\w.]+").unwrap(),
                normalize: vec![Normalizer::Lowercase],
                expected: "emails".into(),
            }],
            partial: true,
        };
        let vars: Map<String, Value> =
            serde_json::from_str(r#"{"emails": ["A@x.ru", "b@y.com"]}"#).unwrap();
        assert!(rule.verify("a@x.ru, b@y.com", "", &vars).passed);
        let v = rule.verify("a@x.ru, c@z.org", "", &vars);
        assert!(
            v.detail.contains("missing b@y.com") && v.detail.contains("extra c@z.org"),
            "{}",
            v.detail
        );
        assert!((v.score - 0.5).abs() < 1e-12);
    }
}
