//! BM25 and the time stage's flags computed by the kernels themselves, from each part's text
//! columns (resident on a device like its rows), instead of per query on the host: a query
//! brings only its term ids and time window. [`crate::Kernels::rank_topk_text`] is
//! [`crate::Kernels::rank_topk_parts`] with these inputs; [`crate::text_inputs_reference`]
//! states what they stand for (memdex-rank's `sparse_scores` to f32 rounding, and
//! `time::flags`). With query expansion ([`TextQueries::expand`]) the kernels also pick each
//! query's expansion terms from its part's candidates ([`PartText::vocab_terms`]) and return
//! the whole keyword share, as memdex-rank's `keyword_share` does on the host (see
//! [`crate::expand`]).

use memdex_rank::TimeWindow;

use crate::f16;
use crate::{KernelError, RankParams, RankPart, RankQueries};

/// One part's text columns (its tenant's live rows, part-local row numbers).
#[derive(Debug, Clone, Copy)]
pub struct PartText<'a> {
    /// Names the content, as [`RankPart::key`] (0: uploaded on every call).
    pub key: u64,
    /// BM25 postings by term id: term `t`'s rows `term_rows[term_offsets[t]..term_offsets[t +
    /// 1]]` (each row once per term) with their score contributions `term_weights`.
    pub term_offsets: &'a [u32],
    pub term_rows: &'a [u32],
    pub term_weights: &'a [f32],
    /// Session date per row (ms).
    pub timestamps: &'a [i64],
    /// Row `r`'s event date ranges: `event_lo/hi[event_offsets[r]..event_offsets[r + 1]]`.
    pub event_offsets: &'a [u32],
    pub event_lo: &'a [i64],
    pub event_hi: &'a [i64],
    /// Query expansion's candidate terms (memdex-rank's `Vocab`): their term ids here and
    /// their word vectors, `vocab_terms.len() × dim` f16 row-major (both empty without
    /// expansion). A part with candidates is keyed apart from the same part without them.
    pub vocab_terms: &'a [u32],
    pub vocab_vectors: &'a [f16],
}

impl PartText<'_> {
    pub(crate) fn terms(&self) -> usize {
        self.term_offsets.len().saturating_sub(1)
    }
}

/// The queries' text side: per query its part, its term ids (of that part) and its window.
#[derive(Debug, Clone, Copy)]
pub struct TextQueries<'a> {
    pub part: &'a [u32],
    /// Query `q`'s term ids: `terms[term_offsets[q]..term_offsets[q + 1]]` (repeats count).
    pub term_offsets: &'a [u32],
    pub terms: &'a [u32],
    pub windows: &'a [Option<TimeWindow>],
    /// Query expansion on: the kernels return the keyword share `w_sparse · minmax(bm25) +
    /// weight · minmax(expansion)` (then [`RankParams::sparse_fused`] must be set).
    pub expand: Option<TextExpand>,
}

/// Query expansion as the kernels run it (memdex-rank's `Expand`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TextExpand {
    /// Expansion terms per query, 1 to [`MAX_TEXT_EXPAND_TERMS`].
    pub terms: usize,
    pub weight: f32,
}

/// Most expansion terms the kernels pick per query (per-warp lists in shared memory); more
/// are ranked with host inputs.
pub const MAX_TEXT_EXPAND_TERMS: usize = 32;

fn invalid(msg: String) -> KernelError {
    KernelError::Invalid(msg)
}

/// CSR offsets: `n + 1` of them, from 0, non-decreasing, ending at `len`.
fn check_offsets(what: &str, offsets: &[u32], n: usize, len: usize) -> Result<(), KernelError> {
    let ok = offsets.len() == n + 1
        && offsets[0] == 0
        && offsets.windows(2).all(|w| w[0] <= w[1])
        && offsets[n] as usize == len;
    if ok {
        Ok(())
    } else {
        Err(invalid(format!(
            "{what}: {} offsets for {n} entries over {len} values",
            offsets.len()
        )))
    }
}

/// Whether [`check_text`] reads each part's text columns (O(its postings and rows)), or its
/// caller checks each one itself (a device: once per keyed text, when it uploads it, so a
/// batch over resident texts costs no pass over their postings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PartTexts {
    Check,
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    CheckedOnUpload,
}

/// One part's text columns against its rows: CSR offsets, postings' rows inside the part,
/// one timestamp per row, paired event ranges, expansion candidates' term ids and vectors.
pub(crate) fn check_part_text(
    i: usize,
    dim: usize,
    p: &RankPart<'_>,
    t: &PartText<'_>,
) -> Result<(), KernelError> {
    let rows = p.rows();
    let what = |w: &str| format!("part {i} {w}");
    if t.term_offsets.is_empty() {
        return Err(invalid(what("term offsets: none")));
    }
    check_offsets(&what("terms"), t.term_offsets, t.terms(), t.term_rows.len())?;
    if t.term_weights.len() != t.term_rows.len() || t.term_rows.iter().any(|&r| r as usize >= rows)
    {
        return Err(invalid(what(
            "postings: rows past the part or weights missing",
        )));
    }
    if t.timestamps.len() != rows {
        return Err(invalid(what("timestamps: not one per row")));
    }
    check_offsets(&what("events"), t.event_offsets, rows, t.event_lo.len())?;
    if t.event_hi.len() != t.event_lo.len() {
        return Err(invalid(what("events: unpaired ranges")));
    }
    if t.vocab_vectors.len() != t.vocab_terms.len() * dim
        || t.vocab_terms.iter().any(|&x| x as usize >= t.terms())
    {
        return Err(invalid(what(
            "expansion candidates: term ids past the part's terms or vectors not one per term",
        )));
    }
    Ok(())
}

/// Checks the text inputs against the parts and the queries' ranges (`starts`: each part's
/// first row): every query's range inside its own part, its term ids that part's; each part's
/// columns too unless `part_texts` says the caller does.
#[allow(clippy::too_many_arguments)]
pub(crate) fn check_text(
    dim: usize,
    parts: &[RankPart<'_>],
    starts: &[usize],
    texts: &[PartText<'_>],
    tq: &TextQueries<'_>,
    queries: &RankQueries<'_>,
    params: &RankParams,
    part_texts: PartTexts,
) -> Result<(), KernelError> {
    let ranges = queries.ranges;
    check_expand(dim, tq, queries, params)?;
    if texts.len() != parts.len() {
        return Err(invalid(format!(
            "{} part texts for {} parts",
            texts.len(),
            parts.len()
        )));
    }
    if part_texts == PartTexts::Check {
        for (i, (p, t)) in parts.iter().zip(texts).enumerate() {
            check_part_text(i, dim, p, t)?;
        }
    }
    // what the kernel reads of a part without its columns checked: its term count
    if let Some(i) = texts.iter().position(|t| t.term_offsets.is_empty()) {
        return Err(invalid(format!("part {i} term offsets: none")));
    }
    let nq = ranges.len();
    if tq.part.len() != nq || tq.windows.len() != nq {
        return Err(invalid(format!(
            "{} parts and {} windows for {nq} queries",
            tq.part.len(),
            tq.windows.len()
        )));
    }
    check_offsets("query terms", tq.term_offsets, nq, tq.terms.len())?;
    for (q, (&p, &[a, b])) in tq.part.iter().zip(ranges).enumerate() {
        let p = p as usize;
        let (Some(part), Some(&s)) = (parts.get(p), starts.get(p)) else {
            return Err(invalid(format!("query {q}: part {p} of {}", parts.len())));
        };
        let (a, b) = (a as usize, b as usize);
        if a < b && (a < s || b > s + part.rows()) {
            return Err(invalid(format!(
                "query {q}: range {a}..{b} outside part {p}"
            )));
        }
        let terms = &tq.terms[tq.term_offsets[q] as usize..tq.term_offsets[q + 1] as usize];
        if terms.iter().any(|&t| t as usize >= texts[p].terms()) {
            return Err(invalid(format!(
                "query {q}: a term id past part {p}'s terms"
            )));
        }
    }
    Ok(())
}

/// Adds each `(term, weight)`'s postings, times its weight, to the rows of `out` (the part's
/// rows from `base`), term after term.
pub(crate) fn add_postings(
    t: &PartText<'_>,
    terms: impl Iterator<Item = (u32, f32)>,
    base: usize,
    out: &mut [f32],
) {
    for (term, w) in terms {
        let (lo, hi) = (
            t.term_offsets[term as usize],
            t.term_offsets[term as usize + 1],
        );
        for j in lo as usize..hi as usize {
            let r = t.term_rows[j] as usize;
            if (base..base + out.len()).contains(&r) {
                out[r - base] += w * t.term_weights[j];
            }
        }
    }
}

/// Query expansion's inputs agree with the ranking's: the kernels fuse the keyword side
/// exactly when expansion is on, with 1 to [`MAX_TEXT_EXPAND_TERMS`] terms and one vector
/// per query.
pub(crate) fn check_expand(
    dim: usize,
    tq: &TextQueries<'_>,
    q: &RankQueries<'_>,
    params: &RankParams,
) -> Result<(), KernelError> {
    if params.sparse_fused != tq.expand.is_some() {
        return Err(KernelError::Invalid(format!(
            "text inputs fuse the keyword side (sparse_fused) exactly when query expansion is \
             on: sparse_fused {} with expansion {}",
            params.sparse_fused,
            if tq.expand.is_some() { "on" } else { "off" }
        )));
    }
    let Some(x) = tq.expand else {
        return Ok(());
    };
    if x.terms == 0 || x.terms > MAX_TEXT_EXPAND_TERMS || !x.weight.is_finite() {
        return Err(KernelError::Invalid(format!(
            "query expansion: {} terms at weight {} (1 to {MAX_TEXT_EXPAND_TERMS} terms, a \
             finite weight)",
            x.terms, x.weight
        )));
    }
    if q.vectors.len() != q.ranges.len() * dim {
        return Err(KernelError::Invalid(format!(
            "query expansion: {} vector values for {} queries of dimension {dim}",
            q.vectors.len(),
            q.ranges.len()
        )));
    }
    Ok(())
}
