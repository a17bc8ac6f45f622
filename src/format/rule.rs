//! The `[[verify]]` table as written, and the keys a serde struct reads.

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, Visitor};
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
pub(crate) fn field_names<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Entity {
        name: String,
        pattern: String,
        #[serde(rename = "expected")]
        variable: String,
    }

    #[test]
    fn field_names_follow_the_declaration() {
        assert_eq!(field_names::<Entity>(), ["name", "pattern", "expected"]);
    }
}
