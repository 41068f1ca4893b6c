//! FragRel (environment scores): `s + α·context environment` along the timeline (within a
//! session, or over the whole history) and/or `+ β·semantic environment` over each item's
//! stored neighbours, both computed from the same incoming scores.

use memdex_score::fragrel::{relation_scores, FragRel as Relation};
use memdex_store::Store;

use super::FusedParams;
use super::{At, Fused, Parts, Stage};
use crate::options::{FragRelScope, FragRelStage, RankOptions};
use crate::RankError;

/// The context relation and/or the semantic relation's weight β.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FragRel {
    context: Option<FragRelStage>,
    semantic: Option<f64>,
}

impl FragRel {
    pub(crate) fn of(opts: &RankOptions) -> Option<FragRel> {
        (opts.fragrel.is_some() || opts.semantic.is_some()).then_some(FragRel {
            context: opts.fragrel,
            semantic: opts.semantic,
        })
    }
}

impl Stage for FragRel {
    fn name(&self) -> &'static str {
        "fragrel"
    }

    fn needs(&self, store: &Store) -> Result<(), RankError> {
        if self.semantic.is_some() && store.manifest().extraction.neighbors == 0 {
            return Err(RankError::MissingColumns {
                stage: "FragRel semantic",
                what: "semantic neighbours",
                store: store.dir().display().to_string(),
                option: "`memdex index --neighbors M`",
            });
        }
        Ok(())
    }

    fn score(
        &self,
        at: &At<'_, '_>,
        scores: &mut Vec<f64>,
        _: &mut Parts,
    ) -> Result<bool, RankError> {
        let slices = &at.rows.slices;
        let positions: Vec<u64> = slices.iter().flat_map(|s| s.positions()).copied().collect();
        let groups = self.context.map(|f| match f.scope {
            FragRelScope::Session => at.cache.groups(at.tenant, slices),
            FragRelScope::History => std::sync::Arc::new(vec![0; at.rows.len()]),
        });
        let adjacency = self.semantic.map(|_| at.cache.semantic(at.tenant, slices));
        let env = Environment {
            positions: &positions,
            groups: groups.as_deref().map(Vec::as_slice),
            adjacency: adjacency.as_deref().map(Vec::as_slice),
        };
        *scores = self.environment(scores, &env);
        Ok(true)
    }

    fn fused(&self, params: &mut FusedParams) -> Fused {
        if self.semantic.is_some() {
            return Fused::HostOnly("FragRel's semantic relation");
        }
        params.fragrel = self.context.map(|f| (f.alpha, f.w, f.scope));
        Fused::Kernel
    }
}

/// What FragRel's relations read, per row in timeline order.
#[derive(Debug, Clone, Copy)]
struct Environment<'a> {
    positions: &'a [u64],
    /// Scope groups of the context relation (None: that relation is off).
    groups: Option<&'a [u64]>,
    /// Symmetric semantic adjacency (None: that relation is off).
    adjacency: Option<&'a [Vec<(u32, f32)>]>,
}

impl FragRel {
    /// Both relations' environments added to the same incoming `scores`.
    fn environment(&self, scores: &[f64], env: &Environment<'_>) -> Vec<f64> {
        let context = match (self.context, env.groups) {
            (Some(f), Some(groups)) => {
                let p = Relation {
                    alpha: f.alpha,
                    w: f.w,
                };
                Some(relation_scores(scores, env.positions, groups, p))
            }
            _ => None,
        };
        let semantic = match (self.semantic, env.adjacency) {
            (Some(beta), Some(adj)) => Some(semantic_env(scores, adj, beta)),
            _ => None,
        };
        match (context, semantic) {
            (Some(c), Some(sem)) => (c.iter().zip(&sem).zip(scores))
                .map(|((c, sem), s)| c + sem - s)
                .collect(),
            (Some(c), None) => c,
            (None, Some(sem)) => sem,
            (None, None) => scores.to_vec(),
        }
    }
}

/// `s_i + beta · Σ_j w_ij s_j / Σ_j w_ij` over the semantic adjacency (FragRel, semantic
/// relation); items without neighbours keep their score.
fn semantic_env(scores: &[f64], adj: &[Vec<(u32, f32)>], beta: f64) -> Vec<f64> {
    scores
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            let (num, den) = adj.get(i).map_or((0.0, 0.0), |a| {
                a.iter().fold((0.0, 0.0), |(n, d), &(j, w)| {
                    let sj = scores.get(j as usize).copied().unwrap_or(0.0);
                    (n + f64::from(w) * sj, d + f64::from(w))
                })
            });
            if den > 0.0 {
                s + beta * num / den
            } else {
                s
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: &[f64], b: &[f64]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-12, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn semantic_environment_is_the_weighted_mean_of_neighbours() {
        let scores = [1.0, 0.0, 0.5, 0.2];
        // 0–1 (w 1.0), 0–2 (w 0.5); item 3 has no neighbours
        let adj = vec![
            vec![(1, 1.0), (2, 0.5)],
            vec![(0, 1.0)],
            vec![(0, 0.5)],
            vec![],
        ];
        let want = [
            1.0 + 0.5 * (0.0 + 0.25) / 1.5,
            0.0 + 0.5 * 1.0,
            0.5 + 0.5 * 1.0,
            0.2,
        ];
        close(&semantic_env(&scores, &adj, 0.5), &want);
    }

    #[test]
    fn both_relations_add_their_environments_to_the_same_first_stage() {
        let scores = [1.0, 0.0, 0.5];
        let positions = [0, 1, 2];
        let groups = [0, 0, 1];
        let adj = vec![vec![(2, 1.0)], vec![], vec![(0, 1.0)]];
        let both = FragRel {
            context: Some(FragRelStage {
                alpha: 0.5,
                w: 0.8,
                scope: FragRelScope::Session,
            }),
            semantic: Some(0.1),
        };
        let env = Environment {
            positions: &positions,
            groups: Some(&groups),
            adjacency: Some(&adj),
        };
        // context: items 0 and 1 share a session (one step apart), item 2 is alone
        let want = [
            1.0 + 0.5 * 0.0 + 0.1 * 0.5,
            0.0 + 0.5 * 1.0,
            0.5 + 0.1 * 1.0,
        ];
        close(&both.environment(&scores, &env), &want);
        let ctx_only = FragRel {
            semantic: None,
            ..both
        };
        close(&ctx_only.environment(&scores, &env), &[1.0, 0.5, 0.5]);
    }
}
