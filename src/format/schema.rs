//! The spec format as JSON Schema, generated from the serde model so editors
//! (taplo, VS Code) complete and check specs and the schema never drifts.
//! The rules' keys live with the rules: whoever knows them passes their
//! schema in (`spec::schema`).

use serde_json::{Map, Value};

use super::SpecFile;

/// The JSON Schema of a spec file, with `rule` as the schema of one
/// `[[verify]]` table and `defs` the definitions it refers to.
pub(crate) fn spec_schema(rule: Value, defs: Map<String, Value>) -> Value {
    let mut schema =
        serde_json::to_value(schemars::schema_for!(SpecFile)).expect("schema serializes");
    if let Value::Object(map) = &mut schema {
        map.insert("title".into(), Value::from("harness spec"));
        map.insert(
            "description".into(),
            Value::from("One test category for harness: generation script, prompt templates, verification rules and self-checks."),
        );
        if let Some(Value::Object(all)) = map.get_mut("$defs") {
            all.insert("Rule".into(), rule);
            for (name, def) in defs {
                all.entry(name).or_insert(def);
            }
            all.sort_keys();
        }
    }
    schema
}

/// A schema as the pretty JSON committed in `schemas/spec.schema.json`.
pub(crate) fn schema_text(schema: &Value) -> String {
    serde_json::to_string_pretty(schema).expect("schema serializes") + "\n"
}
