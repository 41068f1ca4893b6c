//! TiM LSH over the store: bucket ids computed at index time (when the store's manifest records
//! hashing, see [`memdex_store::LshMeta`]) and the bucketed dense top-k that reads them back.
//!
//! A query is hashed with the same seeded projections, its `probes` best buckets per table are
//! looked up in each segment's `lsh_buckets` column, and only the rows sharing one of them are
//! scored exactly. Segments without the column (written before hashing was enabled) are scanned
//! exactly, so results never miss rows for lack of ids.

use memdex_kernels::HashKernels;
use memdex_score::lsh::{Lsh, LshParams};
use memdex_score::{dot, Hit, TopKHeap};
use memdex_store::{LshMeta, Store};
use rayon::prelude::*;

/// memdex's kernels on some device, shared between threads (TiM bucket ids at index time).
#[derive(Clone)]
pub struct KernelHandle(pub std::sync::Arc<dyn HashKernels + Send + Sync>);

impl std::fmt::Debug for KernelHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KernelHandle({})", self.0.device())
    }
}

/// The projections a store's hashing uses.
pub fn projections(meta: &LshMeta) -> Lsh {
    Lsh::new(
        meta.dim as usize,
        LshParams {
            buckets: meta.buckets as usize,
            tables: meta.tables as usize,
            seed: meta.seed,
        },
    )
}

/// Bucket ids of `rows` (row-major, `dim` columns) in every table: `rows × tables`.
pub fn bucket_ids(lsh: &Lsh, rows: &[f32]) -> Vec<u16> {
    let (dim, tables) = (lsh.dim(), lsh.params().tables);
    rows.par_chunks(dim)
        .flat_map_iter(|row| (0..tables).map(move |t| lsh.bucket(row, t) as u16))
        .collect()
}

/// What a bucketed search did.
#[derive(Debug, Clone, PartialEq)]
pub struct LshSearch {
    /// Best first; `block` indexes `Store::tenant_slices(tenant)`, `row` is within the slice.
    pub hits: Vec<Hit>,
    /// Rows scored (candidates plus every row of slices without bucket ids).
    pub scanned: usize,
    /// Rows of the tenant.
    pub rows: usize,
}

/// Dense top-k of `tenant` for `query` through the stored buckets (`probes` per table), or
/// `None` when the store does not hash.
pub fn lsh_top_k(
    store: &Store,
    lsh: &Lsh,
    tenant: &str,
    query: &[f32],
    k: usize,
    probes: usize,
) -> Option<LshSearch> {
    let meta = store.manifest().lsh?;
    let tables = meta.tables as usize;
    let words = (meta.buckets as usize).div_ceil(64);
    let mut wanted = vec![0u64; tables * words];
    for t in 0..tables {
        for b in lsh.probes(query, t, probes) {
            wanted[t * words + b as usize / 64] |= 1 << (b % 64);
        }
    }
    let mut top = TopKHeap::new(k);
    let (mut scanned, mut total) = (0, 0);
    for (block, slice) in store.tenant_slices(tenant).iter().enumerate() {
        total += slice.rows;
        let ids = slice.lsh_buckets().filter(|&(_, t)| t == tables);
        for r in 0..slice.rows {
            let hit = ids.is_none_or(|(ids, _)| {
                (0..tables).any(|t| {
                    let b = ids[r * tables + t] as usize;
                    wanted[t * words + b / 64] >> (b % 64) & 1 == 1
                })
            });
            if hit {
                scanned += 1;
                top.push(Hit {
                    score: dot(query, slice.embedding(r)),
                    block: block as u32,
                    row: r as u32,
                });
            }
        }
    }
    Some(LshSearch {
        hits: top.into_sorted(),
        scanned,
        rows: total,
    })
}
