//! The server's own OpenAPI document, and validators for its schemas (JSON Schema 2020-12,
//! formats checked), so tests can hold answers and frames against what it documents.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::TestApp;

/// `GET /api/v1/openapi.json` of `app`.
pub async fn document(app: &TestApp) -> Value {
    let response = app.get("/api/v1/openapi.json").await;
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.expect("JSON")
}

/// A validator for the document's schema at `pointer` (`#/components/schemas/...`), with
/// the document's components beside it so its references resolve.
pub fn validator(document: &Value, pointer: &str) -> jsonschema::Validator {
    validator_of(document, &json!({ "$ref": pointer }))
}

/// A validator for `schema`, whose references point into `document`'s components.
fn validator_of(document: &Value, schema: &Value) -> jsonschema::Validator {
    let mut root = schema.clone();
    root["$schema"] = json!("https://json-schema.org/draft/2020-12/schema");
    root["components"] = document["components"].clone();
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&root)
        .unwrap_or_else(|err| panic!("schema {schema} builds: {err}"))
}

/// Checks `body` against the JSON schema the document gives the answer `status` of
/// `method path` (`path` as the document writes it, `{param}` included).
pub fn assert_documented(document: &Value, method: &str, path: &str, status: u16, body: &Value) {
    let operation = &document["paths"][path][method.to_lowercase()];
    assert!(operation.is_object(), "{method} {path} is documented");
    let mut response = &operation["responses"][status.to_string()];
    if response.is_null() {
        response = &operation["responses"]["default"];
    }
    assert!(response.is_object(), "{method} {path} documents {status}");
    if let Some(reference) = response["$ref"].as_str() {
        response = document
            .pointer(reference.trim_start_matches('#'))
            .unwrap_or_else(|| panic!("{reference} resolves"));
    }
    let schema = &response["content"]["application/json"]["schema"];
    assert!(
        schema.is_object(),
        "{method} {path} {status} has a JSON schema"
    );
    let errors: Vec<String> = validator_of(document, schema)
        .iter_errors(body)
        .map(|e| e.to_string())
        .collect();
    assert!(
        errors.is_empty(),
        "{method} {path} {status}: {body} breaks its documented schema: {errors:?}"
    );
}
