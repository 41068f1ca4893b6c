//! What the ranking pipeline does: one [`RankOptions`] value, recorded whole (serde) in every
//! evaluation report, with the defaults chosen on LoCoMo dev (docs/evaluation.md).

use serde::{Deserialize, Serialize};

/// Which ranking runs first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Retriever {
    /// Cosine similarity of query and key embeddings.
    Dense,
    /// BM25 over the keys.
    Bm25,
    /// `w_dense · minmax(dense) + w_sparse · minmax(bm25)`.
    Hybrid,
    /// TiM: the items the best thoughts came from (two-stage: query bucket, then exact
    /// cosine), ranked by their thought's cosine; the other items follow in dense order.
    Thoughts,
    /// MemTree, collapsed: the items under the best nodes, ranked by the node's cosine; the
    /// other items follow in dense order.
    Tree,
}

/// Which BM25 ranks keyword matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Bm25Flavour {
    /// LongMemEval's: `rank_bm25` Okapi over `str.split(" ")` (the reference baselines).
    Official,
    /// memdex's: Unicode words, lower-case, stop words, Snowball stems (stored at index
    /// time), Lucene idf.
    Memdex,
}

/// Which items share an environment in FragRel's context relation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum FragRelScope {
    /// Items of the same session.
    Session,
    /// The tenant's whole history.
    History,
}

/// How the hybrid combines its two rankings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum Fusion {
    /// Weighted sum of per-query min-max normalised scores (Mimir).
    MinMax,
    /// Reciprocal-rank fusion with constant k (weights ignored).
    Rrf { k: f64 },
}

/// FragRel's context-structure relation (environment scores along the timeline).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FragRelStage {
    /// Weight of the environment (α).
    pub alpha: f64,
    /// Decay per position step (w).
    pub w: f64,
    pub scope: FragRelScope,
}

impl Default for FragRelStage {
    /// The paper's chat setting: α 0.5, w 0.8, within sessions.
    fn default() -> Self {
        Self {
            alpha: 0.5,
            w: 0.8,
            scope: FragRelScope::Session,
        }
    }
}

/// How items in the query's time range are preferred (LongMemEval §5.4).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "lowercase", tag = "kind", content = "factor")]
pub enum TimeMode {
    /// Move them ahead of all others, keeping the order within each group (the official
    /// code's behaviour).
    Front,
    /// Multiply their scores by `1 + this`.
    Boost(f64),
}

/// The time stage: a query naming a time (`last weekend`, `in March`, `on 8 May 2023`) gets a
/// range (±2 days); items whose session date or extracted event dates fall in it are
/// preferred. Queries asking "when…" without a range can boost items that state a date.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TimeStage {
    pub mode: TimeMode,
    /// Scores × (1 + this) for dated items when the query asks "when" (0: off).
    pub when_boost: f64,
}

impl Default for TimeStage {
    /// The official code's re-ordering, plus a mild boost (0.2) of dated items for "when"
    /// questions.
    fn default() -> Self {
        Self {
            mode: TimeMode::Front,
            when_boost: 0.2,
        }
    }
}

/// TiM's thought stage (and the `thoughts` retriever's depth): the items the `k` best
/// thoughts came from get `weight × cosine(query, thought)` added.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ThoughtStage {
    pub weight: f64,
    /// Thoughts retrieved (TiM recalls the top 5).
    pub k: usize,
    /// Buckets probed per LSH table.
    pub probes: usize,
}

impl Default for ThoughtStage {
    /// Top 5 thoughts (the TiM paper's setting), one bucket per table, weight 0.5 (a lift of
    /// half the thought's cosine, the scale of FragRel's α).
    fn default() -> Self {
        Self {
            weight: 0.5,
            k: 5,
            probes: 1,
        }
    }
}

/// MemTree's stage (and the `tree` retriever's depth): the items under the `k` best nodes of
/// the collapsed tree get `weight × cosine(query, node)` added.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TreeStage {
    pub weight: f64,
    /// Nodes retrieved.
    pub k: usize,
}

impl Default for TreeStage {
    /// Top 5 nodes, weight 0.5 (as the thought stage).
    fn default() -> Self {
        Self { weight: 0.5, k: 5 }
    }
}

/// The ranking pipeline's stages and weights; each optional stage is off when `None`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RankOptions {
    pub retriever: Retriever,
    pub bm25: Bm25Flavour,
    /// (dense, sparse) weights of the hybrid.
    pub weights: (f64, f64),
    pub fusion: Fusion,
    /// FragRel environment scores on top.
    pub fragrel: Option<FragRelStage>,
    /// FragRel's semantic relation: `s + this · Σ w_ij s_j / Σ w_ij` over each item's stored
    /// neighbours and the items that list it (w = max(0, cos)), from the same first-stage
    /// scores as the context relation (needs the `neighbors` columns).
    pub semantic: Option<f64>,
    /// Mimir recency: the oldest item's score × (1 − this), the newest unchanged.
    pub recency: Option<f64>,
    /// Mimir importance: scores × (1 + this · log10(importance 1..10)).
    pub importance: Option<f64>,
    /// The asking rule of importance: an item whose own words mostly ask (questions that
    /// state nothing of the speaker's own) gets importance 1 instead of the heuristic's value
    /// (`memdex_score::signals::asks_only`). Read only while importance is on.
    pub asking: bool,
    /// Time-aware ranking (needs the `events` column).
    pub time: Option<TimeStage>,
    /// TiM thought stage (needs the store's thoughts; weight 0: only the retriever's depth).
    pub thoughts: Option<ThoughtStage>,
    /// MemTree stage (needs the store's tree; weight 0: only the retriever's depth).
    pub tree: Option<TreeStage>,
    /// The update stage: linked statements at the top ordered newest first for a question
    /// about the present, oldest first for one about an earlier state.
    pub update: Option<UpdateStage>,
    /// Query expansion by embedding neighbours (hybrid retriever; needs the store's word
    /// table): a third signal in the fusion.
    pub expand: Option<Expand>,
}

impl Default for RankOptions {
    /// The pipeline chosen on LoCoMo dev by principle and coarse sweeps (docs/evaluation.md):
    /// hybrid 0.5/0.5 (Mimir) with memdex's BM25, FragRel in the paper's chat setting (α 0.5,
    /// w 0.8) within sessions, the time stage (official re-ordering) and importance 0.3;
    /// recency off (it lowered every metric); query expansion at its default (10 terms,
    /// weight 0.1), which raised turn→session recall in every LoCoMo type.
    fn default() -> Self {
        Self {
            retriever: Retriever::Hybrid,
            bm25: Bm25Flavour::Memdex,
            weights: (0.5, 0.5),
            fusion: Fusion::MinMax,
            fragrel: Some(FragRelStage::default()),
            semantic: None,
            recency: None,
            importance: Some(0.3),
            asking: true,
            time: Some(TimeStage::default()),
            thoughts: None,
            tree: None,
            update: Some(UpdateStage::default()),
            expand: Some(Expand::default()),
        }
    }
}

impl RankOptions {
    /// Plain cosine ranking (the dense baseline).
    pub fn dense() -> Self {
        Self {
            retriever: Retriever::Dense,
            bm25: Bm25Flavour::Official,
            weights: (0.5, 0.5),
            fusion: Fusion::MinMax,
            fragrel: None,
            semantic: None,
            recency: None,
            importance: None,
            asking: true,
            time: None,
            thoughts: None,
            tree: None,
            update: None,
            expand: None,
        }
    }

    /// Whether any stage reads dense scores (so a query needs a vector).
    pub fn needs_dense(&self) -> bool {
        self.retriever != Retriever::Bm25
    }
}

/// Named starting points for the stage overrides: what `memdex search` ranks by default,
/// or the plain dense baseline of the papers' tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    /// [`RankOptions::default`]: the search default.
    #[default]
    Default,
    /// [`RankOptions::dense`]: cosine only.
    Dense,
}

impl Preset {
    pub fn options(self) -> RankOptions {
        match self {
            Preset::Default => RankOptions::default(),
            Preset::Dense => RankOptions::dense(),
        }
    }
}

/// Query expansion's settings (see the `expand` module): the hybrid's score becomes
/// `w_dense · minmax(dense) + w_sparse · minmax(bm25) + weight · minmax(expansion)`, the
/// expansion being the BM25 of the `terms` candidate terms nearest the question's vector,
/// each weighted by its cosine.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Expand {
    pub terms: usize,
    pub weight: f64,
}

impl Default for Expand {
    /// Ten terms at a tenth of the fusion's scale: the setting the replay in
    /// `bench/results/evaluation-notebook` measured (Kuzi et al. expand with 10 to 20 terms).
    fn default() -> Self {
        Self {
            terms: 10,
            weight: 0.1,
        }
    }
}

/// The most expansion terms a query may ask for.
pub const MAX_EXPAND_TERMS: usize = 100;

/// The update stage's settings (see the `update` module).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct UpdateStage {
    /// Top ranks it may reorder.
    pub window: usize,
    /// The share of the window's best score an item needs to count as answering the
    /// question (both items of a link need it).
    pub relevance: f32,
}

impl Default for UpdateStage {
    /// Window 5 (recall@5 and beyond untouched) and a third of the best score: a floor that
    /// keeps out items that are in the window only because the tenant is small or their
    /// session lifted them, loose enough for a newer statement that shares few words with
    /// the question (docs/evaluation.md gives the figures).
    fn default() -> Self {
        Self {
            window: 5,
            relevance: 1.0 / 3.0,
        }
    }
}
