//! Launch wrappers on candle's CUDA device (feature `cuda`). The PTX embedded by `build.rs` is
//! loaded lazily, once per device, through `CudaDevice::get_or_load_custom_func`.
//!
//! Two levels: device-resident entry points (`*_dev`, for benchmarks and a GPU-resident store:
//! inputs uploaded once, only the `nq × k` results come back) and the [`Kernels`]
//! implementation, which uploads host inputs per call (what the tests compare with the CPU).
#![allow(unsafe_code)] // kernel launches: see the `# Safety` notes at each `launch`

mod assemble;
mod resident;
mod scan;
mod staged;
mod text;

use std::sync::Arc;

use candle_core::cuda_backend::cudarc::driver::sys::CUdevice_attribute;
use candle_core::cuda_backend::cudarc::driver::{
    CudaSlice, DeviceRepr, LaunchArgs, LaunchConfig, PushKernelArg,
};
use candle_core::cuda_backend::CudaDevice;
use candle_core::Device;

use crate::parts::check_parts;
use crate::rank::{check_rank, check_rank_queries, merge_lists, range_offsets};
use crate::text::{check_text, PartText, PartTexts, TextQueries};
use crate::types::check_lsh;
use crate::{
    f16, ptx, BucketMask, FragRelParams, HashKernels, KernelDevice, KernelError, Matrix,
    RankKernels, RankParams, RankPart, RankQueries, RankRows, Timeline, TopKResult,
};
pub use resident::{ResidentStats, DEFAULT_RESIDENT_BYTES};
pub use staged::DeviceBuf;
use staged::{QueryTickets, RankTickets, Stager};
use text::TextTickets;

const THREADS: u32 = 256;

/// The resident budget of a device with `total` bytes of memory: a quarter of it (the model,
/// a batch's assembled matrix and the kernels' scratch share the rest), or
/// [`DEFAULT_RESIDENT_BYTES`] when the driver does not say.
pub fn default_resident_bytes(total: Option<usize>) -> usize {
    total.map_or(DEFAULT_RESIDENT_BYTES, |t| t / 4)
}

/// A CUDA device with memdex's kernels.
#[derive(Debug, Clone)]
pub struct Gpu {
    device: Device,
    cuda: CudaDevice,
    ordinal: usize,
    /// Streaming multiprocessors (132 on an H100 SXM).
    sms: usize,
    /// Fused-ranking parts kept on the device by key ([`RankKernels::rank_topk_parts`]).
    resident: Arc<resident::Resident>,
    /// Whether a ranking batch's small inputs go in one staging copy and its top k come back
    /// after one wait ([`staged`]; off: one upload per input and two downloads, as before).
    staging: bool,
    /// The page-locked buffers of the staging copies and downloads.
    pinned: Arc<staged::Pinned>,
}

/// The embedding matrix on the device.
#[derive(Debug)]
pub struct DeviceMatrix {
    pub dim: usize,
    pub rows: usize,
    pub data: CudaSlice<f16>,
}

/// A bucket mask on the device (see [`BucketMask`]).
#[derive(Debug)]
pub struct DeviceMask {
    pub tables: usize,
    pub words: usize,
    pub row_buckets: CudaSlice<u16>,
    pub query_masks: CudaSlice<u32>,
}

/// Queries and their row ranges on the device.
#[derive(Debug)]
pub struct DeviceQueries {
    pub n: usize,
    pub vectors: DeviceBuf<f32>,
    pub ranges: DeviceBuf<u32>,
    /// Longest range (sizes the splits and FragRel's scratch).
    pub max_len: usize,
    /// The queries grouped by range in tiles, for the tiled scans (grouped on the host at
    /// upload, as many per tile as the dense step's shared memory holds for this dim).
    pub tiles: DeviceTiles,
    /// The ranges on the host (tiles of a smaller cap are built from them).
    pub host_ranges: Vec<[u32; 2]>,
}

/// A batch's query tiles on the device (see [`crate::tiles::QueryTiles`]).
#[derive(Debug)]
pub struct DeviceTiles {
    pub n: usize,
    pub longest: usize,
    pub queries: DeviceBuf<u32>,
    pub offsets: DeviceBuf<u32>,
}

/// A timeline on the device (see [`Timeline`]).
#[derive(Debug)]
pub struct DeviceTimeline {
    pub positions: CudaSlice<u32>,
    pub groups: CudaSlice<u32>,
}

/// What the fused ranking reads per row, on the device (see [`RankRows`]).
#[derive(Debug)]
pub struct DeviceRankRows {
    pub timeline: DeviceTimeline,
    pub importance: CudaSlice<u8>,
}

/// A batch's per-query inputs of the fused ranking on the device (see [`RankQueries`]).
#[derive(Debug)]
pub struct DeviceRankQueries {
    pub queries: DeviceQueries,
    pub sparse: DeviceBuf<f32>,
    pub flags: DeviceBuf<u8>,
    pub offsets: DeviceBuf<u32>,
    pub time_mode: DeviceBuf<u32>,
    pub time_factor: DeviceBuf<f32>,
}

/// Top-k results still on the device.
#[derive(Debug)]
pub struct DeviceTopK {
    pub k: usize,
    pub scores: CudaSlice<f32>,
    pub rows: CudaSlice<u32>,
}

impl Gpu {
    /// Opens CUDA device `ordinal`. Fails without PTX (built without nvcc) or without a device.
    pub fn new(ordinal: usize) -> Result<Self, KernelError> {
        if !ptx::AVAILABLE {
            return Err(KernelError::NoPtx);
        }
        let device = Device::new_cuda(ordinal)?;
        // the pool keeps its memory across batches, as for the model's device
        memdex_embed::keep_pool_memory(&device);
        let cuda = device.as_cuda_device()?.clone();
        let sms = cuda
            .cuda_stream()
            .context()
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_or(132, |n| n.max(1) as usize);
        let total = cuda.cuda_stream().context().total_mem().ok();
        Ok(Self {
            device,
            cuda,
            ordinal,
            sms,
            resident: Arc::new(resident::Resident::new(default_resident_bytes(total))),
            staging: staged::staging_from_env(),
            pinned: Arc::default(),
        })
    }

    /// This device with a ranking batch's inputs staged in one copy (`true`; from the
    /// environment with `MEMDEX_GPU_STAGING=1`) or uploaded one by one, as before (`false`, the
    /// default until a device run has measured and checked the staged path).
    pub fn with_staging(mut self, on: bool) -> Self {
        self.staging = on;
        self
    }

    /// Whether ranking batches stage their inputs ([`Gpu::with_staging`]).
    pub fn staging(&self) -> bool {
        self.staging
    }

    /// This device with at most `bytes` of fused-ranking parts resident (default: a quarter
    /// of its memory, [`default_resident_bytes`]); the parts resident so far are dropped.
    pub fn with_resident_budget(mut self, bytes: usize) -> Self {
        self.resident = Arc::new(resident::Resident::new(bytes));
        self
    }

    /// The fused-ranking parts resident now, and the hits and uploads so far.
    pub fn resident_stats(&self) -> ResidentStats {
        self.resident.stats()
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    pub fn cuda(&self) -> &CudaDevice {
        &self.cuda
    }

    pub fn upload<T: DeviceRepr + 'static>(&self, v: &[T]) -> Result<CudaSlice<T>, KernelError> {
        Ok(self.cuda.clone_htod(v)?)
    }

    pub fn download<T: DeviceRepr + Default + Clone>(
        &self,
        v: &CudaSlice<T>,
    ) -> Result<Vec<T>, KernelError> {
        Ok(self.cuda.clone_dtoh(v)?)
    }

    pub fn synchronize(&self) -> Result<(), KernelError> {
        self.cuda
            .cuda_stream()
            .synchronize()
            .map_err(|e| KernelError::Cuda(candle_core::Error::wrap(e)))
    }

    pub fn upload_matrix(&self, m: &Matrix<'_>) -> Result<DeviceMatrix, KernelError> {
        Ok(DeviceMatrix {
            dim: m.dim,
            rows: m.rows(),
            data: self.upload(m.data)?,
        })
    }

    /// The queries on the device, each input its own upload (the batch path stages them:
    /// [`QueryTickets`]).
    pub fn upload_queries(
        &self,
        vectors: &[f32],
        ranges: &[[u32; 2]],
    ) -> Result<DeviceQueries, KernelError> {
        let mut st = Stager::new(self).unstaged();
        let t = QueryTickets::push(&mut st, vectors, ranges)?;
        t.on(&st.finish()?)
    }

    pub fn upload_mask(&self, m: &BucketMask<'_>) -> Result<DeviceMask, KernelError> {
        Ok(DeviceMask {
            tables: m.tables,
            words: BucketMask::words(m.buckets),
            row_buckets: self.upload(m.row_buckets)?,
            query_masks: self.upload(m.query_masks)?,
        })
    }

    pub fn upload_timeline(&self, t: &Timeline<'_>) -> Result<DeviceTimeline, KernelError> {
        Ok(DeviceTimeline {
            positions: self.upload(t.positions)?,
            groups: self.upload(t.groups)?,
        })
    }

    pub fn upload_rank_rows(&self, r: &RankRows<'_>) -> Result<DeviceRankRows, KernelError> {
        Ok(DeviceRankRows {
            timeline: self.upload_timeline(&r.timeline)?,
            importance: self.upload(&nonempty(r.importance))?,
        })
    }

    /// A batch's per-query inputs on the device: in one staging copy unless staging is off.
    pub fn upload_rank_queries(
        &self,
        q: &RankQueries<'_>,
    ) -> Result<DeviceRankQueries, KernelError> {
        let mut st = Stager::new(self);
        let sparse = st.push(q.sparse)?;
        let flags = st.push(q.flags)?;
        let t = RankTickets::push(&mut st, q)?;
        let staged = st.finish()?;
        let (sparse, flags) = (staged.get(sparse)?, staged.get(flags)?);
        t.on(&staged, sparse, flags)
    }

    pub fn sms(&self) -> usize {
        self.sms
    }

    /// Bucket ids (`n × tables`) of device vectors `x` (`n × dim`) for projections `proj`.
    pub fn lsh_project_dev(
        &self,
        x: &CudaSlice<f32>,
        n: usize,
        dim: usize,
        proj: &CudaSlice<f32>,
        tables: usize,
        buckets: usize,
    ) -> Result<CudaSlice<u32>, KernelError> {
        let f = self.cuda.get_or_load_custom_func(
            "memdex_lsh_project",
            "memdex_lsh_project",
            ptx::LSH_PROJECT,
        )?;
        let mut out = self.cuda.alloc_zeros::<u32>(n * tables)?;
        if n == 0 {
            return Ok(out);
        }
        let half = buckets / 2;
        let (d, t, h) = (dim as u32, tables as u32, half as u32);
        let cfg = LaunchConfig {
            grid_dim: (n as u32, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: ((dim + tables * half) * 4) as u32,
        };
        let mut b = f.builder();
        b.arg(x).arg(&d).arg(proj).arg(&t).arg(&h).arg(&mut out);
        // SAFETY: argument order and types match memdex_lsh_project; x holds n × dim floats,
        // proj tables × half × dim, out n × tables (checked by the callers / allocated here);
        // shared memory is sized as the kernel indexes it.
        unsafe { launch(b, cfg)? };
        Ok(out)
    }

    /// Per-query top-k of `s + α·env` (see `kernels/cuda/fragrel_env.cu`).
    pub fn fragrel_topk_dev(
        &self,
        m: &DeviceMatrix,
        t: &DeviceTimeline,
        q: &DeviceQueries,
        mask: Option<&DeviceMask>,
        k: usize,
        p: FragRelParams,
    ) -> Result<DeviceTopK, KernelError> {
        let f = self.cuda.get_or_load_custom_func(
            fragrel_width(m.dim),
            "memdex_fragrel_env",
            ptx::FRAGREL_ENV,
        )?;
        let mut out_s = self.cuda.alloc_zeros::<f32>(q.n * k)?;
        let mut out_r = self.cuda.alloc_zeros::<u32>(q.n * k)?;
        if q.n == 0 {
            return Ok(DeviceTopK {
                k,
                scores: out_s,
                rows: out_r,
            });
        }
        let stride = q.max_len.max(1);
        let mut scratch = self.cuda.alloc_zeros::<f32>(q.n * 3 * stride)?;
        let null = 0u64;
        let (dim, k32, st) = (m.dim as u32, k as u32, stride as u32);
        let (tables, words) = mask.map_or((0u32, 0u32), |mk| (mk.tables as u32, mk.words as u32));
        let cfg = LaunchConfig {
            grid_dim: (q.n as u32, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let (vectors, ranges) = (q.vectors.view()?, q.ranges.view()?);
        let mut b = f.builder();
        b.arg(&m.data).arg(&dim).arg(&vectors).arg(&ranges);
        b.arg(&t.positions).arg(&t.groups).arg(&p.alpha).arg(&p.w);
        match mask {
            Some(mk) => b.arg(&mk.row_buckets).arg(&mk.query_masks),
            None => b.arg(&null).arg(&null),
        };
        b.arg(&tables)
            .arg(&words)
            .arg(&k32)
            .arg(&mut scratch)
            .arg(&st);
        b.arg(&mut out_s).arg(&mut out_r);
        // SAFETY: argument order and types match memdex_fragrel_topk; scratch holds
        // nq × 3 × stride floats with stride ≥ every range's length; positions/groups hold one
        // entry per matrix row.
        unsafe { launch(b, cfg)? };
        Ok(DeviceTopK {
            k,
            scores: out_s,
            rows: out_r,
        })
    }

    /// The default ranking pipeline fused (see `kernels/cuda/rank.cu`): `2k` slots per query, merged
    /// into `k` by the host ([`RankKernels::rank_topk`]).
    pub fn rank_topk_dev(
        &self,
        m: &DeviceMatrix,
        rows: &DeviceRankRows,
        q: &DeviceRankQueries,
        p: &RankParams,
        k: usize,
    ) -> Result<DeviceTopK, KernelError> {
        let nq = q.queries.n;
        let mut out_s = self.cuda.alloc_zeros::<f32>((nq * 2 * k).max(1))?;
        let mut out_r = self.cuda.alloc_zeros::<u32>((nq * 2 * k).max(1))?;
        self.rank_launch(m, rows, q, p, k, RankOut::TopK(&mut out_s, &mut out_r))?;
        Ok(DeviceTopK {
            k: 2 * k,
            scores: out_s,
            rows: out_r,
        })
    }

    /// Every range row's final score under the fused pipeline (`total` = the ranges' rows;
    /// dead rows −∞; the time stage's `front` left to the caller).
    pub fn rank_scores_dev(
        &self,
        m: &DeviceMatrix,
        rows: &DeviceRankRows,
        q: &DeviceRankQueries,
        p: &RankParams,
        total: usize,
    ) -> Result<CudaSlice<f32>, KernelError> {
        let mut out = self.cuda.alloc_zeros::<f32>(total.max(1))?;
        self.rank_launch(m, rows, q, p, 1, RankOut::All(&mut out))?;
        Ok(out)
    }

    fn rank_launch(
        &self,
        m: &DeviceMatrix,
        rows: &DeviceRankRows,
        q: &DeviceRankQueries,
        p: &RankParams,
        k: usize,
        out: RankOut<'_>,
    ) -> Result<(), KernelError> {
        let nq = q.queries.n;
        if nq == 0 {
            return Ok(());
        }
        let f = self
            .cuda
            .get_or_load_custom_func("memdex_rank_topk", "memdex_rank", ptx::RANK)?;
        let stride = q.queries.max_len.max(1);
        let mut scratch = self.cuda.alloc_zeros::<f32>(nq * 3 * stride)?;
        self.rank_dense(m, &q.queries, &mut scratch, stride)?;
        let (k32, st) = (k as u32, stride as u32);
        let fr = p.fragrel.unwrap_or(FragRelParams { alpha: 0.0, w: 1.0 });
        let (use_fr, w_imp) = (u32::from(p.fragrel.is_some()), p.importance.unwrap_or(0.0));
        let (use_imp, sparse_fused) =
            (u32::from(p.importance.is_some()), u32::from(p.sparse_fused));
        let null = 0u64;
        let cfg = LaunchConfig {
            grid_dim: (nq as u32, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let ranges = q.queries.ranges.view()?;
        let (sparse, flags, offsets) = (q.sparse.view()?, q.flags.view()?, q.offsets.view()?);
        let (mode, factor) = (q.time_mode.view()?, q.time_factor.view()?);
        let mut b = f.builder();
        b.arg(&ranges);
        b.arg(&rows.timeline.positions).arg(&rows.timeline.groups);
        b.arg(&rows.importance);
        b.arg(&sparse)
            .arg(&flags)
            .arg(&offsets)
            .arg(&mode)
            .arg(&factor);
        b.arg(&p.w_dense).arg(&p.w_sparse).arg(&sparse_fused);
        b.arg(&use_fr).arg(&fr.alpha).arg(&fr.w);
        b.arg(&use_imp).arg(&w_imp).arg(&k32);
        b.arg(&mut scratch).arg(&st);
        match out {
            RankOut::TopK(s, r) => b.arg(s).arg(r).arg(&null),
            RankOut::All(all) => b.arg(&null).arg(&null).arg(all),
        };
        // SAFETY: argument order and types match memdex_rank_topk (after memdex_rank_dense
        // filled each query's dense cosines into its scratch); per-row inputs hold one
        // entry per matrix row, sparse/flags one entry per range row at the
        // queries' offsets (never read for an empty range), time rules and offsets one per
        // query; scratch holds nq × 3 × stride floats with stride ≥ every range's length; the
        // top-k outputs nq × 2k slots, or (out_all) one float per range row at the offsets;
        // the kernel writes only the outputs it is given (null pointers are never written).
        unsafe { launch(b, cfg) }
    }

    /// A parts call's inputs checked and on the device: the batch's matrix and rows assembled
    /// from resident parts, the queries uploaded.
    fn parts_on_device(
        &self,
        dim: usize,
        parts: &[RankPart<'_>],
        queries: &RankQueries<'_>,
        params: &RankParams,
        k: usize,
    ) -> Result<(DeviceMatrix, DeviceRankRows, DeviceRankQueries), KernelError> {
        let (total, starts) = check_parts(dim, parts, queries.ranges)?;
        check_rank_queries(dim, total, queries, params, k, true)?;
        let (dm, dr) = self.resident.assemble(self, dim, parts, &starts, total)?;
        Ok((dm, dr, self.upload_rank_queries(queries)?))
    }

    /// [`RankKernels::rank_topk`]'s answer from inputs on the device (the kernel's `2k` slots per
    /// query merged into `k`).
    fn rank_topk_on(
        &self,
        (dm, dr, dq): &(DeviceMatrix, DeviceRankRows, DeviceRankQueries),
        params: &RankParams,
        k: usize,
    ) -> Result<TopKResult, KernelError> {
        let r = self.to_host(&self.rank_topk_dev(dm, dr, dq, params, k)?)?;
        Ok(merge_lists(&r.scores, &r.rows, k))
    }

    /// [`RankKernels::rank_scores`]'s answer from inputs on the device (`total` range rows).
    fn rank_scores_on(
        &self,
        (dm, dr, dq): &(DeviceMatrix, DeviceRankRows, DeviceRankQueries),
        params: &RankParams,
        total: usize,
    ) -> Result<Vec<f32>, KernelError> {
        let mut all = self.download(&self.rank_scores_dev(dm, dr, dq, params, total)?)?;
        all.truncate(total);
        Ok(all)
    }

    /// `r` on the host, after one wait for the device (two with staging off).
    fn to_host(&self, r: &DeviceTopK) -> Result<TopKResult, KernelError> {
        let (scores, rows) = self.download_topk(&r.scores, &r.rows)?;
        Ok(TopKResult {
            k: r.k,
            scores,
            rows,
        })
    }
}

/// The FragRel top-k kernel for rows of `dim`: the `_d512` instantiation (2 chunks of 16 bytes
/// per lane, 40 registers on sm_90a, twice the blocks per SM) when it fits, else the wide one.
fn fragrel_width(dim: usize) -> &'static str {
    if dim <= 512 {
        "memdex_fragrel_topk_d512"
    } else {
        "memdex_fragrel_topk"
    }
}

/// Where the fused ranking writes: the top-k lists, or every row's score.
enum RankOut<'a> {
    TopK(&'a mut CudaSlice<f32>, &'a mut CudaSlice<u32>),
    All(&'a mut CudaSlice<f32>),
}

/// `v` itself (no host copy before the upload), or one default value when it is empty (the
/// device has no zero-length buffers; the kernels never read an empty input).
fn nonempty<T: Clone + Default>(v: &[T]) -> std::borrow::Cow<'_, [T]> {
    if v.is_empty() {
        std::borrow::Cow::Owned(vec![T::default()])
    } else {
        std::borrow::Cow::Borrowed(v)
    }
}

/// Launches `b` with `cfg` on the device's stream.
///
/// # Safety
/// `b`'s arguments must match the kernel's parameter list in order and type, and every buffer
/// must be as large as the kernel indexes for `cfg`'s grid (a kernel reading past a buffer is
/// undefined behaviour on the device).
unsafe fn launch(mut b: LaunchArgs<'_>, cfg: LaunchConfig) -> Result<(), KernelError> {
    // SAFETY: forwarded to the caller.
    unsafe { b.launch(cfg) }.map_err(|e| KernelError::Cuda(candle_core::Error::wrap(e)))?;
    Ok(())
}

impl KernelDevice for Gpu {
    fn device(&self) -> String {
        format!("cuda:{}", self.ordinal)
    }

    fn faults(&self) -> Vec<String> {
        self.resident.faults()
    }
}

impl HashKernels for Gpu {
    fn lsh_project(
        &self,
        x: &[f32],
        dim: usize,
        proj: &[f32],
        tables: usize,
        buckets: usize,
    ) -> Result<Vec<u32>, KernelError> {
        let n = check_lsh(x, dim, proj, tables, buckets)?;
        let (xd, pd) = (self.upload(x)?, self.upload(proj)?);
        let out = self.lsh_project_dev(&xd, n, dim, &pd, tables, buckets)?;
        self.download(&out)
    }
}

impl RankKernels for Gpu {
    fn rank_topk(
        &self,
        m: &Matrix<'_>,
        rows: &RankRows<'_>,
        queries: &RankQueries<'_>,
        params: &RankParams,
        k: usize,
    ) -> Result<TopKResult, KernelError> {
        check_rank(m, rows, queries, params, k)?;
        let on = (
            self.upload_matrix(m)?,
            self.upload_rank_rows(rows)?,
            self.upload_rank_queries(queries)?,
        );
        self.rank_topk_on(&on, params, k)
    }

    fn rank_topk_parts(
        &self,
        dim: usize,
        parts: &[RankPart<'_>],
        queries: &RankQueries<'_>,
        params: &RankParams,
        k: usize,
    ) -> Result<TopKResult, KernelError> {
        let on = self.parts_on_device(dim, parts, queries, params, k)?;
        self.rank_topk_on(&on, params, k)
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
        let (total, starts) = check_parts(dim, parts, queries.ranges)?;
        // each part's columns are checked when they are uploaded (text_inputs_dev)
        let once = PartTexts::CheckedOnUpload;
        check_text(dim, parts, &starts, texts, text, queries, params, once)?;
        check_rank_queries(dim, total, queries, params, k, false)?;
        let (dm, dr) = self.resident.assemble(self, dim, parts, &starts, total)?;
        let on = self.resident_texts((parts, texts), dim)?;
        let stream = self.cuda.cuda_stream();
        // the host's whole preparation first, then one copy, then the launches back to back
        let (table, guards) = text::pointer_table(&on, &stream);
        let mut st = Stager::new(self);
        let rq = RankTickets::push(&mut st, queries)?;
        let tt = TextTickets::push(&mut st, (&table, &on), &starts, text)?;
        let staged = st.finish()?;
        let t = tt.on(&staged)?;
        let (sparse, flags) = (
            self.cuda.alloc_zeros::<f32>(total.max(1))?,
            self.cuda.alloc_zeros::<u8>(total.max(1))?,
        );
        let mut dq = rq.on(&staged, DeviceBuf::Own(sparse), DeviceBuf::Own(flags))?;
        self.text_launch(&t, text, &mut dq, dim, params)?;
        drop(guards);
        self.rank_topk_on(&(dm, dr, dq), params, k)
    }

    fn rank_scores_parts(
        &self,
        dim: usize,
        parts: &[RankPart<'_>],
        queries: &RankQueries<'_>,
        params: &RankParams,
    ) -> Result<Vec<f32>, KernelError> {
        let on = self.parts_on_device(dim, parts, queries, params, 1)?;
        self.rank_scores_on(&on, params, range_offsets(queries.ranges).1)
    }

    fn rank_scores(
        &self,
        m: &Matrix<'_>,
        rows: &RankRows<'_>,
        queries: &RankQueries<'_>,
        params: &RankParams,
    ) -> Result<Vec<f32>, KernelError> {
        check_rank(m, rows, queries, params, 1)?;
        let on = (
            self.upload_matrix(m)?,
            self.upload_rank_rows(rows)?,
            self.upload_rank_queries(queries)?,
        );
        self.rank_scores_on(&on, params, range_offsets(queries.ranges).1)
    }
}
