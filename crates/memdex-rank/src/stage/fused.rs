//! The fused kernels' parameters, which the stages the kernels run set
//! ([`crate::Plan::fused`]).

use crate::options::{Bm25Flavour, Expand, FragRelScope, RankOptions};

/// The pipeline's weights, for options the fused kernel can run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FusedParams {
    pub w_dense: f64,
    pub w_sparse: f64,
    /// FragRel's (α, w) and whether its scope is the session (else the whole history).
    pub fragrel: Option<(f64, f64, FragRelScope)>,
    pub importance: Option<f64>,
    /// Query expansion: then [`crate::FusedQuery::sparse`] is the whole keyword share (BM25 and the
    /// expansion, each min-max normalised and weighted), computed on the host.
    pub expand: Option<Expand>,
}

impl FusedParams {
    /// Nothing fused yet: what [`crate::Plan::fused`] starts from.
    pub(crate) fn none() -> FusedParams {
        FusedParams {
            w_dense: 0.0,
            w_sparse: 0.0,
            fragrel: None,
            importance: None,
            expand: None,
        }
    }

    /// Whether a device that computes the keyword side from text columns can also run this
    /// query expansion (picking the terms and fusing the share itself): over memdex-flavour
    /// postings (the expansion's own BM25) and up to `max_terms` terms. `Some(None)`: no
    /// expansion; `None`: only the host can (then rank with host inputs).
    pub fn device_expansion(&self, opts: &RankOptions, max_terms: usize) -> Option<Option<Expand>> {
        match self.expand {
            None => Some(None),
            Some(x) if x.terms == 0 => Some(None),
            Some(x) if x.terms <= max_terms && opts.bm25 == Bm25Flavour::Memdex => Some(Some(x)),
            Some(_) => None,
        }
    }
}
