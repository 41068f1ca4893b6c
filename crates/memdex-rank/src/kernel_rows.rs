//! A tenant's live rows as the fused kernels read them (f16 embeddings, positions, FragRel
//! groups), built once per version of its rows and kept in the [`crate::TenantCache`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use half::f16;
use memdex_score::bm25::{Bm25, Bm25Postings};
use memdex_store::TenantSlice;

use crate::Bm25Flavour;

/// A tenant's live rows in timeline order as the fused kernels read them, built once per
/// version of its rows and kept in the [`TenantCache`].
#[derive(Debug)]
pub struct FusedRows {
    /// Unique in this process per build (and so per version of the rows): a device keeps
    /// what it uploaded under it. Even; `key + 1` names the rows with the whole history as
    /// one FragRel group.
    pub(crate) key: u64,
    /// `rows × dim` (the stored, normalised f32 embeddings rounded to f16).
    pub embeddings: Vec<f16>,
    pub positions: Vec<u32>,
    /// FragRel session groups (a new group whenever the session changes).
    pub session_groups: Vec<u32>,
    /// One group for the whole history.
    pub one_group: Vec<u32>,
}

/// The next [`FusedRows::key`] (0 is left to "no key").
static NEXT_KEY: AtomicU64 = AtomicU64::new(2);

impl FusedRows {
    pub(crate) fn build(slices: &[TenantSlice<'_>], dim: usize, groups: &[u64]) -> FusedRows {
        let narrow = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        let mut embeddings = Vec::with_capacity(groups.len() * dim);
        for run in slices.iter().flat_map(|s| s.vector_runs()) {
            embeddings.extend(run.data(dim).iter().map(|&x| f16::from_f32(x)));
        }
        FusedRows {
            key: NEXT_KEY.fetch_add(2, Ordering::Relaxed),
            embeddings,
            positions: (slices.iter().flat_map(|s| s.positions()))
                .map(|&p| narrow(p))
                .collect(),
            session_groups: groups.iter().map(|&g| narrow(g)).collect(),
            one_group: vec![0; groups.len()],
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        2 * self.embeddings.capacity()
            + 4 * (self.positions.capacity()
                + self.session_groups.capacity()
                + self.one_group.capacity())
    }
}

/// A tenant's live rows' text side as a device reads it to compute BM25 and the time flags
/// itself: the BM25 index as weighted postings by term id, each row's session date and event
/// date ranges. Built once per version of the rows and BM25 flavour, kept in the
/// [`crate::TenantCache`].
#[derive(Debug)]
pub struct FusedText {
    /// Unique in this process per build (a device keeps what it uploaded under it).
    pub key: u64,
    pub flavour: Bm25Flavour,
    pub postings: Bm25Postings,
    pub timestamps: Vec<i64>,
    /// Row `r`'s event ranges are `event_lo/hi[event_offsets[r]..event_offsets[r + 1]]`.
    pub event_offsets: Vec<u32>,
    pub event_lo: Vec<i64>,
    pub event_hi: Vec<i64>,
    /// The newest session date (a query's default date).
    pub newest: i64,
}

impl FusedText {
    pub(crate) fn build(slices: &[TenantSlice<'_>], flavour: Bm25Flavour, bm25: &Bm25) -> Self {
        let mut t = FusedText {
            key: NEXT_KEY.fetch_add(2, Ordering::Relaxed),
            flavour,
            postings: bm25.postings(),
            timestamps: Vec::new(),
            event_offsets: vec![0],
            event_lo: Vec::new(),
            event_hi: Vec::new(),
            newest: crate::rows::newest(slices),
        };
        for s in slices {
            t.timestamps.extend_from_slice(s.timestamps());
            for r in 0..s.rows {
                for (a, b) in s.events(r) {
                    t.event_lo.push(a);
                    t.event_hi.push(b);
                }
                let n = u32::try_from(t.event_lo.len()).unwrap_or(u32::MAX);
                t.event_offsets.push(n);
            }
        }
        t
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.postings.heap_bytes()
            + 8 * (self.timestamps.capacity() + self.event_lo.capacity() + self.event_hi.capacity())
            + 4 * self.event_offsets.capacity()
    }
}

/// A tenant's query-expansion candidates as a device reads them: each candidate's term id in
/// the tenant's memdex-flavour [`FusedText::postings`] beside its word vector (f16, the
/// `Vocab`'s own, shared). Built once per version of the rows, kept in the
/// [`crate::TenantCache`].
#[derive(Debug)]
pub struct FusedVocab {
    vocab: Arc<crate::expand::Vocab>,
    /// Candidate `i`'s term id (`u32::MAX` for a term the postings lack, which a device
    /// refuses: it cannot happen, both come from one BM25 index).
    pub term_ids: Vec<u32>,
}

impl FusedVocab {
    pub(crate) fn build(vocab: Arc<crate::expand::Vocab>, text: &FusedText) -> FusedVocab {
        let ids = &text.postings.ids;
        let term_ids = (vocab.terms.iter())
            .map(|t| ids.get(t).copied().unwrap_or(u32::MAX))
            .collect();
        FusedVocab { vocab, term_ids }
    }

    /// `term_ids.len() × dim` f16, row-major.
    pub fn vectors(&self) -> &[f16] {
        &self.vocab.vectors
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        4 * self.term_ids.capacity()
    }
}
