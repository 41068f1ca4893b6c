//! The encoder's shape, its weights in the order the plan names them, and the batch shapes
//! (buckets) a plan is built for.

use half::f16;
use memdex_core::Pooling;

use crate::FusedError;

/// The feed-forward activation (Hugging Face `hidden_act`), as the kernels number it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    /// `0.5·x·(1 + erf(x/√2))`, BERT's `gelu`.
    Gelu = 0,
    /// The tanh approximation (`gelu_new`, `gelu_pytorch_tanh`).
    GeluTanh = 1,
    Relu = 2,
}

/// A BERT encoder's sizes, and what its head does with the last hidden states.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    pub vocab: usize,
    pub max_positions: usize,
    pub hidden: usize,
    pub heads: usize,
    pub layers: usize,
    pub intermediate: usize,
    pub eps: f32,
    pub act: Act,
    pub pooling: Pooling,
    /// L2-normalise each pooled vector.
    pub normalize: bool,
}

/// Largest hidden width the row kernels take (a row of f32 in 48 KiB of shared memory).
pub const MAX_HIDDEN: usize = 12_288;

impl Shape {
    /// Width of one attention head.
    pub fn head_dim(&self) -> usize {
        self.hidden / self.heads.max(1)
    }

    /// Refuses a shape the kernels do not run.
    pub fn check(&self) -> Result<(), FusedError> {
        let bad = |why: String| Err(FusedError::Shape(why));
        if self.heads == 0 || !self.hidden.is_multiple_of(self.heads) {
            return bad(format!(
                "hidden size {} is not a multiple of {} heads",
                self.hidden, self.heads
            ));
        }
        if self.hidden == 0 || self.hidden > MAX_HIDDEN {
            return bad(format!(
                "hidden size {} (the kernels take 1 to {MAX_HIDDEN})",
                self.hidden
            ));
        }
        if self.intermediate == 0 || self.layers == 0 || self.vocab == 0 {
            return bad("no layers, feed-forward width or vocabulary".into());
        }
        if self.max_positions == 0 || self.max_positions > u32::MAX as usize / 8 {
            return bad(format!("{} positions", self.max_positions));
        }
        Ok(())
    }

    /// The sizes of the weight tensors, in [`Weights::tensors`]' order.
    pub fn tensor_sizes(&self) -> Vec<usize> {
        let (h, i) = (self.hidden, self.intermediate);
        let mut v = vec![self.vocab * h, self.max_positions * h, h, h, h];
        for _ in 0..self.layers {
            v.extend([3 * h * h, 3 * h, h * h, h, h, h, i * h, i, h * i, h, h, h]);
        }
        v
    }
}

/// Weight tensors per layer.
pub const LAYER_TENSORS: usize = 12;
/// Tensors before the first layer's.
pub const EMBEDDING_TENSORS: usize = 5;

/// Which tensor of [`Weights::tensors`] (`layer` counted from 0 for the layers' own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tensor {
    Word,
    Position,
    /// Token type 0's row (memdex embeds one segment).
    Type0,
    EmbedGamma,
    EmbedBeta,
    /// `[Wq; Wk; Wv]`, `3H × H` (row-major, as `nn.Linear` stores a weight).
    Qkv(usize),
    QkvBias(usize),
    Out(usize),
    OutBias(usize),
    Norm1Gamma(usize),
    Norm1Beta(usize),
    Up(usize),
    UpBias(usize),
    Down(usize),
    DownBias(usize),
    Norm2Gamma(usize),
    Norm2Beta(usize),
}

impl Tensor {
    pub fn index(self) -> usize {
        let layer = |l: usize, k: usize| EMBEDDING_TENSORS + l * LAYER_TENSORS + k;
        match self {
            Tensor::Word => 0,
            Tensor::Position => 1,
            Tensor::Type0 => 2,
            Tensor::EmbedGamma => 3,
            Tensor::EmbedBeta => 4,
            Tensor::Qkv(l) => layer(l, 0),
            Tensor::QkvBias(l) => layer(l, 1),
            Tensor::Out(l) => layer(l, 2),
            Tensor::OutBias(l) => layer(l, 3),
            Tensor::Norm1Gamma(l) => layer(l, 4),
            Tensor::Norm1Beta(l) => layer(l, 5),
            Tensor::Up(l) => layer(l, 6),
            Tensor::UpBias(l) => layer(l, 7),
            Tensor::Down(l) => layer(l, 8),
            Tensor::DownBias(l) => layer(l, 9),
            Tensor::Norm2Gamma(l) => layer(l, 10),
            Tensor::Norm2Beta(l) => layer(l, 11),
        }
    }
}

/// The encoder's weights in f16, in the order of [`Tensor::index`] (each row-major).
#[derive(Debug, Clone)]
pub struct Weights {
    pub tensors: Vec<Vec<f16>>,
}

impl Weights {
    /// Checks every tensor's size against `shape`.
    pub fn new(shape: &Shape, tensors: Vec<Vec<f16>>) -> Result<Weights, FusedError> {
        shape.check()?;
        let sizes = shape.tensor_sizes();
        if tensors.len() != sizes.len() {
            return Err(FusedError::Shape(format!(
                "{} weight tensors for {} layers; expected {}",
                tensors.len(),
                shape.layers,
                sizes.len()
            )));
        }
        for (i, (t, &n)) in tensors.iter().zip(&sizes).enumerate() {
            if t.len() != n {
                return Err(FusedError::Shape(format!(
                    "weight tensor {i} has {} values; expected {n}",
                    t.len()
                )));
            }
        }
        Ok(Weights { tensors })
    }
}

/// A batch shape a plan is built for: `batch` sequences padded to `len` tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Bucket {
    pub batch: usize,
    pub len: usize,
}

impl Bucket {
    /// Token rows.
    pub fn rows(&self) -> usize {
        self.batch * self.len
    }

    /// The bucket a batch of `batch` sequences padded to `len` runs in on a device, so that a
    /// few shapes (each with its buffers and its captured graph) serve every batch: lengths
    /// up to a multiple of 8 (≤ 64), 16 (≤ 128), 32 (≤ 256), then 64, never past
    /// `max_positions`; sequences 1, 2, 4, 8, then multiples of 8 (≤ 64), 32 (≤ 256), then 128.
    /// The padding costs arithmetic only, which a small batch has to spare.
    pub fn round_up(batch: usize, len: usize, max_positions: usize) -> Bucket {
        let step = |n: usize, steps: &[(usize, usize)], last: usize| {
            let s = steps
                .iter()
                .find(|&&(limit, _)| n <= limit)
                .map_or(last, |&(_, s)| s);
            n.div_ceil(s) * s
        };
        let len = step(len.max(1), &[(64, 8), (128, 16), (256, 32)], 64).min(max_positions);
        let batch = match batch.max(1) {
            b @ (1 | 2) => b,
            3 | 4 => 4,
            5..=8 => 8,
            b => step(b, &[(64, 8), (256, 32)], 128),
        };
        Bucket { batch, len }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_the_batch_and_stay_few() {
        for b in 1..600 {
            for l in 1..=512 {
                let k = Bucket::round_up(b, l, 512);
                assert!(k.batch >= b && k.len >= l, "{b} {l} -> {k:?}");
                assert!(k.len <= 512);
            }
        }
        assert_eq!(Bucket::round_up(30, 14, 512), Bucket { batch: 32, len: 16 });
        assert_eq!(Bucket::round_up(3, 70, 512), Bucket { batch: 4, len: 80 });
        assert_eq!(
            Bucket::round_up(300, 500, 512),
            Bucket {
                batch: 384,
                len: 512
            }
        );
        // serving's batches (1 to 64 queries of up to 64 tokens) fall in few buckets
        let mut seen = std::collections::BTreeSet::new();
        for b in 1..=64 {
            for l in 1..=64 {
                seen.insert(Bucket::round_up(b, l, 512));
            }
        }
        // 1, 2, 4, 8, 16, …, 64 sequences × lengths 8, 16, …, 64
        assert_eq!(seen.len(), 11 * 8);
    }

    #[test]
    fn tensor_indices_follow_the_sizes() {
        let s = Shape {
            vocab: 10,
            max_positions: 8,
            hidden: 4,
            heads: 2,
            layers: 2,
            intermediate: 6,
            eps: 1e-12,
            act: Act::Gelu,
            pooling: Pooling::Mean,
            normalize: true,
        };
        let sizes = s.tensor_sizes();
        assert_eq!(sizes.len(), Tensor::Norm2Beta(1).index() + 1);
        assert_eq!(sizes[Tensor::Qkv(1).index()], 3 * 4 * 4);
        assert_eq!(sizes[Tensor::Up(0).index()], 6 * 4);
        assert_eq!(sizes[Tensor::DownBias(1).index()], 4);
        let bad = Shape { heads: 3, ..s };
        assert!(bad.check().is_err());
    }
}
