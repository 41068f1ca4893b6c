use memdex_core::Role;
use memdex_store::ItemRef;
use serde::Serialize;

use crate::explain::Explain;

/// One ranked item, as search answers it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SearchHit {
    /// 1-based rank.
    pub rank: usize,
    pub score: f32,
    pub item_id: u64,
    pub tenant: String,
    pub session_id: String,
    pub turn: u32,
    /// Position in the tenant's history.
    pub position: u64,
    /// Session date, ms since the epoch (UTC).
    pub timestamp_ms: i64,
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "user"))]
    pub role: Role,
    pub value: String,
    /// Each stage's score and rank for this hit (only when asked: `search --explain`,
    /// `"explain": true`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<Box<Explain>>,
}

impl SearchHit {
    pub fn new(rank: usize, score: f32, it: ItemRef<'_>) -> SearchHit {
        SearchHit {
            rank,
            score,
            item_id: it.item_id,
            tenant: it.tenant.to_string(),
            session_id: it.session_id.to_string(),
            turn: it.turn,
            position: it.position,
            timestamp_ms: it.timestamp_ms,
            role: it.role,
            value: it.value.to_string(),
            explain: None,
        }
    }
}
