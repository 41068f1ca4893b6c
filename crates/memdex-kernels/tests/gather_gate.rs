//! A device whose fast batch assembly is wrong must fail the kernel checks even though its
//! answers stay right. On CUDA that is `gather_parts.cu` against the per-part copies
//! (`gpu/resident.rs`, through `AssemblyGate`); here, without a GPU, a test double of the same
//! shape: the CPU reference whose `rank_*_parts` build each batch by a "gather" (right, or off
//! by one row at each part's start) and by the plain concatenation, compared on the first batch
//! by the same `AssemblyGate`, the concatenation answering.

use memdex_kernels::checks::{
    rank_parts_match_one_matrix, rank_text_matches_host_inputs, run, selection_is_exact_with_ties,
    Check,
};
use memdex_kernels::cpu::Cpu;
use memdex_kernels::{
    f16, Assembly, AssemblyGate, BucketMask, Concatenated, FragRelParams, HashKernels,
    KernelDevice, KernelError, Kernels, Matrix, RankKernels, RankParams, RankPart, RankQueries,
    RankRows, ScanKernels, Timeline, TopKResult,
};

/// The CPU reference with a gated batch assembly (see the module docs).
struct GatedCpu {
    gate: AssemblyGate,
    /// Whether the "gather" copies each part after the first from one row too early.
    wrong: bool,
}

impl GatedCpu {
    fn new(wrong: bool) -> GatedCpu {
        GatedCpu {
            gate: AssemblyGate::default(),
            wrong,
        }
    }

    /// The batch by the gather (each part at its start, or off by one row when `wrong`).
    fn gather(&self, dim: usize, parts: &[RankPart<'_>], like: &Concatenated) -> Concatenated {
        let mut g = Concatenated {
            dim,
            embeddings: like.embeddings.clone(),
            positions: like.positions.clone(),
            groups: like.groups.clone(),
            importance: like.importance.clone(),
        };
        if self.wrong {
            let mut start = 0;
            for p in parts {
                if start > 0 && p.rows() > 0 {
                    // the part's first row holds the row before it (the previous part's last)
                    let (src, dst) = ((start - 1) * dim, start * dim);
                    g.embeddings.copy_within(src..src + dim, dst);
                    g.positions[start] = g.positions[start - 1];
                }
                start += p.rows();
            }
        }
        g
    }

    /// The batch as the reference builds it; on the first batch with rows also by the
    /// gather, compared bit for bit through the gate.
    fn assemble(
        &self,
        dim: usize,
        parts: &[RankPart<'_>],
        queries: &RankQueries<'_>,
    ) -> Result<Concatenated, KernelError> {
        let copies = Concatenated::new(dim, parts, queries)?;
        if self.gate.next() == Assembly::Compare && !copies.positions.is_empty() {
            let g = self.gather(dim, parts, &copies);
            let bits = |v: &[f16]| v.iter().map(|x| x.to_bits()).collect::<Vec<u16>>();
            let same = bits(&g.embeddings) == bits(&copies.embeddings)
                && g.positions == copies.positions
                && g.groups == copies.groups
                && g.importance == copies.importance;
            self.gate.record(same, || {
                format!(
                    "the gather built other rows than the copies ({} parts)",
                    parts.len()
                )
            });
        }
        Ok(copies)
    }
}

impl KernelDevice for GatedCpu {
    fn device(&self) -> String {
        "gated-cpu".into()
    }

    fn faults(&self) -> Vec<String> {
        self.gate.faults()
    }
}

impl HashKernels for GatedCpu {
    fn lsh_project(
        &self,
        x: &[f32],
        dim: usize,
        proj: &[f32],
        tables: usize,
        buckets: usize,
    ) -> Result<Vec<u32>, KernelError> {
        Cpu.lsh_project(x, dim, proj, tables, buckets)
    }
}

impl ScanKernels for GatedCpu {
    fn segmented_topk(
        &self,
        m: &Matrix<'_>,
        queries: &[f32],
        ranges: &[[u32; 2]],
        mask: Option<&BucketMask<'_>>,
        k: usize,
    ) -> Result<TopKResult, KernelError> {
        Cpu.segmented_topk(m, queries, ranges, mask, k)
    }

    fn fragrel_topk(
        &self,
        m: &Matrix<'_>,
        timeline: &Timeline<'_>,
        queries: &[f32],
        ranges: &[[u32; 2]],
        mask: Option<&BucketMask<'_>>,
        k: usize,
        params: FragRelParams,
    ) -> Result<TopKResult, KernelError> {
        Cpu.fragrel_topk(m, timeline, queries, ranges, mask, k, params)
    }
}

impl RankKernels for GatedCpu {
    fn rank_topk(
        &self,
        m: &Matrix<'_>,
        rows: &RankRows<'_>,
        queries: &RankQueries<'_>,
        params: &RankParams,
        k: usize,
    ) -> Result<TopKResult, KernelError> {
        Cpu.rank_topk(m, rows, queries, params, k)
    }

    fn rank_scores(
        &self,
        m: &Matrix<'_>,
        rows: &RankRows<'_>,
        queries: &RankQueries<'_>,
        params: &RankParams,
    ) -> Result<Vec<f32>, KernelError> {
        Cpu.rank_scores(m, rows, queries, params)
    }

    fn rank_topk_parts(
        &self,
        dim: usize,
        parts: &[RankPart<'_>],
        queries: &RankQueries<'_>,
        params: &RankParams,
        k: usize,
    ) -> Result<TopKResult, KernelError> {
        let c = self.assemble(dim, parts, queries)?;
        Cpu.rank_topk(&c.matrix(), &c.rows(), queries, params, k)
    }

    fn rank_scores_parts(
        &self,
        dim: usize,
        parts: &[RankPart<'_>],
        queries: &RankQueries<'_>,
        params: &RankParams,
    ) -> Result<Vec<f32>, KernelError> {
        let c = self.assemble(dim, parts, queries)?;
        Cpu.rank_scores(&c.matrix(), &c.rows(), queries, params)
    }
}

#[test]
fn a_gather_that_agrees_is_kept_and_the_parts_check_passes() {
    let k = GatedCpu::new(false);
    let r = run(rank_parts_match_one_matrix, &k);
    assert!(r.ok, "{r:?}");
    assert_eq!(k.gate.kept(), Some(true));
    assert!(k.faults().is_empty());
}

#[test]
fn a_gather_that_disagrees_fails_the_parts_and_text_checks_though_the_answers_are_right() {
    let checks: [Check; 2] = [rank_parts_match_one_matrix, rank_text_matches_host_inputs];
    for check in checks {
        let k = GatedCpu::new(true);
        let r = run(check, &k);
        assert!(!r.ok, "a wrong gather passed: {r:?}");
        let error = r.error.unwrap_or_default();
        assert!(error.contains("gather built other rows"), "{error}");
        assert_eq!(k.gate.kept(), Some(false), "the copies answer from then on");
        // the check itself fails too (what `test_device!` runs on the box), not only `run`
        let k = GatedCpu::new(true);
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&k)));
        assert!(
            panicked.is_err(),
            "the check passed on a device with a fault"
        );
    }
}

/// A check of parts that asserts nothing about faults: `run` still fails it.
fn parts_answers_only(k: &dyn Kernels) {
    let dim = 8;
    let e: Vec<f16> = (0..5 * dim)
        .map(|i| f16::from_f32((i % 7) as f32))
        .collect();
    let (pos, grp, imp) = ([0u32, 1, 2, 0, 1], [0u32, 0, 1, 0, 0], [1u8, 2, 3, 4, 5]);
    let parts = [
        RankPart {
            key: 1,
            embeddings: &e[..3 * dim],
            positions: &pos[..3],
            groups: &grp[..3],
            importance: &imp[..3],
        },
        RankPart {
            key: 2,
            embeddings: &e[3 * dim..],
            positions: &pos[3..],
            groups: &grp[3..],
            importance: &imp[3..],
        },
    ];
    let vectors = vec![1f32; 2 * dim];
    let (sparse, flags) = (vec![0f32; 5], vec![0u8; 5]);
    let q = RankQueries {
        vectors: &vectors,
        ranges: &[[0, 3], [3, 5]],
        sparse: &sparse,
        flags: &flags,
        time: &[memdex_kernels::TimeRule::None; 2],
    };
    let params = RankParams {
        w_dense: 1.0,
        w_sparse: 0.0,
        sparse_fused: false,
        fragrel: None,
        importance: None,
    };
    let got = k
        .rank_topk_parts(dim, &parts, &q, &params, 2)
        .expect("ranked");
    let want = Cpu
        .rank_topk_parts(dim, &parts, &q, &params, 2)
        .expect("ranked");
    assert_eq!(got, want, "the answers are the reference's");
}

#[test]
fn run_fails_the_check_during_which_a_fault_appeared_and_only_that_one() {
    let k = GatedCpu::new(true);
    let first = run(parts_answers_only, &k);
    assert!(!first.ok, "{first:?}");
    assert!(first.error.unwrap_or_default().contains("fault"));
    // the fault was reported once: later checks are judged on their own answers
    assert!(run(parts_answers_only, &k).ok);
    assert!(run(selection_is_exact_with_ties, &k).ok);
    // the same check on a device whose gather agrees passes
    assert!(run(parts_answers_only, &GatedCpu::new(false)).ok);
}
