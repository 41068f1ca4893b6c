//! The ranking stages as users set them (`memdex search`/`eval` flags, the server's `stages`
//! object): one set of optional overrides, validated and applied to a [`RankOptions`] here so
//! the CLI and the server cannot drift apart.

use memdex_index::fragrel::FragRel;
use serde::Deserialize;

use crate::rank::{Bm25Flavour, FragRelScope, Fusion, RankOptions, Retriever, TimeMode, TimeStage};

/// Fusion as named by users (`rrf` uses k = 60).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FusionChoice {
    Minmax,
    Rrf,
}

/// The time stage as named by users.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeChoice {
    Off,
    Front,
    Boost,
}

/// Overrides of a [`RankOptions`]; `None` keeps the base value. Field names are the server's
/// JSON keys and, with `-` for `_`, the CLI's flags.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stages {
    pub retriever: Option<Retriever>,
    pub bm25: Option<Bm25Flavour>,
    pub fusion: Option<FusionChoice>,
    pub dense_weight: Option<f64>,
    pub fragrel_alpha: Option<f64>,
    pub fragrel_w: Option<f64>,
    pub fragrel_scope: Option<FragRelScope>,
    pub fragrel_semantic: Option<f64>,
    pub recency: Option<f64>,
    pub importance: Option<f64>,
    pub time: Option<TimeChoice>,
    pub time_boost: Option<f64>,
    pub when_boost: Option<f64>,
}

/// Upper bound of the open-ended weights (α, importance, boosts): a typo guard.
const MAX_WEIGHT: f64 = 100.0;

impl Stages {
    /// `base` with these overrides. Errors are messages naming the offending field through
    /// `name` (`"dense_weight"` → `"--dense-weight"` or `"stages.dense_weight"`).
    pub fn apply(
        &self,
        base: RankOptions,
        name: &dyn Fn(&str) -> String,
    ) -> Result<RankOptions, String> {
        let check = |field: &str, v: Option<f64>, hi: f64| -> Result<Option<f64>, String> {
            match v {
                Some(x) if !(0.0..=hi).contains(&x) => {
                    Err(format!("{} must be in [0, {hi}], got {x}", name(field)))
                }
                _ => Ok(v),
            }
        };
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
        let (mut p, mut scope) = o.fragrel.unwrap_or((
            FragRel {
                alpha: 0.0,
                ..FragRel::default()
            },
            FragRelScope::Session,
        ));
        if let Some(a) = check("fragrel_alpha", self.fragrel_alpha, MAX_WEIGHT)? {
            p.alpha = a;
        }
        if let Some(w) = check("fragrel_w", self.fragrel_w, 1.0)? {
            p.w = w;
        }
        if let Some(s) = self.fragrel_scope {
            scope = s;
        }
        o.fragrel = (p.alpha > 0.0).then_some((p, scope));
        if let Some(x) = check("fragrel_semantic", self.fragrel_semantic, MAX_WEIGHT)? {
            o.semantic = (x > 0.0).then_some(x);
        }
        if let Some(r) = check("recency", self.recency, 1.0)? {
            o.recency = (r > 0.0).then_some(r);
        }
        if let Some(i) = check("importance", self.importance, MAX_WEIGHT)? {
            o.importance = (i > 0.0).then_some(i);
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
            return Err(format!(
                "{} needs {} boost",
                name("time_boost"),
                name("time")
            ));
        }
        if let Some(b) = check("when_boost", self.when_boost, MAX_WEIGHT)? {
            match &mut o.time {
                Some(st) => st.when_boost = b,
                None if b == 0.0 => {}
                None => {
                    return Err(format!(
                        "{} needs the time stage ({} front|boost)",
                        name("when_boost"),
                        name("time")
                    ))
                }
            }
        }
        Ok(o)
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
        assert!(e.contains("--dense-weight"), "{e}");
        let orphan = Stages {
            time_boost: Some(1.0),
            ..Stages::default()
        };
        let e = orphan.apply(RankOptions::default(), &flag).unwrap_err();
        assert_eq!(e, "--time-boost needs --time boost");
        assert_eq!(
            Stages::default().apply(RankOptions::default(), &flag),
            Ok(RankOptions::default())
        );
    }
}
