//! Checks of the fused ranking with BM25 and the time flags computed by the kernels
//! (`rank_topk_text`): the same answers as `rank_topk_parts` given those inputs computed by a
//! brute force (row by row, every term's postings scanned), on the first call and on a later
//! call that finds the part texts resident; with query expansion (the kernels pick each
//! query's expansion terms and fuse the keyword side) against a brute force of the same in
//! f64; malformed text inputs are errors.

use memdex_rank::TimeWindow;
use memdex_score::fusion::min_max;

use super::rank::{brute_rank_topk, DEFAULTS};
use super::{assert_close, assert_no_faults, random_unit, Rng};
use crate::{
    f16, range_offsets, Concatenated, KernelError, Kernels, PartText, RankParams, RankPart,
    RankQueries, TextExpand, TextQueries, TimeRule,
};

const DAY: i64 = 86_400_000;
const TERMS: usize = 40;
/// Query expansion as the default pipeline runs it.
const EXPAND: TextExpand = TextExpand {
    terms: 10,
    weight: 0.1,
};

/// One tenant's rows ([`super::parts`]'s) and text columns.
struct Tenant {
    rows: super::parts::Tenant,
    term_offsets: Vec<u32>,
    term_rows: Vec<u32>,
    term_weights: Vec<f32>,
    timestamps: Vec<i64>,
    event_offsets: Vec<u32>,
    event_lo: Vec<i64>,
    event_hi: Vec<i64>,
    /// Expansion candidates: terms 5.. not divisible by 3, with random unit vectors.
    vocab_terms: Vec<u32>,
    vocab_vectors: Vec<f16>,
}

impl Tenant {
    fn new(key: u64, rows: usize, dim: usize, seed: u64) -> Tenant {
        let mut rng = Rng(seed + 3);
        let mut t = Tenant {
            rows: super::parts::Tenant::new(key, rows, dim, seed),
            term_offsets: vec![0],
            term_rows: Vec::new(),
            term_weights: Vec::new(),
            timestamps: (0..rows).map(|r| r as i64 * DAY / 4).collect(),
            event_offsets: vec![0],
            event_lo: Vec::new(),
            event_hi: Vec::new(),
            vocab_terms: (5..TERMS as u32).filter(|t| t % 3 != 0).collect(),
            vocab_vectors: Vec::new(),
        };
        t.vocab_vectors = random_unit(t.vocab_terms.len(), dim, seed + 11)
            .into_iter()
            .map(f16::from_f32)
            .collect();
        for term in 0..TERMS {
            // frequent and rare terms: each row holds term `term` with chance 1 in 2 + term
            for r in 0..rows {
                if rng.below(2 + term as u64) == 0 {
                    t.term_rows.push(r as u32);
                    t.term_weights.push((rng.unit() + 0.6) * 3.0);
                }
            }
            t.term_offsets.push(t.term_rows.len() as u32);
        }
        for _ in 0..rows {
            for _ in 0..rng.below(3).saturating_sub(1) {
                let a = rng.below(rows.max(1) as u64) as i64 * DAY / 4;
                t.event_lo.push(a);
                t.event_hi.push(a + DAY);
            }
            t.event_offsets.push(t.event_lo.len() as u32);
        }
        t
    }

    fn part(&self) -> RankPart<'_> {
        self.rows.part()
    }

    fn text(&self) -> PartText<'_> {
        PartText {
            key: self.rows.part().key,
            term_offsets: &self.term_offsets,
            term_rows: &self.term_rows,
            term_weights: &self.term_weights,
            timestamps: &self.timestamps,
            event_offsets: &self.event_offsets,
            event_lo: &self.event_lo,
            event_hi: &self.event_hi,
            vocab_terms: &self.vocab_terms,
            vocab_vectors: &self.vocab_vectors,
        }
    }
}

/// A batch: per part its whole range and an inner slice, random terms (repeats, none) and
/// windows (none, a range, dated rows) with the time rule each implies.
struct Batch {
    vectors: Vec<f32>,
    ranges: Vec<[u32; 2]>,
    time: Vec<TimeRule>,
    part: Vec<u32>,
    term_offsets: Vec<u32>,
    terms: Vec<u32>,
    windows: Vec<Option<TimeWindow>>,
    expand: Option<TextExpand>,
}

impl Batch {
    fn new(parts: &[RankPart<'_>], dim: usize, seed: u64) -> Batch {
        let mut rng = Rng(seed);
        let mut b = Batch {
            vectors: Vec::new(),
            ranges: Vec::new(),
            time: Vec::new(),
            part: Vec::new(),
            term_offsets: vec![0],
            terms: Vec::new(),
            windows: Vec::new(),
            expand: None,
        };
        let mut start = 0u32;
        for (p, part) in parts.iter().enumerate() {
            let end = start + part.rows() as u32;
            let mut ranges = vec![[start, end]];
            if end > start + 4 {
                ranges.push([start + 2, end - 1]);
            }
            for r in ranges {
                let q = b.ranges.len();
                b.ranges.push(r);
                b.part.push(p as u32);
                for _ in 0..rng.below(4) {
                    b.terms.push(rng.below(TERMS as u64) as u32);
                }
                b.term_offsets.push(b.terms.len() as u32);
                let (window, rule) = match q % 3 {
                    0 => (None, TimeRule::None),
                    1 => {
                        let lo = rng.below(part.rows().max(1) as u64) as i64 * DAY / 4;
                        (
                            Some(TimeWindow::Range {
                                lo,
                                hi: lo + 3 * DAY,
                            }),
                            TimeRule::Front,
                        )
                    }
                    _ => (Some(TimeWindow::Dated), TimeRule::Boost(0.4)),
                };
                b.windows.push(window);
                b.time.push(rule);
            }
            start = end;
        }
        b.vectors = random_unit(b.ranges.len(), dim, seed + 7);
        b
    }

    fn text(&self) -> TextQueries<'_> {
        TextQueries {
            part: &self.part,
            term_offsets: &self.term_offsets,
            terms: &self.terms,
            windows: &self.windows,
            expand: self.expand,
        }
    }

    fn params(&self) -> RankParams {
        RankParams {
            sparse_fused: self.expand.is_some(),
            ..DEFAULTS
        }
    }
}

/// Each query's BM25 scores (with expansion: keyword shares) and flags row by row (every
/// term's postings scanned for the row), and how many queries expansion changed.
fn brute_inputs(tenants: &[&Tenant], b: &Batch) -> (Vec<f32>, Vec<u8>, usize) {
    let mut expanded = 0;
    let (offsets, total) = range_offsets(&b.ranges);
    let (mut sparse, mut flags) = (vec![0f32; total], vec![0u8; total]);
    let starts: Vec<u32> = (tenants.iter())
        .scan(0u32, |s, t| {
            let at = *s;
            *s += t.timestamps.len() as u32;
            Some(at)
        })
        .collect();
    for (q, &[a, c]) in b.ranges.iter().enumerate() {
        let t = tenants[b.part[q] as usize];
        let terms = &b.terms[b.term_offsets[q] as usize..b.term_offsets[q + 1] as usize];
        for (i, row) in (a..c).enumerate() {
            let r = (row - starts[b.part[q] as usize]) as usize;
            let mut s = 0f32;
            for &term in terms {
                let (lo, hi) = (
                    t.term_offsets[term as usize],
                    t.term_offsets[term as usize + 1],
                );
                let post = &t.term_rows[lo as usize..hi as usize];
                if let Ok(j) = post.binary_search(&(r as u32)) {
                    s += t.term_weights[lo as usize + j];
                }
            }
            sparse[offsets[q] as usize + i] = s;
            let (e0, e1) = (t.event_offsets[r] as usize, t.event_offsets[r + 1] as usize);
            let events = (e0..e1).map(|e| (t.event_lo[e], t.event_hi[e]));
            let f = b.windows[q].is_some_and(|w| w.flags(t.timestamps[r], events));
            flags[offsets[q] as usize + i] = u8::from(f);
        }
        if let Some(x) = b.expand {
            let (o, base) = (offsets[q] as usize, starts[b.part[q] as usize]);
            let dim = b.vectors.len() / b.ranges.len();
            let vector = &b.vectors[q * dim..(q + 1) * dim];
            let rows: Vec<usize> = (a..c).map(|row| (row - base) as usize).collect();
            let bm25 = &sparse[o..o + rows.len()];
            let (share, changed) = brute_keyword_share(t, terms, vector, x, &rows, bm25);
            sparse[o..o + rows.len()].copy_from_slice(&share);
            expanded += usize::from(changed);
        }
    }
    (sparse, flags, expanded)
}

/// A term's BM25 share in part row `r` (0 when the row lacks it).
fn posting(t: &Tenant, term: u32, r: usize) -> f64 {
    let (lo, hi) = (
        t.term_offsets[term as usize] as usize,
        t.term_offsets[term as usize + 1] as usize,
    );
    let post = &t.term_rows[lo..hi];
    post.binary_search(&(r as u32))
        .map_or(0.0, |j| f64::from(t.term_weights[lo + j]))
}

/// The keyword share with query expansion, in f64: every candidate's cosine, the best
/// `x.terms` positive ones that are not the query's own terms, their weighted BM25 row by row,
/// each column min-max normalised over `rows`; and whether the expansion column varies.
fn brute_keyword_share(
    t: &Tenant,
    own: &[u32],
    vector: &[f32],
    x: TextExpand,
    rows: &[usize],
    bm25: &[f32],
) -> (Vec<f32>, bool) {
    let dim = vector.len();
    let mut picked: Vec<(f64, u32)> = (t.vocab_terms.iter().enumerate())
        .filter(|(_, term)| !own.contains(term))
        .map(|(i, &term)| {
            let row = &t.vocab_vectors[i * dim..(i + 1) * dim];
            let c: f64 = (vector.iter().zip(row))
                .map(|(a, b)| f64::from(*a) * f64::from(b.to_f32()))
                .sum();
            (c, term)
        })
        .filter(|&(c, _)| c > 0.0)
        .collect();
    picked.sort_by(|a, b| b.0.total_cmp(&a.0));
    picked.truncate(x.terms);
    let own_side = min_max(&bm25.iter().map(|&s| f64::from(s)).collect::<Vec<_>>());
    let expansion = (!picked.is_empty()).then(|| {
        let e = (rows.iter())
            .map(|&r| {
                picked
                    .iter()
                    .map(|&(c, term)| c * posting(t, term, r))
                    .sum()
            })
            .collect::<Vec<f64>>();
        min_max(&e)
    });
    let w_sparse = f64::from(DEFAULTS.w_sparse);
    let share = (0..rows.len())
        .map(|i| {
            let e = expansion
                .as_ref()
                .map_or(0.0, |e| f64::from(x.weight) * e[i]);
            (w_sparse * own_side[i] + e) as f32
        })
        .collect();
    (share, expansion.is_some_and(|e| e.iter().any(|&v| v > 0.0)))
}

fn agree(k: &dyn Kernels, dim: usize, tenants: &[&Tenant], expand: bool, what: &str) {
    let parts: Vec<RankPart<'_>> = tenants.iter().map(|t| t.part()).collect();
    let texts: Vec<PartText<'_>> = tenants.iter().map(|t| t.text()).collect();
    let mut b = Batch::new(&parts, dim, 61);
    b.expand = expand.then_some(EXPAND);
    let params = b.params();
    let (sparse, flags, expanded) = brute_inputs(tenants, &b);
    assert_eq!(
        expanded > 0,
        expand,
        "queries changed by expansion: {expanded}"
    );
    let q = RankQueries {
        vectors: &b.vectors,
        ranges: &b.ranges,
        sparse: &sparse,
        flags: &flags,
        time: &b.time,
    };
    let c = Concatenated::new(dim, &parts, &q).unwrap();
    let what = format!("{} text {what}, expansion {expand}", k.device());
    let empty = RankQueries {
        sparse: &[],
        flags: &[],
        ..q
    };
    for topk in [10, 40] {
        let got =
            (k.rank_topk_text(dim, &parts, &texts, &b.text(), &empty, &params, topk)).unwrap();
        let want = brute_rank_topk(&c.matrix(), &c.rows(), &q, &params, topk);
        assert_close(&got, &want, 1e-4, &format!("{what} k {topk}"));
    }
    assert!(flags.iter().any(|&f| f != 0) && sparse.iter().any(|&s| s > 0.0));
}

/// A check (see the module docs).
pub fn rank_text_matches_host_inputs(k: &dyn Kernels) {
    let dim = 64;
    let sizes = [(21, 300), (22, 0), (23, 1), (0, 45), (24, 1200)];
    let tenants: Vec<Tenant> = (sizes.iter().enumerate())
        .map(|(i, &(key, rows))| Tenant::new(key, rows, dim, 300 + 10 * i as u64))
        .collect();
    let all: Vec<&Tenant> = tenants.iter().collect();
    for expand in [false, true] {
        agree(k, dim, &all, expand, "first call");
        agree(k, dim, &all, expand, "again (resident)");
        agree(k, dim, &[all[4], all[0]], expand, "a subset, reordered");
    }

    // malformed text inputs are errors
    let parts: Vec<RankPart<'_>> = all.iter().map(|t| t.part()).collect();
    let texts: Vec<PartText<'_>> = all.iter().map(|t| t.text()).collect();
    let b = Batch::new(&parts, dim, 62);
    let q = RankQueries {
        vectors: &b.vectors,
        ranges: &b.ranges,
        sparse: &[],
        flags: &[],
        time: &b.time,
    };
    let run = |texts: &[PartText<'_>], tq: &TextQueries<'_>| {
        k.rank_topk_text(dim, &parts, texts, tq, &q, &DEFAULTS, 5)
    };
    assert!(run(&texts, &b.text()).is_ok());
    // a keyword side the host fused (query expansion) cannot come from text columns
    let fused = RankParams {
        sparse_fused: true,
        ..DEFAULTS
    };
    let e = k.rank_topk_text(dim, &parts, &texts, &b.text(), &q, &fused, 5);
    assert!(matches!(e, Err(KernelError::Invalid(_))), "{e:?}");
    let far = vec![TERMS as u32; b.terms.len()];
    // malformed columns come unkeyed (key 0: uploaded, so checked, on every call); under a
    // key a device already holds, it would read its resident copy (a key names one content)
    let short_times = PartText {
        key: 0,
        timestamps: &tenants[0].timestamps[1..],
        ..texts[0]
    };
    let mut bad_texts = texts.clone();
    bad_texts[0] = short_times;
    let wrong_part: Vec<u32> = b.part.iter().map(|&p| (p + 1) % 5).collect();
    let with = |terms| TextQueries {
        expand: Some(TextExpand { terms, ..EXPAND }),
        ..b.text()
    };
    let past = vec![TERMS as u32; tenants[0].vocab_terms.len()];
    let (mut far_vocab, mut short_vocab) = (texts.clone(), texts.clone());
    far_vocab[0].vocab_terms = &past;
    short_vocab[0].vocab_vectors = &tenants[0].vocab_vectors[dim..];
    (far_vocab[0].key, short_vocab[0].key) = (0, 0);
    for e in [
        // expansion on, the kernel told to min-max a raw BM25 column (and the reverse above)
        run(&texts, &with(10)),
        // no expansion term, or more than the kernels' lists hold
        k.rank_topk_text(dim, &parts, &texts, &with(0), &q, &fused, 5),
        k.rank_topk_text(dim, &parts, &texts, &with(33), &q, &fused, 5),
        // candidates past the part's terms, or vectors not one per candidate
        k.rank_topk_text(dim, &parts, &far_vocab, &with(10), &q, &fused, 5),
        k.rank_topk_text(dim, &parts, &short_vocab, &with(10), &q, &fused, 5),
    ] {
        assert!(matches!(e, Err(KernelError::Invalid(_))), "{e:?}");
    }
    assert!(k
        .rank_topk_text(dim, &parts, &texts, &with(10), &q, &fused, 5)
        .is_ok());
    for e in [
        run(
            &texts,
            &TextQueries {
                terms: &far,
                ..b.text()
            },
        ),
        run(&texts[..4], &b.text()),
        run(&bad_texts, &b.text()),
        run(
            &texts,
            &TextQueries {
                part: &wrong_part,
                ..b.text()
            },
        ),
    ] {
        assert!(matches!(e, Err(KernelError::Invalid(_))), "{e:?}");
    }
    // the first batch over resident parts was assembled both ways and found equal
    assert_no_faults(k, "text");
}
