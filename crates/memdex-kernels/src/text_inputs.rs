//! The reference of the kernels' text inputs ([`crate::Kernels::rank_topk_text`]): each
//! query's BM25 (with query expansion, [`crate::expand`], its keyword share) and time flags
//! from its part's text columns, row by row on the CPU.

use crate::expand::expand_reference;
use crate::parts::check_parts;
use crate::text::{add_postings, check_text, PartText, PartTexts, TextQueries};
use crate::{range_offsets, KernelError, RankParams, RankPart, RankQueries};

/// The reference: every query's BM25 score (with expansion: its keyword share) and time flag
/// per row of its range, laid out as [`crate::RankQueries::sparse`] and `flags` (each query's
/// terms summed in order, in f32).
pub fn text_inputs_reference(
    dim: usize,
    parts: &[RankPart<'_>],
    texts: &[PartText<'_>],
    tq: &TextQueries<'_>,
    queries: &RankQueries<'_>,
    params: &RankParams,
) -> Result<(Vec<f32>, Vec<u8>), KernelError> {
    let ranges = queries.ranges;
    let (_, starts) = check_parts(dim, parts, ranges)?;
    check_text(
        dim,
        parts,
        &starts,
        texts,
        tq,
        queries,
        params,
        PartTexts::Check,
    )?;
    let (offsets, total) = range_offsets(ranges);
    let (mut sparse, mut flags) = (vec![0f32; total], vec![0u8; total]);
    for (q, &[a, b]) in ranges.iter().enumerate() {
        if a >= b {
            continue;
        }
        let p = tq.part[q] as usize;
        let (t, base) = (&texts[p], a as usize - starts[p]);
        let n = (b - a) as usize;
        let off = offsets[q] as usize;
        let (qs, qf) = (&mut sparse[off..off + n], &mut flags[off..off + n]);
        let own = &tq.terms[tq.term_offsets[q] as usize..tq.term_offsets[q + 1] as usize];
        add_postings(t, own.iter().map(|&term| (term, 1.0)), base, qs);
        if let Some(x) = tq.expand {
            let vector = &queries.vectors[q * dim..(q + 1) * dim];
            expand_reference(t, own, vector, x, params.w_sparse, base, qs);
        }
        if let Some(w) = tq.windows[q] {
            for (i, f) in qf.iter_mut().enumerate() {
                let r = base + i;
                let (e0, e1) = (t.event_offsets[r] as usize, t.event_offsets[r + 1] as usize);
                let events = (e0..e1).map(|e| (t.event_lo[e], t.event_hi[e]));
                *f = u8::from(w.flags(t.timestamps[r], events));
            }
        }
    }
    Ok((sparse, flags))
}
