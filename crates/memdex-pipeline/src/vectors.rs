//! What needs the items' vectors, as the store's manifest asks: FragRel's semantic
//! neighbours and TiM bucket ids.

use std::collections::HashMap;

use memdex_core::MemoryItem;
use memdex_kernels::HashKernels;
use memdex_store::{Derived, Store, StoreWriter};
use rayon::prelude::*;

/// Fills what needs the items' vectors, as the store's manifest asks: FragRel semantic
/// neighbours (`extraction.neighbors > 0`) and TiM bucket ids (`lsh`). Shared by
/// [`index_sessions`] and the server's writer thread.
/// `accel`: memdex's kernels on a device compute the bucket ids (`lsh_project`), else the
/// CPU does.
pub(crate) fn derive_from_vectors(
    store: &Store,
    writer: &StoreWriter,
    items: &[MemoryItem],
    data: &[f32],
    derived: &mut [Derived],
    accel: Option<&dyn HashKernels>,
) {
    let manifest = writer.manifest();
    let m = manifest.extraction.neighbors;
    if m > 0 {
        let next = writer.next_positions().clone();
        for (d, n) in derived
            .iter_mut()
            .zip(neighbors(store, next, items, data, m))
        {
            d.neighbors = n;
        }
    }
    if let Some(meta) = manifest.lsh {
        let lsh = crate::lsh::projections(&meta);
        let ids = match accel {
            Some(k) => device_bucket_ids(k, &lsh, data),
            None => crate::lsh::bucket_ids(&lsh, data),
        };
        let t = meta.tables as usize;
        for (d, ids) in derived.iter_mut().zip(ids.chunks_exact(t)) {
            d.lsh = ids.to_vec();
        }
    }
}

/// Bucket ids through the kernels' `lsh_project` (argmax over `[xR ; −xR]`, as
/// [`crate::lsh::bucket_ids`] up to summation order); the CPU's when the device fails.
fn device_bucket_ids(k: &dyn HashKernels, lsh: &memdex_score::lsh::Lsh, data: &[f32]) -> Vec<u16> {
    let p = lsh.params();
    match k.lsh_project(data, lsh.dim(), lsh.projection(), p.tables, p.buckets) {
        Ok(ids) => ids.into_iter().map(|b| b as u16).collect(),
        Err(e) => {
            tracing::warn!(
                "bucket ids on {} failed, computing them here: {e}",
                k.device()
            );
            crate::lsh::bucket_ids(lsh, data)
        }
    }
}

/// The `m` most similar items (tenant position, `max(0, cos)`) of each pending item among its
/// tenant's stored items and the other pending items of that tenant, whose positions follow
/// the stored ones in input order (as the writer assigns them).
pub(crate) fn neighbors(
    store: &Store,
    mut next: HashMap<String, u64>,
    pending: &[MemoryItem],
    data: &[f32],
    m: usize,
) -> Vec<Vec<(u64, f32)>> {
    let dim = store.dim();
    let mut by_tenant: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut position = vec![0u64; pending.len()];
    for (i, it) in pending.iter().enumerate() {
        let p = next.entry(it.tenant.clone()).or_insert(0);
        position[i] = *p;
        *p += 1;
        by_tenant.entry(it.tenant.as_str()).or_default().push(i);
    }
    let mut out = vec![Vec::new(); pending.len()];
    for (tenant, rows) in by_tenant {
        let slices = store.tenant_slices(tenant);
        let fresh: Vec<f32> = rows
            .iter()
            .flat_map(|&i| data[i * dim..(i + 1) * dim].iter().copied())
            .collect();
        // one block per run of stored vectors, with the slice and slice row it starts at
        let mut blocks: Vec<&[f32]> = Vec::new();
        let mut origin: Vec<(usize, usize)> = Vec::new();
        for (si, s) in slices.iter().enumerate() {
            let mut first = 0;
            for run in s.vector_runs() {
                blocks.push(run.data(dim));
                origin.push((si, first));
                first += run.rows;
            }
        }
        blocks.push(&fresh);
        let found: Vec<Vec<(u64, f32)>> = rows
            .par_iter()
            .map(|&i| {
                memdex_score::top_k(&data[i * dim..(i + 1) * dim], &blocks, dim, m + 1)
                    .into_iter()
                    .map(|h| {
                        let (b, r) = (h.block as usize, h.row as usize);
                        let pos = match origin.get(b) {
                            Some(&(si, first)) => slices[si].positions()[first + r],
                            None => position[rows[r]],
                        };
                        (pos, h.score.max(0.0))
                    })
                    .filter(|&(p, w)| p != position[i] && w > 0.0)
                    .take(m)
                    .collect()
            })
            .collect();
        for (&i, n) in rows.iter().zip(found) {
            out[i] = n;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::tests::item;

    #[test]
    fn neighbours_cover_stored_and_pending_items_but_not_the_item_itself() {
        use memdex_core::{Granularity, ModelInfo, Pooling};
        let tmp = tempfile::tempdir().expect("tempdir");
        let model = ModelInfo {
            name: "m".into(),
            fingerprint: "f".into(),
            dim: 2,
            pooling: Pooling::Mean,
            normalize: true,
            max_length: 8,
            query_prefix: String::new(),
            passage_prefix: String::new(),
        };
        let mut w = StoreWriter::open_or_create(tmp.path(), &model, Granularity::Turn, None)
            .expect("store");
        let mut other = item("x");
        other.tenant = "other".into();
        // stored: t@0 = (1, 0), other@0 = (0.6, 0.8) (another tenant: never a neighbour)
        w.append(&[item("a"), other], &[1.0, 0.0, 0.6, 0.8])
            .expect("append");
        let store = Store::open(tmp.path()).expect("open");
        // pending: t@1 = (0.8, 0.6), t@2 = (0, 1)
        let pending = [item("b"), item("c")];
        let data = [0.8, 0.6, 0.0, 1.0];
        let n = neighbors(&store, store.next_positions(), &pending, &data, 2);
        assert_eq!(n.len(), 2);
        let pos = |v: &[(u64, f32)]| v.iter().map(|e| e.0).collect::<Vec<_>>();
        assert_eq!(
            pos(&n[0]),
            [0, 2],
            "stored item first (cos 0.8), then pending (0.6)"
        );
        assert!((n[0][0].1 - 0.8).abs() < 1e-6 && (n[0][1].1 - 0.6).abs() < 1e-6);
        // (0, 1) vs (1, 0): cosine 0, weight 0 → dropped
        assert_eq!(pos(&n[1]), [1]);
    }
}
