//! memdex's CUDA sources, run on the CPU: `kernels/emu/simt.h` compiles `kernels/cuda/*.cu` as
//! C++ and runs a thread per CUDA thread (warp collectives at barriers). The device's own checks
//! (`tests/kernels.rs` with `MEMDEX_REQUIRE_CUDA=1`) need a GPU; these run the same kernel code
//! wherever a C++20 compiler is, so a wrong lane mapping, shared-memory layout or pipeline step
//! fails here first.
//!
//! - `kernels/emu/tiled_check.cpp`: every tiled instantiation of `segmented_topk` and
//!   `rank_dense` against a brute force (its own inputs).
//! - `kernels/emu/rank_check.cpp`: the fused ranking (`rank_dense` + `rank_topk`) on batches
//!   written here, with the tiles and the kernel name the Rust host code picks, against the
//!   CPU reference ([`Cpu::rank_topk`], [`Cpu::rank_scores`]).

use std::path::{Path, PathBuf};
use std::process::Command;

use memdex_kernels::cpu::Cpu;
use memdex_kernels::rank::merge_lists;
use memdex_kernels::tiles::{dense_tile, QueryTiles, TileWidth, Tiled};
use memdex_kernels::{
    f16, range_offsets, FragRelParams, Kernels, Matrix, RankParams, RankQueries, RankRows,
    TimeRule, Timeline, TopKResult,
};

/// `kernels/emu/<name>.cpp` compiled into the test's temporary directory; None (skipped) without
/// a C++ compiler, unless `MEMDEX_REQUIRE_CXX=1` (scripts/test.sh, CI).
fn compile(name: &str) -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../kernels");
    let exe = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let built = Command::new(&cxx)
        .args(["-std=c++20", "-O1", "-pthread", "-DMEMDEX_EMULATED", "-I"])
        .arg(root.join("emu/include"))
        .arg("-o")
        .arg(&exe)
        .arg(root.join(format!("emu/{name}.cpp")))
        .output();
    let built = match built {
        Ok(out) => out,
        Err(e) => {
            let required = std::env::var("MEMDEX_REQUIRE_CXX").as_deref() == Ok("1");
            assert!(!required, "no C++ compiler `{cxx}`: {e}");
            eprintln!(
                "SKIPPED: no C++ compiler `{cxx}` ({e}); set CXX to run the emulated kernels"
            );
            return None;
        }
    };
    assert!(
        built.status.success(),
        "{cxx} failed on kernels/emu/{name}.cpp:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    Some(exe)
}

#[test]
fn tiled_kernels_match_brute_force_under_the_simt_emulator() {
    let Some(exe) = compile("tiled_check") else {
        return;
    };
    let run = Command::new(&exe).output().expect("run tiled_check");
    let report = String::from_utf8_lossy(&run.stdout);
    eprintln!("{report}");
    assert!(run.status.success(), "emulated kernels disagree:\n{report}");
    assert!(report.contains("0 failing"), "{report}");
    assert!(report.lines().filter(|l| l.starts_with("ok ")).count() >= 40);
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// Roughly normal: the sum of four uniforms, centred.
    fn normal(&mut self) -> f32 {
        (0..4)
            .map(|_| self.below(1 << 20) as f32 / (1 << 20) as f32)
            .sum::<f32>()
            - 2.0
    }
}

/// A batch for the fused ranking: rows with a timeline and importance, queries over ranges
/// asked by 1, 3 and 17 queries, BM25 scores (mostly zero), time flags and all three time rules.
struct Batch {
    dim: usize,
    emb: Vec<f16>,
    positions: Vec<u32>,
    groups: Vec<u32>,
    importance: Vec<u8>,
    vectors: Vec<f32>,
    ranges: Vec<[u32; 2]>,
    sparse: Vec<f32>,
    flags: Vec<u8>,
    time: Vec<TimeRule>,
}

impl Batch {
    fn new(dim: usize, rows: u32, seed: u64) -> Batch {
        let mut rng = Rng(seed);
        let emb = (0..rows as usize * dim)
            .map(|_| f16::from_f32(rng.normal() * 0.3))
            .collect();
        let (mut positions, mut groups, mut importance) = (vec![], vec![], vec![]);
        let (mut pos, mut group) = (0u32, 0u32);
        for _ in 0..rows {
            group += u32::from(rng.below(9) == 0);
            pos += 1 + rng.below(3) as u32;
            positions.push(pos);
            groups.push(group);
            importance.push(1 + rng.below(10) as u8);
        }
        let mut ranges = vec![[0, 0], [5, 9], [0, 100], [100, 350], [350, rows], [0, rows]];
        for round in 0..16 {
            ranges.push([100, 350]);
            if round < 2 {
                ranges.push([350, rows]);
            }
        }
        let vectors = (0..ranges.len() * dim).map(|_| rng.normal()).collect();
        let (_, total) = range_offsets(&ranges);
        let sparse = (0..total)
            .map(|_| match rng.below(4) {
                0 => rng.below(1000) as f32 / 100.0,
                _ => 0.0,
            })
            .collect();
        let flags = (0..total).map(|_| u8::from(rng.below(7) == 0)).collect();
        let rules = [TimeRule::None, TimeRule::Front, TimeRule::Boost(0.2)];
        let time = (0..ranges.len()).map(|i| rules[i % 3]).collect();
        Batch {
            dim,
            emb,
            positions,
            groups,
            importance,
            vectors,
            ranges,
            sparse,
            flags,
            time,
        }
    }

    fn rows(&self) -> RankRows<'_> {
        RankRows {
            timeline: Timeline {
                positions: &self.positions,
                groups: &self.groups,
            },
            importance: &self.importance,
        }
    }

    fn queries(&self) -> RankQueries<'_> {
        RankQueries {
            vectors: &self.vectors,
            ranges: &self.ranges,
            sparse: &self.sparse,
            flags: &self.flags,
            time: &self.time,
        }
    }

    /// The buffers of a device launch, in `rank_check.cpp`'s input layout.
    fn write(&self, path: &Path, p: &RankParams, k: usize, splits: u32) {
        let tiles = QueryTiles::new(&self.ranges, dense_tile(self.dim).cap);
        let name = Tiled::Dense.name(self.dim, TileWidth::for_longest(tiles.longest));
        let (offsets, total) = range_offsets(&self.ranges);
        let fr = p.fragrel.unwrap_or(FragRelParams { alpha: 0.0, w: 1.0 });
        let mut b: Vec<u8> = Vec::new();
        let u32s = |b: &mut Vec<u8>, v: &[u32]| v.iter().for_each(|x| b.extend(x.to_le_bytes()));
        let header = [
            self.dim as u32,
            self.positions.len() as u32,
            self.ranges.len() as u32,
            total as u32,
            k as u32,
            tiles.longest as u32,
            splits,
            tiles.len() as u32,
        ];
        u32s(&mut b, &header);
        let f32s = |b: &mut Vec<u8>, v: &[f32]| v.iter().for_each(|x| b.extend(x.to_le_bytes()));
        f32s(&mut b, &[p.w_dense, p.w_sparse]);
        u32s(
            &mut b,
            &[u32::from(p.sparse_fused), u32::from(p.fragrel.is_some())],
        );
        f32s(&mut b, &[fr.alpha, fr.w]);
        u32s(&mut b, &[u32::from(p.importance.is_some())]);
        f32s(&mut b, &[p.importance.unwrap_or(0.0)]);
        u32s(&mut b, &[name.len() as u32]);
        b.extend(name.as_bytes());
        b.extend(self.emb.iter().flat_map(|h| h.to_bits().to_le_bytes()));
        f32s(&mut b, &self.vectors);
        u32s(&mut b, &self.ranges.concat());
        u32s(&mut b, &self.positions);
        u32s(&mut b, &self.groups);
        b.extend(&self.importance);
        f32s(&mut b, &self.sparse);
        b.extend(&self.flags);
        u32s(&mut b, &offsets);
        let (mode, factor): (Vec<u32>, Vec<f32>) = (self.time.iter())
            .map(|t| match t {
                TimeRule::None => (0, 0.0),
                TimeRule::Front => (1, 0.0),
                TimeRule::Boost(f) => (2, *f),
            })
            .unzip();
        u32s(&mut b, &mode);
        f32s(&mut b, &factor);
        u32s(&mut b, &tiles.queries);
        u32s(&mut b, &tiles.offsets);
        std::fs::write(path, b).expect("write the batch");
    }
}

/// Same rows in the same order except between scores within `tol`; scores within `tol`.
fn assert_close(got: &TopKResult, want: &TopKResult, tol: f32, what: &str) {
    for q in 0..want.queries() {
        let (g, w) = (got.hits(q), want.hits(q));
        assert_eq!(g.len(), w.len(), "{what} query {q}");
        for (j, (a, b)) in g.iter().zip(&w).enumerate() {
            let same = a.0 == b.0 || (a.0 - b.0).abs() <= tol;
            assert!(same, "{what} query {q} slot {j}: {a:?} vs {b:?}");
            let tie = || w.iter().any(|x| x.1 == a.1 && (x.0 - a.0).abs() <= tol);
            assert!(
                a.1 == b.1 || tie(),
                "{what} query {q} slot {j}: {a:?} vs {b:?}"
            );
        }
    }
}

#[test]
fn fused_ranking_matches_the_cpu_reference_under_the_simt_emulator() {
    let Some(exe) = compile("rank_check") else {
        return;
    };
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let full = RankParams {
        w_dense: 0.8,
        w_sparse: 0.2,
        sparse_fused: false,
        fragrel: Some(FragRelParams { alpha: 0.5, w: 0.8 }),
        importance: Some(0.3),
    };
    let variants = [
        full,
        RankParams {
            fragrel: None,
            importance: None,
            ..full
        },
        RankParams {
            sparse_fused: true,
            ..full
        },
    ];
    let k = 10;
    // dim 64: the narrow instantiation; 640: the wide one, whose tile cap (11) splits the
    // range asked 17 times into 11 + 6
    for (dim, seed, splits) in [(64, 1, 1), (384, 2, 3), (640, 3, 2)] {
        let batch = Batch::new(dim, 600, seed);
        let m = Matrix {
            dim,
            data: &batch.emb,
        };
        let (rows, queries) = (batch.rows(), batch.queries());
        for (i, p) in variants.iter().enumerate() {
            let (input, output) = (tmp.join("rank_in.bin"), tmp.join("rank_out.bin"));
            batch.write(&input, p, k, splits);
            let run = Command::new(&exe).arg(&input).arg(&output).output();
            let run = run.expect("run rank_check");
            let what = format!("dim {dim}, {splits} dense parts, weights {i}");
            assert!(
                run.status.success(),
                "{what}: {}",
                String::from_utf8_lossy(&run.stderr)
            );
            let out = std::fs::read(&output).expect("rank_check's output");
            let word = |i: usize| u32::from_le_bytes(out[4 * i..4 * i + 4].try_into().unwrap());
            let slots = batch.ranges.len() * 2 * k;
            let scores: Vec<f32> = (0..slots).map(|i| f32::from_bits(word(i))).collect();
            let ids: Vec<u32> = (slots..2 * slots).map(word).collect();
            let got = merge_lists(&scores, &ids, k);
            let want = Cpu.rank_topk(&m, &rows, &queries, p, k).unwrap();
            assert_close(&got, &want, 1e-4, &what);
            let all: Vec<f32> = (2 * slots..out.len() / 4)
                .map(|i| f32::from_bits(word(i)))
                .collect();
            let want_all = Cpu.rank_scores(&m, &rows, &queries, p).unwrap();
            assert_eq!(all.len(), want_all.len(), "{what}");
            for (j, (a, b)) in all.iter().zip(&want_all).enumerate() {
                assert!(
                    a == b || (a - b).abs() <= 1e-4,
                    "{what} row score {j}: {a} vs {b}"
                );
            }
        }
    }
}
