//! Which rows are live: the one place that turns the manifest's tombstones into per-segment
//! alive bitmaps (tantivy's `SegmentReader` alive bitset, qdrant's deleted bitslice).
//!
//! Built when a [`crate::Store`] opens or refreshes a manifest version; every reader API of the
//! store goes through it, so a deleted item is never seen by search, eval, indexing, counts,
//! neighbours or snapshots, before and after compaction alike.

use std::sync::Arc;

use crate::segment::Segment;

/// Alive bits of one segment's rows; `None` in [`Alive::of`] means every row is alive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AliveBits {
    words: Vec<u64>,
    live: usize,
}

impl AliveBits {
    /// Bits of `ids` (a segment's item-id column) not listed in `deleted` (ascending).
    fn new(ids: &[u64], deleted: &[u64]) -> AliveBits {
        let mut words = vec![0u64; ids.len().div_ceil(64)];
        let mut live = 0;
        for (row, id) in ids.iter().enumerate() {
            if deleted.binary_search(id).is_err() {
                words[row / 64] |= 1 << (row % 64);
                live += 1;
            }
        }
        AliveBits { words, live }
    }

    pub fn is_alive(&self, row: usize) -> bool {
        self.words
            .get(row / 64)
            .is_some_and(|w| w >> (row % 64) & 1 == 1)
    }

    /// Live rows of the segment.
    pub fn count(&self) -> usize {
        self.live
    }

    /// Maximal runs `(start, len)` of live rows inside `start..start + rows`.
    pub fn runs(&self, start: usize, rows: usize) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut run: Option<usize> = None;
        for row in start..start + rows {
            match (self.is_alive(row), run) {
                (true, None) => run = Some(row),
                (false, Some(s)) => {
                    out.push((s, row - s));
                    run = None;
                }
                _ => {}
            }
        }
        if let Some(s) = run {
            out.push((s, start + rows - s));
        }
        out
    }
}

/// Alive bitmaps of a store version's segments, in manifest order.
#[derive(Debug, Clone, Default)]
pub struct Alive {
    per_segment: Vec<Option<Arc<AliveBits>>>,
}

impl Alive {
    /// Bitmaps of `segments` given the manifest's tombstones (`deleted`, ascending). A segment
    /// none of whose ids is deleted gets no bitmap (all alive), so a store without deletes
    /// pays nothing.
    pub(crate) fn build(segments: &[Segment], deleted: &[u64]) -> Alive {
        let per_segment = segments
            .iter()
            .map(|seg| {
                let m = seg.meta();
                let lo = deleted.partition_point(|&d| d < m.min_item_id);
                let hi = deleted.partition_point(|&d| d <= m.max_item_id);
                (lo < hi).then(|| Arc::new(AliveBits::new(seg.item_ids(), &deleted[lo..hi])))
            })
            .collect();
        Alive { per_segment }
    }

    /// The bitmap of segment `i` (None: every row alive).
    pub fn of(&self, i: usize) -> Option<&AliveBits> {
        self.per_segment.get(i).and_then(|b| b.as_deref())
    }

    /// Live rows of segment `i`, which has `rows` rows.
    pub(crate) fn count(&self, i: usize, rows: usize) -> usize {
        self.of(i).map_or(rows, AliveBits::count)
    }

    pub(crate) fn is_alive(&self, i: usize, row: usize) -> bool {
        self.of(i).is_none_or(|b| b.is_alive(row))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_split_around_deleted_rows() {
        let ids: Vec<u64> = (10..20).collect();
        let bits = AliveBits::new(&ids, &[10, 13, 14, 19]);
        assert_eq!(bits.count(), 6);
        assert!(!bits.is_alive(0) && bits.is_alive(1) && !bits.is_alive(9));
        assert_eq!(bits.runs(0, 10), vec![(1, 2), (5, 4)]);
        assert_eq!(bits.runs(2, 3), vec![(2, 1)]);
        assert_eq!(bits.runs(3, 2), Vec::<(usize, usize)>::new());
        let all = AliveBits::new(&ids, &[]);
        assert_eq!(all.runs(0, 10), vec![(0, 10)]);
        assert!(!all.is_alive(64), "out of range rows are not alive");
    }
}
