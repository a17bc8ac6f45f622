//! What makes a rule: a typed table of its own keys, a builder, and the
//! extraction it uses by default ([`RuleKind`]), all in the rule's file. The
//! registry (`verify/mod.rs`) lists each kind once as an [`Entry`]; the keys
//! a rule reads, the JSON Schema of its table and the check of its docs all
//! come from the table's type.

use schemars::{JsonSchema, SchemaGenerator};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::expected::{ComparesText, ReferenceKeys};
use super::{BuildContext, Rule};
use crate::error::Diagnostic;
use crate::format::key_path;
use crate::format::{ExtractDef, ExtractKind, field_names};

/// One rule, implemented by the typed table of the keys it reads besides the
/// common ones; the type's doc comment says when it passes. Its name, default
/// extraction and the wording of its reference keys are its row of the
/// registry ([`Entry`]).
pub(super) trait RuleKind: DeserializeOwned + JsonSchema {
    /// Builds the rule from its keys.
    fn build(self, cx: &BuildContext) -> Result<Box<dyn Rule>, Diagnostic>;
    /// The fence a `code_block` extraction prefers when the spec names none.
    fn fence_language(&self) -> Option<String> {
        None
    }
}

/// How a rule words the two keys naming what it compares with: an instance
/// variable (`expected`) or a literal (`value`). Every such rule reads them
/// alike; only what the value is (an answer, calls, a text) differs.
pub(super) struct Reference {
    /// The doc of `expected`.
    pub expected: &'static str,
    /// The doc of `value`.
    pub value: &'static str,
}

/// The wording of a rule comparing the answer with an expected value.
pub(super) const EXPECTED_VALUE: Reference = Reference {
    expected: "The instance variable holding the expected value (a dotted path).",
    value: "A literal expected value, instead of `expected`.",
};

/// The keys every rule takes, whatever its kind.
#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct Common {
    /// The rule: its name picks the keys it reads.
    pub rule: String,
    /// A name for reports (defaults to the rule); it also starts the rule's
    /// failure text in place of the rule's kind.
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
}

/// The names of the common keys.
pub(super) fn common_keys() -> &'static [&'static str] {
    field_names::<Common>()
}

/// A rule built from its table, with the fence its extraction prefers.
pub(super) struct Built {
    /// The rule.
    pub rule: Box<dyn Rule>,
    /// The fence language for a `code_block` extraction without one.
    pub fence_language: Option<String>,
}

/// The registry's row for one rule kind: its name, default extraction and
/// reference wording, and the functions that read its keys, describe them
/// and build it.
pub(super) struct Entry {
    /// The `rule = "..."` name.
    pub name: &'static str,
    /// What the rule reads from a response when the spec gives no `extract`.
    pub default_extract: ExtractKind,
    /// The docs of `expected` and `value`, for a rule that compares with an
    /// expected value: it reads them with [`BuildContext::expected`].
    reference: Option<Reference>,
    /// The rule's own keys, in declaration order.
    own_keys: fn() -> &'static [&'static str],
    /// The JSON Schema of the rule's own keys (an object schema).
    own_schema: fn(&mut SchemaGenerator) -> Value,
    /// Reads the rule's own keys (leaving out `skip`) and builds it.
    build: fn(&BuildContext, &[&str]) -> Result<Built, Diagnostic>,
}

/// The registry's row for rule kind `K`, named `name`: it extracts text and
/// compares with no expected value unless told otherwise.
pub(super) const fn entry<K: RuleKind>(name: &'static str) -> Entry {
    row::<K>(name, build::<K>)
}

/// The registry's row for `K`, the keys of a rule that compares the answer's
/// text with an expected value and needs nothing else: the keys are the
/// comparison ([`ComparesText`]), worded as [`EXPECTED_VALUE`].
pub(super) const fn text_entry<K>(name: &'static str) -> Entry
where
    K: ComparesText + DeserializeOwned + JsonSchema + 'static,
{
    row::<K>(name, build_text::<K>).compares(EXPECTED_VALUE)
}

/// The row of keys `K` built by `build`.
const fn row<K: DeserializeOwned + JsonSchema>(
    name: &'static str,
    build: fn(&BuildContext, &[&str]) -> Result<Built, Diagnostic>,
) -> Entry {
    Entry {
        name,
        default_extract: ExtractKind::Text,
        reference: None,
        own_keys: field_names::<K>,
        own_schema: own_schema::<K>,
        build,
    }
}

impl Entry {
    /// The rule compares with an expected value, its keys worded by `docs`.
    pub(super) const fn compares(self, docs: Reference) -> Entry {
        Entry {
            reference: Some(docs),
            ..self
        }
    }

    /// The rule reads `extract` from a response when the spec gives none.
    pub(super) const fn extracts(self, extract: ExtractKind) -> Entry {
        Entry {
            default_extract: extract,
            ..self
        }
    }

    /// The keys of the reference, when the rule compares with one.
    fn reference_keys(&self) -> &'static [&'static str] {
        match self.reference {
            Some(_) => field_names::<ReferenceKeys>(),
            None => &[],
        }
    }

    /// The rule's keys besides the common ones, in declaration order (a
    /// reference's first).
    pub(super) fn keys(&self) -> Vec<&'static str> {
        let mut keys = self.reference_keys().to_vec();
        keys.extend((self.own_keys)());
        keys
    }

    /// The JSON Schema of the rule's keys besides the common ones.
    fn schema(&self, generator: &mut SchemaGenerator) -> Value {
        let mut schema = (self.own_schema)(generator);
        if let Some(docs) = &self.reference {
            let mut reference = ReferenceKeys::json_schema(generator).to_value();
            let keys = &mut reference["properties"];
            keys["expected"]["description"] = docs.expected.into();
            keys["value"]["description"] = docs.value.into();
            if let (Some(own), Some(keys)) =
                (schema["properties"].as_object(), keys.as_object_mut())
            {
                keys.extend(own.clone());
            }
            schema["properties"] = reference["properties"].take();
        }
        schema
    }

    /// Reads the rule's keys (leaving out `skip`) and builds it.
    pub(super) fn build(&self, cx: &BuildContext, skip: &[&str]) -> Result<Built, Diagnostic> {
        let mut skip = skip.to_vec();
        skip.extend(self.reference_keys());
        (self.build)(cx, &skip)
    }
}

fn own_schema<K: JsonSchema>(generator: &mut SchemaGenerator) -> Value {
    K::json_schema(generator).to_value()
}

fn build<K: RuleKind>(cx: &BuildContext, skip: &[&str]) -> Result<Built, Diagnostic> {
    let keys: K = cx.map.read_table(key_path!["verify", cx.index], skip)?;
    let fence_language = keys.fence_language();
    Ok(Built {
        rule: keys.build(cx)?,
        fence_language,
    })
}

fn build_text<K>(cx: &BuildContext, skip: &[&str]) -> Result<Built, Diagnostic>
where
    K: ComparesText + DeserializeOwned + 'static,
{
    let keys: K = cx.map.read_table(key_path!["verify", cx.index], skip)?;
    Ok(Built {
        rule: cx.text_rule(keys)?,
        fence_language: None,
    })
}

/// The JSON Schema of one `[[verify]]` table (one of the `kinds`, picked by
/// `rule`), and the definitions it refers to.
pub(super) fn rule_schema(kinds: &[Entry]) -> (Value, Map<String, Value>) {
    let mut generator = SchemaGenerator::default();
    let common = Common::json_schema(&mut generator).to_value();
    let variants: Vec<Value> = kinds
        .iter()
        .map(|kind| {
            let own = kind.schema(&mut generator);
            let mut properties = common["properties"].as_object().cloned().unwrap_or_default();
            properties.insert(
                "rule".into(),
                json!({"const": kind.name, "description": common["properties"]["rule"]["description"]}),
            );
            if let Some(keys) = own["properties"].as_object() {
                properties.extend(keys.clone());
            }
            let mut required = vec![Value::from("rule")];
            if let Some(keys) = own["required"].as_array() {
                required.extend(keys.iter().cloned());
            }
            json!({
                "type": "object",
                "title": kind.name,
                "description": own["description"],
                "properties": properties,
                "required": required,
                "additionalProperties": false,
            })
        })
        .collect();
    let schema = json!({
        "description": "One verification rule: `rule` names it, and with it the keys it reads.",
        "oneOf": variants,
    });
    (schema, generator.take_definitions(true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::{RULES, rule_keys};

    const RULES_DOC: &str = include_str!("../../docs/rules.md");
    const JUDGE_DOC: &str = include_str!("../../docs/judge.md");
    const SANDBOX_DOC: &str = include_str!("../../docs/sandbox.md");
    const SCHEMA: &str = include_str!("../../schemas/spec.schema.json");

    /// The first Markdown table in `text` whose rows name keys: per row, per
    /// cell, the leading word of each code span.
    fn table(text: &str) -> Vec<Vec<Vec<String>>> {
        let words = |cell: &str| -> Vec<String> {
            cell.split('`')
                .skip(1)
                .step_by(2)
                .filter_map(|span| {
                    let word: String = span
                        .chars()
                        .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                        .collect();
                    (!word.is_empty()).then_some(word)
                })
                .collect()
        };
        text.lines()
            .skip_while(|l| !l.starts_with("| `"))
            .take_while(|l| l.starts_with("| `"))
            .map(|l| l.split('|').map(words).collect())
            .collect()
    }

    /// The text of `doc` after `marker`.
    fn after<'a>(doc: &'a str, marker: &str) -> &'a str {
        doc.split(marker)
            .nth(1)
            .unwrap_or_else(|| panic!("no `{marker}` in the docs"))
    }

    /// The rows of the table under `## {heading}` of docs/rules.md: the first
    /// column's name, and the words of `column`.
    fn doc_table(heading: &str, column: usize) -> Vec<(String, Vec<String>)> {
        table(after(RULES_DOC, &format!("\n## {heading}\n")))
            .into_iter()
            .map(|mut row| (row[1][0].clone(), std::mem::take(&mut row[column])))
            .collect()
    }

    fn sorted(keys: &[impl AsRef<str>]) -> Vec<String> {
        let mut keys: Vec<String> = keys.iter().map(|k| k.as_ref().to_owned()).collect();
        keys.sort();
        keys.dedup();
        keys
    }

    #[test]
    fn keys_schema_and_docs_agree() {
        let rows = doc_table("The rules", 3);
        let documented: Vec<&str> = rows.iter().map(|(name, _)| name.as_str()).collect();
        let names: Vec<&str> = rule_keys().iter().map(|(name, _)| *name).collect();
        assert_eq!(
            sorted(&documented),
            sorted(&names),
            "docs/rules.md's rule table"
        );
        let committed: Value = serde_json::from_str(SCHEMA).expect("the committed schema is JSON");
        let (generated, _) = rule_schema(RULES);
        assert_eq!(
            committed["$defs"]["Rule"], generated,
            "schemas/spec.schema.json is stale: run `harness schema > schemas/spec.schema.json`"
        );
        for (name, keys) in rule_keys() {
            let row = &rows.iter().find(|(n, _)| n == name).expect("a row").1;
            assert_eq!(
                sorted(row),
                sorted(&keys),
                "docs/rules.md's keys of `{name}`"
            );
            let variant = committed["$defs"]["Rule"]["oneOf"]
                .as_array()
                .and_then(|v| v.iter().find(|v| v["title"] == name))
                .unwrap_or_else(|| panic!("the schema has no `{name}`"));
            let properties = variant["properties"].as_object().expect("properties");
            let own: Vec<&String> = properties
                .keys()
                .filter(|k| !common_keys().contains(&k.as_str()))
                .collect();
            assert_eq!(sorted(&own), sorted(&keys), "the schema's keys of `{name}`");
            assert!(
                variant["description"].is_string(),
                "`{name}` has no doc comment"
            );
            for key in keys {
                assert!(
                    properties[key]["description"].is_string(),
                    "`{name}`'s key `{key}` has no doc comment"
                );
            }
        }
        for (doc, name) in [(JUDGE_DOC, "judge"), (SANDBOX_DOC, "code")] {
            let keys = rule_keys()
                .into_iter()
                .find(|(n, _)| *n == name)
                .expect("a rule")
                .1;
            let table = table(after(doc, "| key | meaning |"));
            let documented: Vec<String> = table
                .into_iter()
                .flat_map(|mut row| row.remove(1))
                .collect();
            assert_eq!(
                sorted(&documented),
                sorted(&keys),
                "the key table of `{name}`'s page"
            );
        }
        let common = doc_table("Keys every rule takes", 1);
        let common: Vec<&str> = common.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            sorted(&common),
            sorted(common_keys()),
            "docs/rules.md's common keys"
        );
    }

    /// What `property` of the committed schema resolves to, through
    /// `Option`'s `anyOf`, `$ref`s and a list's `items`.
    fn resolved<'a>(schema: &'a Value, mut property: &'a Value) -> &'a Value {
        loop {
            property = if let Some(any) = property["anyOf"].as_array() {
                any.iter()
                    .find(|p| p["type"] != "null")
                    .expect("a non-null type")
            } else if let Some(to) = property["$ref"].as_str() {
                let name = to.rsplit('/').next().unwrap_or_default();
                &schema["$defs"][name]
            } else if property["items"].is_object() {
                &property["items"]
            } else {
                return property;
            };
        }
    }

    /// The values an enumerated schema allows (`enum`, or `oneOf` of `const`s).
    fn values(schema: &Value) -> Vec<String> {
        let listed = schema["enum"].as_array().into_iter().flatten();
        let consts = schema["oneOf"].as_array().into_iter().flatten();
        listed
            .chain(consts.map(|v| &v["const"]))
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    }

    #[test]
    fn the_schema_lists_the_values_of_every_enumerated_key() {
        let cases: &[(&str, &str, &[&str])] = &[
            ("contains", "mode", &["all", "any"]),
            ("similarity", "metric", &["chrf", "levenshtein"]),
            ("code", "score", &["all", "fraction"]),
            ("judge", "language", &["ru", "en"]),
            (
                "cer",
                "normalize",
                &["nfkc", "case", "yo", "punctuation", "whitespace"],
            ),
            ("cer", "unit", &["char", "word"]),
            ("tool_call", "order", &["any", "exact"]),
            ("tool_sequence", "mode", &["in_order", "exact", "any_order"]),
            ("step_count", "count", &["calls", "turns"]),
        ];
        let schema: Value = serde_json::from_str(SCHEMA).expect("the committed schema is JSON");
        let mut enumerated = Vec::new();
        let mut described = Vec::new();
        let listing = regex::Regex::new(r"`[a-z_]+`,? or `[a-z_]+`").expect("a valid pattern");
        for variant in schema["$defs"]["Rule"]["oneOf"].as_array().expect("rules") {
            let rule = variant["title"].as_str().expect("a title");
            for (key, property) in variant["properties"].as_object().expect("properties") {
                let found = values(resolved(&schema, property));
                if !found.is_empty() && !common_keys().contains(&key.as_str()) {
                    enumerated.push((rule, key.as_str(), found));
                } else if found.is_empty()
                    && listing.is_match(property["description"].as_str().unwrap_or_default())
                {
                    described.push(format!("{rule}.{key}"));
                }
            }
        }
        let want: Vec<(&str, &str, Vec<String>)> = cases
            .iter()
            .map(|(rule, key, values)| {
                (*rule, *key, values.iter().map(|v| v.to_string()).collect())
            })
            .collect();
        assert_eq!(
            enumerated, want,
            "the enumerated keys of the schema, in rule order"
        );
        assert!(
            described.is_empty(),
            "keys whose doc lists values but whose schema does not (make them enums): {described:?}"
        );
    }
}
