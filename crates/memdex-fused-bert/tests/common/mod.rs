//! A small random BERT for the plan's tests: weights of a realistic scale (so softmax and
//! LayerNorm see varied inputs), sequences of varied lengths.
#![allow(dead_code)]

use half::f16;
use memdex_core::Pooling;
use memdex_fused_bert::{Act, Shape, Tensor, Weights};

/// xorshift64*: reproducible without a dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in [-1, 1).
    pub fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// `n` values in [-scale, scale), rounded to f16 (as f32).
    pub fn halves(&mut self, n: usize, scale: f32) -> Vec<f32> {
        (0..n)
            .map(|_| f16::from_f32(self.unit() * scale).to_f32())
            .collect()
    }
}

pub fn shape(hidden: usize, heads: usize, layers: usize, act: Act, pooling: Pooling) -> Shape {
    Shape {
        vocab: 97,
        max_positions: 160,
        hidden,
        heads,
        layers,
        intermediate: 2 * hidden,
        eps: 1e-12,
        act,
        pooling,
        normalize: true,
    }
}

/// Random weights for `shape`: matrices ~ ±0.25, biases ±0.1, LayerNorm gains near 1.
pub fn weights(shape: &Shape, rng: &mut Rng) -> Weights {
    let sizes = shape.tensor_sizes();
    let gains: Vec<usize> = (0..shape.layers)
        .flat_map(|l| [Tensor::Norm1Gamma(l), Tensor::Norm2Gamma(l)])
        .chain([Tensor::EmbedGamma])
        .map(Tensor::index)
        .collect();
    let tensors = (sizes.iter().enumerate())
        .map(|(i, &n)| {
            let v: Vec<f32> = if gains.contains(&i) {
                (0..n).map(|_| 1.0 + 0.2 * rng.unit()).collect()
            } else if n <= 3 * shape.hidden.max(shape.intermediate) {
                rng.halves(n, 0.1)
            } else {
                rng.halves(n, 0.25)
            };
            v.into_iter().map(f16::from_f32).collect()
        })
        .collect();
    Weights::new(shape, tensors).expect("sizes")
}

/// `n` sequences of 1 to `max_len` ids, the first token 1 and the last 2 (as [CLS] … [SEP]).
pub fn sequences(n: usize, max_len: usize, vocab: usize, rng: &mut Rng) -> Vec<Vec<u32>> {
    (0..n)
        .map(|_| {
            let len = 1 + rng.below(max_len);
            let mut s: Vec<u32> = (0..len).map(|_| 3 + rng.below(vocab - 3) as u32).collect();
            s[0] = 1;
            if len > 1 {
                s[len - 1] = 2;
            }
            s
        })
        .collect()
}

pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb).max(1e-30)
}

pub fn max_abs(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}
