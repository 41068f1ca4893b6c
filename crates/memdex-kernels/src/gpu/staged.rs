//! A ranking batch's small inputs in ONE host→device copy ([`crate::staging`]): each input is
//! pushed to a [`Stager`] and comes back as a [`Ticket`]; [`Stager::finish`] copies the packed
//! buffer once (from a page-locked buffer kept by the device, so the copy is asynchronous:
//! the host neither stages it nor waits for the device's queue), and each ticket becomes a
//! [`DeviceBuf`]: a view at its part's offset into that one device buffer.
//!
//! With staging off (the default until measured on a device; `MEMDEX_GPU_STAGING=1` or
//! [`Gpu::with_staging`] turns it on) every push is its own
//! upload (`clone_htod` from pageable memory: the driver stages each on the host before the
//! call returns, and may wait for the stream to do so), and the top k come back in two
//! downloads (each returns once its copy is done): the path the batch took before, kept to
//! compare and to fall back on.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use candle_core::cuda_backend::cudarc::driver::{
    sys, CudaSlice, CudaView, DeviceRepr, DriverError, PinnedHostSlice,
};

use super::{nonempty, DeviceQueries, DeviceRankQueries, DeviceTiles, Gpu};
use crate::staging::{Part, Plain, Staging};
use crate::tiles::{dense_tile, QueryTiles};
use crate::{range_offsets, KernelError, RankQueries, TimeRule};

/// A device input: a buffer of its own, or a part of a batch's staging buffer.
#[derive(Debug)]
pub enum DeviceBuf<T> {
    Own(CudaSlice<T>),
    Staged(Arc<CudaSlice<u8>>, Part<T>),
}

impl<T: Plain + DeviceRepr> DeviceBuf<T> {
    /// The input as the kernels take it (every value reserved: at least one).
    pub fn view(&self) -> Result<CudaView<'_, T>, KernelError> {
        match self {
            DeviceBuf::Own(s) => Ok(s.slice(..)),
            DeviceBuf::Staged(buf, part) => {
                let end = part.offset + part.bytes();
                let bytes = buf.try_slice(part.offset..end).ok_or_else(broken)?;
                // SAFETY: the bytes at the part's offset are `slots` values of T packed by
                // Staging::push in T's native representation (Plain: plain integers, floats
                // and f16 bits, every bit pattern valid), and the offset is a multiple of
                // staging::ALIGN (256), so the view is aligned for T.
                unsafe { bytes.transmute::<T>(part.slots) }.ok_or_else(broken)
            }
        }
    }
}

/// An input pushed to a [`Stager`]: uploaded already, or a part of the buffer to come.
pub(crate) enum Ticket<T> {
    Own(CudaSlice<T>),
    Part(Part<T>),
}

/// The batch's staging buffer on the device (None: every input was its own upload).
pub(crate) struct Staged(Option<Arc<CudaSlice<u8>>>);

impl Staged {
    pub(crate) fn get<T>(&self, t: Ticket<T>) -> Result<DeviceBuf<T>, KernelError> {
        match (t, &self.0) {
            (Ticket::Own(s), _) => Ok(DeviceBuf::Own(s)),
            (Ticket::Part(p), Some(buf)) => Ok(DeviceBuf::Staged(buf.clone(), p)),
            (Ticket::Part(_), None) => Err(broken()),
        }
    }
}

/// Collects a batch's inputs: packed (staging on) or uploaded one by one (off).
pub(crate) struct Stager<'g> {
    gpu: &'g Gpu,
    packed: Option<Staging>,
}

impl<'g> Stager<'g> {
    pub(crate) fn new(gpu: &'g Gpu) -> Stager<'g> {
        Stager {
            gpu,
            packed: gpu.staging.then(|| Staging::with_capacity(1 << 20)),
        }
    }

    /// A stager that uploads every input on its own (the bench's device-resident inputs).
    pub(crate) fn unstaged(mut self) -> Stager<'g> {
        self.packed = None;
        self
    }

    pub(crate) fn push<T: Plain + DeviceRepr>(
        &mut self,
        v: &[T],
    ) -> Result<Ticket<T>, KernelError> {
        Ok(match &mut self.packed {
            Some(s) => Ticket::Part(s.push(v)),
            None => Ticket::Own(self.gpu.upload(&nonempty(v))?),
        })
    }

    pub(crate) fn push_iter<T: Plain + DeviceRepr>(
        &mut self,
        it: impl IntoIterator<Item = T>,
    ) -> Result<Ticket<T>, KernelError> {
        self.push(&it.into_iter().collect::<Vec<T>>())
    }

    /// The packed inputs on the device, in one asynchronous copy.
    pub(crate) fn finish(self) -> Result<Staged, KernelError> {
        match self.packed {
            None => Ok(Staged(None)),
            Some(s) => Ok(Staged(Some(Arc::new(self.gpu.copy_staging(&s)?)))),
        }
    }
}

/// Page-locked host buffers kept by a device between batches: the staging uploads', one per
/// size class (a power of two, at least 64 KiB: cudarc copies a page-locked buffer whole, so
/// a batch copies less than twice its bytes), and the top-k downloads' (grown to the largest
/// batch seen, never shrunk).
#[derive(Debug, Default)]
pub(crate) struct Pinned {
    up: Mutex<HashMap<usize, PinnedHostSlice<u8>>>,
    scores: Mutex<Option<PinnedHostSlice<f32>>>,
    rows: Mutex<Option<PinnedHostSlice<u32>>>,
}

/// The size class of `len` values: a power of two, at least 64 Ki.
fn class(len: usize) -> usize {
    len.next_power_of_two().max(1 << 16)
}

/// `slot`'s buffer, replaced by one of at least `len` values ([`class`]) when it is smaller;
/// `flags` as `cuMemHostAlloc` takes them.
fn pinned<'a, T: DeviceRepr>(
    gpu: &Gpu,
    slot: &'a Mutex<Option<PinnedHostSlice<T>>>,
    len: usize,
    flags: u32,
) -> Result<MutexGuard<'a, Option<PinnedHostSlice<T>>>, KernelError> {
    let mut g = slot.lock().unwrap_or_else(|p| p.into_inner());
    if g.as_ref().is_none_or(|p| p.len() < len) {
        *g = None; // the old buffer waits for its last copy when it is dropped
        *g = Some(alloc_pinned(gpu, class(len), flags)?);
    }
    Ok(g)
}

/// `n` values of page-locked host memory (`flags` as `cuMemHostAlloc` takes them).
fn alloc_pinned<T: DeviceRepr>(
    gpu: &Gpu,
    n: usize,
    flags: u32,
) -> Result<PinnedHostSlice<T>, KernelError> {
    let ctx = gpu.cuda.cuda_stream().context().clone();
    // SAFETY: the buffer's bytes are written (upload) or copied into (download) before they
    // are read.
    unsafe { ctx.alloc_pinned_with_flags::<T>(n, flags) }.map_err(wrap)
}

/// A part that is not inside its staging buffer, or a ticket without one: a bug here, never
/// an input's fault.
fn broken() -> KernelError {
    KernelError::Invalid("a staged input outside its batch's staging buffer".into())
}

fn wrap(e: DriverError) -> KernelError {
    KernelError::Cuda(candle_core::Error::wrap(e))
}

/// cuMemHostAlloc's write-combined flag (the host only writes the upload's buffer).
const WRITE_COMBINED: u32 = sys::CU_MEMHOSTALLOC_WRITECOMBINED;

impl Gpu {
    /// `s`'s bytes on the device: packed into the page-locked upload buffer (which waits
    /// only for the previous batch's copy out of it) and copied asynchronously, whole.
    fn copy_staging(&self, s: &Staging) -> Result<CudaSlice<u8>, KernelError> {
        let stream = self.cuda.cuda_stream();
        let n = class(s.len());
        let mut up = self.pinned.up.lock().unwrap_or_else(|p| p.into_inner());
        let host = match up.entry(n) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(alloc_pinned(self, n, WRITE_COMBINED)?),
        };
        host.as_mut_slice().map_err(wrap)?[..s.len()].copy_from_slice(s.bytes());
        // the copy sends the buffer whole (under twice s.len()): the device buffer is as
        // long, its tail past s.len() never read
        // SAFETY: every byte the kernels read (the parts, inside s.len()) is written by the
        // copy below before any launch on this stream reads it.
        let mut dev = unsafe { stream.alloc::<u8>(host.len()) }.map_err(wrap)?;
        stream.memcpy_htod(host, &mut dev).map_err(wrap)?;
        Ok(dev)
    }

    /// The top-k lists `(scores, rows)` on the host after ONE wait for the device: both
    /// copied asynchronously into page-locked buffers, then the stream synchronised once
    /// (staging off: two downloads, each waiting).
    pub(super) fn download_topk(
        &self,
        scores: &CudaSlice<f32>,
        rows: &CudaSlice<u32>,
    ) -> Result<(Vec<f32>, Vec<u32>), KernelError> {
        if !self.staging {
            return Ok((self.download(scores)?, self.download(rows)?));
        }
        let stream = self.cuda.cuda_stream();
        let mut gs = pinned(self, &self.pinned.scores, scores.len(), 0)?;
        let mut gr = pinned(self, &self.pinned.rows, rows.len(), 0)?;
        let (hs, hr) = (
            gs.as_mut().ok_or_else(broken)?,
            gr.as_mut().ok_or_else(broken)?,
        );
        stream.memcpy_dtoh(scores, hs).map_err(wrap)?;
        stream.memcpy_dtoh(rows, hr).map_err(wrap)?;
        self.synchronize()?;
        Ok((
            hs.as_slice().map_err(wrap)?[..scores.len()].to_vec(),
            hr.as_slice().map_err(wrap)?[..rows.len()].to_vec(),
        ))
    }
}

/// Whether the environment turns staging on (`MEMDEX_GPU_STAGING` = `1`, `on` or `true`). Off
/// by default until a device run has checked it against the separate uploads (the device
/// plan, `scripts/gpu-first.sh`, turns it on for every stage).
pub(super) fn staging_from_env() -> bool {
    matches!(
        std::env::var("MEMDEX_GPU_STAGING").as_deref(),
        Ok("1" | "on" | "true")
    )
}

/// A batch's queries pushed to a [`Stager`] (see [`DeviceQueries`]).
pub(crate) struct QueryTickets {
    vectors: Ticket<f32>,
    ranges: Ticket<u32>,
    tiles: TileTickets,
    host_ranges: Vec<[u32; 2]>,
}

impl QueryTickets {
    /// `vectors` and `ranges`, with the tiles the fused ranking's dense step takes (the
    /// serving path; a scan whose shared memory holds fewer queries builds its own).
    pub(crate) fn push(
        st: &mut Stager<'_>,
        vectors: &[f32],
        ranges: &[[u32; 2]],
    ) -> Result<QueryTickets, KernelError> {
        let flat: Vec<u32> = ranges.iter().flatten().copied().collect();
        let dim = vectors.len() / ranges.len().max(1);
        Ok(QueryTickets {
            vectors: st.push(vectors)?,
            ranges: st.push(&flat)?,
            tiles: TileTickets::push(st, &QueryTiles::new(ranges, dense_tile(dim).cap))?,
            host_ranges: ranges.to_vec(),
        })
    }

    pub(crate) fn on(self, staged: &Staged) -> Result<DeviceQueries, KernelError> {
        Ok(DeviceQueries {
            n: self.host_ranges.len(),
            vectors: staged.get(self.vectors)?,
            ranges: staged.get(self.ranges)?,
            tiles: self.tiles.on(staged)?,
            max_len: (self.host_ranges.iter())
                .map(|[a, b]| b.saturating_sub(*a) as usize)
                .max()
                .unwrap_or(0),
            host_ranges: self.host_ranges,
        })
    }
}

/// A batch's query tiles pushed to a [`Stager`] (see [`DeviceTiles`]).
pub(crate) struct TileTickets {
    n: usize,
    longest: usize,
    queries: Ticket<u32>,
    offsets: Ticket<u32>,
}

impl TileTickets {
    pub(crate) fn push(st: &mut Stager<'_>, t: &QueryTiles) -> Result<TileTickets, KernelError> {
        Ok(TileTickets {
            n: t.len(),
            longest: t.longest,
            queries: st.push(&t.queries)?,
            offsets: st.push(&t.offsets)?,
        })
    }

    pub(crate) fn on(self, staged: &Staged) -> Result<DeviceTiles, KernelError> {
        Ok(DeviceTiles {
            n: self.n,
            longest: self.longest,
            queries: staged.get(self.queries)?,
            offsets: staged.get(self.offsets)?,
        })
    }
}

/// A batch's per-query ranking inputs but the BM25 scores and flags, pushed to a [`Stager`]
/// (see [`DeviceRankQueries`]).
pub(crate) struct RankTickets {
    pub(crate) queries: QueryTickets,
    pub(crate) offsets: Ticket<u32>,
    time_mode: Ticket<u32>,
    time_factor: Ticket<f32>,
}

impl RankTickets {
    pub(crate) fn push(
        st: &mut Stager<'_>,
        q: &RankQueries<'_>,
    ) -> Result<RankTickets, KernelError> {
        let (offsets, _) = range_offsets(q.ranges);
        let (mode, factor): (Vec<u32>, Vec<f32>) = (q.time.iter())
            .map(|t| match t {
                TimeRule::None => (0, 0.0),
                TimeRule::Front => (1, 0.0),
                TimeRule::Boost(b) => (2, *b),
            })
            .unzip();
        Ok(RankTickets {
            queries: QueryTickets::push(st, q.vectors, q.ranges)?,
            offsets: st.push(&offsets)?,
            time_mode: st.push(&mode)?,
            time_factor: st.push(&factor)?,
        })
    }

    pub(crate) fn on(
        self,
        staged: &Staged,
        sparse: DeviceBuf<f32>,
        flags: DeviceBuf<u8>,
    ) -> Result<DeviceRankQueries, KernelError> {
        Ok(DeviceRankQueries {
            queries: self.queries.on(staged)?,
            sparse,
            flags,
            offsets: staged.get(self.offsets)?,
            time_mode: staged.get(self.time_mode)?,
            time_factor: staged.get(self.time_factor)?,
        })
    }
}
