//! What makes a rule: a typed table of its own keys, a builder, and the
//! extraction it uses by default ([`RuleKind`]), all in the rule's file. The
//! registry (`verify/mod.rs`) lists each kind once; the keys a rule reads,
//! the JSON Schema of its table and the check of its docs all come from the
//! table's type.

use schemars::{JsonSchema, SchemaGenerator};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::{BuildContext, Rule};
use crate::error::Diagnostic;
use crate::format::{ExtractDef, ExtractKind, field_names};
use crate::key_path;

/// One rule: `rule = NAME` and the keys it reads besides the common ones.
pub trait RuleKind: Sync {
    /// The rule's own keys; its doc comment says when the rule passes.
    type Keys: DeserializeOwned + JsonSchema;
    /// The `rule = "..."` name.
    const NAME: &'static str;
    /// What the rule reads from a response when the spec gives no `extract`.
    const EXTRACT: ExtractKind = ExtractKind::Text;
    /// Builds the rule from its keys.
    fn build(keys: Self::Keys, cx: &BuildContext) -> Result<Box<dyn Rule>, Diagnostic>;
    /// The fence a `code_block` extraction prefers when the spec names none.
    fn fence_language(keys: &Self::Keys) -> Option<String> {
        let _ = keys;
        None
    }
}

/// The keys every rule takes, whatever its kind.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Common {
    /// The rule: its name picks the keys it reads.
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
}

/// The names of the common keys.
pub fn common_keys() -> &'static [&'static str] {
    field_names::<Common>()
}

/// A rule built from its table, with the fence its extraction prefers.
pub struct Built {
    /// The rule.
    pub rule: Box<dyn Rule>,
    /// The fence language for a `code_block` extraction without one.
    pub fence_language: Option<String>,
}

/// A [`RuleKind`] behind a pointer, so the registry can list them all.
pub trait AnyKind: Sync {
    /// The `rule = "..."` name.
    fn name(&self) -> &'static str;
    /// The default extraction.
    fn default_extract(&self) -> ExtractKind;
    /// The rule's own keys, in declaration order.
    fn keys(&self) -> &'static [&'static str];
    /// The JSON Schema of the rule's own keys (an object schema).
    fn own_schema(&self, generator: &mut SchemaGenerator) -> Value;
    /// Reads the rule's keys (leaving out `skip`) and builds it.
    fn build(&self, cx: &BuildContext, skip: &[&str]) -> Result<Built, Diagnostic>;
}

impl<K: RuleKind> AnyKind for K {
    fn name(&self) -> &'static str {
        K::NAME
    }

    fn default_extract(&self) -> ExtractKind {
        K::EXTRACT
    }

    fn keys(&self) -> &'static [&'static str] {
        field_names::<K::Keys>()
    }

    fn own_schema(&self, generator: &mut SchemaGenerator) -> Value {
        K::Keys::json_schema(generator).to_value()
    }

    fn build(&self, cx: &BuildContext, skip: &[&str]) -> Result<Built, Diagnostic> {
        let keys: K::Keys = cx.map.read_table(key_path!["verify", cx.index], skip)?;
        let fence_language = K::fence_language(&keys);
        Ok(Built {
            rule: K::build(keys, cx)?,
            fence_language,
        })
    }
}

/// The JSON Schema of one `[[verify]]` table (one of the `kinds`, picked by
/// `rule`), and the definitions it refers to.
pub fn rule_schema(kinds: &[&dyn AnyKind]) -> (Value, Map<String, Value>) {
    let mut generator = SchemaGenerator::default();
    let common = Common::json_schema(&mut generator).to_value();
    let variants: Vec<Value> = kinds
        .iter()
        .map(|kind| {
            let own = kind.own_schema(&mut generator);
            let mut properties = common["properties"].as_object().cloned().unwrap_or_default();
            properties.insert(
                "rule".into(),
                json!({"const": kind.name(), "description": common["properties"]["rule"]["description"]}),
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
                "title": kind.name(),
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
