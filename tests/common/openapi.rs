//! The vendored OpenAI OpenAPI document (`schemas/vendor/openai/`): request
//! body validators for its component schemas, and its documented example
//! responses.

use std::io::Read;
use std::sync::OnceLock;

use serde_json::{Value, json};

use super::fake_server::Request;

/// The openai/openai-openapi commit the vendored document is from.
pub const COMMIT: &str = "f85dbe223d40e1a31cba812ab2d755c7e98a92a3";
/// Its `info.version`.
pub const VERSION: &str = "2.3.0";

/// The document, read once.
pub fn document() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        let path = super::root().join("schemas/vendor/openai/openapi.json.gz");
        let mut text = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
            .read_to_string(&mut text)
            .unwrap();
        serde_json::from_str(&text).unwrap()
    })
}

/// A validator of component schema `name` (`CreateResponse`), its `$ref`s
/// resolved inside the document's components (OpenAPI 3.1: JSON Schema 2020-12).
pub fn validator(name: &str) -> jsonschema::Validator {
    let doc = document();
    assert_eq!(doc["info"]["version"], VERSION, "the vendored document");
    let mut components = doc["components"].clone();
    discriminated_any_of(&mut components);
    let root = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": format!("#/components/schemas/{name}"),
        "components": components,
    });
    jsonschema::draft202012::new(&root).unwrap()
}

/// OpenAPI picks one branch of a `oneOf` with a `discriminator` by the
/// discriminating property; JSON Schema knows no discriminator and demands
/// that exactly one branch match, which fails where branches overlap (a
/// Responses `input` message with content parts is both an
/// `EasyInputMessage` and an `InputMessage`). Such a `oneOf` is checked as `anyOf`.
fn discriminated_any_of(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if map.contains_key("discriminator")
                && let Some(branches) = map.remove("oneOf")
            {
                map.insert("anyOf".into(), branches);
            }
            map.values_mut().for_each(discriminated_any_of);
        }
        Value::Array(items) => items.iter_mut().for_each(discriminated_any_of),
        _ => {}
    }
}

/// Asserts `body` is a valid `name`, naming each violation and the document's version.
pub fn assert_valid(validator: &jsonschema::Validator, name: &str, body: &Value) {
    let errors: Vec<String> = validator
        .iter_errors(body)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "not a valid {name} of OpenAPI {VERSION} ({COMMIT}): {errors:#?}\n{body:#}"
    );
}

/// The documented JSON example responses of `POST path` (`/responses`),
/// by title; examples that are no JSON object (event streams) are left out.
pub fn examples(path: &str) -> Vec<(String, Value)> {
    document()["paths"][path]["post"]["x-oaiMeta"]["examples"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| {
            let body: Value = serde_json::from_str(e["response"].as_str()?).ok()?;
            Some((e["title"].as_str()?.to_owned(), body))
        })
        .collect()
}

/// Every Responses body the fake saw is a valid `CreateResponse`, every chat body a valid request.
pub fn assert_valid_openai(requests: &[Request]) {
    let (responses, chat) = (
        validator("CreateResponse"),
        validator("CreateChatCompletionRequest"),
    );
    for r in requests {
        match r.path.as_str() {
            "/v1/responses" => assert_valid(&responses, "CreateResponse", &r.body),
            "/v1/chat/completions" => {
                assert_valid(&chat, "CreateChatCompletionRequest", &r.body);
            }
            _ => {}
        }
    }
}
