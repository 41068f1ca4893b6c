//! Compaction's policy, without files: which segments to rewrite and merge, which tombstones
//! the new manifest keeps. The same run rule picks the content files of a shared store.

use crate::manifest::Manifest;

/// When compaction rewrites segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactOptions {
    /// Segments with fewer rows are merged with their small neighbours.
    pub small_rows: u64,
    /// A merged segment holds at most this many rows (before deletions).
    pub max_rows: u64,
}

impl Default for CompactOptions {
    fn default() -> Self {
        Self {
            small_rows: 4096,
            max_rows: 262_144,
        }
    }
}

/// One file compaction may rewrite, as the run rule sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Candidate {
    pub rows: u64,
    /// It holds rows to drop (deleted items, contents no row references).
    pub garbage: bool,
    /// Files of different classes are never merged into one (segments written before and
    /// after LSH was enabled differ by a column).
    pub class: usize,
}

/// Runs of consecutive candidates to rewrite as one file each: the small ones and those
/// holding garbage, merged with their neighbours while the rows fit `max_rows` and the
/// class holds. Order is kept (every tenant's rows stay in timeline order); a run of one
/// clean file is left as it is.
pub(crate) fn runs(files: &[Candidate], opts: &CompactOptions) -> Vec<Vec<usize>> {
    let mut runs: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    let mut current_rows = 0u64;
    for (i, f) in files.iter().enumerate() {
        let wanted = f.rows < opts.small_rows || f.garbage;
        let other_class = current.first().is_some_and(|&c| files[c].class != f.class);
        if !wanted || other_class || current_rows + f.rows > opts.max_rows {
            if !current.is_empty() {
                runs.push(std::mem::take(&mut current));
            }
            current_rows = 0;
        }
        if wanted {
            current.push(i);
            current_rows += f.rows;
        }
    }
    if !current.is_empty() {
        runs.push(current);
    }
    runs.retain(|r| r.len() > 1 || files[r[0]].garbage);
    runs
}

/// What one compaction of a manifest's segments does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CompactPlan {
    /// Runs of consecutive segments (indices into the manifest's segments), each rewritten
    /// as one file without its deleted rows.
    pub runs: Vec<Vec<usize>>,
    /// The tombstones the new manifest keeps: those inside segments no run rewrites (none
    /// under the run rule, which rewrites every segment holding one).
    pub deleted: Vec<u64>,
    /// Bytes of the segment files the runs read: at most what their rewrite writes.
    pub bytes: u64,
}

/// Plans compacting `manifest`'s segments; None when there is nothing to do (nothing to
/// rewrite, no tombstone to settle). `class[i]` is segment i's column set (see
/// [`Candidate::class`]), the one fact the manifest does not record. A segment holds a
/// tombstone when the id lies within its item id range: item ids ascend with manifest order,
/// so the ranges are disjoint, and every id a segment holds lies within its own.
pub(crate) fn plan(
    manifest: &Manifest,
    opts: &CompactOptions,
    class: &[usize],
) -> Option<CompactPlan> {
    let deleted = &manifest.deleted; // ascending (the manifest is validated)
    let holds = |min: u64, max: u64| {
        let first = deleted.partition_point(|&id| id < min);
        deleted.get(first).is_some_and(|&id| id <= max)
    };
    let segments = &manifest.segments;
    let files: Vec<Candidate> = (segments.iter().enumerate())
        .map(|(i, s)| Candidate {
            rows: s.rows,
            garbage: holds(s.min_item_id, s.max_item_id),
            class: class.get(i).copied().unwrap_or(0),
        })
        .collect();
    let runs = runs(&files, opts);
    if runs.is_empty() && deleted.is_empty() {
        return None;
    }
    let mut rewritten = vec![false; segments.len()];
    runs.iter().flatten().for_each(|&i| rewritten[i] = true);
    let untouched = |id: u64| {
        (segments.iter().zip(&rewritten))
            .any(|(s, &r)| !r && (s.min_item_id..=s.max_item_id).contains(&id))
    };
    Some(CompactPlan {
        deleted: deleted
            .iter()
            .copied()
            .filter(|&id| untouched(id))
            .collect(),
        bytes: runs.iter().flatten().map(|&i| segments[i].bytes).sum(),
        runs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::SegmentMeta;
    use crate::Layout;

    const OPTS: CompactOptions = CompactOptions {
        small_rows: 10,
        max_rows: 25,
    };

    /// A manifest of segments with these row counts; item ids ascend from 0, no gaps.
    fn manifest(rows: &[u64], deleted: &[u64]) -> Manifest {
        let mut next = 0;
        let segments = (rows.iter().enumerate())
            .map(|(i, &rows)| {
                let min = next;
                next += rows;
                SegmentMeta {
                    id: i as u64 + 1,
                    file: format!("seg-{:08}.arrow", i + 1),
                    rows,
                    bytes: 100 * rows,
                    checksum: None,
                    min_item_id: min,
                    max_item_id: next - 1,
                    tenants: Vec::new(),
                }
            })
            .collect();
        Manifest {
            format_version: Layout::Inline.format_version(),
            version: 1,
            model: memdex_core::ModelInfo {
                name: "m".into(),
                fingerprint: "f".into(),
                dim: 4,
                pooling: memdex_core::Pooling::Mean,
                normalize: true,
                max_length: 16,
                query_prefix: String::new(),
                passage_prefix: String::new(),
            },
            granularity: memdex_core::Granularity::Round,
            model_source: None,
            extraction: Default::default(),
            segments,
            layout: Layout::Inline,
            contents: Vec::new(),
            deleted: deleted.to_vec(),
            next_id_floor: 0,
            lsh: None,
            next_segment_id: 0,
            structures: None,
            words: Vec::new(),
        }
    }

    fn plan_of(rows: &[u64], deleted: &[u64]) -> Option<CompactPlan> {
        plan(&manifest(rows, deleted), &OPTS, &[])
    }

    #[test]
    fn large_clean_segments_need_nothing() {
        assert_eq!(plan_of(&[10, 50, 12], &[]), None);
        // a lone small segment is not rewritten for nothing
        assert_eq!(plan_of(&[50, 3, 50], &[]), None);
    }

    #[test]
    fn small_neighbours_merge_up_to_max_rows_and_large_ones_split_runs() {
        let p = plan_of(&[4, 4, 50, 9, 9, 9, 2, 30, 1], &[]).unwrap_or_else(|| panic!("a plan"));
        // 9 + 9 fit 25, a third 9 does not: it starts the next run with the 2
        assert_eq!(p.runs, vec![vec![0, 1], vec![3, 4], vec![5, 6]]);
        assert_eq!(p.bytes, 100 * (4 + 4 + 9 + 9 + 9 + 2));
        assert!(p.deleted.is_empty());
    }

    #[test]
    fn segments_holding_tombstones_are_rewritten_and_every_tombstone_settles() {
        // ids: seg0 0..=49, seg1 50..=99, seg2 100..=149; 500 lies in no segment
        let p = plan_of(&[50, 50, 50], &[60, 61, 120, 500]).unwrap_or_else(|| panic!("a plan"));
        assert_eq!(p.runs, vec![vec![1], vec![2]]);
        assert!(p.deleted.is_empty());
        assert_eq!(p.bytes, 100 * 100);
    }

    #[test]
    fn a_large_segment_with_a_tombstone_is_rewritten_alone() {
        // ids: seg0 0..=4, seg1 5..=54, seg2 55..=59, seg3 60..=64
        let p = plan_of(&[5, 50, 5, 5], &[30]).unwrap_or_else(|| panic!("a plan"));
        // 5 then 50 overflows max_rows: the lone clean 5 stays; 50 is rewritten alone (its
        // garbage); the last two small ones merge
        assert_eq!(p.runs, vec![vec![1], vec![2, 3]]);
        assert!(p.deleted.is_empty());
    }

    #[test]
    fn a_tombstone_in_no_segment_still_commits_to_drop_it() {
        let p = plan_of(&[50, 50], &[500]).unwrap_or_else(|| panic!("a plan"));
        assert!(p.runs.is_empty());
        assert!(p.deleted.is_empty());
        assert_eq!(p.bytes, 0);
    }

    #[test]
    fn segments_of_different_column_sets_are_never_merged() {
        let p = plan(&manifest(&[4, 4, 4, 4], &[]), &OPTS, &[0, 0, 1, 1]);
        let p = p.unwrap_or_else(|| panic!("a plan"));
        assert_eq!(p.runs, vec![vec![0, 1], vec![2, 3]]);
    }
}
