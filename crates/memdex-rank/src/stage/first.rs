//! The first stage: the retriever's scores. Dense (cosine), BM25, or their hybrid fusion
//! (min-max weighted, or reciprocal-rank), with query expansion's signal in the fusion when
//! it is on; or a structure (TiM thoughts, MemTree) as the retriever.

use memdex_score::fusion::{hybrid, rrf};
use memdex_store::Store;

use super::FusedParams;
use super::{At, Fused, Parts, Stage};
use crate::options::{Fusion, RankOptions, Retriever};
use crate::score::{add_expansion, expansion_scores, sparse_scores, FirstStage};
use crate::RankError;

/// The retriever and its fusion (the options it reads: retriever, BM25 flavour, weights,
/// fusion, expansion).
#[derive(Debug, Clone, Copy)]
pub(crate) struct First {
    opts: RankOptions,
}

impl First {
    pub(crate) fn of(opts: &RankOptions) -> First {
        First { opts: *opts }
    }

    /// Dense, BM25 or their fusion, and the expansion's signal when it took part.
    fn retrieve(&self, at: &At<'_, '_>) -> (Vec<f64>, Option<Vec<f64>>) {
        let opts = &self.opts;
        let fs = FirstStage {
            slices: &at.rows.slices,
            store: at.store,
            tenant: at.tenant,
            cache: at.cache,
        };
        let sparse = || sparse_scores(fs.slices, at.query.text, opts, at.tenant, at.cache);
        match opts.retriever {
            // the structures' retrievers fall back to dense where they lift nothing
            Retriever::Dense | Retriever::Thoughts | Retriever::Tree => (at.dense.to_vec(), None),
            Retriever::Bm25 => (sparse(), None),
            Retriever::Hybrid => {
                let mut fused = fuse(at.dense, &sparse(), opts);
                let expansion = opts.expand.and_then(|x| {
                    let e = expansion_scores(&fs, at.query, &x)?;
                    add_expansion(&mut fused, &e, x.weight);
                    Some(e)
                });
                (fused, expansion)
            }
        }
    }
}

impl Stage for First {
    fn name(&self) -> &'static str {
        "first_stage"
    }

    fn needs(&self, store: &Store) -> Result<(), RankError> {
        match self.opts.retriever {
            Retriever::Thoughts => crate::retrieved::needs_thoughts(store),
            Retriever::Tree => crate::retrieved::needs_tree(store),
            _ => Ok(()),
        }
    }

    fn score(
        &self,
        at: &At<'_, '_>,
        scores: &mut Vec<f64>,
        parts: &mut Parts,
    ) -> Result<bool, RankError> {
        let opts = &self.opts;
        let (s, expansion) = match (at.found()?, opts.retriever) {
            (Some(f), Retriever::Thoughts | Retriever::Tree) => {
                (f.first_stage(at.dense, opts), None)
            }
            _ => self.retrieve(at),
        };
        *scores = s;
        parts.keep("dense", || at.dense.to_vec());
        parts.keep("bm25", || match opts.retriever {
            Retriever::Bm25 | Retriever::Hybrid => {
                sparse_scores(&at.rows.slices, at.query.text, opts, at.tenant, at.cache)
            }
            _ => Vec::new(),
        });
        parts.keep("expansion", || expansion.unwrap_or_default());
        Ok(true)
    }

    fn fused(&self, params: &mut FusedParams) -> Fused {
        if self.opts.retriever != Retriever::Hybrid {
            return Fused::HostOnly("a retriever other than hybrid");
        }
        if self.opts.fusion != Fusion::MinMax {
            return Fused::HostOnly("RRF fusion");
        }
        (params.w_dense, params.w_sparse) = self.opts.weights;
        params.expand = self.opts.expand;
        Fused::Kernel
    }
}

/// The hybrid's fusion of dense and sparse scores.
fn fuse(dense: &[f64], sparse: &[f64], opts: &RankOptions) -> Vec<f64> {
    match opts.fusion {
        Fusion::MinMax => hybrid(dense, sparse, opts.weights.0, opts.weights.1),
        Fusion::Rrf { k } => rrf(&[dense, sparse], k),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rrf_and_minmax_fusion_follow_the_options() {
        let dense = [0.9, 0.1, 0.5];
        let sparse = [0.0, 3.0, 1.0];
        let minmax = RankOptions {
            retriever: Retriever::Hybrid,
            ..RankOptions::dense()
        };
        let close = |a: &[f64], b: &[f64]| {
            assert_eq!(a.len(), b.len());
            assert!(
                a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12),
                "{a:?} vs {b:?}"
            );
        };
        close(
            &fuse(&dense, &sparse, &minmax),
            &hybrid(&dense, &sparse, 0.5, 0.5),
        );
        let by_rank = RankOptions {
            fusion: Fusion::Rrf { k: 60.0 },
            ..minmax
        };
        // each item is first on one side or in the middle on both: 1/61+1/63 vs 2/62
        close(
            &fuse(&dense, &sparse, &by_rank),
            &[1.0 / 61.0 + 1.0 / 63.0, 1.0 / 63.0 + 1.0 / 61.0, 2.0 / 62.0],
        );
    }
}
