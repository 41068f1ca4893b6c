//! Dense scoring on the model's device through candle: the searches of one model batch,
//! whatever their tenants, are scored together — one matrix product per store segment the
//! batch touches, then one gather of each query's own rows — and only those scores come back.
//! Segments stay resident on the device by segment id, in f16 on an accelerator (ids are never
//! reused; committed segments never change) until `retain` drops the ones compaction retired.
//!
//! It runs on the thread that owns the encoder. With the CUDA build the products run on
//! cuBLAS; on the CPU the same code runs through candle's CPU backend (what the tests check),
//! though [`memdex_score::CpuScorer`] is the faster choice there.

use std::collections::HashMap;
use std::sync::Mutex;

use candle_core::{DType, Device, Tensor};
use memdex_score::{check_request, Block, DenseScorer, Run, ScoreError};

use crate::device_name;

/// Segment embeddings resident on a candle device, scored by matrix products.
#[derive(Debug)]
pub struct CandleScorer {
    device: Device,
    /// What resident segments and the products are held in (scores come back as f32).
    dtype: DType,
    name: &'static str,
    resident: Mutex<HashMap<u64, Tensor>>,
}

impl CandleScorer {
    /// f16 on an accelerator (half the memory and bandwidth of the resident segments, tensor
    /// cores for the products; scores within ~1e-3 of f32), f32 on the CPU.
    pub fn new(device: Device) -> CandleScorer {
        let dtype = if device.is_cpu() {
            DType::F32
        } else {
            DType::F16
        };
        Self::with_dtype(device, dtype)
    }

    /// [`Self::new`] holding the segments in `dtype` (F32, F16 or BF16).
    pub fn with_dtype(device: Device, dtype: DType) -> CandleScorer {
        let name = match (device.is_cpu(), dtype) {
            (true, DType::F32) => "candle-cpu",
            (true, _) => "candle-cpu-half",
            (false, DType::F32) => "candle-device-f32",
            (false, _) => "candle-device",
        };
        CandleScorer {
            device,
            dtype,
            name,
            resident: Mutex::new(HashMap::new()),
        }
    }

    /// Segments resident on the device.
    pub fn resident(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Tensor>> {
        self.resident.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn err(&self, e: candle_core::Error) -> ScoreError {
        ScoreError::Device {
            scorer: self.name,
            message: format!("{} ({})", e, device_name(&self.device)),
        }
    }

    /// The block's rows on the device, uploaded on first use.
    fn matrix(&self, block: &Block<'_>, dim: usize) -> candle_core::Result<Tensor> {
        if let Some(m) = self.lock().get(&block.id) {
            return Ok(m.clone());
        }
        let rows = block.data.len() / dim;
        let m = Tensor::from_slice(block.data, (rows, dim), &self.device)?.to_dtype(self.dtype)?;
        self.lock().insert(block.id, m.clone());
        Ok(m)
    }

    fn score_on_device(
        &self,
        dim: usize,
        queries: &[f32],
        blocks: &[Block<'_>],
        runs: &[Vec<Run>],
    ) -> candle_core::Result<Vec<Vec<f32>>> {
        let q =
            Tensor::from_slice(queries, (runs.len(), dim), &self.device)?.to_dtype(self.dtype)?;
        // per block: which (query, run) pairs read it
        let mut users: Vec<Vec<(usize, usize)>> = vec![Vec::new(); blocks.len()];
        for (qi, rs) in runs.iter().enumerate() {
            for (ri, r) in rs.iter().enumerate() {
                users[r.block].push((qi, ri));
            }
        }
        let mut pieces: Vec<Vec<Vec<f32>>> =
            runs.iter().map(|r| vec![Vec::new(); r.len()]).collect();
        for (bi, users) in users.iter().enumerate().filter(|(_, u)| !u.is_empty()) {
            let block = &blocks[bi];
            let rows = block.data.len() / dim;
            // every query of the batch against the block (a few extra rows of the product
            // cost less than a gather of the queries), then each run's own rows
            let scores = q.matmul(&self.matrix(block, dim)?.t()?)?.flatten_all()?;
            let index: Vec<u32> = users
                .iter()
                .flat_map(|&(qi, ri)| {
                    let r = runs[qi][ri];
                    let base = qi * rows + r.start;
                    (base..base + r.rows).map(|i| i as u32)
                })
                .collect();
            let len = index.len();
            let index = Tensor::from_vec(index, len, &self.device)?;
            let picked = scores
                .index_select(&index, 0)?
                .to_dtype(DType::F32)?
                .to_vec1::<f32>()?;
            let mut off = 0;
            for &(qi, ri) in users {
                let n = runs[qi][ri].rows;
                pieces[qi][ri] = picked[off..off + n].to_vec();
                off += n;
            }
        }
        Ok(pieces.into_iter().map(|p| p.concat()).collect())
    }
}

impl DenseScorer for CandleScorer {
    fn name(&self) -> &'static str {
        self.name
    }

    fn batched(&self) -> bool {
        true
    }

    fn score(
        &self,
        dim: usize,
        queries: &[f32],
        blocks: &[Block<'_>],
        runs: &[Vec<Run>],
    ) -> Result<Vec<Vec<f32>>, ScoreError> {
        check_request(dim, queries, blocks, runs)?;
        if runs.is_empty() {
            return Ok(Vec::new());
        }
        self.score_on_device(dim, queries, blocks, runs)
            .map_err(|e| self.err(e))
    }

    fn retain(&self, live: &[u64]) {
        self.lock().retain(|id, _| live.contains(id));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use memdex_score::CpuScorer;

    use super::*;

    /// Three blocks, five queries with runs over parts of them (as a delete splits a tenant's
    /// rows): the device products equal the CPU dot products, and each block is uploaded once.
    #[test]
    fn batched_products_match_the_cpu_scorer() {
        let dim = 8;
        let data: Vec<Vec<f32>> = (0..3)
            .map(|b| {
                (0..dim * (5 + b))
                    .map(|i| ((i * 7 + b) as f32 * 0.13).sin())
                    .collect()
            })
            .collect();
        let blocks: Vec<Block<'_>> = data
            .iter()
            .enumerate()
            .map(|(i, d)| Block {
                id: 10 + i as u64,
                data: d,
            })
            .collect();
        let run = |block, start, rows| Run { block, start, rows };
        let runs = vec![
            vec![run(0, 0, 5), run(2, 1, 3)],
            vec![run(1, 2, 4)],
            vec![run(2, 0, 7), run(0, 4, 1)],
            vec![],
            vec![run(1, 0, 1), run(1, 3, 2)],
        ];
        let queries: Vec<f32> = (0..dim * runs.len())
            .map(|i| (i as f32 * 0.31).cos())
            .collect();
        let want = CpuScorer.score(dim, &queries, &blocks, &runs).unwrap();
        let scorer = CandleScorer::new(Device::Cpu);
        for round in 0..2 {
            let got = scorer.score(dim, &queries, &blocks, &runs).unwrap();
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(g.len(), w.len(), "round {round}");
                for (a, b) in g.iter().zip(w) {
                    assert!((a - b).abs() < 1e-5, "round {round}: {a} vs {b}");
                }
            }
            assert_eq!(
                scorer.resident(),
                3,
                "each block uploaded once, then reused"
            );
        }
        scorer.retain(&[11]);
        assert_eq!(scorer.resident(), 1, "retired blocks are dropped");
    }

    /// The half-precision path a GPU takes (f16 segments and products, f32 scores), run by
    /// candle's CPU backend: within f16's rounding of the f32 dot products of unit vectors.
    #[test]
    fn half_precision_products_stay_within_f16_rounding() {
        let dim = 384;
        let unit = |seed: usize, n: usize| -> Vec<f32> {
            let mut v: Vec<f32> = (0..n * dim)
                .map(|i| ((i * 31 + seed * 17) as f32 * 0.0137).sin())
                .collect();
            for row in v.chunks_mut(dim) {
                let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt();
                row.iter_mut().for_each(|x| *x /= norm);
            }
            v
        };
        let data = unit(1, 200);
        let blocks = [Block { id: 1, data: &data }];
        let runs = vec![
            vec![Run {
                block: 0,
                start: 0,
                rows: 200,
            }];
            3
        ];
        let queries = unit(2, 3);
        let want = CpuScorer.score(dim, &queries, &blocks, &runs).unwrap();
        for dtype in [DType::F16, DType::BF16] {
            let scorer = CandleScorer::with_dtype(Device::Cpu, dtype);
            assert_eq!(scorer.name(), "candle-cpu-half");
            let got = scorer.score(dim, &queries, &blocks, &runs).unwrap();
            let tol = if dtype == DType::F16 { 2e-3 } else { 2e-2 };
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(g.len(), 200);
                for (a, b) in g.iter().zip(w) {
                    assert!((a - b).abs() < tol, "{dtype:?}: {a} vs {b}");
                }
            }
        }
    }
}
