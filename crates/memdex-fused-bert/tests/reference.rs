//! The plan on the CPU reference: its two attention paths agree, and a sequence's vector does
//! not depend on its batch mates or on the padding of its bucket.

mod common;

use common::{cosine, max_abs, Rng};
use memdex_core::Pooling;
use memdex_fused_bert::{pack_batch, Act, Bucket, CpuBert, Plan};

#[test]
fn split_attention_agrees_with_one_kernel_attention() {
    let mut rng = Rng(7);
    for (act, pooling) in [
        (Act::Gelu, Pooling::Mean),
        (Act::GeluTanh, Pooling::Cls),
        (Act::Relu, Pooling::Max),
        (Act::Gelu, Pooling::MeanSqrtLen),
    ] {
        let shape = common::shape(32, 4, 2, act, pooling);
        let bert = CpuBert::new(shape, &common::weights(&shape, &mut rng)).unwrap();
        let seqs = common::sequences(5, 20, shape.vocab, &mut rng);
        let refs: Vec<&[u32]> = seqs.iter().map(Vec::as_slice).collect();
        let one = bert.forward(&refs, 0, false).unwrap();
        let split = bert.forward(&refs, 0, true).unwrap();
        for (a, b) in one.chunks(32).zip(split.chunks(32)) {
            // split attention stores Q, K, V and the probabilities in f16 on the way
            assert!(
                cosine(a, b) > 0.9999,
                "{act:?} {pooling:?}: {}",
                cosine(a, b)
            );
            assert!(
                max_abs(a, b) < 5e-3,
                "{act:?} {pooling:?}: {}",
                max_abs(a, b)
            );
        }
    }
}

#[test]
fn a_vector_does_not_depend_on_its_batch_or_bucket() {
    let mut rng = Rng(11);
    let shape = common::shape(32, 4, 2, Act::Gelu, Pooling::Mean);
    let bert = CpuBert::new(shape, &common::weights(&shape, &mut rng)).unwrap();
    let seqs = common::sequences(9, 30, shape.vocab, &mut rng);
    let refs: Vec<&[u32]> = seqs.iter().map(Vec::as_slice).collect();
    let batch = bert.forward(&refs, 0, false).unwrap();
    let longest = seqs.iter().map(Vec::len).max().unwrap();
    let bucket = Bucket::round_up(seqs.len(), longest, shape.max_positions);
    assert!(bucket.batch > seqs.len() && bucket.len >= longest);
    let (ids, lengths) = pack_batch(&shape, &refs, bucket, 0).unwrap();
    let padded = bert.run(&Plan::new(&shape, bucket, false), ids, lengths);
    for (i, s) in refs.iter().enumerate() {
        let alone = bert.forward(&[s], 0, false).unwrap();
        let row = &batch[i * 32..(i + 1) * 32];
        assert_eq!(row, &alone[..], "sequence {i} alone");
        assert_eq!(
            row,
            &padded[i * 32..(i + 1) * 32],
            "sequence {i} in a padded bucket"
        );
        let norm: f32 = row.iter().map(|v| v * v).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5);
    }
}

#[test]
fn batches_that_do_not_fit_are_refused() {
    let mut rng = Rng(3);
    let shape = common::shape(32, 4, 1, Act::Gelu, Pooling::Mean);
    let bert = CpuBert::new(shape, &common::weights(&shape, &mut rng)).unwrap();
    let past_vocab = [1u32, 500, 2];
    assert!(bert.forward(&[&past_vocab], 0, false).is_err());
    let too_long = vec![5u32; shape.max_positions + 1];
    assert!(bert.forward(&[&too_long], 0, false).is_err());
    let mut short = shape;
    short.heads = 5;
    assert!(CpuBert::new(short, &common::weights(&shape, &mut rng)).is_err());
}
