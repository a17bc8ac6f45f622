//! The `[[verify]]` table as written, the entities of `set_equal`, and rubric levels.

use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

/// One `[[verify]]` table as written. The rule its `rule` key names reads
/// it into a typed table of its own keys (`verify/<rule>.rs`), from the
/// source map, so every error keeps its file:line:col.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(transparent)]
pub struct RuleTable(pub toml::Table);

impl RuleTable {
    /// The `rule` key, when it is a string.
    pub fn rule(&self) -> Option<&str> {
        self.0.get("rule").and_then(toml::Value::as_str)
    }
}

impl JsonSchema for RuleTable {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Rule".into()
    }

    /// A stand-in: the schema of every rule's keys lives with the rules, and
    /// the spec schema puts it in `$defs/Rule`.
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "object"})
    }
}

/// The keys a serde struct reads, in declaration order, as serde spells them.
pub fn field_names<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    struct Fields<'a>(&'a mut &'static [&'static str]);
    impl<'de> Deserializer<'de> for Fields<'_> {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("fields read"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map enum identifier ignored_any
        }
    }
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Fields(&mut fields));
    fields
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
    fn field_names_follow_the_declaration() {
        assert_eq!(
            field_names::<EntityDef>(),
            ["name", "pattern", "normalize", "expected"]
        );
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
