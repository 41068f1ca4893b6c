use std::collections::BTreeMap;

use memdex_core::Role;
use memdex_store::ItemRef;
use serde::Serialize;

use crate::update::UpdateDirection;

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

/// One hit's path through the stages (scores are each stage's output for this item).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Explain {
    /// Cosine of the query and the item's key (dense and hybrid retrievers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dense: Option<f32>,
    /// BM25 of the query over the key (bm25 and hybrid retrievers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bm25: Option<f32>,
    /// Query expansion's signal: BM25 of the expansion terms, each weighted by its cosine
    /// with the query (hybrid with expansion on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expansion: Option<f32>,
    /// First-stage score: the fusion of both (hybrid, with the expansion's share when it is
    /// on) or the retriever's own.
    pub first_stage: f32,
    /// After FragRel's environment scores.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fragrel: Option<f32>,
    /// After the TiM thought and MemTree lifts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structures: Option<f32>,
    /// After Mimir's recency and importance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signals: Option<f32>,
    /// After the thought stage put newer statements above the ones they replace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded: Option<f32>,
    /// Rank by score alone (1-based).
    pub score_rank: usize,
    /// The time stage's reason for preferring this item: `in_range` (a date in the query's
    /// range) or `dated` (it states a date, for a "when" question); absent: not preferred.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<&'static str>,
    /// Rank after the time stage (1-based).
    pub time_rank: usize,
    /// Rank before the update stage moved this item (absent: it did not move it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update_moved_from: Option<usize>,
    /// Why the update stage moved this item (absent: it did not move it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update: Option<UpdateLink>,
    /// The score after each other stage that ran, under the stage's name.
    #[serde(flatten)]
    pub stages: BTreeMap<&'static str, f32>,
}

impl Explain {
    /// An explanation with only the rank by score (the rank after the time stage too, until
    /// that stage says otherwise).
    pub(crate) fn ranked(score_rank: usize) -> Explain {
        Explain {
            dense: None,
            bm25: None,
            expansion: None,
            first_stage: 0.0,
            fragrel: None,
            structures: None,
            signals: None,
            superseded: None,
            score_rank,
            time: None,
            time_rank: score_rank,
            update_moved_from: None,
            update: None,
            stages: BTreeMap::new(),
        }
    }

    /// Records `score` as the output of the stage (or first-stage input) called `name`.
    pub(crate) fn set_score(&mut self, name: &'static str, score: f32) {
        let slot = match name {
            "first_stage" => {
                self.first_stage = score;
                return;
            }
            "dense" => &mut self.dense,
            "bm25" => &mut self.bm25,
            "expansion" => &mut self.expansion,
            "fragrel" => &mut self.fragrel,
            "structures" => &mut self.structures,
            "signals" => &mut self.signals,
            "superseded" => &mut self.superseded,
            other => {
                self.stages.insert(other, score);
                return;
            }
        };
        *slot = Some(score);
    }
}

/// The update stage's reason for moving a hit: the item it was linked to (the one that held
/// the hit's new rank) and the test the pair passed: both answer the question, and the newer
/// session states a change of the question's subject (`cue`, in `sentence`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UpdateLink {
    pub linked_item_id: u64,
    pub linked_session_id: String,
    /// `newest_first` (a question about the present) or `oldest_first` (an earlier state).
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "newest_first"))]
    pub direction: UpdateDirection,
    /// The cue of change the newer session's sentence carries (`no longer`, `moved`, …), the
    /// verb of ending that names the older statement's thing (`left`, `dropped`), or
    /// `same attribute, new value`.
    pub cue: &'static str,
    /// The newer session's sentence that states the change.
    pub sentence: String,
}
