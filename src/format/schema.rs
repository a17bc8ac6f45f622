//! The spec format as JSON Schema, generated from the serde model so editors
//! (taplo, VS Code) complete and check specs and the schema never drifts.

use serde_json::Value;

use super::SpecFile;

/// The JSON Schema of a spec file.
pub fn spec_schema() -> Value {
    let mut schema =
        serde_json::to_value(schemars::schema_for!(SpecFile)).expect("schema serializes");
    if let Value::Object(map) = &mut schema {
        map.insert("title".into(), Value::from("harness spec"));
        map.insert(
            "description".into(),
            Value::from("One test category for harness: generation script, prompt templates, verification rules and self-checks."),
        );
    }
    schema
}

/// The schema as the pretty JSON committed in `schemas/spec.schema.json`.
pub fn spec_schema_text() -> String {
    serde_json::to_string_pretty(&spec_schema()).expect("schema serializes") + "\n"
}
