use super::*;

fn params() -> TreeParams {
    TreeParams {
        theta0: 0.5,
        lambda: 0.1,
        content_chars: 200,
    }
}

/// Unit vector at `deg` degrees in the plane.
fn at(deg: f32) -> Vec<f32> {
    let r = deg.to_radians();
    vec![r.cos(), r.sin()]
}

/// Embeds aggregate content as the mean direction of the leaves under it: what a sentence
/// model roughly does with a summary (test double).
fn embed_all(tree: &mut MemTree, ids: &[u64]) {
    for &id in ids {
        let (order, ranges) = tree.leaf_ranges();
        let (a, b) = ranges[&id];
        let mut v = vec![0.0f32; 2];
        for item in &order[a..b] {
            let leaf = tree.node(tree.leaf_of(*item).unwrap()).unwrap();
            v[0] += leaf.embedding[0];
            v[1] += leaf.embedding[1];
        }
        tree.set_embedding(id, v);
    }
}

fn build(angles: &[f32]) -> MemTree {
    let a = Analyzer::english();
    let mut t = MemTree::new("t");
    for (i, &deg) in angles.iter().enumerate() {
        let ch = t.insert(
            i as u64,
            &format!("item {i} about {deg}"),
            &at(deg),
            &params(),
            &a,
        );
        embed_all(&mut t, &ch.reembed);
    }
    t
}

#[test]
fn threshold_grows_with_depth() {
    let p = params();
    assert!((p.theta(0) - 0.5).abs() < 1e-6);
    assert!((p.theta(3) - 0.5 * (0.3f32).exp()).abs() < 1e-6);
    assert!(p.theta(4) > p.theta(3));
}

#[test]
fn insertion_descends_expands_leaves_and_opens_new_branches() {
    // cos(0°, 10°) = 0.98 ≥ θ(0): item 1 joins item 0 under a new aggregate node;
    // cos(0°, 90°) = 0 < θ(0): item 2 opens a new branch of the root
    let t = build(&[0.0, 10.0, 90.0]);
    let root = t.root();
    assert_eq!(root.children.len(), 2);
    let mid = t.node(root.children[0]).unwrap();
    assert!(mid.item.is_none() && mid.depth == 1);
    assert_eq!(mid.children.len(), 2);
    for &c in &mid.children {
        let leaf = t.node(c).unwrap();
        assert_eq!((leaf.depth, leaf.parent), (2, mid.id));
    }
    assert!(mid.content.contains("item"), "{}", mid.content);
    let lone = t.node(root.children[1]).unwrap();
    assert_eq!((lone.item, lone.depth), (Some(2), 1));
    // a fourth item close to 0°/10° descends into the aggregate node and expands a leaf
    // there only if it passes θ(1) against a leaf: cos(5°, 0°) = 0.996
    let t = build(&[0.0, 10.0, 90.0, 5.0]);
    let s = t.stats();
    assert_eq!((s.leaves, s.max_depth), (4, 3));
    assert_eq!(s.nodes, 1 + 4 + 2, "root, 4 leaves, 2 aggregate nodes");
    assert_eq!(s.branching_nodes, 3);
    assert!((s.branching_factor - 6.0 / 3.0).abs() < 1e-9);
}

#[test]
fn replaying_the_rows_gives_the_same_tree() {
    let t = build(&[0.0, 10.0, 90.0, 5.0, 95.0, 180.0, 12.0]);
    let rows: Vec<TreeRow> = t.nodes().map(|n| t.row(n.id)).collect();
    let r = MemTree::replay("t", &rows);
    let a: Vec<&Node> = t.nodes().collect();
    let b: Vec<&Node> = r.nodes().collect();
    assert_eq!(a, b);
    assert_eq!(t.leaf_ranges(), r.leaf_ranges());
    assert_eq!(r.leaf_of(6), t.leaf_of(6));
}

#[test]
fn removal_drops_empty_aggregates_and_reaggregates_the_rest() {
    let a = Analyzer::english();
    let mut t = build(&[0.0, 10.0, 90.0]);
    let mid = t.root().children[0];
    let leaf0 = t.leaf_of(0).unwrap();
    let ch = t.remove(0, &params(), &a);
    assert_eq!(ch.removed, BTreeSet::from([leaf0]));
    assert_eq!(ch.reembed, vec![mid], "the aggregate node lost a child");
    assert!(!t.node(mid).unwrap().content.contains("item 0"));
    let ch = t.remove(1, &params(), &a);
    assert!(
        ch.removed.contains(&mid),
        "an aggregate without children goes"
    );
    assert!(ch.reembed.is_empty());
    assert_eq!(t.stats().leaves, 1);
    assert_eq!(t.remove(42, &params(), &a), Changes::default());
    let (order, _) = t.leaf_ranges();
    assert_eq!(order, [2]);
}
