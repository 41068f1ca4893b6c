//! The ranking stages as users set them: one set of optional overrides, which is at once
//! the `memdex search`/`eval` flags (clap derive, feature `clap`), the server's `stages`
//! object (serde) and its OpenAPI schema (feature `openapi`), validated and applied to a
//! [`RankOptions`] here, so the CLI, the server and its documentation cannot drift apart.

use serde::Deserialize;

use crate::options::{
    Bm25Flavour, FragRelScope, FragRelStage, Fusion, RankOptions, Retriever, ThoughtStage,
    TimeMode, TimeStage, TreeStage, MAX_EXPAND_TERMS,
};

/// Fusion as named by users (`rrf` uses k = 60).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum FusionChoice {
    Minmax,
    Rrf,
}

/// The time stage as named by users.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum TimeChoice {
    Off,
    Front,
    Boost,
}

/// A switch as named by users.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Switch {
    On,
    Off,
}

/// Overrides of a [`RankOptions`]; an unset field keeps the base value. Field names are the
/// server's JSON keys and, with `-` for `_`, the CLI's flags (each with a `MEMDEX_` variable).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Stages {
    /// First-stage ranking: dense, bm25 or hybrid.
    #[cfg_attr(feature = "clap", arg(long, env = "MEMDEX_RETRIEVER"))]
    pub retriever: Option<Retriever>,
    /// BM25 flavour: official (LongMemEval's whitespace rank_bm25) or memdex (Unicode words,
    /// stop words, Snowball stems, Lucene idf).
    #[cfg_attr(feature = "clap", arg(long, env = "MEMDEX_BM25"))]
    pub bm25: Option<Bm25Flavour>,
    /// Hybrid fusion: minmax (weighted sum of min-max normalised scores) or rrf
    /// (reciprocal-rank fusion, k = 60).
    #[cfg_attr(feature = "clap", arg(long, env = "MEMDEX_FUSION"))]
    pub fusion: Option<FusionChoice>,
    /// Hybrid weight of the dense side, 0 to 1; the keyword side gets 1 − w.
    #[cfg_attr(feature = "clap", arg(long, env = "MEMDEX_DENSE_WEIGHT"))]
    pub dense_weight: Option<f64>,
    /// FragRel environment weight α (0 = off): s + α·Σ w^|Δpos| s_j / Σ w^|Δpos|.
    #[cfg_attr(feature = "clap", arg(long, env = "MEMDEX_FRAGREL_ALPHA"))]
    pub fragrel_alpha: Option<f64>,
    /// FragRel decay per position step, 0 to 1.
    #[cfg_attr(feature = "clap", arg(long, env = "MEMDEX_FRAGREL_W"))]
    pub fragrel_w: Option<f64>,
    /// Which items share a FragRel environment: session or history.
    #[cfg_attr(feature = "clap", arg(long, env = "MEMDEX_FRAGREL_SCOPE"))]
    pub fragrel_scope: Option<FragRelScope>,
    /// FragRel semantic-relation weight (0 = off): adds β·Σ w_ij s_j / Σ w_ij over each item's
    /// stored semantic neighbours (w = max(0, cos); needs `index --neighbors M`).
    #[cfg_attr(feature = "clap", arg(long, env = "MEMDEX_FRAGREL_SEMANTIC"))]
    pub fragrel_semantic: Option<f64>,
    /// Recency, 0 to 1: the oldest item's score is multiplied by 1 − this (Gaussian over the
    /// tenant's history up to the question date); 0 = off.
    #[cfg_attr(feature = "clap", arg(long, env = "MEMDEX_RECENCY"))]
    pub recency: Option<f64>,
    /// Importance: scores × (1 + this · log10(importance)), importance 1..10 from a local
    /// heuristic (numbers, dates, names, life events, emotions); 0 = off.
    #[cfg_attr(feature = "clap", arg(long, env = "MEMDEX_IMPORTANCE"))]
    pub importance: Option<f64>,
    /// Importance's asking rule: on (an item whose own words mostly ask, in questions that
    /// state nothing of the speaker's own, gets importance 1) or off (the heuristic alone).
    #[cfg_attr(feature = "clap", arg(long, env = "MEMDEX_ASKING"))]
    pub asking: Option<Switch>,
    /// Time stage: off, front (items whose session or event dates fall in the query's time
    /// range, ±2 days, move ahead) or boost (their scores × (1 + time_boost)).
    #[cfg_attr(feature = "clap", arg(long, env = "MEMDEX_TIME"))]
    pub time: Option<TimeChoice>,
    /// Score factor of in-range items with time = boost.
    #[cfg_attr(feature = "clap", arg(long, env = "MEMDEX_TIME_BOOST"))]
    pub time_boost: Option<f64>,
    /// "When…" questions without a range: scores of items that state a date × (1 + this).
    #[cfg_attr(feature = "clap", arg(long, env = "MEMDEX_WHEN_BOOST"))]
    pub when_boost: Option<f64>,
    /// TiM thought stage weight (0 = off): the items the best thoughts came from get
    /// weight × cosine(query, thought) added (needs `index --thoughts`).
    #[cfg_attr(feature = "clap", arg(long, env = "MEMDEX_THOUGHT_WEIGHT"))]
    pub thought_weight: Option<f64>,
    /// Thoughts retrieved by the thought stage or retriever (default 5, TiM's top-5).
    #[cfg_attr(feature = "clap", arg(long, env = "MEMDEX_THOUGHT_K"))]
    pub thought_k: Option<usize>,
    /// LSH buckets probed per table by the thought stage or retriever (default 1).
    #[cfg_attr(feature = "clap", arg(long, env = "MEMDEX_THOUGHT_PROBES"))]
    pub thought_probes: Option<usize>,
    /// MemTree stage weight (0 = off): the items under the best nodes of the collapsed tree
    /// get weight × cosine(query, node) added (needs `index --tree`).
    #[cfg_attr(feature = "clap", arg(long, env = "MEMDEX_TREE_WEIGHT"))]
    pub tree_weight: Option<f64>,
    /// Tree nodes retrieved by the tree stage or retriever (default 5).
    #[cfg_attr(feature = "clap", arg(long, env = "MEMDEX_TREE_K"))]
    pub tree_k: Option<usize>,
    /// Update stage: top ranks within which statements of the same thing (different dates;
    /// the newer session states a change of the question's subject) are ordered newest first
    /// for a present-tense question, oldest first for one about an earlier state ("before",
    /// "used to"); 0 = off, at most 50. Default 5.
    #[cfg_attr(feature = "clap", arg(long, env = "MEMDEX_UPDATE_WINDOW"))]
    pub update_window: Option<usize>,
    /// The share, 0 to 1, of the window's best score that both items of an update link need
    /// (both must answer the question). Default 0.33.
    #[cfg_attr(feature = "clap", arg(long, env = "MEMDEX_UPDATE_RELEVANCE"))]
    pub update_relevance: Option<f64>,
    /// Query expansion: how many of the tenant's terms nearest the question's vector (by the
    /// store's word vectors) are added, at most 100; 0 = off. Default 10 when it is on.
    #[cfg_attr(feature = "clap", arg(long, env = "MEMDEX_EXPAND_TERMS"))]
    pub expand_terms: Option<usize>,
    /// Query expansion's weight in the hybrid fusion, 0 to 1 (0 = off). Default 0.1 when it
    /// is on.
    #[cfg_attr(feature = "clap", arg(long, env = "MEMDEX_EXPAND_WEIGHT"))]
    pub expand_weight: Option<f64>,
}

/// Upper bound of the update stage's window: it compares the top 2 × window items pairwise,
/// and the fused kernel returns at most 128 hits.
const MAX_UPDATE_WINDOW: usize = 50;

/// Upper bound of the open-ended weights (α, importance, boosts): a typo guard.
const MAX_WEIGHT: f64 = 100.0;

/// `v` when it lies in `[0, hi]` (NaN does not), else the error naming `field` as the caller
/// spells it.
fn in_range<T>(
    field: &'static str,
    v: Option<T>,
    hi: T,
    name: &dyn Fn(&str) -> String,
) -> Result<Option<T>, StageError>
where
    T: PartialOrd + Default + Copy + std::fmt::Display,
{
    match v {
        Some(x) if !(T::default()..=hi).contains(&x) => Err(StageError {
            field,
            message: format!("{} must be in [0, {hi}], got {x}", name(field)),
        }),
        _ => Ok(v),
    }
}

/// A stage override that cannot apply; `message` names the field in the caller's spelling.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct StageError {
    /// The field's name in [`Stages`] (`dense_weight`).
    pub field: &'static str,
    pub message: String,
}

impl Stages {
    /// `base` with these overrides. Errors name the offending field through `name`
    /// (`"dense_weight"` → `"--dense-weight"` or `"stages.dense_weight"`).
    pub fn apply(
        &self,
        base: RankOptions,
        name: &dyn Fn(&str) -> String,
    ) -> Result<RankOptions, StageError> {
        let err = |field: &'static str, message: String| StageError { field, message };
        let check = |field: &'static str, v: Option<f64>, hi: f64| in_range(field, v, hi, name);
        let mut o = base;
        if let Some(r) = self.retriever {
            o.retriever = r;
        }
        if let Some(b) = self.bm25 {
            o.bm25 = b;
        }
        if let Some(f) = self.fusion {
            o.fusion = match f {
                FusionChoice::Minmax => Fusion::MinMax,
                FusionChoice::Rrf => Fusion::Rrf { k: 60.0 },
            };
        }
        if let Some(w) = check("dense_weight", self.dense_weight, 1.0)? {
            o.weights = (w, 1.0 - w);
        }
        let mut p = o.fragrel.unwrap_or(FragRelStage {
            alpha: 0.0,
            ..FragRelStage::default()
        });
        if let Some(a) = check("fragrel_alpha", self.fragrel_alpha, MAX_WEIGHT)? {
            p.alpha = a;
        }
        if let Some(w) = check("fragrel_w", self.fragrel_w, 1.0)? {
            p.w = w;
        }
        if let Some(s) = self.fragrel_scope {
            p.scope = s;
        }
        o.fragrel = (p.alpha > 0.0).then_some(p);
        if let Some(x) = check("fragrel_semantic", self.fragrel_semantic, MAX_WEIGHT)? {
            o.semantic = (x > 0.0).then_some(x);
        }
        if let Some(r) = check("recency", self.recency, 1.0)? {
            o.recency = (r > 0.0).then_some(r);
        }
        if let Some(i) = check("importance", self.importance, MAX_WEIGHT)? {
            o.importance = (i > 0.0).then_some(i);
        }
        if let Some(a) = self.asking {
            o.asking = a == Switch::On;
        }
        let time_boost = check("time_boost", self.time_boost, MAX_WEIGHT)?;
        if let Some(t) = self.time {
            let stage = o.time.unwrap_or_default();
            o.time = match t {
                TimeChoice::Off => None,
                TimeChoice::Front => Some(TimeStage {
                    mode: TimeMode::Front,
                    ..stage
                }),
                TimeChoice::Boost => Some(TimeStage {
                    mode: TimeMode::Boost(time_boost.unwrap_or(1.0)),
                    ..stage
                }),
            };
        }
        if time_boost.is_some() && self.time != Some(TimeChoice::Boost) {
            return Err(err(
                "time_boost",
                format!("{} needs {} boost", name("time_boost"), name("time")),
            ));
        }
        if let Some(b) = check("when_boost", self.when_boost, MAX_WEIGHT)? {
            match &mut o.time {
                Some(st) => st.when_boost = b,
                None if b == 0.0 => {}
                None => {
                    return Err(err(
                        "when_boost",
                        format!(
                            "{} needs the time stage ({} front|boost)",
                            name("when_boost"),
                            name("time")
                        ),
                    ))
                }
            }
        }
        self.apply_structures(&mut o, name)?;
        self.apply_update(&mut o, name)?;
        self.apply_expand(&mut o, name)?;
        Ok(o)
    }

    /// Query expansion: a count or a weight of 0 turns it off; either one given turns it on
    /// with the other's default.
    fn apply_expand(
        &self,
        o: &mut RankOptions,
        name: &dyn Fn(&str) -> String,
    ) -> Result<(), StageError> {
        if self.expand_terms.is_none() && self.expand_weight.is_none() {
            return Ok(());
        }
        let mut x = o.expand.unwrap_or_default();
        if let Some(n) = in_range("expand_terms", self.expand_terms, MAX_EXPAND_TERMS, name)? {
            x.terms = n;
        }
        if let Some(w) = in_range("expand_weight", self.expand_weight, 1.0, name)? {
            x.weight = w;
        }
        o.expand = (x.terms > 0 && x.weight > 0.0).then_some(x);
        Ok(())
    }

    /// The update stage: a window of 0 turns it off; a relevance tunes it (on by itself).
    fn apply_update(
        &self,
        o: &mut RankOptions,
        name: &dyn Fn(&str) -> String,
    ) -> Result<(), StageError> {
        if self.update_window.is_none() && self.update_relevance.is_none() {
            return Ok(());
        }
        let mut u = o.update.unwrap_or_default();
        if let Some(w) = in_range("update_window", self.update_window, MAX_UPDATE_WINDOW, name)? {
            u.window = w;
        }
        if let Some(r) = in_range("update_relevance", self.update_relevance, 1.0, name)? {
            u.relevance = r as f32;
        }
        o.update = (u.window > 1).then_some(u);
        Ok(())
    }

    /// The thought and tree stages. A weight turns a stage on (0: off); `k` and `probes`
    /// tune a stage that is on or the retriever of that structure (refused otherwise).
    fn apply_structures(
        &self,
        o: &mut RankOptions,
        name: &dyn Fn(&str) -> String,
    ) -> Result<(), StageError> {
        let err = |field: &'static str, message: String| StageError { field, message };
        if let Some(w) = in_range("thought_weight", self.thought_weight, MAX_WEIGHT, name)? {
            o.thoughts = (w > 0.0).then(|| ThoughtStage {
                weight: w,
                ..o.thoughts.unwrap_or_default()
            });
        }
        if let Some(w) = in_range("tree_weight", self.tree_weight, MAX_WEIGHT, name)? {
            o.tree = (w > 0.0).then(|| TreeStage {
                weight: w,
                ..o.tree.unwrap_or_default()
            });
        }
        let tunes = |field: &'static str, on: bool, retriever: &str| {
            if on {
                return Ok(());
            }
            Err(err(
                field,
                format!(
                    "{} needs the {retriever} stage or retriever ({}, or {} {retriever})",
                    name(field),
                    name(if retriever == "tree" {
                        "tree_weight"
                    } else {
                        "thought_weight"
                    }),
                    name("retriever")
                ),
            ))
        };
        let thoughts_on = o.thoughts.is_some() || o.retriever == Retriever::Thoughts;
        let tree_on = o.tree.is_some() || o.retriever == Retriever::Tree;
        let bounded = |field: &'static str, v: usize| match v {
            1..=1000 => Ok(v),
            _ => Err(err(
                field,
                format!("{} must be in [1, 1000], got {v}", name(field)),
            )),
        };
        if let Some(k) = self.thought_k {
            tunes("thought_k", thoughts_on, "thoughts")?;
            let stage = o.thoughts.get_or_insert(ThoughtStage {
                weight: 0.0,
                ..ThoughtStage::default()
            });
            stage.k = bounded("thought_k", k)?;
        }
        if let Some(p) = self.thought_probes {
            tunes("thought_probes", thoughts_on, "thoughts")?;
            let stage = o.thoughts.get_or_insert(ThoughtStage {
                weight: 0.0,
                ..ThoughtStage::default()
            });
            stage.probes = bounded("thought_probes", p)?;
        }
        if let Some(k) = self.tree_k {
            tunes("tree_k", tree_on, "tree")?;
            let stage = o.tree.get_or_insert(TreeStage {
                weight: 0.0,
                ..TreeStage::default()
            });
            stage.k = bounded("tree_k", k)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flag(n: &str) -> String {
        format!("--{}", n.replace('_', "-"))
    }

    #[test]
    fn overrides_apply_and_bad_values_are_named() {
        let s = Stages {
            retriever: Some(Retriever::Dense),
            fragrel_alpha: Some(0.0),
            time: Some(TimeChoice::Boost),
            time_boost: Some(0.5),
            ..Stages::default()
        };
        let o = s.apply(RankOptions::default(), &flag).expect("valid");
        assert_eq!(o.retriever, Retriever::Dense);
        assert_eq!(o.fragrel, None);
        assert_eq!(o.time.map(|t| t.mode), Some(TimeMode::Boost(0.5)));
        let bad = Stages {
            dense_weight: Some(1.5),
            ..Stages::default()
        };
        let e = bad.apply(RankOptions::default(), &flag).unwrap_err();
        assert_eq!(e.field, "dense_weight");
        assert!(e.message.contains("--dense-weight"), "{e}");
        let orphan = Stages {
            time_boost: Some(1.0),
            ..Stages::default()
        };
        let e = orphan.apply(RankOptions::default(), &flag).unwrap_err();
        assert_eq!(e.to_string(), "--time-boost needs --time boost");
        assert_eq!(
            Stages::default().apply(RankOptions::default(), &flag),
            Ok(RankOptions::default())
        );
    }

    #[test]
    fn the_asking_rule_is_its_own_switch() {
        let set = |a| {
            Stages {
                asking: Some(a),
                ..Stages::default()
            }
            .apply(RankOptions::default(), &flag)
            .unwrap()
        };
        assert!(RankOptions::default().asking);
        let off = set(Switch::Off);
        assert!(!off.asking);
        // importance itself stays on: only its rule for questions is switched
        assert_eq!(off.importance, RankOptions::default().importance);
        assert!(set(Switch::On).asking);
        let parsed: Stages = serde_json::from_str(r#"{"asking": "off"}"#).unwrap();
        assert_eq!(parsed.asking, Some(Switch::Off));
    }

    #[test]
    fn the_update_stage_is_tuned_turned_off_and_checked() {
        let set = |s: Stages| s.apply(RankOptions::default(), &flag);
        let o = set(Stages {
            update_relevance: Some(0.5),
            ..Stages::default()
        })
        .unwrap();
        let u = o.update.unwrap();
        assert_eq!((u.window, u.relevance), (5, 0.5));
        let off = Stages {
            update_window: Some(0),
            ..Stages::default()
        };
        assert_eq!(set(off).unwrap().update, None);
        for (bad, field) in [
            (
                Stages {
                    update_window: Some(51),
                    ..Stages::default()
                },
                "--update-window",
            ),
            (
                Stages {
                    update_relevance: Some(f64::NAN),
                    ..Stages::default()
                },
                "--update-relevance",
            ),
            (
                Stages {
                    update_relevance: Some(1.5),
                    ..Stages::default()
                },
                "--update-relevance",
            ),
        ] {
            let e = set(bad).unwrap_err();
            assert!(e.message.starts_with(field), "{e}");
        }
    }

    #[test]
    fn structure_stages_turn_on_by_weight_and_are_tuned_only_when_used() {
        let s = Stages {
            thought_weight: Some(0.7),
            tree_weight: Some(0.0),
            thought_k: Some(9),
            ..Stages::default()
        };
        let o = s.apply(RankOptions::default(), &flag).expect("valid");
        assert_eq!(
            o.thoughts,
            Some(ThoughtStage {
                weight: 0.7,
                k: 9,
                probes: 1
            })
        );
        assert_eq!(o.tree, None);
        let orphan = Stages {
            tree_k: Some(3),
            ..Stages::default()
        };
        let e = orphan.apply(RankOptions::default(), &flag).unwrap_err();
        assert_eq!(e.field, "tree_k");
        assert!(e.message.contains("--tree-weight"), "{e}");
        let retriever = Stages {
            retriever: Some(Retriever::Tree),
            tree_k: Some(3),
            ..Stages::default()
        };
        let o = retriever
            .apply(RankOptions::default(), &flag)
            .expect("valid");
        assert_eq!(o.tree, Some(TreeStage { weight: 0.0, k: 3 }));
        let bad = Stages {
            thought_weight: Some(-1.0),
            ..Stages::default()
        };
        assert_eq!(
            bad.apply(RankOptions::default(), &flag).unwrap_err().field,
            "thought_weight"
        );
    }
}
