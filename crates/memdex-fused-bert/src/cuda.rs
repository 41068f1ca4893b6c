//! The plan on a CUDA device (feature `cuda`): the kernels of `bert.cu` from the embedded PTX,
//! the products on a cuBLAS handle of its own, everything on a stream of its own (one per
//! encoder instance, so each model worker issues on its own stream), buffers kept between
//! batches and grown only when a bucket needs more, and each bucket's pass captured once as a
//! CUDA graph and replayed (`MEMDEX_CUDA_GRAPHS=0`: launched one by one instead). A batch costs
//! one host-to-device copy (ids and lengths), one graph launch, one device-to-host copy (the
//! pooled vectors) and one synchronisation.
//!
//! What the device must hold to this (no test runs here without one): memdex-embed's
//! `fused_cuda_matches_candle` (min cosine ≥ 0.9999 against candle's BERT on the golden texts,
//! eager and replayed, every bucket twice).
#![allow(unsafe_code)] // raw launches, cuBLAS calls and graph handles: see each `SAFETY`

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

use candle_core::cuda_backend::cudarc::cublas::{self, CudaBlas};
use candle_core::cuda_backend::cudarc::driver::{
    result, sys, CudaContext, CudaFunction, CudaGraph, CudaSlice, CudaStream, DevicePtr,
};
use candle_core::cuda_backend::cudarc::nvrtc::Ptx;
use half::f16;

use crate::plan::{Arg, Buf, Gemm, Kernel, Op, Plan, KERNELS, SCRATCH, THREADS};
use crate::shape::{Bucket, Shape, Weights};
use crate::{pack_batch, ptx, FusedError};

/// cuBLAS's workspace, set once so that no product allocates while a graph is captured.
const WORKSPACE_BYTES: usize = 32 << 20;
/// Graphs kept at most (buckets); past it they are dropped and captured again as they recur.
const MAX_GRAPHS: usize = 128;

fn cuda<E: std::fmt::Debug>(what: &str) -> impl Fn(E) -> FusedError + '_ {
    move |e| FusedError::Cuda(format!("{what}: {e:?}"))
}

/// The fused encoder on one CUDA device.
#[derive(Debug)]
pub struct CudaBert {
    shape: Shape,
    pad: u32,
    stream: Arc<CudaStream>,
    blas: CudaBlas,
    _workspace: CudaSlice<u8>,
    funcs: HashMap<&'static str, CudaFunction>,
    /// The weights on the device (held: the passes read them through `weight_ptrs`).
    _weights: Vec<CudaSlice<f16>>,
    /// Their device addresses.
    weight_ptrs: Vec<u64>,
    graphs: bool,
    state: Mutex<State>,
}

/// Buffers and graphs, used by one batch at a time.
#[derive(Debug, Default)]
struct State {
    /// Per scratch buffer ([`SCRATCH`]'s order), then the inputs (ids, then lengths) and the
    /// pooled vectors, each with its device address.
    buffers: Vec<Option<(CudaSlice<u8>, u64)>>,
    graphs: HashMap<Bucket, Graph>,
    /// Graphs captured so far (the first batch of each bucket, again after a buffer grew).
    captures: usize,
}

/// A captured pass.
struct Graph(CudaGraph);

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Graph")
    }
}

// SAFETY: a graph is launched and dropped only under `CudaBert::state`'s lock, one thread at a
// time, which is the external serialisation CUDA asks of graph objects.
unsafe impl Send for Graph {}

const INPUTS: usize = SCRATCH.len();
const OUTPUT: usize = SCRATCH.len() + 1;

impl CudaBert {
    /// Loads `weights` on the device of `ctx` (candle's context of the model's device), on a
    /// new stream. `pad`: the id that pads sequences.
    pub fn new(
        ctx: &Arc<CudaContext>,
        shape: Shape,
        weights: &Weights,
        pad: u32,
    ) -> Result<CudaBert, FusedError> {
        if !ptx::AVAILABLE {
            return Err(FusedError::NoPtx);
        }
        Weights::new(&shape, weights.tensors.clone())?;
        let stream = ctx.new_stream().map_err(cuda("a stream"))?;
        let module = ctx
            .load_module(Ptx::from_src(ptx::BERT))
            .map_err(cuda("loading bert.ptx"))?;
        let mut funcs = HashMap::new();
        for name in KERNELS {
            let f = module.load_function(name).map_err(cuda(name))?;
            funcs.insert(name, f);
        }
        let blas = CudaBlas::new(stream.clone()).map_err(cuda("cuBLAS"))?;
        let workspace = stream
            .alloc_zeros::<u8>(WORKSPACE_BYTES)
            .map_err(cuda("cuBLAS workspace"))?;
        {
            let (ptr, _guard) = workspace.device_ptr(&stream);
            // SAFETY: the handle is this encoder's, the workspace a live allocation of
            // WORKSPACE_BYTES owned by it for the handle's lifetime.
            unsafe {
                cublas::sys::cublasSetWorkspace_v2(
                    *blas.handle(),
                    ptr as *mut c_void,
                    WORKSPACE_BYTES,
                )
            }
            .result()
            .map_err(cuda("cuBLAS workspace"))?;
        }
        let weights = (weights.tensors.iter())
            .map(|t| stream.clone_htod(t))
            .collect::<Result<Vec<_>, _>>()
            .map_err(cuda("weights"))?;
        stream.synchronize().map_err(cuda("weights"))?;
        let weight_ptrs = weights.iter().map(|w| w.device_ptr(&stream).0).collect();
        Ok(CudaBert {
            shape,
            pad,
            stream,
            blas,
            _workspace: workspace,
            funcs,
            _weights: weights,
            weight_ptrs,
            graphs: std::env::var("MEMDEX_CUDA_GRAPHS").as_deref() != Ok("0"),
            state: Mutex::new(State::default()),
        })
    }

    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// Replays each bucket's pass as a CUDA graph (the default unless `MEMDEX_CUDA_GRAPHS=0`),
    /// or launches its operations one by one.
    pub fn set_graphs(&mut self, on: bool) {
        self.graphs = on;
    }

    /// Whether passes are replayed as CUDA graphs (`MEMDEX_CUDA_GRAPHS=0`: launched one by one).
    pub fn uses_graphs(&self) -> bool {
        self.graphs
    }

    /// Graphs captured so far (one per bucket met, again after its buffers grew).
    pub fn captures(&self) -> usize {
        self.state.lock().map_or(0, |s| s.captures)
    }

    /// Pooled (and, if the shape says so, normalised) vectors of `seqs`, `seqs.len() × hidden`.
    pub fn forward(&self, seqs: &[&[u32]]) -> Result<Vec<f32>, FusedError> {
        let len = seqs.iter().map(|s| s.len()).max().unwrap_or(1).max(1);
        let bucket = Bucket::round_up(seqs.len(), len, self.shape.max_positions);
        let (ids, lengths) = pack_batch(&self.shape, seqs, bucket, self.pad)?;
        let plan = Plan::new(&self.shape, bucket, false);
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        self.reserve(&mut state, &plan)?;
        let inputs = state.ptr(INPUTS);
        let s = self.stream.cu_stream();
        // SAFETY: the inputs buffer holds at least rows + batch u32 (reserve), the host slices
        // outlive the copies (pageable memory: the driver stages them before returning).
        unsafe {
            result::memcpy_htod_async(inputs, &ids, s).map_err(cuda("ids"))?;
            result::memcpy_htod_async(inputs + 4 * ids.len() as u64, &lengths, s)
                .map_err(cuda("lengths"))?;
        }
        if self.graphs {
            if !state.graphs.contains_key(&bucket) {
                let g = self.capture(&state, &plan)?;
                if state.graphs.len() >= MAX_GRAPHS {
                    state.graphs.clear();
                }
                state.graphs.insert(bucket, g);
                state.captures += 1;
            }
            let g = &state.graphs[&bucket];
            g.0.launch().map_err(cuda("graph launch"))?;
        } else {
            self.run(&state, &plan)?;
        }
        let mut out = vec![0f32; seqs.len() * self.shape.hidden];
        // SAFETY: the output buffer holds bucket.batch × hidden f32 ≥ out's length.
        unsafe { result::memcpy_dtoh_async(&mut out, state.ptr(OUTPUT), s) }
            .map_err(cuda("pooled vectors"))?;
        self.stream.synchronize().map_err(cuda("forward pass"))?;
        Ok(out)
    }

    /// Grows any buffer `plan` needs more of; a buffer that moves drops every graph (they hold
    /// its address).
    fn reserve(&self, state: &mut State, plan: &Plan) -> Result<(), FusedError> {
        let scratch = plan.scratch_elems(&self.shape);
        let b = plan.bucket;
        let mut need: Vec<usize> = (SCRATCH.iter().zip(scratch))
            .map(|(s, n)| n * if s.is_f32() { 4 } else { 2 })
            .collect();
        need.push(4 * (b.rows() + b.batch));
        need.push(4 * b.batch * self.shape.hidden);
        state.buffers.resize_with(need.len(), || None);
        let mut moved = false;
        for (slot, &bytes) in state.buffers.iter_mut().zip(&need) {
            let held = slot.as_ref().map_or(0, |(s, _)| s.len());
            if bytes > held {
                if slot.is_some() {
                    moved = true;
                }
                // the graphs that read the old buffer must not run again
                self.stream
                    .synchronize()
                    .map_err(cuda("growing a buffer"))?;
                *slot = None;
                let grown = (bytes + bytes / 4).max(256);
                let buf = self
                    .stream
                    .alloc_zeros::<u8>(grown)
                    .map_err(cuda("buffers"))?;
                let at = buf.device_ptr(&self.stream).0;
                *slot = Some((buf, at));
            }
        }
        if moved {
            state.graphs.clear();
        }
        Ok(())
    }

    /// The pass captured on the stream as a graph, instantiated and uploaded.
    fn capture(&self, state: &State, plan: &Plan) -> Result<Graph, FusedError> {
        let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
        self.stream.begin_capture(mode).map_err(cuda("capture"))?;
        let ran = self.run(state, plan);
        let graph = self
            .stream
            .end_capture(sys::CUgraphInstantiate_flags(0))
            .map_err(cuda("capture"));
        ran?;
        let graph = graph?.ok_or_else(|| FusedError::Cuda("an empty capture".into()))?;
        graph.upload().map_err(cuda("graph upload"))?;
        Ok(Graph(graph))
    }

    /// Issues every operation of `plan` on the stream.
    fn run(&self, state: &State, plan: &Plan) -> Result<(), FusedError> {
        let rows = plan.bucket.rows() as u64;
        let ptr = |b: Buf| -> u64 {
            match b {
                Buf::Weight(i) => self.weight_ptrs[i],
                Buf::Scratch(s) => state.ptr(s.index()),
                Buf::Ids => state.ptr(INPUTS),
                Buf::Lengths => state.ptr(INPUTS) + 4 * rows,
                Buf::Out => state.ptr(OUTPUT),
            }
        };
        for op in &plan.ops {
            match op {
                Op::Gemm(g) => self.gemm(g, &ptr)?,
                Op::Launch(k) => self.launch(k, &ptr)?,
            }
        }
        Ok(())
    }

    fn launch(&self, k: &Kernel, ptr: &dyn Fn(Buf) -> u64) -> Result<(), FusedError> {
        // each argument in a u64 slot: the driver reads as many bytes as the parameter has
        // (4 for u32 and f32, little-endian low half), 8 for a pointer
        let mut slots: Vec<u64> = (k.args().into_iter())
            .map(|a| match a {
                Arg::Buf(b) => ptr(b),
                Arg::U32(v) => v as u64,
                Arg::F32(v) => v.to_bits() as u64,
            })
            .collect();
        let mut params: Vec<*mut c_void> = slots.iter_mut().map(|s| s as *mut u64 as _).collect();
        let f = &self.funcs[k.name()];
        // SAFETY: the arguments are the kernel's signature in order (Kernel::args, checked
        // against bert.cu by the emulated runs of the same plan), every buffer holds what the
        // plan's bucket needs (reserve), and the shared memory is within 48 KiB (plan).
        unsafe {
            result::launch_kernel(
                f.cu_function(),
                (k.grid(), 1, 1),
                (THREADS, 1, 1),
                k.smem(),
                self.stream.cu_stream(),
                &mut params,
            )
        }
        .map_err(cuda(k.name()))
    }

    fn gemm(&self, g: &Gemm, ptr: &dyn Fn(Buf) -> u64) -> Result<(), FusedError> {
        use cublas::sys::{cublasComputeType_t as Compute, cublasGemmAlgo_t as Algo};
        use cublas::sys::{cublasOperation_t as Trans, cudaDataType_t as Ty};
        let t = |x: bool| {
            if x {
                Trans::CUBLAS_OP_T
            } else {
                Trans::CUBLAS_OP_N
            }
        };
        let c_type = match g.c {
            Buf::Scratch(s) if s.is_f32() => Ty::CUDA_R_32F,
            _ => Ty::CUDA_R_16F,
        };
        let (alpha, beta) = (g.alpha, 0f32);
        let (a, b, c) = (ptr(g.a), ptr(g.b), ptr(g.c));
        let i = |v: u32| v as i32;
        // SAFETY: the plan sizes every operand for its bucket (reserve holds them), the scalars
        // are host f32 for CUBLAS_COMPUTE_32F, the handle is bound to this encoder's stream.
        unsafe {
            cublas::result::gemm_strided_batched_ex(
                *self.blas.handle(),
                t(g.ta),
                t(g.tb),
                i(g.m),
                i(g.n),
                i(g.k),
                (&alpha) as *const f32 as *const c_void,
                a as *const c_void,
                Ty::CUDA_R_16F,
                i(g.lda),
                g.stride_a as i64,
                b as *const c_void,
                Ty::CUDA_R_16F,
                i(g.ldb),
                g.stride_b as i64,
                (&beta) as *const f32 as *const c_void,
                c as *mut c_void,
                c_type,
                i(g.ldc),
                g.stride_c as i64,
                i(g.batch),
                Compute::CUBLAS_COMPUTE_32F,
                Algo::CUBLAS_GEMM_DEFAULT,
            )
        }
        .map_err(cuda("cuBLAS product"))
    }
}

impl State {
    /// Buffer `i`'s address (reserve made every buffer before a pass reads it).
    fn ptr(&self, i: usize) -> u64 {
        self.buffers
            .get(i)
            .and_then(Option::as_ref)
            .map_or(0, |(_, at)| *at)
    }
}
