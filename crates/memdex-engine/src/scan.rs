//! Cross-tenant dense scoring on the model's device: the searches of one model batch, whatever
//! their tenants, are scored together — one matrix product per store segment the batch
//! touches, then one gather of each query's own rows — and only those scores come back.
//!
//! It runs on the model thread (the one thread that owns the device). With the CUDA build
//! and `--device cuda` the segments' embeddings live in GPU memory (uploaded once per
//! immutable segment) and the products run on cuBLAS; on the CPU the same code runs through
//! candle's CPU backend (what the tests check), though the ranking's own dot products are
//! the faster choice there, so the server enables it by default only on CUDA.

use std::collections::HashMap;
use std::sync::Arc;

use candle_core::{DType, Device, Tensor};

use crate::engine::Snapshot;

/// One search's share of a batch: its tenant's live rows in timeline order, as runs of
/// (segment index in the snapshot's store, first row, rows).
#[derive(Debug, Clone)]
pub(crate) struct ScanRequest {
    pub snapshot: Arc<Snapshot>,
    pub runs: Vec<(usize, usize, usize)>,
}

impl ScanRequest {
    /// The runs of `tenant`'s live rows in `snapshot` (the view the search ranks).
    pub(crate) fn new(snapshot: Arc<Snapshot>, tenant: &str) -> ScanRequest {
        let segments = snapshot.store().segments();
        let runs = snapshot
            .live_slices(tenant)
            .iter()
            .map(|s| {
                let seg = segments
                    .iter()
                    .position(|g| std::ptr::eq(g, s.segment))
                    .expect("a live slice points into its own store");
                (seg, s.start, s.rows)
            })
            .collect();
        ScanRequest { snapshot, runs }
    }
}

/// Segment embeddings resident on the device, by segment id (segments never change).
#[derive(Debug)]
pub(crate) struct DeviceScan {
    device: Device,
    resident: HashMap<u64, Tensor>,
}

impl DeviceScan {
    pub(crate) fn new(device: Device) -> DeviceScan {
        DeviceScan {
            device,
            resident: HashMap::new(),
        }
    }

    /// Dense scores (query · row) of each request over its runs, in run order. `queries`
    /// holds one row of `dim` floats per request.
    pub(crate) fn score(
        &mut self,
        queries: &[f32],
        dim: usize,
        reqs: &[&ScanRequest],
    ) -> candle_core::Result<Vec<Vec<f32>>> {
        let b = reqs.len();
        let q = Tensor::from_slice(&queries[..b * dim], (b, dim), &self.device)?;
        // the newest view among the batch: segments it no longer has were compacted away
        if let Some(newest) = reqs
            .iter()
            .max_by_key(|r| r.snapshot.store().manifest().version)
        {
            let live: std::collections::HashSet<u64> = newest
                .snapshot
                .store()
                .segments()
                .iter()
                .map(|s| s.meta().id)
                .collect();
            self.resident.retain(|id, _| live.contains(id));
        }
        // per segment: which (request, run) pairs read it
        let mut by_segment: HashMap<u64, Vec<(usize, usize)>> = HashMap::new();
        for (qi, r) in reqs.iter().enumerate() {
            for (ri, &(seg, _, _)) in r.runs.iter().enumerate() {
                let id = r.snapshot.store().segments()[seg].meta().id;
                by_segment.entry(id).or_default().push((qi, ri));
            }
        }
        let mut pieces: Vec<Vec<Option<Vec<f32>>>> =
            reqs.iter().map(|r| vec![None; r.runs.len()]).collect();
        for (id, users) in by_segment {
            let (qi0, ri0) = users[0];
            let segment = &reqs[qi0].snapshot.store().segments()[reqs[qi0].runs[ri0].0];
            let rows = segment.rows();
            let m = match self.resident.get(&id) {
                Some(m) => m.clone(),
                None => {
                    let m = Tensor::from_slice(segment.embeddings(), (rows, dim), &self.device)?;
                    self.resident.insert(id, m.clone());
                    m
                }
            };
            // every query of the batch against the segment (a few extra rows of the product
            // cost less than a gather of the queries), then each run's own rows
            let scores = q.matmul(&m.t()?)?.flatten_all()?;
            let mut index: Vec<u32> = Vec::new();
            for &(qi, ri) in &users {
                let (_, start, n) = reqs[qi].runs[ri];
                let base = qi * rows + start;
                index.extend((base..base + n).map(|i| i as u32));
            }
            let len = index.len();
            let index = Tensor::from_vec(index, len, &self.device)?;
            let picked = scores
                .index_select(&index, 0)?
                .to_dtype(DType::F32)?
                .to_vec1::<f32>()?;
            let mut off = 0;
            for &(qi, ri) in &users {
                let n = reqs[qi].runs[ri].2;
                pieces[qi][ri] = Some(picked[off..off + n].to_vec());
                off += n;
            }
        }
        Ok(pieces
            .into_iter()
            .map(|runs| runs.into_iter().flatten().flatten().collect())
            .collect())
    }

    /// Segments resident on the device.
    #[cfg(test)]
    pub(crate) fn resident(&self) -> usize {
        self.resident.len()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use memdex_core::{Granularity, MemoryItem, ModelInfo, Pooling, Role};
    use memdex_store::{Store, StoreWriter};

    const DIM: usize = 8;

    fn model() -> ModelInfo {
        ModelInfo {
            name: "m".into(),
            fingerprint: "f".into(),
            dim: DIM,
            pooling: Pooling::Mean,
            normalize: true,
            max_length: 16,
            query_prefix: String::new(),
            passage_prefix: String::new(),
        }
    }

    fn rand(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
            })
            .collect()
    }

    fn items(tenants: &[&str], seg: usize) -> Vec<MemoryItem> {
        tenants
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let text = format!("seg {seg} item {i}");
                MemoryItem {
                    tenant: t.to_string(),
                    session_id: format!("s{seg}"),
                    turn: i as u32,
                    timestamp_ms: 0,
                    role: Role::User,
                    value: text.clone(),
                    key: text.clone(),
                    content_hash: MemoryItem::compute_hash(Role::User, &text, &text),
                }
            })
            .collect()
    }

    /// Three tenants spread over three segments, scored in one batch: each query gets exactly
    /// its own tenant's rows, in timeline order, equal to the CPU dot products.
    #[test]
    fn one_batch_of_many_tenants_matches_per_tenant_dot_products() {
        let tmp = tempfile::tempdir().unwrap();
        let mut w =
            StoreWriter::open_or_create(tmp.path(), &model(), Granularity::Turn, None).unwrap();
        let layouts: [&[&str]; 3] = [
            &["a", "b", "a", "c", "a"],
            &["b", "b", "c"],
            &["a", "c", "c", "b", "a", "a"],
        ];
        for (seg, tenants) in layouts.iter().enumerate() {
            let v = rand(tenants.len() * DIM, seg as u64 + 1);
            w.append(&items(tenants, seg), &v).unwrap();
        }
        drop(w);
        let snap = Arc::new(Snapshot::new(Store::open(tmp.path()).unwrap()));
        let mut reqs: Vec<ScanRequest> = ["a", "b", "c", "a"]
            .iter()
            .map(|t| ScanRequest::new(snap.clone(), t))
            .collect();
        // a request over part of a segment (as after a delete splits a tenant's rows)
        reqs.push(ScanRequest {
            snapshot: snap.clone(),
            runs: vec![(2, 4, 2), (0, 0, 1)],
        });
        let queries = rand(reqs.len() * DIM, 99);
        let mut scan = DeviceScan::new(Device::Cpu);
        let refs: Vec<&ScanRequest> = reqs.iter().collect();
        for round in 0..2 {
            let got = scan.score(&queries, DIM, &refs).unwrap();
            for (qi, r) in reqs.iter().enumerate() {
                let q = &queries[qi * DIM..(qi + 1) * DIM];
                let segs = r.snapshot.store().segments();
                let want: Vec<f32> = r
                    .runs
                    .iter()
                    .flat_map(|&(seg, start, n)| {
                        let e = segs[seg].embeddings();
                        (start..start + n)
                            .map(move |row| memdex_index::dot(q, &e[row * DIM..(row + 1) * DIM]))
                    })
                    .collect();
                assert_eq!(got[qi].len(), want.len(), "round {round} query {qi}");
                for (g, w) in got[qi].iter().zip(&want) {
                    assert!((g - w).abs() < 1e-5, "round {round} query {qi}: {g} vs {w}");
                }
            }
            // each segment uploaded once, then reused
            assert_eq!(scan.resident(), 3);
        }
        assert_eq!(
            reqs[0].runs.iter().map(|r| r.2).sum::<usize>(),
            3 + 3,
            "tenant a: 3 rows in segment 0, 3 in segment 2"
        );
    }
}
