//! `memdex-gpu-bench`: device-side timings of memdex's kernels on one CUDA device, printed as
//! one JSON object per line (what `scripts/gpu-check.sh` collects). Method: the ceilings first
//! (device-to-device copy bandwidth measured here), a warm-up launch, CUDA-event timing on the
//! device's stream, the median of `--repeats`, fresh random inputs for every timed launch
//! (queries and their tenants are redrawn: each tenant exactly once, or exactly 10 times, in a
//! fresh shuffled order; the matrix is random normal, never zeros).
//!
//! The segmented top-k runs as `--scan` says: `cuda` (the CUDA-core tiled scan), `tensor` (the
//! tensor-core scan, `tensor_topk.cu`) or `both` (default: each case on both, the CUDA-core
//! scan first; each line says its `variant` and `kernel`).
//!
//! usage: memdex-gpu-bench [--tenants 1000] [--items 5000] [--dim 384] [--k 10] [--repeats 10]
//!                         [--scan both|cuda|tensor]
use std::time::Instant;

use anyhow::{bail, Context, Result};
use candle_core::cuda_backend::cudarc::driver::sys::{CUdevice_attribute, CUevent_flags};
use candle_core::cuda_backend::cudarc::driver::CudaSlice;
use candle_core::{DType, Storage, Tensor};
use memdex_kernels::gpu::{DeviceMask, DeviceMatrix, DeviceQueries, DeviceTimeline, Gpu};
use memdex_kernels::tiles::{QueryTiles, MAX_TILE};
use memdex_kernels::{f16, BucketMask, FragRelParams};
use memdex_score::lsh::{Lsh, LshParams};

struct Args {
    tenants: usize,
    items: usize,
    dim: usize,
    k: usize,
    repeats: usize,
    scan: Vec<Variant>,
}

/// Which scan a segmented top-k case runs.
#[derive(Clone, Copy, PartialEq)]
enum Variant {
    /// `segmented_topk_dev`: the tiled scan on CUDA cores.
    CudaCores,
    /// `tensor_topk_dev`: the tiled scan on tensor cores, candidates re-scored in f32.
    TensorCores,
}

impl Variant {
    fn label(self) -> &'static str {
        match self {
            Variant::CudaCores => "cuda_cores",
            Variant::TensorCores => "tensor_cores",
        }
    }
}

fn parse() -> Result<Args> {
    let mut a = Args {
        tenants: 1000,
        items: 5000,
        dim: 384,
        k: 10,
        repeats: 10,
        scan: vec![Variant::CudaCores, Variant::TensorCores],
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        if flag == "--scan" {
            a.scan = match value.as_str() {
                "both" => vec![Variant::CudaCores, Variant::TensorCores],
                "cuda" => vec![Variant::CudaCores],
                "tensor" => vec![Variant::TensorCores],
                v => bail!("--scan {v}: both, cuda or tensor"),
            };
            continue;
        }
        let v: usize = value
            .parse()
            .with_context(|| format!("{flag} {value}: not a number"))?;
        match flag.as_str() {
            "--tenants" => a.tenants = v,
            "--items" => a.items = v,
            "--dim" => a.dim = v,
            "--k" => a.k = v,
            "--repeats" => a.repeats = v.max(1),
            _ => bail!("unknown flag {flag}"),
        }
    }
    Ok(a)
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Tenants 0..n, each exactly `per` times, in a Fisher–Yates shuffled order.
    fn shuffled_tenants(&mut self, n: usize, per: usize) -> Vec<usize> {
        let mut t: Vec<usize> = (0..n * per).map(|i| i % n).collect();
        for i in (1..t.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            t.swap(i, j);
        }
        t
    }
    fn unit_vectors(&mut self, n: usize, dim: usize) -> Vec<f32> {
        let mut v: Vec<f32> = (0..n * dim)
            .map(|_| (self.next() >> 40) as f32 / (1u64 << 24) as f32 - 0.5)
            .collect();
        for row in v.chunks_exact_mut(dim) {
            let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt();
            row.iter_mut().for_each(|x| *x /= norm);
        }
        v
    }
}

/// Median device time (ms) of `f` over `repeats` launches after one warm-up; `prepare` runs
/// before each launch, outside the timed region (fresh inputs).
fn time_ms<P, T>(
    gpu: &Gpu,
    repeats: usize,
    mut prepare: impl FnMut(usize) -> Result<P>,
    mut f: impl FnMut(&P) -> Result<T>,
) -> Result<(f64, Vec<f64>)> {
    let stream = gpu.cuda().cuda_stream();
    let input = prepare(0)?;
    f(&input)?;
    gpu.synchronize()?;
    let mut times = Vec::with_capacity(repeats);
    for i in 0..repeats {
        let input = prepare(i + 1)?;
        gpu.synchronize()?;
        let e0 = stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        let out = f(&input)?;
        let e1 = stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        times.push(e0.elapsed_ms(&e1)? as f64);
        drop(out);
    }
    let mut sorted = times.clone();
    sorted.sort_by(f64::total_cmp);
    Ok((sorted[sorted.len() / 2], times))
}

fn emit(v: serde_json::Value) {
    println!("{v}");
}

/// The device's data-sheet numbers, printed first: theoretical DRAM bandwidth (GB/s, from the
/// memory clock and bus width, double data rate) and FP32 rate (TFLOP/s, 128 FP32 lanes per SM
/// as on Ampere/Hopper, FMA = 2 FLOPs). Attributes a driver no longer reports come back None.
fn device_ceilings(gpu: &Gpu) -> (Option<f64>, Option<f64>) {
    let stream = gpu.cuda().cuda_stream();
    let ctx = stream.context();
    let attr = |a| ctx.attribute(a).ok().filter(|&v| v > 0).map(|v| v as f64);
    let sms = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    let clock_khz = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
    let mem_khz = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
    let bus_bits = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
    let bw = mem_khz
        .zip(bus_bits)
        .map(|(k, b)| 2.0 * k * 1e3 * b / 8.0 / 1e9);
    let fp32 = sms
        .zip(clock_khz)
        .map(|(n, k)| n * 128.0 * 2.0 * k * 1e3 / 1e12);
    emit(
        serde_json::json!({"bench": "device", "name": ctx.name().ok(), "sms": sms,
        "clock_mhz": clock_khz.map(|k| k / 1e3), "memory_clock_mhz": mem_khz.map(|k| k / 1e3),
        "bus_bits": bus_bits, "theoretical_gb_per_s": bw, "fp32_tflops": fp32}),
    );
    (bw, fp32)
}

fn main() -> Result<()> {
    let a = parse()?;
    let gpu = Gpu::new(0)?;
    let (theoretical_gbs, fp32_tflops) = device_ceilings(&gpu);
    let ceilings = Ceilings {
        copy_gbs: copy_bandwidth(&gpu, &a)?,
        theoretical_gbs,
        fp32_tflops,
    };
    let store = DeviceStore::build(&gpu, &a)?;
    let mut rng = Rng(0x5eed);
    for (label, per, whole) in [
        ("per_tenant_1x", 1, false),
        ("per_tenant_10x", 10, false),
        ("single_query_all_rows", 1, true),
    ] {
        for &variant in &a.scan {
            let case = Case {
                label,
                per,
                whole,
                variant,
            };
            segmented_topk(&store, &mut rng, &ceilings, case)?;
        }
    }
    segmented_topk_lsh(&store, &mut rng)?;
    fragrel_topk(&store, &mut rng, &ceilings)
}

/// What the timings are compared with: the measured device-to-device copy bandwidth and the
/// data-sheet numbers ([`device_ceilings`]).
struct Ceilings {
    copy_gbs: f64,
    theoretical_gbs: Option<f64>,
    fp32_tflops: Option<f64>,
}

/// Ceiling 1: device-to-device copy of a buffer the size of the matrix (read + write), GB/s.
fn copy_bandwidth(gpu: &Gpu, a: &Args) -> Result<f64> {
    let bytes = a.tenants * a.items * a.dim * 2;
    let src = gpu.cuda().alloc_zeros::<u8>(bytes)?;
    let mut dst = gpu.cuda().alloc_zeros::<u8>(bytes)?;
    let (copy_ms, _) = time_ms(
        gpu,
        a.repeats,
        |_| Ok(()),
        |_| {
            gpu.cuda().memcpy_dtod(&src, &mut dst)?;
            Ok(())
        },
    )?;
    drop((src, dst));
    let copy_gbs = 2.0 * bytes as f64 / (copy_ms * 1e-3) / 1e9;
    emit(
        serde_json::json!({"bench": "d2d_copy", "bytes": bytes, "ms": copy_ms,
        "gb_per_s": copy_gbs, "note": "read + write bytes / time"}),
    );
    Ok(copy_gbs)
}

/// The store on the device: tenants × items random-normal rows, f16, tenant-contiguous, with
/// their bucket ids (b 64, L 4) computed on the device from the same f32 rows.
struct DeviceStore<'g> {
    gpu: &'g Gpu,
    a: &'g Args,
    rows: usize,
    row_bytes: usize,
    lsh: Lsh,
    matrix: DeviceMatrix,
    row_buckets: CudaSlice<u16>,
}

impl<'g> DeviceStore<'g> {
    fn build(gpu: &'g Gpu, a: &'g Args) -> Result<DeviceStore<'g>> {
        let t0 = Instant::now();
        let rows = a.tenants * a.items;
        let params = LshParams {
            buckets: 64,
            tables: 4,
            seed: 42,
        };
        let lsh = Lsh::new(a.dim, params);
        let proj = gpu.upload(lsh.projection())?;
        let mut data = gpu.cuda().alloc_zeros::<f16>(rows * a.dim)?;
        let mut buckets = gpu.cuda().alloc_zeros::<u32>(rows * 4)?;
        let chunk = 262_144usize;
        let mut lsh_ms = 0.0;
        for start in (0..rows).step_by(chunk) {
            let n = chunk.min(rows - start);
            lsh_ms += fill_rows(gpu, a.dim, &proj, start..start + n, &mut data, &mut buckets)?;
        }
        gpu.synchronize()?;
        emit(
            serde_json::json!({"bench": "lsh_project", "vectors": rows, "dim": a.dim,
            "tables": 4, "buckets": 64, "ms": lsh_ms, "vectors_per_s": rows as f64 / (lsh_ms * 1e-3),
            "setup_s": t0.elapsed().as_secs_f64()}),
        );
        let ids: Vec<u16> = (gpu.download(&buckets)?.into_iter())
            .map(|b| b as u16)
            .collect();
        Ok(DeviceStore {
            gpu,
            a,
            rows,
            row_bytes: a.dim * 2,
            lsh,
            matrix: DeviceMatrix {
                dim: a.dim,
                rows,
                data,
            },
            row_buckets: gpu.upload(&ids)?,
        })
    }

    /// Fresh queries: random unit vectors; tenants drawn WITHOUT replacement: each tenant
    /// exactly `per` times, in a fresh shuffled order (a permutation when per = 1), so no
    /// tenant's rows are scanned more often than the case says (no repeats served from L2).
    /// `whole`: one query over every row.
    fn queries(&self, rng: &mut Rng, per: usize, whole: bool) -> Result<(DeviceQueries, Vec<f32>)> {
        let a = self.a;
        let nq = if whole { 1 } else { a.tenants * per };
        let v = rng.unit_vectors(nq, a.dim);
        let ranges: Vec<[u32; 2]> = if whole {
            vec![[0, self.rows as u32]]
        } else {
            (rng.shuffled_tenants(a.tenants, per).into_iter())
                .map(|t| [(t * a.items) as u32, ((t + 1) * a.items) as u32])
                .collect()
        };
        Ok((self.gpu.upload_queries(&v, &ranges)?, v))
    }
}

/// Random unit rows `range` of the store: their f16 copy into `data` and their bucket ids
/// (projected on the device) into `buckets`; returns the projection's device time, ms.
fn fill_rows(
    gpu: &Gpu,
    dim: usize,
    proj: &CudaSlice<f32>,
    range: std::ops::Range<usize>,
    data: &mut CudaSlice<f16>,
    buckets: &mut CudaSlice<u32>,
) -> Result<f64> {
    let (start, n) = (range.start, range.len());
    let x = Tensor::randn(0f32, 1.0, (n, dim), gpu.device())?;
    let x = x.broadcast_div(&x.sqr()?.sum_keepdim(1)?.sqrt()?)?;
    let h = x.to_dtype(DType::F16)?;
    let (xs, hs) = (x.storage_and_layout().0, h.storage_and_layout().0);
    let (Storage::Cuda(xs), Storage::Cuda(hs)) = (&*xs, &*hs) else {
        bail!("tensors not on CUDA")
    };
    let stream = gpu.cuda().cuda_stream();
    let e0 = stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
    let ids = gpu.lsh_project_dev(xs.as_cuda_slice::<f32>()?, n, dim, proj, 4, 64)?;
    let e1 = stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
    let ms = e0.elapsed_ms(&e1)? as f64;
    gpu.cuda()
        .memcpy_dtod(&ids, &mut buckets.slice_mut(start * 4..(start + n) * 4))?;
    gpu.cuda().memcpy_dtod(
        hs.as_cuda_slice::<f16>()?,
        &mut data.slice_mut(start * dim..(start + n) * dim),
    )?;
    Ok(ms)
}

/// One segmented top-k case: `per` queries per tenant, or one query over every row, on one
/// scan.
struct Case {
    label: &'static str,
    per: usize,
    whole: bool,
    variant: Variant,
}

/// segmented_topk on fresh queries of `case`, reported against the ceilings.
fn segmented_topk(s: &DeviceStore<'_>, rng: &mut Rng, c: &Ceilings, case: Case) -> Result<()> {
    let (a, gpu) = (s.a, s.gpu);
    let Case {
        label,
        per,
        whole,
        variant,
    } = case;
    let nq = if whole { 1 } else { a.tenants * per };
    // the tiles (queries grouped by range) are built on the host when the queries are
    // uploaded, outside the timed launches: their host time is reported beside
    let (probe, _) = s.queries(rng, per, whole)?;
    let t0 = Instant::now();
    let tiles = QueryTiles::new(&probe.host_ranges, MAX_TILE);
    let group_ms = t0.elapsed().as_secs_f64() * 1e3;
    let (kernel, splits) = scan_kernel(gpu, &probe, a, variant)?;
    drop(probe);
    let (ms, all) = time_ms(
        gpu,
        a.repeats,
        |_| s.queries(rng, per, whole),
        |(q, _)| {
            Ok(match variant {
                Variant::CudaCores => gpu.segmented_topk_dev(&s.matrix, q, None, a.k)?,
                Variant::TensorCores => gpu.tensor_topk_dev(&s.matrix, q, a.k)?,
            })
        },
    )?;
    let rows_per_query = if whole { s.rows } else { a.items };
    // logical bytes: what the queries read (rows per query × row bytes); distinct bytes:
    // the rows of the tenants scanned (every tenant once here), what DRAM must deliver at
    // least once; the GB/s below count logical bytes, and equal distinct ones only at 1x
    let logical = (if whole { s.rows } else { nq * a.items }) as f64 * s.row_bytes as f64;
    let distinct = s.rows as f64 * s.row_bytes as f64;
    let gbs = logical / (ms * 1e-3) / 1e9;
    let distinct_gbs = distinct / (ms * 1e-3) / 1e9;
    // ceilings: bytes over the measured copy bandwidth; FLOPs (dot + norm: 4·dim per row)
    // over the FP32 rate
    let flops = logical / s.row_bytes as f64 * 4.0 * a.dim as f64;
    let ceiling_bytes_ms = distinct / (c.copy_gbs * 1e9) * 1e3;
    let ceiling_flops_ms = c.fp32_tflops.map(|tf| flops / (tf * 1e12) * 1e3);
    emit(
        serde_json::json!({"bench": "segmented_topk", "case": label, "queries": nq,
        "variant": variant.label(), "kernel": kernel,
        "tenant_draw": if whole { "all rows" } else { "each tenant exactly per_tenant times, shuffled" },
        "per_tenant": if whole { 0 } else { per },
        "rows_per_query": rows_per_query, "dim": a.dim, "k": a.k,
        "splits": splits, "tiles": tiles.len(), "longest_tile": tiles.longest,
        "host_group_ms": group_ms,
        "ms": ms, "all_ms": all, "queries_per_s": nq as f64 / (ms * 1e-3),
        "logical_bytes": logical, "distinct_bytes": distinct,
        "scan_gb_per_s": gbs, "fraction_of_copy_bw": gbs / c.copy_gbs,
        "distinct_gb_per_s": distinct_gbs,
        "distinct_fraction_of_copy_bw": distinct_gbs / c.copy_gbs,
        "ceiling_bytes_ms": ceiling_bytes_ms, "ceiling_flops_ms": ceiling_flops_ms,
        "fraction_of_theoretical_bw": c.theoretical_gbs.map(|t| gbs / t)}),
    );
    Ok(())
}

/// The kernel `variant` launches for queries like `q` (the tensor-core scan takes the CUDA-core
/// one where it does not apply) and the parts it cuts each range into.
fn scan_kernel(
    gpu: &Gpu,
    q: &DeviceQueries,
    a: &Args,
    variant: Variant,
) -> Result<(&'static str, usize)> {
    if variant == Variant::TensorCores {
        if let Some(n) = gpu.tensor_splits(q, a.dim, a.k)? {
            return Ok(("memdex_tensor_topk", n));
        }
    }
    Ok(("memdex_segmented_topk", gpu.splits(q, a.dim, a.k)?))
}

/// Bucketed top-k: 1 probe per table (b 64, L 4), masks from the projections on the host.
fn segmented_topk_lsh(s: &DeviceStore<'_>, rng: &mut Rng) -> Result<()> {
    let (a, gpu) = (s.a, s.gpu);
    let words = BucketMask::words(64);
    let nq = a.tenants;
    let (ms, _) = time_ms(
        gpu,
        a.repeats,
        |_| {
            let (q, v) = s.queries(rng, 1, false)?;
            let probes: Vec<Vec<Vec<u32>>> = (v.chunks_exact(a.dim))
                .map(|x| (0..4).map(|t| s.lsh.probes(x, t, 1)).collect())
                .collect();
            let bits = BucketMask::query_bits(&probes, 4, 64);
            let mask = DeviceMask {
                tables: 4,
                words,
                row_buckets: s.row_buckets.clone(),
                query_masks: gpu.upload(&bits)?,
            };
            Ok((q, mask))
        },
        |(q, mask)| Ok(gpu.segmented_topk_dev(&s.matrix, q, Some(mask), a.k)?),
    )?;
    emit(
        serde_json::json!({"bench": "segmented_topk_lsh", "queries": nq, "tables": 4,
        "buckets": 64, "probes": 1, "ms": ms, "queries_per_s": nq as f64 / (ms * 1e-3)}),
    );
    Ok(())
}

/// FragRel fused: sessions of 20 items, positions with gaps.
fn fragrel_topk(s: &DeviceStore<'_>, rng: &mut Rng, c: &Ceilings) -> Result<()> {
    let (a, gpu) = (s.a, s.gpu);
    let positions: Vec<u32> = (0..s.rows as u32)
        .map(|i| (i % a.items as u32) * 2)
        .collect();
    let groups: Vec<u32> = (0..s.rows as u32).map(|i| i / 20).collect();
    let timeline = DeviceTimeline {
        positions: gpu.upload(&positions)?,
        groups: gpu.upload(&groups)?,
    };
    let p = FragRelParams { alpha: 0.5, w: 0.8 };
    let nq = a.tenants;
    let (ms, _) = time_ms(
        gpu,
        a.repeats,
        |_| s.queries(rng, 1, false),
        |(q, _)| Ok(gpu.fragrel_topk_dev(&s.matrix, &timeline, q, None, a.k, p)?),
    )?;
    let gbs = (nq * a.items * s.row_bytes) as f64 / (ms * 1e-3) / 1e9;
    emit(
        serde_json::json!({"bench": "fragrel_topk", "queries": nq, "rows_per_query": a.items,
        "ms": ms, "queries_per_s": nq as f64 / (ms * 1e-3), "scan_gb_per_s": gbs,
        "fraction_of_copy_bw": gbs / c.copy_gbs}),
    );
    Ok(())
}
