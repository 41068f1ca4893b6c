//! The tiled dense scans (`kernels/cuda/tile.cuh`): `segmented_topk` and the fused ranking's
//! dense step, each reading a range's rows once per tile of the queries that share it
//! ([`QueryTiles`]), and the same scan on tensor cores (`tensor_topk.cu`).

use candle_core::cuda_backend::cudarc::driver::{
    CudaFunction, CudaSlice, DevicePtr, LaunchConfig, PushKernelArg,
};

use super::{
    launch, DeviceBuf, DeviceMask, DeviceMatrix, DeviceQueries, DeviceTiles, DeviceTopK, Gpu,
    THREADS,
};
use crate::scan::ScanKernels;
use crate::tiles::{dense_tile, scan_tile, tensor_tile, QueryTiles, TileSmem, TileWidth, Tiled};
use crate::types::{check_scan, check_timeline};
use crate::{
    ptx, splits_for, BucketMask, FragRelParams, KernelError, Matrix, Timeline, TopKResult,
};

/// A tiled launch, decided once: its kernel, tiles, dynamic shared memory and parts per range.
struct TiledLaunch<'a> {
    f: CudaFunction,
    tiles: &'a DeviceTiles,
    smem: u32,
    splits: usize,
}

impl TiledLaunch<'_> {
    /// Grid: tiles × parts, 256 threads.
    fn config(&self) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (self.tiles.n as u32, self.splits as u32, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: self.smem,
        }
    }
}

impl Gpu {
    pub(super) fn upload_tiles(&self, t: &QueryTiles) -> Result<DeviceTiles, KernelError> {
        Ok(DeviceTiles {
            n: t.len(),
            longest: t.longest,
            queries: DeviceBuf::Own(self.upload(&super::nonempty(&t.queries))?),
            offsets: DeviceBuf::Own(self.upload(&t.offsets)?),
        })
    }

    /// Blocks of `f` (256 threads, `smem` bytes of dynamic shared memory) resident per SM,
    /// from the driver's occupancy calculator, times the SMs.
    pub(super) fn slots(&self, f: &CudaFunction, smem: usize) -> usize {
        let per_sm = f
            .occupancy_max_active_blocks_per_multiprocessor(THREADS, smem, None)
            .map_or(1, |n| n.max(1) as usize);
        self.sms() * per_sm
    }

    /// `kernel`'s launch for `q`: the tiles uploaded with the queries when they fit the
    /// kernel's shared memory (`owned` untouched), else tiles of the cap built into `owned`;
    /// the instantiation for `dim` and the longest tile; the parts per range that fill the
    /// device.
    fn tiled<'a>(
        &self,
        kernel: Tiled,
        dim: usize,
        q: &'a DeviceQueries,
        smem: TileSmem,
        owned: &'a mut Option<DeviceTiles>,
    ) -> Result<TiledLaunch<'a>, KernelError> {
        let tiles = if q.tiles.longest <= smem.cap {
            &q.tiles
        } else {
            let t = self.upload_tiles(&QueryTiles::new(&q.host_ranges, smem.cap))?;
            &*owned.insert(t)
        };
        let (module, ptx) = match kernel {
            Tiled::Scan => ("memdex_segmented_topk", ptx::SEGMENTED_TOPK),
            Tiled::Dense => ("memdex_rank", ptx::RANK),
            Tiled::Tensor => ("memdex_tensor_topk", ptx::TENSOR_TOPK),
        };
        let name = kernel.name(dim, TileWidth::for_longest(tiles.longest));
        let f = self.cuda.get_or_load_custom_func(name, module, ptx)?;
        let smem = smem.bytes(tiles.longest);
        Ok(TiledLaunch {
            splits: splits_for(tiles.n, q.max_len, self.slots(&f, smem)),
            f: f.into_cuda_function(),
            tiles,
            smem: smem as u32,
        })
    }

    /// The number of parts `segmented_topk_dev` cuts each range of `q` into for top `k`.
    pub fn splits(&self, q: &DeviceQueries, dim: usize, k: usize) -> Result<usize, KernelError> {
        let mut owned = None;
        Ok(self
            .tiled(Tiled::Scan, dim, q, scan_tile(dim, k), &mut owned)?
            .splits)
    }

    /// The number of parts `tensor_topk_dev` cuts each range of `q` into for top `k`, None
    /// where it scans on CUDA cores ([`tensor_tile`]).
    pub fn tensor_splits(
        &self,
        q: &DeviceQueries,
        dim: usize,
        k: usize,
    ) -> Result<Option<usize>, KernelError> {
        let Some(smem) = tensor_tile(dim, k) else {
            return Ok(None);
        };
        let mut owned = None;
        Ok(Some(
            self.tiled(Tiled::Tensor, dim, q, smem, &mut owned)?.splits,
        ))
    }

    /// Per-query top-k over device-resident rows (see `kernels/cuda/segmented_topk.cu`).
    pub fn segmented_topk_dev(
        &self,
        m: &DeviceMatrix,
        q: &DeviceQueries,
        mask: Option<&DeviceMask>,
        k: usize,
    ) -> Result<DeviceTopK, KernelError> {
        let mut owned = None;
        let l = self.tiled(Tiled::Scan, m.dim, q, scan_tile(m.dim, k), &mut owned)?;
        let splits = l.splits;
        let mut part_s = self.cuda.alloc_zeros::<f32>((q.n * splits * k).max(1))?;
        let mut part_r = self.cuda.alloc_zeros::<u32>((q.n * splits * k).max(1))?;
        if q.n == 0 {
            return Ok(DeviceTopK {
                k,
                scores: part_s,
                rows: part_r,
            });
        }
        let null = 0u64;
        let (dim, k32, s32) = (m.dim as u32, k as u32, splits as u32);
        let cap = l.tiles.longest as u32;
        let (tables, words) = mask.map_or((0u32, 0u32), |mk| (mk.tables as u32, mk.words as u32));
        let stream = self.cuda.cuda_stream();
        let (vectors, ranges) = (q.vectors.view()?, q.ranges.view()?);
        let (tq, to) = (l.tiles.queries.view()?, l.tiles.offsets.view()?);
        let mut b = stream.launch_builder(&l.f);
        b.arg(&m.data).arg(&dim).arg(&vectors).arg(&ranges);
        b.arg(&tq).arg(&to).arg(&cap);
        match mask {
            Some(mk) => b.arg(&mk.row_buckets).arg(&mk.query_masks),
            None => b.arg(&null).arg(&null),
        };
        b.arg(&tables).arg(&words).arg(&k32).arg(&s32);
        b.arg(&mut part_s).arg(&mut part_r);
        // SAFETY: argument order and types match memdex_segmented_topk_* (a null u64 stands
        // for an absent mask pointer); ranges were checked against the matrix's rows; the
        // tiles hold every query once, each tile 1..=cap queries of one range, and the
        // instantiation's width is at least cap; shared memory is sized for cap queries as
        // the kernel lays it out (scan_tile); the outputs hold nq × splits × k entries,
        // splits ≤ MAX_SPLITS (the merge kernel's bound), k ≤ MAX_K.
        unsafe { launch(b, l.config())? };
        if splits == 1 {
            return Ok(DeviceTopK {
                k,
                scores: part_s,
                rows: part_r,
            });
        }
        self.merge_splits(&part_s, &part_r, q.n, splits, k)
    }

    /// Per-query top-k over device-resident rows on the tensor cores
    /// (`kernels/cuda/tensor_topk.cu`: f16 products, f32 accumulation, the kept candidates
    /// re-scored exactly in f32, a certified top k, else an exact rescan): the answer of
    /// [`Gpu::segmented_topk_dev`] within its tolerance. Where the kernel does not apply
    /// ([`tensor_tile`]: dim not a multiple of 16 or above 1,024, k above 112, rows not
    /// 32-byte aligned) this is `segmented_topk_dev` itself.
    pub fn tensor_topk_dev(
        &self,
        m: &DeviceMatrix,
        q: &DeviceQueries,
        k: usize,
    ) -> Result<DeviceTopK, KernelError> {
        let stream = self.cuda.cuda_stream();
        let aligned = m.data.device_ptr(&stream).0 % 32 == 0;
        let Some(smem) = tensor_tile(m.dim, k).filter(|_| aligned && q.n > 0) else {
            return self.segmented_topk_dev(m, q, None, k);
        };
        let mut owned = None;
        let l = self.tiled(Tiled::Tensor, m.dim, q, smem, &mut owned)?;
        let splits = l.splits;
        let mut part_s = self.cuda.alloc_zeros::<f32>(q.n * splits * k)?;
        let mut part_r = self.cuda.alloc_zeros::<u32>(q.n * splits * k)?;
        let (dim, rows, cap) = (m.dim as u32, m.rows as u32, l.tiles.longest as u32);
        let (k32, s32) = (k as u32, splits as u32);
        let (vectors, ranges) = (q.vectors.view()?, q.ranges.view()?);
        let (tq, to) = (l.tiles.queries.view()?, l.tiles.offsets.view()?);
        let mut b = stream.launch_builder(&l.f);
        b.arg(&m.data)
            .arg(&dim)
            .arg(&rows)
            .arg(&vectors)
            .arg(&ranges);
        b.arg(&tq).arg(&to).arg(&cap);
        b.arg(&k32).arg(&s32).arg(&mut part_s).arg(&mut part_r);
        // SAFETY: argument order and types match memdex_tensor_topk; ranges were checked
        // against the matrix's `rows` rows (the kernel reads whole 16-row blocks directly only
        // below `rows`, and stages the last ones), the rows are 32-byte aligned and dim a
        // multiple of 16 up to 1,024 (wmma's tiles; tensor_tile); tiles as in
        // segmented_topk_dev; shared memory is sized for cap queries as the kernel carves it
        // (tensor_tile); the outputs hold nq × splits × k entries, k + 16 <= MAX_K.
        unsafe { launch(b, l.config())? };
        if splits == 1 {
            return Ok(DeviceTopK {
                k,
                scores: part_s,
                rows: part_r,
            });
        }
        self.merge_splits(&part_s, &part_r, q.n, splits, k)
    }

    /// Reduces `splits` sorted lists of `k` per query to one (`memdex_topk_merge`).
    fn merge_splits(
        &self,
        part_s: &CudaSlice<f32>,
        part_r: &CudaSlice<u32>,
        nq: usize,
        splits: usize,
        k: usize,
    ) -> Result<DeviceTopK, KernelError> {
        let merge = self.cuda.get_or_load_custom_func(
            "memdex_topk_merge",
            "memdex_segmented_topk",
            ptx::SEGMENTED_TOPK,
        )?;
        let mut out_s = self.cuda.alloc_zeros::<f32>(nq * k)?;
        let mut out_r = self.cuda.alloc_zeros::<u32>(nq * k)?;
        let (s32, k32) = (splits as u32, k as u32);
        let cfg = LaunchConfig {
            grid_dim: (nq as u32, 1, 1),
            block_dim: (32, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = merge.builder();
        b.arg(part_s).arg(part_r).arg(&s32).arg(&k32);
        b.arg(&mut out_s).arg(&mut out_r);
        // SAFETY: memdex_topk_merge reads nq × splits × k entries (the caller's lists) and
        // writes nq × k (allocated here); splits ≤ MAX_SPLITS.
        unsafe { launch(b, cfg)? };
        Ok(DeviceTopK {
            k,
            scores: out_s,
            rows: out_r,
        })
    }

    /// The fused ranking's dense step (`memdex_rank_dense_*` in `kernels/cuda/rank.cu`): each
    /// query's cosines with its range's rows into its scratch (`nq × 3 × stride` floats, the
    /// first `stride` of each query's three).
    pub(super) fn rank_dense(
        &self,
        m: &DeviceMatrix,
        q: &DeviceQueries,
        scratch: &mut CudaSlice<f32>,
        stride: usize,
    ) -> Result<(), KernelError> {
        if q.n == 0 {
            return Ok(());
        }
        let mut owned = None;
        let l = self.tiled(Tiled::Dense, m.dim, q, dense_tile(m.dim), &mut owned)?;
        let (dim, cap) = (m.dim as u32, l.tiles.longest as u32);
        let (s32, st) = (l.splits as u32, stride as u32);
        let stream = self.cuda.cuda_stream();
        let (vectors, ranges) = (q.vectors.view()?, q.ranges.view()?);
        let (tq, to) = (l.tiles.queries.view()?, l.tiles.offsets.view()?);
        let mut b = stream.launch_builder(&l.f);
        b.arg(&m.data).arg(&dim).arg(&vectors).arg(&ranges);
        b.arg(&tq).arg(&to);
        b.arg(&cap).arg(&s32).arg(scratch).arg(&st);
        // SAFETY: argument order and types match memdex_rank_dense_*; ranges were checked
        // against the matrix's rows and stride ≥ every range's length, so each query writes
        // inside its first `stride` floats of scratch (nq × 3 × stride); tiles and shared
        // memory as in segmented_topk_dev (dense_tile).
        unsafe { launch(b, l.config()) }
    }
}

/// The bench side's scans on the device: the inputs uploaded per call, then the device-resident
/// entry points (`segmented_topk_dev`, `fragrel_topk_dev`).
impl ScanKernels for Gpu {
    fn segmented_topk(
        &self,
        m: &Matrix<'_>,
        queries: &[f32],
        ranges: &[[u32; 2]],
        mask: Option<&BucketMask<'_>>,
        k: usize,
    ) -> Result<TopKResult, KernelError> {
        check_scan(m, queries, ranges, mask, k)?;
        let dm = self.upload_matrix(m)?;
        let dq = self.upload_queries(queries, ranges)?;
        let dmask = mask.map(|mk| self.upload_mask(mk)).transpose()?;
        let r = self.segmented_topk_dev(&dm, &dq, dmask.as_ref(), k)?;
        self.to_host(&r)
    }

    fn tensor_topk(
        &self,
        m: &Matrix<'_>,
        queries: &[f32],
        ranges: &[[u32; 2]],
        k: usize,
    ) -> Result<TopKResult, KernelError> {
        check_scan(m, queries, ranges, None, k)?;
        let dm = self.upload_matrix(m)?;
        let dq = self.upload_queries(queries, ranges)?;
        let r = self.tensor_topk_dev(&dm, &dq, k)?;
        self.to_host(&r)
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
        check_scan(m, queries, ranges, mask, k)?;
        check_timeline(m, timeline, params)?;
        let dm = self.upload_matrix(m)?;
        let dt = self.upload_timeline(timeline)?;
        let dq = self.upload_queries(queries, ranges)?;
        let dmask = mask.map(|mk| self.upload_mask(mk)).transpose()?;
        let r = self.fragrel_topk_dev(&dm, &dt, &dq, dmask.as_ref(), k, params)?;
        self.to_host(&r)
    }
}
