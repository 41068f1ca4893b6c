//! Query tiles: a batch's queries grouped by range, for the kernels that read a range's rows
//! once per tile of queries instead of once per query (`kernels/cuda/tile.cuh`: the dense scan
//! of `segmented_topk` and of the fused ranking). Queries of one tenant share its range, so a
//! tenant's rows cross device memory once per tile of up to [`MAX_TILE`] of its queries.

/// Most queries in a tile (`MEMDEX_QTILE` in `tile.cuh`).
pub const MAX_TILE: usize = 16;

/// Shared memory a tile may use per block: the default limit, so no launch needs an opt-in.
const TILE_SMEM_BYTES: usize = 48 * 1024;

/// Warps per block of the scanning kernels (`MEMDEX_WARPS`).
const WARPS: usize = 8;

/// Candidates the tensor-core scan keeps per warp and query beyond `k` (`MEMDEX_TC_EXTRA` in
/// `tensor_topk.cu`).
pub const TENSOR_EXTRA: usize = 16;

/// A batch's queries in tiles: tile `b` is `queries[offsets[b]..offsets[b + 1]]`, 1 to `cap`
/// queries with the same range. Tiles follow the ranges' order (start, then end), and queries
/// keep the batch's order within a range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryTiles {
    pub queries: Vec<u32>,
    pub offsets: Vec<u32>,
    /// The longest tile (0 without queries).
    pub longest: usize,
}

impl QueryTiles {
    /// `ranges` (one per query) grouped into tiles of at most `cap` (clamped to 1..=MAX_TILE).
    pub fn new(ranges: &[[u32; 2]], cap: usize) -> Self {
        let cap = cap.clamp(1, MAX_TILE);
        let mut order: Vec<u32> = (0..ranges.len() as u32).collect();
        order.sort_by_key(|&q| ranges[q as usize]);
        let mut offsets = vec![0u32];
        let mut longest = 0;
        let mut run = 0usize;
        for (i, &q) in order.iter().enumerate() {
            let same = i > 0 && ranges[order[i - 1] as usize] == ranges[q as usize];
            if i > 0 && (!same || run == cap) {
                offsets.push(i as u32);
                run = 0;
            }
            run += 1;
            longest = longest.max(run);
        }
        if !order.is_empty() {
            offsets.push(order.len() as u32);
        }
        Self {
            queries: order,
            offsets,
            longest,
        }
    }

    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The instantiation of a tiled kernel a launch takes: tiles of at most 1, 4 or 16 queries
/// (one query keeps the untiled scan's registers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TileWidth {
    One,
    Four,
    Sixteen,
}

impl TileWidth {
    /// The narrowest instantiation that holds tiles of `longest` queries.
    pub fn for_longest(longest: usize) -> Self {
        match longest {
            0 | 1 => Self::One,
            2..=4 => Self::Four,
            _ => Self::Sixteen,
        }
    }
}

/// A tiled kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tiled {
    /// `memdex_segmented_topk_*` (`segmented_topk.cu`).
    Scan,
    /// `memdex_rank_dense_*`, the fused ranking's dense step (`rank.cu`).
    Dense,
    /// `memdex_tensor_topk` (`tensor_topk.cu`): the scan on tensor cores, one instantiation
    /// (a tile's B operand always has 16 columns).
    Tensor,
}

impl Tiled {
    /// The instantiation for rows of `dim` and tiles of `w`: 2 chunks of 16 bytes per lane up
    /// to dim 512 (`_d512`: fewer registers, more blocks per SM), else 4.
    pub fn name(self, dim: usize, w: TileWidth) -> &'static str {
        use TileWidth::{Four, One, Sixteen};
        match (self, dim <= 512, w) {
            (Self::Tensor, _, _) => "memdex_tensor_topk",
            (Self::Scan, true, One) => "memdex_segmented_topk_d512_t1",
            (Self::Scan, true, Four) => "memdex_segmented_topk_d512_t4",
            (Self::Scan, true, Sixteen) => "memdex_segmented_topk_d512_t16",
            (Self::Scan, false, One) => "memdex_segmented_topk_t1",
            (Self::Scan, false, Four) => "memdex_segmented_topk_t4",
            (Self::Scan, false, Sixteen) => "memdex_segmented_topk_t16",
            (Self::Dense, true, One) => "memdex_rank_dense_d512_t1",
            (Self::Dense, true, Four) => "memdex_rank_dense_d512_t4",
            (Self::Dense, true, Sixteen) => "memdex_rank_dense_d512_t16",
            (Self::Dense, false, One) => "memdex_rank_dense_t1",
            (Self::Dense, false, Four) => "memdex_rank_dense_t4",
            (Self::Dense, false, Sixteen) => "memdex_rank_dense_t16",
        }
    }
}

/// 16-byte chunks per half-warp lane of the kernel instantiation for rows of `dim` (4 up to
/// 512, else 8).
fn chunks_per_lane(dim: usize) -> usize {
    if dim <= 512 {
        4
    } else {
        8
    }
}

/// Shared-memory bytes per query of a tile: the query (16 lanes × its chunks × 32 bytes, zeros
/// past `dim`) and its norm, plus `list_bytes` of candidate lists.
fn per_query_bytes(dim: usize, list_bytes: usize) -> usize {
    chunks_per_lane(dim) * 16 * 32 + 4 + list_bytes
}

/// `segmented_topk`'s shared memory for rows of `dim` and top `k` (per query of a tile: the
/// query, its norm, and a sorted list of `k` per warp).
pub fn scan_tile(dim: usize, k: usize) -> TileSmem {
    TileSmem::new(per_query_bytes(dim, WARPS * k * 8))
}

/// The fused ranking's dense step's shared memory for rows of `dim` (the query and its norm;
/// the cosines go to global scratch).
pub fn dense_tile(dim: usize) -> TileSmem {
    TileSmem::new(per_query_bytes(dim, 0))
}

/// The tensor-core scan's shared memory for rows of `dim` and top `k` (`tensor_topk.cu`): the
/// tile's 16 unit queries as f16 (`dim + 8` halves each), per warp a 16 × 16 f32 tile and 16
/// row norms, 16 query norms, then per warp and query of the tile a list of
/// `k + TENSOR_EXTRA` candidates. None where the kernel does not apply (the CUDA-core scan
/// answers): `dim` not a multiple of 16 or above 1,024, `k + TENSOR_EXTRA` above 128, or not
/// one query fitting the default 48 KiB.
pub fn tensor_tile(dim: usize, k: usize) -> Option<TileSmem> {
    if dim == 0 || !dim.is_multiple_of(16) || dim > 1024 || k == 0 || k + TENSOR_EXTRA > 128 {
        return None;
    }
    let fixed = 32 * (dim + 8) + WARPS * (256 + 16) * 4 + 16 * 4;
    let per_query = WARPS * (k + TENSOR_EXTRA) * 8;
    let fits = TILE_SMEM_BYTES.checked_sub(fixed)? / per_query;
    (fits >= 1).then_some(TileSmem {
        fixed,
        per_query,
        cap: fits.min(MAX_TILE),
    })
}

/// A tiled kernel's shared memory: bytes per query of a tile (plus `fixed` per block) and the
/// tile cap they allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TileSmem {
    pub fixed: usize,
    pub per_query: usize,
    pub cap: usize,
}

impl TileSmem {
    fn new(per_query: usize) -> Self {
        Self {
            fixed: 0,
            per_query,
            cap: (TILE_SMEM_BYTES / per_query).clamp(1, MAX_TILE),
        }
    }

    /// Dynamic shared memory of a launch whose longest tile has `longest` queries.
    pub fn bytes(&self, longest: usize) -> usize {
        self.fixed + self.per_query * longest.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiles_of(t: &QueryTiles) -> Vec<Vec<u32>> {
        (0..t.len())
            .map(|b| t.queries[t.offsets[b] as usize..t.offsets[b + 1] as usize].to_vec())
            .collect()
    }

    #[test]
    fn queries_of_one_range_share_tiles_of_at_most_cap() {
        // 20 queries on [0, 10) interleaved with others: tiles of 16 + 4 in batch order
        let mut ranges = Vec::new();
        for i in 0..20 {
            ranges.push([0, 10]);
            if i % 5 == 0 {
                ranges.push([10, 30]);
            }
        }
        ranges.push([5, 5]);
        let t = QueryTiles::new(&ranges, MAX_TILE);
        let tiles = tiles_of(&t);
        assert_eq!(t.longest, 16);
        assert_eq!(
            tiles.iter().map(Vec::len).collect::<Vec<_>>(),
            [16, 4, 1, 4]
        );
        for tile in &tiles {
            assert!(tile.windows(2).all(|w| w[0] < w[1]), "batch order kept");
            assert!(tile
                .iter()
                .all(|&q| ranges[q as usize] == ranges[tile[0] as usize]));
        }
        let mut all = t.queries.clone();
        all.sort_unstable();
        assert_eq!(
            all,
            (0..ranges.len() as u32).collect::<Vec<_>>(),
            "each query once"
        );
    }

    #[test]
    fn the_cap_bounds_every_tile_and_distinct_ranges_stay_single() {
        let ranges: Vec<[u32; 2]> = (0..37).map(|i| [0, 100 + (i % 3)]).collect();
        let t = QueryTiles::new(&ranges, 5);
        assert!(tiles_of(&t).iter().all(|x| !x.is_empty() && x.len() <= 5));
        assert_eq!(t.longest, 5);
        let distinct: Vec<[u32; 2]> = (0..9).map(|i| [i, i + 1]).collect();
        let t = QueryTiles::new(&distinct, MAX_TILE);
        assert_eq!((t.len(), t.longest), (9, 1));
        let empty = QueryTiles::new(&[], MAX_TILE);
        assert_eq!((empty.len(), empty.longest), (0, 0));
        assert!(empty.is_empty());
    }

    #[test]
    fn caps_fit_the_default_shared_memory_and_pick_the_narrowest_width() {
        for dim in [8, 384, 512, 768, 1024] {
            for k in [1, 10, 128] {
                let s = scan_tile(dim, k);
                assert!(
                    s.cap >= 1 && s.bytes(s.cap) <= TILE_SMEM_BYTES,
                    "dim {dim} k {k}"
                );
            }
            let d = dense_tile(dim);
            assert!(d.bytes(d.cap) <= TILE_SMEM_BYTES);
        }
        assert_eq!(scan_tile(384, 10).cap, MAX_TILE); // the scan benchmark's case
        assert_eq!(TileWidth::for_longest(1), TileWidth::One);
        assert_eq!(TileWidth::for_longest(4), TileWidth::Four);
        assert_eq!(TileWidth::for_longest(5), TileWidth::Sixteen);
        assert_eq!(TileWidth::for_longest(MAX_TILE), TileWidth::Sixteen);
    }

    #[test]
    fn the_tensor_scan_takes_dims_of_16_and_fits_its_tiles() {
        // the scan benchmark's case: tiles of 16 at dim 384, k 10
        assert_eq!(tensor_tile(384, 10).map(|t| t.cap), Some(MAX_TILE));
        for dim in [16, 384, 512, 768, 1024] {
            for k in [1, 10, 64, 112] {
                if let Some(t) = tensor_tile(dim, k) {
                    assert!(t.cap >= 1 && t.bytes(t.cap) <= TILE_SMEM_BYTES, "{dim} {k}");
                }
            }
        }
        assert!(tensor_tile(1024, 10).is_some_and(|t| t.cap >= 4));
        for (dim, k) in [(40, 10), (8, 10), (1040, 10), (384, 113), (384, 0), (0, 10)] {
            assert_eq!(tensor_tile(dim, k), None, "dim {dim} k {k}");
        }
        assert_eq!(
            Tiled::Tensor.name(384, TileWidth::One),
            "memdex_tensor_topk"
        );
    }
}
