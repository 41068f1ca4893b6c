//! The OpenAPI 3.1 document served at `/openapi.json` (written by hand; the HTTP tests check
//! that every route of the router is in it).

use axum::Json;
use serde_json::{json, Value};

pub async fn handler() -> Json<Value> {
    Json(document())
}

fn err(desc: &str) -> Value {
    json!({"description": desc, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}})
}

fn ok(desc: &str, schema: Value) -> Value {
    json!({"description": desc, "content": {"application/json": {"schema": schema}}})
}

fn body(schema: Value) -> Value {
    json!({"required": true, "content": {"application/json": {"schema": schema}}})
}

fn tenant() -> Value {
    json!({"name": "tenant", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[A-Za-z0-9._@-]{1,128}$"}})
}

fn common(mut responses: Value) -> Value {
    let extra = [
        (
            "400",
            "malformed body, unknown field, wrong type, bad value",
        ),
        ("401", "missing or unknown API key"),
        ("403", "the key may not touch this tenant"),
        ("413", "body, text or turn count over a limit"),
        ("429", "queue or in-flight limit reached; retry"),
        ("503", "shutting down"),
    ];
    if let Some(m) = responses.as_object_mut() {
        for (code, desc) in extra {
            m.entry(code).or_insert_with(|| err(desc));
        }
    }
    responses
}

/// The document.
pub fn document() -> Value {
    let any = json!({"type": "object"});
    json!({
        "openapi": "3.1.0",
        "info": {"title": "memdex", "version": env!("CARGO_PKG_VERSION"),
                 "description": "Long-term memory for chat assistants: append sessions, search, forget."},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {"type": "object", "properties": {"error": {"type": "object", "properties": {
                    "status": {"type": "integer"}, "code": {"type": "string"}, "message": {"type": "string"}}}}},
                "Turn": {"type": "object", "additionalProperties": false, "required": ["role", "content"],
                         "properties": {"role": {"enum": ["user", "assistant"]}, "content": {"type": "string"}}},
                "Session": {"type": "object", "additionalProperties": false, "required": ["session_id", "turns"],
                            "properties": {"tenant": {"type": "string", "description": "must equal the path's tenant when given"},
                                           "session_id": {"type": "string"},
                                           "date": {"type": "string", "description": "RFC 3339, LongMemEval 'YYYY/MM/DD (Day) HH:MM' or 'YYYY-MM-DD[ HH:MM[:SS]]'; default now"},
                                           "turns": {"type": "array", "items": {"$ref": "#/components/schemas/Turn"}}}},
                "Stages": {"type": "object", "additionalProperties": false, "properties": {
                    "retriever": {"enum": ["dense", "bm25", "hybrid"]}, "bm25": {"enum": ["official", "memdex"]},
                    "fusion": {"enum": ["minmax", "rrf"]}, "dense_weight": {"type": "number"},
                    "fragrel_alpha": {"type": "number"}, "fragrel_w": {"type": "number"},
                    "fragrel_scope": {"enum": ["session", "history"]}, "recency": {"type": "number"},
                    "importance": {"type": "number"}, "fragrel_semantic": {"type": "number"},
                    "time": {"enum": ["off", "front", "boost"]}, "time_boost": {"type": "number"},
                    "when_boost": {"type": "number"}}},
                "Hit": {"type": "object", "properties": {"rank": {"type": "integer"}, "score": {"type": "number"},
                        "item_id": {"type": "integer"}, "tenant": {"type": "string"}, "session_id": {"type": "string"},
                        "turn": {"type": "integer"}, "position": {"type": "integer"}, "timestamp_ms": {"type": "integer"},
                        "role": {"type": "string"}, "value": {"type": "string"}}}
            }
        },
        "security": [{"bearer": []}],
        "paths": {
            "/v1/tenants/{tenant}/sessions": {"post": {
                "summary": "Append sessions (idempotent on session_id + content); answers once durable",
                "parameters": [tenant()],
                "requestBody": body(json!({"oneOf": [
                    {"$ref": "#/components/schemas/Session"},
                    {"type": "array", "items": {"$ref": "#/components/schemas/Session"}},
                    {"type": "object", "additionalProperties": false, "required": ["sessions"],
                     "properties": {"sessions": {"type": "array", "items": {"$ref": "#/components/schemas/Session"}}}}]})),
                "responses": common(json!({"200": ok("committed (fsynced); per-session status stored|unchanged with item ids", any.clone()),
                                            "409": err("same session_id already stored with other content")}))}},
            "/v1/tenants/{tenant}/search": {"post": {
                "summary": "Ranked items of the tenant for a query",
                "parameters": [tenant()],
                "requestBody": body(json!({"type": "object", "additionalProperties": false, "required": ["query"], "properties": {
                    "query": {"type": "string"}, "date": {"type": "string", "description": "when the question is asked (time references and recency); default now"},
                    "recent_turns": {"type": "array", "items": {"type": "string"}},
                    "k": {"type": "integer", "minimum": 1, "default": 10},
                    "stages": {"$ref": "#/components/schemas/Stages"},
                    "context": {"type": "boolean", "description": "answer the reading-stage JSON and Chain-of-Note prompt"}}})),
                "responses": common(json!({"200": ok("hits", json!({"type": "object", "properties": {
                    "hits": {"type": "array", "items": {"$ref": "#/components/schemas/Hit"}}}})),
                    "404": err("tenant has no memory")}))}},
            "/v1/tenants/{tenant}/items/{id}": {"delete": {
                "summary": "Forget one item", "parameters": [tenant(), {"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}],
                "responses": common(json!({"200": ok("deleted", any.clone()), "404": err("no such live item")}))}},
            "/v1/tenants/{tenant}/sessions/{session_id}": {"delete": {
                "summary": "Forget a session", "parameters": [tenant(), {"name": "session_id", "in": "path", "required": true, "schema": {"type": "string"}}],
                "responses": common(json!({"200": ok("deleted", any.clone()), "404": err("no such live session")}))}},
            "/v1/tenants/{tenant}": {"delete": {
                "summary": "Forget a tenant", "parameters": [tenant()],
                "responses": common(json!({"200": ok("deleted", any.clone()), "404": err("tenant has no memory")}))}},
            "/v1/admin/compact": {"post": {
                "summary": "Compact now: deleted rows leave the disk, small segments merge (admin key)",
                "responses": common(json!({"200": ok("compaction report", any.clone())}))}},
            "/v1/embeddings": {"post": {
                "summary": "OpenAI-compatible embeddings",
                "requestBody": body(json!({"type": "object", "additionalProperties": false, "required": ["input"], "properties": {
                    "input": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
                    "model": {"type": "string"}, "encoding_format": {"enum": ["float", "base64"]},
                    "dimensions": {"type": "integer"}, "user": {"type": "string"}}})),
                "responses": common(json!({"200": ok("{object: list, data: [{object, index, embedding}], model, usage}", any.clone()),
                                            "404": err("another model was asked for")}))}},
            "/healthz": {"get": {"summary": "Liveness", "security": [], "responses": {"200": ok("ok", any.clone())}}},
            "/metrics": {"get": {"summary": "Prometheus metrics (admin key)",
                "responses": {"200": {"description": "Prometheus text", "content": {"text/plain": {"schema": {"type": "string"}}}}}}},
            "/openapi.json": {"get": {"summary": "This document", "security": [], "responses": {"200": ok("OpenAPI", any)}}}
        }
    })
}
