//! The OpenAPI 3.1 document served at `/openapi.json`, generated from the request and
//! response types and the handlers' annotations (utoipa), so it cannot drift from the code.
//! `/metrics` (Prometheus text) and this route are added by hand.

use axum::Json;
use serde_json::{json, Value};
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::api;

#[derive(OpenApi)]
#[openapi(
    info(title = "memdex", description = "Long-term memory for chat assistants: append sessions, search, forget."),
    paths(
        api::append,
        api::search,
        api::delete_item,
        api::delete_session,
        api::delete_tenant,
        api::compact,
        crate::admin::verify,
        crate::admin::snapshot,
        api::embeddings,
        api::healthz,
        crate::browse::tenants,
        crate::browse::sessions,
        crate::browse::session
    ),
    components(schemas(
        crate::error::ErrorBody,
        crate::error::OpenAiErrorBody,
        memdex_memory::Stages,
        memdex_memory::SearchHit
    )),
    modifiers(&Security),
    security(("bearer" = []))
)]
struct Doc;

struct Security;

impl Modify for Security {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
        );
    }
}

/// Failures every route may answer.
const COMMON: [(&str, &str); 8] = [
    (
        "400",
        "malformed body, unknown field, wrong type, bad value",
    ),
    ("401", "missing or unknown API key"),
    (
        "403",
        "the key may not touch this tenant, or needs the admin key",
    ),
    ("408", "the request body did not arrive in time"),
    ("413", "body, text or turn count over a limit"),
    ("429", "queue or in-flight limit reached; retry"),
    ("503", "shutting down, or the engine cannot work"),
    ("507", "not committed: the store's disk is full"),
];

/// The document.
pub fn document() -> Value {
    let mut doc = serde_json::to_value(Doc::openapi()).unwrap_or_else(|_| json!({}));
    doc["info"]["version"] = json!(env!("CARGO_PKG_VERSION"));
    let error = json!({"content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}});
    // the OpenAI-compatible route answers its failures in OpenAI's shape
    let openai_error = json!({"content": {"application/json": {"schema": {"$ref": "#/components/schemas/OpenAiErrorBody"}}}});
    if let Some(paths) = doc["paths"].as_object_mut() {
        for (path, item) in paths.iter_mut() {
            let Some(item) = item.as_object_mut() else {
                continue;
            };
            let openai = path == "/v1/embeddings";
            let error = if openai { &openai_error } else { &error };
            // /healthz needs no key, no body and no permit: it answers 200 or 503 only
            let public = path == "/healthz";
            for op in item.values_mut() {
                if let Some(responses) = op["responses"].as_object_mut() {
                    for (code, r) in responses.iter_mut().filter(|_| openai) {
                        if !code.starts_with('2') {
                            r["content"] = error["content"].clone();
                        }
                    }
                    for (code, desc) in COMMON.into_iter().filter(|_| !public) {
                        let mut e = error.clone();
                        e["description"] = json!(desc);
                        responses.entry(code).or_insert(e);
                    }
                }
            }
        }
        paths.insert(
            "/metrics".into(),
            json!({"get": {"summary": "Prometheus metrics (admin key)", "responses": {"200": {
                "description": "Prometheus text", "content": {"text/plain": {"schema": {"type": "string"}}}}}}}),
        );
        paths.insert(
            "/openapi.json".into(),
            json!({"get": {"summary": "This document", "security": [], "responses": {"200": {
                "description": "OpenAPI 3.1", "content": {"application/json": {"schema": {"type": "object"}}}}}}}),
        );
    }
    doc
}

pub async fn handler() -> Json<Value> {
    Json(document())
}
