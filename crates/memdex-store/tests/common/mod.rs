//! Fixtures shared by the store's integration tests.

#![allow(dead_code)]

use memdex_core::{MemoryItem, ModelInfo, Pooling, Role};

/// A test model of dimension `dim` with fingerprint `fp`.
pub fn model(dim: usize, fp: &str) -> ModelInfo {
    ModelInfo {
        name: "test-model".into(),
        fingerprint: fp.into(),
        dim,
        pooling: Pooling::Mean,
        normalize: true,
        max_length: 16,
        query_prefix: String::new(),
        passage_prefix: String::new(),
    }
}

/// A user turn of `tenant`'s `session` with key `text`.
pub fn item(tenant: &str, session: &str, turn: u32, text: &str) -> MemoryItem {
    MemoryItem {
        tenant: tenant.into(),
        session_id: session.into(),
        turn,
        timestamp_ms: 1_700_000_000_000 + turn as i64,
        role: Role::User,
        value: format!("user: {text}"),
        key: text.into(),
        content_hash: MemoryItem::compute_hash(Role::User, text, text),
    }
}
