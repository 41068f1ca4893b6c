//! An emulated device for the kernel checks: [`Emu`] implements [`Kernels`] by making the
//! launches `src/gpu.rs` makes (the same kernels, instantiations, tiles and arguments) and
//! running them under `kernels/emu/launch.cpp`, the CUDA sources compiled as C++ on the SIMT
//! emulator: every kernel of the CUDA backend, `gather_parts` assembling the parts included,
//! without a GPU. The host glue it mirrors (uploads, the resident cache and its assembly gate,
//! input validation) stays the CUDA backend's own and is not what these checks test here.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use memdex_kernels::rank::merge_lists;
use memdex_kernels::tiles::{
    dense_tile, scan_tile, tensor_tile, QueryTiles, TileSmem, TileWidth, Tiled,
};
use memdex_kernels::{
    range_offsets, splits_for, text_inputs_reference, BucketMask, Concatenated, FragRelParams,
    HashKernels, KernelDevice, KernelError, Matrix, PartText, RankKernels, RankParams, RankPart,
    RankQueries, RankRows, ScanKernels, TextQueries, TimeRule, Timeline, TopKResult, MAX_K,
};
use memdex_rank::TimeWindow;

/// Resident blocks of the emulated device (the CUDA backend asks the occupancy calculator):
/// enough that ranges are cut into parts and the parts merged.
const SLOTS: usize = 16;
const THREADS: u32 = 256;

#[path = "../../../../kernels/emu/compile.rs"]
mod compile;
pub use compile::compile;

/// A buffer of a [`Plan`].
#[derive(Debug, Clone, Copy)]
pub struct Buf(u32);

/// A launch argument.
#[derive(Clone)]
pub enum Arg {
    U(u32),
    F(f32),
    B(Buf),
    Null,
    /// A table (a buffer of u64 slots) filled with these buffers' addresses.
    Table(Buf, Vec<Buf>),
}

/// Buffers and launches for one run of `launch.cpp` (its input format).
#[derive(Default)]
pub struct Plan {
    buffers: u32,
    outputs: Vec<usize>,
    bytes: Vec<u8>,
    launches: Vec<u8>,
    count: u32,
}

fn le<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}

pub fn u32s(v: &[u32]) -> Vec<u8> {
    le(v, u32::to_le_bytes)
}
pub fn f32s(v: &[f32]) -> Vec<u8> {
    le(v, f32::to_le_bytes)
}

impl Plan {
    fn buffer(&mut self, kind: u8, len: usize, data: Option<&[u8]>) -> Buf {
        self.bytes.push(kind);
        self.bytes.extend((len as u64).to_le_bytes());
        self.bytes.extend(data.unwrap_or_default());
        self.buffers += 1;
        if kind == 3 {
            self.outputs.push(len);
        }
        Buf(self.buffers - 1)
    }
    pub fn input(&mut self, data: &[u8]) -> Buf {
        self.buffer(1, data.len(), Some(data))
    }
    pub fn zeros(&mut self, bytes: usize) -> Buf {
        self.buffer(0, bytes, None)
    }
    /// f32 scratch filled with NaN, as a device leaves garbage.
    pub fn scratch(&mut self, floats: usize) -> Buf {
        self.buffer(2, 4 * floats, None)
    }
    /// Zeros, written back by [`Plan::run`] (outputs in the order they were made).
    pub fn output(&mut self, bytes: usize) -> Buf {
        self.buffer(3, bytes, None)
    }
    pub fn launch(&mut self, name: &str, grid: (u32, u32), smem: usize, args: Vec<Arg>) {
        self.launch_with(name, grid, THREADS, smem, args);
    }
    pub fn launch_with(
        &mut self,
        name: &str,
        grid: (u32, u32),
        threads: u32,
        smem: usize,
        args: Vec<Arg>,
    ) {
        let l = &mut self.launches;
        l.extend(u32s(&[name.len() as u32]));
        l.extend(name.as_bytes());
        l.extend(u32s(&[
            grid.0,
            grid.1,
            threads,
            smem as u32,
            args.len() as u32,
        ]));
        for a in args {
            let (kind, value) = match a {
                Arg::U(v) => (0, u32s(&[v])),
                Arg::F(v) => (1, f32s(&[v])),
                Arg::B(b) => (2, u32s(&[b.0])),
                Arg::Null => (3, Vec::new()),
                Arg::Table(t, bufs) => {
                    let ids: Vec<u32> = bufs.iter().map(|b| b.0).collect();
                    (4, u32s(&[&[t.0, ids.len() as u32][..], &ids].concat()))
                }
            };
            l.push(kind);
            l.extend(value);
        }
        self.count += 1;
    }
}

/// The emulated device.
pub struct Emu {
    exe: PathBuf,
    dir: PathBuf,
    runs: AtomicUsize,
}

impl Emu {
    pub fn new(dir: &Path) -> Option<Emu> {
        Some(Emu {
            exe: compile("launch", dir)?,
            dir: dir.to_path_buf(),
            runs: AtomicUsize::new(0),
        })
    }

    /// Runs the plan's launches in order; its outputs, in order.
    pub fn run(&self, p: Plan) -> Vec<Vec<u8>> {
        let n = self.runs.fetch_add(1, Ordering::Relaxed);
        let tag = format!("{}-{n}", std::process::id());
        let (input, output) = (
            self.dir.join(format!("in-{tag}")),
            self.dir.join(format!("out-{tag}")),
        );
        let mut bytes = u32s(&[p.buffers]);
        bytes.extend(&p.bytes);
        bytes.extend(u32s(&[p.count]));
        bytes.extend(&p.launches);
        std::fs::write(&input, bytes).expect("write the launches");
        let run = Command::new(&self.exe)
            .arg(&input)
            .arg(&output)
            .output()
            .expect("run launch");
        assert!(
            run.status.success(),
            "launch: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let out = std::fs::read(&output).expect("launch's output");
        let _ = (std::fs::remove_file(&input), std::fs::remove_file(&output));
        let mut at = 0;
        (p.outputs.iter())
            .map(|&len| {
                at += len;
                out[at - len..at].to_vec()
            })
            .collect()
    }
}

pub fn as_f32(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect()
}
pub fn as_u32(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect()
}

fn max_len(ranges: &[[u32; 2]]) -> usize {
    ranges
        .iter()
        .map(|[a, b]| b.saturating_sub(*a) as usize)
        .max()
        .unwrap_or(0)
}

/// `memdex_topk_merge` over a split scan's partial lists (`part`: scores, rows), as
/// `src/gpu/scan.rs` launches it; nothing when the scan ran in one split.
fn merge_splits(p: &mut Plan, part: (Buf, Buf), nq: usize, k: usize, splits: usize) {
    if splits > 1 {
        let (s, r) = (p.output(4 * nq * k), p.output(4 * nq * k));
        let (k32, splits) = (k as u32, splits as u32);
        let args = vec![
            Arg::B(part.0),
            Arg::B(part.1),
            Arg::U(splits),
            Arg::U(k32),
            Arg::B(s),
            Arg::B(r),
        ];
        p.launch_with("memdex_topk_merge", (nq as u32, 1), 32, 0, args);
    }
}

/// The queries' tiles for a kernel whose tile cap is `smem.cap`, as `src/gpu/scan.rs` builds
/// them, and their buffers.
fn tiles(p: &mut Plan, ranges: &[[u32; 2]], smem: TileSmem) -> (QueryTiles, Buf, Buf) {
    let t = QueryTiles::new(ranges, smem.cap);
    let (q, o) = (p.input(&u32s(&t.queries)), p.input(&u32s(&t.offsets)));
    (t, q, o)
}

impl Emu {
    /// The fused ranking's dense step into `scratch` (`nq × 3 × stride`).
    fn rank_dense(&self, p: &mut Plan, m: (Buf, usize), q: (Buf, Buf, &[[u32; 2]]), scratch: Buf) {
        let (emb, dim) = m;
        let (vectors, ranges, host) = q;
        let smem = dense_tile(dim);
        let (t, tq, toff) = tiles(p, host, smem);
        let splits = splits_for(t.len(), max_len(host), SLOTS) as u32;
        let name = Tiled::Dense.name(dim, TileWidth::for_longest(t.longest));
        let stride = max_len(host).max(1) as u32;
        use Arg::*;
        let args = vec![B(emb), U(dim as u32), B(vectors), B(ranges), B(tq), B(toff)];
        let rest = [U(t.longest as u32), U(splits), B(scratch), U(stride)];
        p.launch(
            name,
            (t.len() as u32, splits),
            smem.bytes(t.longest),
            [args, rest.into()].concat(),
        );
    }

    /// `rank_dense` then `rank_topk` over `rows` (already in `p`): the top-k slots, then every
    /// row's score.
    fn rank_launch(
        &self,
        p: &mut Plan,
        rows: RowBufs,
        q: &RankQueries<'_>,
        sparse_flags: (Buf, Buf),
        params: &RankParams,
        k: usize,
    ) {
        let (offsets, total) = range_offsets(q.ranges);
        let nq = q.ranges.len();
        let RowBufs {
            emb,
            dim,
            positions,
            groups,
            importance,
        } = rows;
        let (vectors, ranges) = (
            p.input(&f32s(q.vectors)),
            p.input(&u32s(&q.ranges.concat())),
        );
        let stride = max_len(q.ranges).max(1);
        let scratch = p.scratch(nq * 3 * stride);
        self.rank_dense(p, (emb, dim), (vectors, ranges, q.ranges), scratch);
        let offsets = p.input(&u32s(&offsets));
        let (mode, factor) = time_rules(p, q.time);
        let (out_s, out_r) = (p.output(nq * 2 * k * 4), p.output(nq * 2 * k * 4));
        let all = p.output(total * 4);
        use Arg::*;
        let head = vec![B(ranges), B(positions), B(groups), B(importance)];
        let (sparse, flags) = sparse_flags;
        let inputs = vec![B(sparse), B(flags), B(offsets), B(mode), B(factor)];
        let mut weights = weight_args(params, k);
        weights.extend([B(scratch), U(stride as u32)]);
        let topk = [
            head.clone(),
            inputs.clone(),
            weights.clone(),
            vec![B(out_s), B(out_r), Null],
        ];
        p.launch("memdex_rank_topk", (nq as u32, 1), 0, topk.concat());
        // every row's score: the dense step again (rank_topk rewrote the scratch), then out_all
        self.rank_dense(p, (emb, dim), (vectors, ranges, q.ranges), scratch);
        let scores = [head, inputs, weights, vec![Null, Null, B(all)]];
        p.launch("memdex_rank_topk", (nq as u32, 1), 0, scores.concat());
    }

    /// The batch's rows assembled from its parts by `memdex_gather_parts`, as the CUDA
    /// backend assembles resident parts (`src/gpu/assemble.rs`: parts with rows, 32 blocks
    /// each).
    fn gather(&self, p: &mut Plan, dim: usize, parts: &[RankPart<'_>]) -> RowBufs {
        let total: usize = parts.iter().map(RankPart::rows).sum();
        let rows = RowBufs {
            emb: p.zeros(2 * total * dim),
            dim,
            positions: p.zeros(4 * total),
            groups: p.zeros(4 * total),
            importance: p.zeros(total),
        };
        let (mut columns, mut starts, mut counts, mut at) = (vec![], vec![], vec![], 0u32);
        for part in parts {
            let n = part.rows() as u32;
            if n > 0 {
                columns.extend([
                    p.input(&f16s(part.embeddings)),
                    p.input(&u32s(part.positions)),
                    p.input(&u32s(part.groups)),
                    p.input(part.importance),
                ]);
                starts.push(at);
                counts.push(n);
            }
            at += n;
        }
        if counts.is_empty() {
            return rows;
        }
        use Arg::*;
        let table = p.zeros(8 * columns.len());
        let args = vec![
            Table(table, columns),
            B(p.input(&u32s(&starts))),
            B(p.input(&u32s(&counts))),
            U(dim as u32),
            B(rows.emb),
            B(rows.positions),
            B(rows.groups),
            B(rows.importance),
        ];
        p.launch("memdex_gather_parts", (counts.len() as u32, 32), 0, args);
        rows
    }

    fn rank_outputs(&self, p: Plan, k: usize) -> (TopKResult, Vec<f32>) {
        let out = self.run(p);
        let got = merge_lists(&as_f32(&out[0]), &as_u32(&out[1]), k);
        (got, as_f32(&out[2]))
    }

    /// `query_inputs` (the text columns of each part, each query's terms and window) into the
    /// BM25 / keyword-share and flag buffers it returns, as `src/gpu/text.rs` launches it.
    fn query_inputs(
        &self,
        p: &mut Plan,
        (dim, parts, texts): (usize, &[RankPart<'_>], &[PartText<'_>]),
        tq: &TextQueries<'_>,
        q: &RankQueries<'_>,
        params: &RankParams,
    ) -> (Buf, Buf) {
        let (offsets, total) = range_offsets(q.ranges);
        let columns = text_columns(p, texts);
        let table = p.zeros(8 * columns.len());
        let vocab_len: Vec<u32> = texts.iter().map(|t| t.vocab_terms.len() as u32).collect();
        let starts: Vec<u32> = (parts.iter())
            .scan(0u32, |s, part| {
                let at = *s;
                *s += part.rows() as u32;
                Some(at)
            })
            .collect();
        let [kind, lo, hi] = windows(p, tq.windows);
        use Arg::*;
        let args = vec![
            Table(table, columns),
            B(p.input(&u32s(&vocab_len))),
            B(p.input(&u32s(tq.part))),
            B(p.input(&u32s(tq.term_offsets))),
            B(p.input(&u32s(tq.terms))),
            kind,
            lo,
            hi,
            B(p.input(&u32s(&q.ranges.concat()))),
            B(p.input(&u32s(&starts))),
            B(p.input(&u32s(&offsets))),
            B(p.input(&f32s(q.vectors))),
            U(dim as u32),
            U(tq.expand.map_or(0, |x| x.terms as u32)),
            F(tq.expand.map_or(0.0, |x| x.weight)),
            F(params.w_sparse),
            B(p.zeros(4 * total)),
        ];
        let (sparse, flags) = (p.zeros(4 * total), p.zeros(total));
        let args = [args, vec![B(sparse), B(flags)]].concat();
        p.launch("memdex_query_inputs", (q.ranges.len() as u32, 1), 0, args);
        (sparse, flags)
    }
}

fn i64s(v: &[i64]) -> Vec<u8> {
    le(v, i64::to_le_bytes)
}

fn f16s(v: &[memdex_kernels::f16]) -> Vec<u8> {
    le(v, |h| h.to_bits().to_le_bytes())
}

/// Each query's time rule as `rank.cu` takes it: mode (0 none, 1 front, 2 boost) and factor.
fn time_rules(p: &mut Plan, time: &[TimeRule]) -> (Buf, Buf) {
    let (mode, factor): (Vec<u32>, Vec<f32>) = (time.iter())
        .map(|t| match t {
            TimeRule::None => (0, 0.0),
            TimeRule::Front => (1, 0.0),
            TimeRule::Boost(b) => (2, *b),
        })
        .unzip();
    (p.input(&u32s(&mode)), p.input(&f32s(&factor)))
}

/// `rank.cu`'s weights and `k`, in its parameter order.
fn weight_args(params: &RankParams, k: usize) -> Vec<Arg> {
    let fr = (params.fragrel).unwrap_or(FragRelParams { alpha: 0.0, w: 1.0 });
    use Arg::*;
    vec![
        F(params.w_dense),
        F(params.w_sparse),
        U(u32::from(params.sparse_fused)),
        U(u32::from(params.fragrel.is_some())),
        F(fr.alpha),
        F(fr.w),
        U(u32::from(params.importance.is_some())),
        F(params.importance.unwrap_or(0.0)),
        U(k as u32),
    ]
}

/// Each part's nine text columns, in `query_inputs.cu`'s table order.
fn text_columns(p: &mut Plan, texts: &[PartText<'_>]) -> Vec<Buf> {
    let mut columns = Vec::new();
    for t in texts {
        columns.extend([
            p.input(&u32s(t.term_offsets)),
            p.input(&u32s(t.term_rows)),
            p.input(&f32s(t.term_weights)),
            p.input(&i64s(t.timestamps)),
            p.input(&u32s(t.event_offsets)),
            p.input(&i64s(t.event_lo)),
            p.input(&i64s(t.event_hi)),
            p.input(&u32s(t.vocab_terms)),
            p.input(&f16s(t.vocab_vectors)),
        ]);
    }
    columns
}

/// Each query's window: kind (0 none, 1 range, 2 dated), lo, hi.
fn windows(p: &mut Plan, windows: &[Option<TimeWindow>]) -> [Arg; 3] {
    let (mut kind, mut lo, mut hi) = (Vec::new(), Vec::new(), Vec::new());
    for w in windows {
        let (k, a, b) = match w {
            None => (0, 0, 0),
            Some(TimeWindow::Range { lo, hi }) => (1, *lo, *hi),
            Some(TimeWindow::Dated) => (2, 0, 0),
        };
        kind.push(k);
        lo.push(a);
        hi.push(b);
    }
    [
        Arg::B(p.input(&u32s(&kind))),
        Arg::B(p.input(&i64s(&lo))),
        Arg::B(p.input(&i64s(&hi))),
    ]
}

/// A batch's rows in a [`Plan`]: what the fused ranking reads per row.
#[derive(Clone, Copy)]
struct RowBufs {
    emb: Buf,
    dim: usize,
    positions: Buf,
    groups: Buf,
    importance: Buf,
}

/// The rows uploaded from one matrix.
fn host_rows(p: &mut Plan, m: &Matrix<'_>, rows: &RankRows<'_>) -> RowBufs {
    RowBufs {
        emb: p.input(&f16s(m.data)),
        dim: m.dim,
        positions: p.input(&u32s(rows.timeline.positions)),
        groups: p.input(&u32s(rows.timeline.groups)),
        importance: p.input(rows.importance),
    }
}

/// A bucket mask's four launch arguments (row buckets, query masks, tables, words), or nulls.
fn mask_args(p: &mut Plan, mask: Option<&BucketMask<'_>>) -> [Arg; 4] {
    match mask {
        Some(mk) => [
            Arg::B(p.input(&le(mk.row_buckets, u16::to_le_bytes))),
            Arg::B(p.input(&u32s(mk.query_masks))),
            Arg::U(mk.tables as u32),
            Arg::U(BucketMask::words(mk.buckets) as u32),
        ],
        None => [Arg::Null, Arg::Null, Arg::U(0), Arg::U(0)],
    }
}

/// A run's first two outputs as `k` (score, row) slots per query.
fn topk_result(out: &[Vec<u8>], k: usize) -> TopKResult {
    TopKResult {
        k,
        scores: as_f32(&out[0]),
        rows: as_u32(&out[1]),
    }
}

impl KernelDevice for Emu {
    fn device(&self) -> String {
        "emu".into()
    }
}

impl HashKernels for Emu {
    fn lsh_project(
        &self,
        x: &[f32],
        dim: usize,
        proj: &[f32],
        tables: usize,
        buckets: usize,
    ) -> Result<Vec<u32>, KernelError> {
        let n = x.len() / dim.max(1);
        let mut p = Plan::default();
        let (xb, pb) = (p.input(&f32s(x)), p.input(&f32s(proj)));
        let out = p.output(4 * n * tables);
        let half = buckets / 2;
        use Arg::*;
        let args = vec![
            B(xb),
            U(dim as u32),
            B(pb),
            U(tables as u32),
            U(half as u32),
            B(out),
        ];
        p.launch(
            "memdex_lsh_project",
            (n as u32, 1),
            (dim + tables * half) * 4,
            args,
        );
        Ok(as_u32(&self.run(p)[0]))
    }
}

impl ScanKernels for Emu {
    fn segmented_topk(
        &self,
        m: &Matrix<'_>,
        queries: &[f32],
        ranges: &[[u32; 2]],
        mask: Option<&BucketMask<'_>>,
        k: usize,
    ) -> Result<TopKResult, KernelError> {
        assert!(k <= MAX_K);
        let (nq, mut p) = (ranges.len(), Plan::default());
        let smem = scan_tile(m.dim, k);
        let (t, tq, toff) = tiles(&mut p, ranges, smem);
        let splits = splits_for(t.len(), max_len(ranges), SLOTS);
        let emb = p.input(&f16s(m.data));
        let (qv, rb) = (p.input(&f32s(queries)), p.input(&u32s(&ranges.concat())));
        let (part_s, part_r) = match splits {
            1 => (p.output(4 * nq * k), p.output(4 * nq * k)),
            _ => (p.zeros(4 * nq * splits * k), p.zeros(4 * nq * splits * k)),
        };
        use Arg::*;
        let [buckets, masks, tables, words] = mask_args(&mut p, mask);
        let name = Tiled::Scan.name(m.dim, TileWidth::for_longest(t.longest));
        let args = vec![
            B(emb),
            U(m.dim as u32),
            B(qv),
            B(rb),
            B(tq),
            B(toff),
            U(t.longest as u32),
        ];
        let rest = vec![buckets, masks, tables, words, U(k as u32), U(splits as u32)];
        let args = [args, rest, vec![B(part_s), B(part_r)]].concat();
        p.launch(
            name,
            (t.len() as u32, splits as u32),
            smem.bytes(t.longest),
            args,
        );
        merge_splits(&mut p, (part_s, part_r), nq, k, splits);
        Ok(topk_result(&self.run(p), k))
    }

    /// `memdex_tensor_topk` as `src/gpu/scan.rs` launches it (the wmma fragments emulated by
    /// `kernels/emu/include/mma.h`), or the CUDA-core scan where the kernel does not apply.
    fn tensor_topk(
        &self,
        m: &Matrix<'_>,
        queries: &[f32],
        ranges: &[[u32; 2]],
        k: usize,
    ) -> Result<TopKResult, KernelError> {
        let Some(smem) = tensor_tile(m.dim, k).filter(|_| !ranges.is_empty()) else {
            return self.segmented_topk(m, queries, ranges, None, k);
        };
        let (nq, mut p) = (ranges.len(), Plan::default());
        let (t, tq, toff) = tiles(&mut p, ranges, smem);
        let splits = splits_for(t.len(), max_len(ranges), SLOTS);
        let emb = p.input(&f16s(m.data));
        let (qv, rb) = (p.input(&f32s(queries)), p.input(&u32s(&ranges.concat())));
        let (part_s, part_r) = match splits {
            1 => (p.output(4 * nq * k), p.output(4 * nq * k)),
            _ => (p.zeros(4 * nq * splits * k), p.zeros(4 * nq * splits * k)),
        };
        use Arg::*;
        let args = vec![B(emb), U(m.dim as u32), U(m.rows() as u32), B(qv), B(rb)];
        let rest = vec![
            B(tq),
            B(toff),
            U(t.longest as u32),
            U(k as u32),
            U(splits as u32),
        ];
        let args = [args, rest, vec![B(part_s), B(part_r)]].concat();
        let name = Tiled::Tensor.name(m.dim, TileWidth::for_longest(t.longest));
        let grid = (t.len() as u32, splits as u32);
        p.launch(name, grid, smem.bytes(t.longest), args);
        merge_splits(&mut p, (part_s, part_r), nq, k, splits);
        Ok(topk_result(&self.run(p), k))
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
        let (nq, mut p) = (ranges.len(), Plan::default());
        let stride = max_len(ranges).max(1);
        use Arg::*;
        let mut args = vec![
            B(p.input(&f16s(m.data))),
            U(m.dim as u32),
            B(p.input(&f32s(queries))),
            B(p.input(&u32s(&ranges.concat()))),
            B(p.input(&u32s(timeline.positions))),
            B(p.input(&u32s(timeline.groups))),
            F(params.alpha),
            F(params.w),
        ];
        args.extend(mask_args(&mut p, mask));
        let (s, r) = (p.output(4 * nq * k), p.output(4 * nq * k));
        args.extend([
            U(k as u32),
            B(p.scratch(nq * 3 * stride)),
            U(stride as u32),
            B(s),
            B(r),
        ]);
        let name = if m.dim <= 512 {
            "memdex_fragrel_topk_d512"
        } else {
            "memdex_fragrel_topk"
        };
        p.launch(name, (nq as u32, 1), 0, args);
        Ok(topk_result(&self.run(p), k))
    }
}

impl RankKernels for Emu {
    fn rank_topk(
        &self,
        m: &Matrix<'_>,
        rows: &RankRows<'_>,
        queries: &RankQueries<'_>,
        params: &RankParams,
        k: usize,
    ) -> Result<TopKResult, KernelError> {
        let mut p = Plan::default();
        let sf = (p.input(&f32s(queries.sparse)), p.input(queries.flags));
        let rows = host_rows(&mut p, m, rows);
        self.rank_launch(&mut p, rows, queries, sf, params, k);
        Ok(self.rank_outputs(p, k).0)
    }

    fn rank_scores(
        &self,
        m: &Matrix<'_>,
        rows: &RankRows<'_>,
        queries: &RankQueries<'_>,
        params: &RankParams,
    ) -> Result<Vec<f32>, KernelError> {
        let mut p = Plan::default();
        let sf = (p.input(&f32s(queries.sparse)), p.input(queries.flags));
        let rows = host_rows(&mut p, m, rows);
        self.rank_launch(&mut p, rows, queries, sf, params, 1);
        Ok(self.rank_outputs(p, 1).1)
    }

    /// The parts assembled by `memdex_gather_parts`, as the CUDA backend assembles them.
    fn rank_topk_parts(
        &self,
        dim: usize,
        parts: &[RankPart<'_>],
        queries: &RankQueries<'_>,
        params: &RankParams,
        k: usize,
    ) -> Result<TopKResult, KernelError> {
        Concatenated::new(dim, parts, queries)?; // checks the parts and ranges
        let mut p = Plan::default();
        let sf = (p.input(&f32s(queries.sparse)), p.input(queries.flags));
        let rows = self.gather(&mut p, dim, parts);
        self.rank_launch(&mut p, rows, queries, sf, params, k);
        Ok(self.rank_outputs(p, k).0)
    }

    fn rank_topk_text(
        &self,
        dim: usize,
        parts: &[RankPart<'_>],
        texts: &[PartText<'_>],
        text: &TextQueries<'_>,
        queries: &RankQueries<'_>,
        params: &RankParams,
        k: usize,
    ) -> Result<TopKResult, KernelError> {
        // the inputs checked as every backend checks them (the reference's own checks; its
        // answer is not used)
        text_inputs_reference(dim, parts, texts, text, queries, params)?;
        let mut p = Plan::default();
        let sf = self.query_inputs(&mut p, (dim, parts, texts), text, queries, params);
        let rows = self.gather(&mut p, dim, parts);
        self.rank_launch(&mut p, rows, queries, sf, params, k);
        Ok(self.rank_outputs(p, k).0)
    }
}
