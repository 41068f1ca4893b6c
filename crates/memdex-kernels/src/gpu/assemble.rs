//! A batch's matrix and row columns built from resident parts: by one `memdex_gather_parts`
//! launch (`kernels/cuda/gather_parts.cu`), or by four device-to-device copies per part (the
//! reference). The first batch of a device with rows builds them both ways and compares them
//! bit for bit; the kernel is used from then on only if they agreed (else the copies, with an
//! error logged and a fault recorded: `crate::AssemblyGate`, `Kernels::faults`, which fails
//! the kernel checks on that device).

use std::sync::Arc;

use candle_core::cuda_backend::cudarc::driver::{
    CudaSlice, DevicePtr, DeviceRepr, DriverError, LaunchConfig, PushKernelArg,
};

use super::{launch, DeviceMatrix, DeviceRankRows, DeviceTimeline, Gpu};
use crate::{f16, ptx, KernelError};

/// One part's columns on the device (kept resident by `resident`).
#[derive(Debug)]
pub(crate) struct DevicePart {
    pub(crate) rows: usize,
    pub(crate) embeddings: CudaSlice<f16>,
    pub(crate) positions: CudaSlice<u32>,
    pub(crate) groups: CudaSlice<u32>,
    pub(crate) importance: CudaSlice<u8>,
}

/// The batch's columns on the device.
pub(crate) struct Columns {
    embeddings: CudaSlice<f16>,
    positions: CudaSlice<u32>,
    groups: CudaSlice<u32>,
    importance: CudaSlice<u8>,
}

/// Blocks per part of the gather launch.
const BLOCKS_PER_PART: u32 = 32;

impl Columns {
    pub(crate) fn alloc(gpu: &Gpu, dim: usize, total: usize) -> Result<Columns, KernelError> {
        Ok(Columns {
            embeddings: gpu.cuda.alloc_zeros::<f16>((total * dim).max(1))?,
            positions: gpu.cuda.alloc_zeros::<u32>(total.max(1))?,
            groups: gpu.cuda.alloc_zeros::<u32>(total.max(1))?,
            importance: gpu.cuda.alloc_zeros::<u8>(total.max(1))?,
        })
    }

    pub(crate) fn into_device(self, dim: usize, total: usize) -> (DeviceMatrix, DeviceRankRows) {
        (
            DeviceMatrix {
                dim,
                rows: total,
                data: self.embeddings,
            },
            DeviceRankRows {
                timeline: DeviceTimeline {
                    positions: self.positions,
                    groups: self.groups,
                },
                importance: self.importance,
            },
        )
    }

    /// Whether both hold the same bits.
    pub(crate) fn same_as(&self, gpu: &Gpu, other: &Columns) -> Result<bool, KernelError> {
        let bits = |v: Vec<f16>| v.into_iter().map(f16::to_bits).collect::<Vec<u16>>();
        Ok(
            bits(gpu.download(&self.embeddings)?) == bits(gpu.download(&other.embeddings)?)
                && gpu.download(&self.positions)? == gpu.download(&other.positions)?
                && gpu.download(&self.groups)? == gpu.download(&other.groups)?
                && gpu.download(&self.importance)? == gpu.download(&other.importance)?,
        )
    }

    /// The parts' rows at `starts` by four device-to-device copies per part (the reference).
    pub(crate) fn copy_parts(
        &mut self,
        gpu: &Gpu,
        dim: usize,
        parts: &[Arc<DevicePart>],
        starts: &[usize],
    ) -> Result<(), KernelError> {
        for (p, &s) in parts.iter().zip(starts).filter(|(p, _)| p.rows > 0) {
            let n = p.rows;
            copy(gpu, &p.embeddings, &mut self.embeddings, s * dim, n * dim)?;
            copy(gpu, &p.positions, &mut self.positions, s, n)?;
            copy(gpu, &p.groups, &mut self.groups, s, n)?;
            copy(gpu, &p.importance, &mut self.importance, s, n)?;
        }
        Ok(())
    }

    /// The parts' rows at `starts` in one `memdex_gather_parts` launch.
    pub(crate) fn gather_parts(
        &mut self,
        gpu: &Gpu,
        dim: usize,
        parts: &[Arc<DevicePart>],
        starts: &[usize],
    ) -> Result<(), KernelError> {
        let with_rows: Vec<(&Arc<DevicePart>, usize)> = (parts.iter().zip(starts))
            .filter(|(p, _)| p.rows > 0)
            .map(|(p, &s)| (p, s))
            .collect();
        if with_rows.is_empty() {
            return Ok(());
        }
        let stream = gpu.cuda.cuda_stream();
        let (mut table, mut guards) = (Vec::new(), Vec::new());
        for (p, _) in &with_rows {
            let ptrs = [
                p.embeddings.device_ptr(&stream),
                p.positions.device_ptr(&stream),
                p.groups.device_ptr(&stream),
                p.importance.device_ptr(&stream),
            ];
            for (ptr, g) in ptrs {
                table.push(ptr);
                guards.push(g);
            }
        }
        let start: Vec<u32> = with_rows.iter().map(|&(_, s)| s as u32).collect();
        let rows: Vec<u32> = with_rows.iter().map(|(p, _)| p.rows as u32).collect();
        let (d_table, d_start, d_rows) =
            (gpu.upload(&table)?, gpu.upload(&start)?, gpu.upload(&rows)?);
        let f = gpu.cuda.get_or_load_custom_func(
            "memdex_gather_parts",
            "memdex_gather_parts",
            ptx::GATHER_PARTS,
        )?;
        let cfg = LaunchConfig {
            grid_dim: (with_rows.len() as u32, BLOCKS_PER_PART, 1),
            block_dim: (super::THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let dim32 = dim as u32;
        let mut b = f.builder();
        b.arg(&d_table).arg(&d_start).arg(&d_rows).arg(&dim32);
        b.arg(&mut self.embeddings)
            .arg(&mut self.positions)
            .arg(&mut self.groups)
            .arg(&mut self.importance);
        // SAFETY: argument order and types match memdex_gather_parts (f16 passed as its 16 bits);
        // the table holds 4 live device pointers per part with rows (the resident parts, held
        // by the caller; their guards dropped after the launch is queued), each part's columns
        // hold `rows` rows of `dim`; the outputs were sized for every part's rows at its start
        // (check_parts: the parts tile 0..total).
        unsafe { launch(b, cfg)? };
        drop(guards);
        Ok(())
    }
}

/// Copies the first `n` values of `src` into `dst[at..at + n]` on the device's stream.
fn copy<T: DeviceRepr>(
    gpu: &Gpu,
    src: &CudaSlice<T>,
    dst: &mut CudaSlice<T>,
    at: usize,
    n: usize,
) -> Result<(), KernelError> {
    let wrap = |e: DriverError| KernelError::Cuda(candle_core::Error::wrap(e));
    gpu.cuda
        .cuda_stream()
        .memcpy_dtod(&src.slice(..n), &mut dst.slice_mut(at..at + n))
        .map_err(wrap)
}
