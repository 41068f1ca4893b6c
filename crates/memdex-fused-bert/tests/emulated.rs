//! The fused encoder's CUDA sources (`kernels/cuda/encoder/bert.cu`) run on the CPU under
//! kernels/emu's SIMT emulator: each kernel against its Rust reference (edge cases: lengths
//! short of the bucket and zero, head widths past a warp, sequences past a warp of keys), then
//! whole plans — both attention paths, a padded bucket — against the plan on the CPU
//! reference. The products are done by the harness as cuBLAS defines them. What this does not
//! check: cuBLAS itself, timing, races, graph capture (memdex-embed's
//! `fused_cuda_matches_candle` on a device does).

mod common;
mod emu;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use common::{cosine, max_abs, Rng};
use emu::{Data, EmuRun, Ty};
use memdex_core::Pooling;
use memdex_fused_bert::reference::{self as r, EmbedWeights, Heads};
use memdex_fused_bert::{pack_batch, Act, Bucket, Buf, CpuBert, Kernel, Op, Plan, Scratch, Shape};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
}

fn exe() -> Option<&'static Path> {
    static EXE: OnceLock<Option<PathBuf>> = OnceLock::new();
    EXE.get_or_init(|| emu::compile("bert_launch", &dir()))
        .as_deref()
}

/// f16 outputs agree within a few of their rounding steps.
fn close(what: &str, got: &[f32], want: &[f32], tol: f32) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        assert!(
            (a - b).abs() <= tol * b.abs().max(1.0),
            "{what}[{i}]: emulated {a}, reference {b}"
        );
    }
}

fn s(x: Scratch) -> Buf {
    Buf::Scratch(x)
}

const W0: Buf = Buf::Weight(0);
const W1: Buf = Buf::Weight(1);
const W2: Buf = Buf::Weight(2);

#[test]
fn embed_and_norms_match_reference() {
    let Some(exe) = exe() else { return };
    let mut rng = Rng(1);
    let (h, len, rows, vocab) = (72usize, 12usize, 36usize, 50usize);
    let ids: Vec<u32> = (0..rows).map(|_| rng.below(vocab) as u32).collect();
    let (word, pos, ty) = (
        rng.halves(vocab * h, 1.0),
        rng.halves(len * h, 0.5),
        rng.halves(h, 0.3),
    );
    let gamma: Vec<f32> = rng.halves(h, 0.2).iter().map(|g| 1.0 + g).collect();
    let beta = rng.halves(h, 0.1);
    let eps = 1e-12;
    let k = Kernel::Embed {
        rows: rows as u32,
        len: len as u32,
        h: h as u32,
        eps,
    };
    let mut run = EmuRun::default();
    run.set(Buf::Ids, Data::U32(&ids));
    let t = |x: memdex_fused_bert::Tensor| Buf::Weight(x.index());
    use memdex_fused_bert::Tensor as T;
    run.set(t(T::Word), Data::F16(&word));
    run.set(t(T::Position), Data::F16(&pos));
    run.set(t(T::Type0), Data::F16(&ty));
    run.set(t(T::EmbedGamma), Data::F16(&gamma));
    run.set(t(T::EmbedBeta), Data::F16(&beta));
    run.set(s(Scratch::X), Data::Garbage(Ty::F16, rows * h));
    run.op(&Op::Launch(k));
    let got = run.run(exe, &dir());
    let mut want = vec![0f32; rows * h];
    let w = EmbedWeights {
        word: &word,
        pos: &pos,
        type0: &ty,
        gamma: &gamma,
        beta: &beta,
    };
    r::embed(&ids, len, &w, h, eps, &mut want);
    close("embed", &got[&s(Scratch::X)], &want, 4e-3);

    // x ← LN(y + bias + x)
    let (y, x, bias) = (
        rng.halves(rows * h, 2.0),
        rng.halves(rows * h, 2.0),
        rng.halves(h, 0.5),
    );
    let k = Kernel::ResidualNorm {
        rows: rows as u32,
        h: h as u32,
        eps: 1e-5,
        bias: W0,
        gamma: W1,
        beta: W2,
    };
    let mut run = EmuRun::default();
    run.set(s(Scratch::Y), Data::F16(&y));
    run.set(s(Scratch::X), Data::F16(&x));
    run.set(W0, Data::F16(&bias));
    run.set(W1, Data::F16(&gamma));
    run.set(W2, Data::F16(&beta));
    run.op(&Op::Launch(k));
    let got = run.run(exe, &dir());
    let mut want = x.clone();
    r::residual_norm(&y, &bias, &mut want, &gamma, &beta, 1e-5);
    close("residual_norm", &got[&s(Scratch::X)], &want, 4e-3);
}

#[test]
fn bias_and_activations_match_reference() {
    let Some(exe) = exe() else { return };
    let mut rng = Rng(2);
    let (rows, cols) = (7usize, 45usize); // n not a multiple of the block
    for act in [Act::Gelu, Act::GeluTanh, Act::Relu] {
        let (u, bias) = (rng.halves(rows * cols, 4.0), rng.halves(cols, 1.0));
        let n = (rows * cols) as u32;
        let k = Kernel::BiasAct {
            cols: cols as u32,
            n,
            act: act as u32,
            bias: W0,
        };
        let mut run = EmuRun::default();
        run.set(s(Scratch::U), Data::F16(&u));
        run.set(W0, Data::F16(&bias));
        run.op(&Op::Launch(k));
        let got = run.run(exe, &dir());
        let mut want = u.clone();
        r::bias_act(&mut want, &bias, act as u32);
        close(&format!("{act:?}"), &got[&s(Scratch::U)], &want, 2e-3);
    }
}

/// QKV, bias and lengths for `batch` sequences of `len` with `heads` of `dh`; lengths include
/// the full bucket, one short of a warp, and 0 (which the kernels take as 1).
fn attention_inputs(
    rng: &mut Rng,
    batch: usize,
    len: usize,
    h: usize,
) -> (Vec<f32>, Vec<f32>, Vec<u32>) {
    let qkv = rng.halves(batch * len * 3 * h, 1.5);
    let bias = rng.halves(3 * h, 0.3);
    let lengths = (0..batch)
        .map(|b| match b % 4 {
            0 => len as u32,
            1 => (len as u32).min(31),
            2 => 0,
            _ => 1 + rng.below(len) as u32,
        })
        .collect();
    (qkv, bias, lengths)
}

#[test]
fn attention_in_one_kernel_matches_reference() {
    let Some(exe) = exe() else { return };
    let mut rng = Rng(3);
    // MiniLM's heads (dh 32, keys past a warp), wide heads (dh 64: two values per lane), a
    // length not a multiple of anything
    for (batch, len, heads, dh) in [
        (4usize, 40usize, 3usize, 32usize),
        (5, 17, 2, 64),
        (4, 9, 4, 8),
    ] {
        let h = heads * dh;
        let (qkv, bias, lengths) = attention_inputs(&mut rng, batch, len, h);
        let a = Heads {
            len,
            heads,
            dh,
            scale: 1.0 / (dh as f32).sqrt(),
        };
        let k = Kernel::Attention {
            batch: batch as u32,
            len: len as u32,
            heads: heads as u32,
            dh: dh as u32,
            scale: a.scale,
            bias: W0,
        };
        let mut run = EmuRun::default();
        run.set(s(Scratch::Qkv), Data::F16(&qkv));
        run.set(W0, Data::F16(&bias));
        run.set(Buf::Lengths, Data::U32(&lengths));
        run.set(s(Scratch::Ctx), Data::Garbage(Ty::F16, batch * len * h));
        run.op(&Op::Launch(k));
        let got = run.run(exe, &dir());
        let mut want = vec![0f32; batch * len * h];
        r::attention(&qkv, &bias, &lengths, a, &mut want);
        close(
            &format!("attention {len}x{heads}x{dh}"),
            &got[&s(Scratch::Ctx)],
            &want,
            3e-3,
        );
    }
}

#[test]
fn split_attention_kernels_match_reference() {
    let Some(exe) = exe() else { return };
    let mut rng = Rng(4);
    let (batch, len, heads, dh) = (4usize, 37usize, 3usize, 16usize);
    let h = heads * dh;
    let (qkv, bias, lengths) = attention_inputs(&mut rng, batch, len, h);
    let a = Heads {
        len,
        heads,
        dh,
        scale: 0.25,
    };
    let n = batch * len * h;
    let (len32, heads32, dh32) = (len as u32, heads as u32, dh as u32);
    let mut run = EmuRun::default();
    run.set(s(Scratch::Qkv), Data::F16(&qkv));
    run.set(W0, Data::F16(&bias));
    for x in [Scratch::Q, Scratch::K, Scratch::V] {
        run.set(s(x), Data::Garbage(Ty::F16, n));
    }
    run.op(&Op::Launch(Kernel::SplitHeads {
        len: len32,
        heads: heads32,
        dh: dh32,
        scale: 0.25,
        n: 3 * n as u32,
        bias: W0,
    }));
    let got = run.run(exe, &dir());
    let (mut q, mut k, mut v) = (vec![0f32; n], vec![0f32; n], vec![0f32; n]);
    r::split_heads(&qkv, &bias, a, &mut q, &mut k, &mut v);
    close("split q", &got[&s(Scratch::Q)], &q, 2e-3);
    close("split k", &got[&s(Scratch::K)], &k, 2e-3);
    close("split v", &got[&s(Scratch::V)], &v, 2e-3);

    let rows = batch * heads * len;
    let scores: Vec<f32> = (0..rows * len).map(|_| rng.unit() * 6.0).collect();
    let mut run = EmuRun::default();
    run.set(s(Scratch::Scores), Data::F32(&scores));
    run.set(Buf::Lengths, Data::U32(&lengths));
    run.set(s(Scratch::Probs), Data::Garbage(Ty::F16, rows * len));
    run.op(&Op::Launch(Kernel::Softmax {
        len: len32,
        heads: heads32,
        rows: rows as u32,
    }));
    let got = run.run(exe, &dir());
    let mut p = vec![0f32; rows * len];
    r::softmax(&scores, &lengths, len, heads, &mut p);
    close("softmax", &got[&s(Scratch::Probs)], &p, 2e-3);

    let per_head = rng.halves(n, 1.0);
    let mut run = EmuRun::default();
    run.set(s(Scratch::PerHead), Data::F16(&per_head));
    run.set(s(Scratch::Ctx), Data::Garbage(Ty::F16, n));
    run.op(&Op::Launch(Kernel::MergeHeads {
        len: len32,
        heads: heads32,
        dh: dh32,
        n: n as u32,
    }));
    let got = run.run(exe, &dir());
    let mut ctx = vec![0f32; n];
    r::merge_heads(&per_head, a, &mut ctx);
    assert_eq!(got[&s(Scratch::Ctx)], ctx, "merge_heads moves values");
}

#[test]
fn pooling_matches_reference() {
    let Some(exe) = exe() else { return };
    let mut rng = Rng(5);
    let (batch, len, h) = (5usize, 11usize, 200usize);
    let x = rng.halves(batch * len * h, 2.0);
    let lengths = vec![11u32, 3, 0, 1, 7];
    for mode in 0..4u32 {
        for normalize in [0u32, 1] {
            let mut run = EmuRun::default();
            run.set(s(Scratch::X), Data::F16(&x));
            run.set(Buf::Lengths, Data::U32(&lengths));
            run.set(Buf::Out, Data::Garbage(Ty::F32, batch * h));
            let k = Kernel::Pool {
                batch: batch as u32,
                len: len as u32,
                h: h as u32,
                mode,
                normalize,
            };
            run.op(&Op::Launch(k));
            let got = run.run(exe, &dir());
            let mut want = vec![0f32; batch * h];
            r::pool(&x, &lengths, len, h, mode, normalize == 1, &mut want);
            close(
                &format!("pool {mode} {normalize}"),
                &got[&Buf::Out],
                &want,
                1e-5,
            );
        }
    }
}

/// A whole plan on the emulated device: its pooled vectors.
fn emulated_plan(
    exe: &Path,
    shape: &Shape,
    w: &memdex_fused_bert::Weights,
    plan: &Plan,
    ids: &[u32],
    lengths: &[u32],
) -> Vec<f32> {
    let mut run = EmuRun::default();
    for (i, t) in w.tensors.iter().enumerate() {
        let v: Vec<f32> = t.iter().map(|x| x.to_f32()).collect();
        run.set(Buf::Weight(i), Data::F16(&v));
    }
    for (x, n) in memdex_fused_bert::plan::SCRATCH
        .iter()
        .zip(plan.scratch_elems(shape))
    {
        if n > 0 {
            let ty = if x.is_f32() { Ty::F32 } else { Ty::F16 };
            run.set(Buf::Scratch(*x), Data::Garbage(ty, n));
        }
    }
    run.set(Buf::Ids, Data::U32(ids));
    run.set(Buf::Lengths, Data::U32(lengths));
    run.set(
        Buf::Out,
        Data::Garbage(Ty::F32, plan.bucket.batch * shape.hidden),
    );
    for op in &plan.ops {
        run.op(op);
    }
    run.run(exe, &dir())
        .remove(&Buf::Out)
        .expect("pooled vectors")
}

#[test]
fn whole_plans_match_the_cpu_reference() {
    let Some(exe) = exe() else { return };
    let mut rng = Rng(6);
    // MiniLM's head width (32) on a narrow model; one-kernel and split attention; a padded bucket
    for (hidden, heads, pooling, split) in [
        (64usize, 2usize, Pooling::Mean, false),
        (64, 2, Pooling::Mean, true),
        (48, 4, Pooling::Cls, false),
    ] {
        let shape = common::shape(hidden, heads, 2, Act::Gelu, pooling);
        let w = common::weights(&shape, &mut rng);
        let cpu = CpuBert::new(shape, &w).unwrap();
        let seqs = common::sequences(3, 21, shape.vocab, &mut rng);
        let refs: Vec<&[u32]> = seqs.iter().map(Vec::as_slice).collect();
        let longest = seqs.iter().map(Vec::len).max().unwrap();
        let bucket = Bucket::round_up(refs.len(), longest, shape.max_positions);
        let (ids, lengths) = pack_batch(&shape, &refs, bucket, 0).unwrap();
        let plan = Plan::new(&shape, bucket, split);
        assert_eq!(plan.split_attention, split);
        let want = cpu.run(&plan, ids.clone(), lengths.clone());
        let got = emulated_plan(exe, &shape, &w, &plan, &ids, &lengths);
        for b in 0..refs.len() {
            let (g, w) = (
                &got[b * hidden..(b + 1) * hidden],
                &want[b * hidden..(b + 1) * hidden],
            );
            let c = cosine(g, w);
            assert!(
                c > 0.99999,
                "{hidden} {heads} split {split}: sequence {b}: cosine {c}"
            );
            assert!(
                max_abs(g, w) < 3e-3,
                "{hidden} split {split}: {}",
                max_abs(g, w)
            );
        }
    }
}
