//! The two-stage thought search against its exact reference, and supersession.

use std::collections::HashMap;
use std::sync::Arc;

use memdex_core::rng::SplitMix64;
use memdex_score::lsh::{Lsh, LshParams};
use memdex_store::{ThoughtOp, ThoughtRow};

use super::ThoughtIndex;
use crate::thoughts::memory::ThoughtMemory;

const DIM: usize = 24;

fn lsh() -> Arc<Lsh> {
    Arc::new(Lsh::new(
        DIM,
        LshParams {
            buckets: 8,
            tables: 3,
            seed: 7,
        },
    ))
}

fn row(lsh: &Lsh, op: ThoughtOp, thought: u64, other: Option<u64>, v: &[f32]) -> ThoughtRow {
    let insert = op == ThoughtOp::Insert;
    ThoughtRow {
        tenant: "t".into(),
        op,
        thought,
        other,
        item: Some(thought),
        subject: format!("s{}", thought % 7),
        relation: "likes".into(),
        object: format!("o{thought}"),
        sentence: format!("thought {thought}"),
        time_ms: thought as i64,
        sources: if insert { vec![thought] } else { Vec::new() },
        embedding: if insert { v.to_vec() } else { Vec::new() },
        buckets: if insert {
            (0..3).map(|t| lsh.bucket(v, t) as u16).collect()
        } else {
            Vec::new()
        },
        reason: String::new(),
    }
}

fn random(rng: &mut SplitMix64) -> Vec<f32> {
    (0..DIM).map(|_| rng.centered_f32()).collect()
}

/// `n` thoughts, one per item, items in timeline order.
fn index_of(rows: &[ThoughtRow], n: u64) -> ThoughtIndex {
    let memory = ThoughtMemory::replay("t", rows);
    let timeline: HashMap<u64, u32> = (0..n).map(|i| (i, i as u32)).collect();
    ThoughtIndex::build(&memory, &timeline, lsh())
}

fn close(a: &[(usize, f32)], b: &[(usize, f32)]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.0 == y.0 && (x.1 - y.1).abs() <= 1e-6)
}

#[test]
fn two_stage_search_matches_the_exact_scan_on_its_candidates() {
    let l = lsh();
    let mut rng = SplitMix64::new(3);
    let rows: Vec<ThoughtRow> = (0..200)
        .map(|i| row(&l, ThoughtOp::Insert, i, None, &random(&mut rng)))
        .collect();
    let ix = index_of(&rows, 200);
    assert_eq!(ix.len(), 200);
    for _ in 0..20 {
        let q = random(&mut rng);
        // probing every bucket is the exact scan
        assert!(close(&ix.search(&q, 10, 8), &ix.search_exact(&q, 10)));
        // one probe: the exact top-k of the thoughts sharing a query bucket
        let wanted: Vec<u32> = (0..3).map(|t| l.bucket(&q, t)).collect();
        let exact = ix.search_exact(&q, 200);
        let shares = |i: usize| (0..3).any(|t| u32::from(rows[i].buckets[t]) == wanted[t]);
        let expect: Vec<(usize, f32)> = exact
            .into_iter()
            .filter(|&(i, _)| shares(i))
            .take(10)
            .collect();
        assert!(!expect.is_empty());
        assert!(close(&ix.search(&q, 10, 1), &expect));
    }
}

#[test]
fn a_retrieved_thought_on_either_side_of_a_contradiction_puts_the_newer_items_first() {
    let l = lsh();
    let mut rng = SplitMix64::new(5);
    let (old, new) = (random(&mut rng), random(&mut rng));
    let rows = vec![
        row(&l, ThoughtOp::Insert, 0, None, &old),
        row(&l, ThoughtOp::Insert, 1, None, &new),
        row(&l, ThoughtOp::Forget, 0, Some(1), &[]),
    ];
    let ix = index_of(&rows, 2);
    assert_eq!(ix.successors, vec![Some(vec![1]), None]);
    assert_eq!(ix.predecessors, vec![vec![], vec![0]]);
    // the query matches the old thought best (only it retrieved): its replacement goes first
    let r = ix.retrieve(&old, 1, 8, 2);
    assert_eq!(r.superseded, vec![(vec![0], vec![1])]);
    assert_eq!(r.lift, vec![0.0, 0.0], "an outdated thought lifts nothing");
    // the query matches the new one: it is lifted and still named ahead of the old one
    let r = ix.retrieve(&new, 1, 8, 2);
    assert_eq!(r.superseded, vec![(vec![0], vec![1])]);
    assert!(r.lift[1] > 0.99 && r.lift[0] == 0.0, "{:?}", r.lift);
    // the new thought's source deleted: nothing to put first, the old one stays outdated
    let memory = ThoughtMemory::replay("t", &rows);
    let only_old: HashMap<u64, u32> = HashMap::from([(0, 0)]);
    let ix = ThoughtIndex::build(&memory, &only_old, lsh());
    assert!(
        ix.is_empty(),
        "an outdated thought with no live successor is not searchable"
    );
}
