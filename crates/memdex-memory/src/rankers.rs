//! Where searches are ranked: the door builds the ranker for every front end (HTTP, MCP,
//! Python, `memdex search` and the batch tools), from a [`RankChoice`] and the model it
//! serves.

use std::str::FromStr;
use std::sync::Arc;

use memdex_core::DeviceChoice;
use memdex_embed::Encoder;
use memdex_kernels::{KernelRanker, Kernels, Placement};
use memdex_rank::{CpuRanker, SharedRanker};

use crate::MemoryError;

/// Where searches are ranked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RankDevice {
    /// memdex's CUDA kernels when the model runs on CUDA and they load there, each batch
    /// placed on the GPU or the CPU by a cost model; otherwise the CPU ranker.
    #[default]
    Auto,
    /// The CPU ranker.
    Cpu,
    /// The kernels on the model's CUDA device (or the first), every batch they run.
    Cuda,
    /// The kernels on the model's device, every batch (their CPU reference on the CPU).
    Kernels,
}

impl FromStr for RankDevice {
    type Err = MemoryError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(RankDevice::Auto),
            "cpu" => Ok(RankDevice::Cpu),
            "cuda" => Ok(RankDevice::Cuda),
            "kernels" => Ok(RankDevice::Kernels),
            other => Err(MemoryError::Invalid(format!(
                "rank device {other:?}: use auto, cpu, cuda or kernels"
            ))),
        }
    }
}

/// How a memory ranks its searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RankChoice {
    pub device: RankDevice,
    /// The CPU ranker scores the dense stage on the model's device (None: when the model
    /// runs on an accelerator).
    pub device_scan: Option<bool>,
    /// Device memory (MiB) the kernel ranker keeps tenants' rows resident in (None: a
    /// quarter of the device's memory).
    pub resident_mb: Option<u64>,
}

/// The CPU ranker for a model `encoder`: its dense scores on the model's device when `scan`
/// says so (None: when the model runs on an accelerator and has a device scorer), else the
/// CPU's own dot products.
pub fn cpu_ranker(encoder: &dyn Encoder, scan: Option<bool>) -> CpuRanker {
    let scan = scan.unwrap_or_else(|| encoder.is_accelerator());
    match scan.then(|| encoder.device_scorer()).flatten() {
        Some(scorer) => CpuRanker::with_scorer(scorer),
        None => CpuRanker::default(),
    }
}

/// The ranker `choice` asks for, for a model `encoder` on `device`.
pub fn ranker(
    choice: RankChoice,
    device: DeviceChoice,
    encoder: &dyn Encoder,
) -> Result<SharedRanker, MemoryError> {
    let cpu = cpu_ranker(encoder, choice.device_scan);
    let mb = choice.resident_mb;
    let (kernels, placement) = match choice.device {
        RankDevice::Cpu => return Ok(Arc::new(cpu)),
        RankDevice::Auto if !encoder.is_accelerator() => return Ok(Arc::new(cpu)),
        RankDevice::Auto => (kernels(device, mb)?, Placement::Auto),
        RankDevice::Cuda => {
            let on = match device {
                DeviceChoice::Cuda(n) => DeviceChoice::Cuda(n),
                _ => DeviceChoice::Cuda(0),
            };
            (kernels(on, mb)?, Placement::Device)
        }
        RankDevice::Kernels => {
            let k: Arc<dyn Kernels + Send + Sync> = Arc::from(kernels(device, mb)?);
            return Ok(Arc::new(KernelRanker::with_cpu(k, Placement::Device, cpu)));
        }
    };
    if kernels.device() == "cpu" {
        tracing::info!("no CUDA kernels here: the CPU ranker ranks");
        return Ok(Arc::new(cpu));
    }
    let kernels: Arc<dyn Kernels + Send + Sync> = Arc::from(kernels);
    let ranker = KernelRanker::with_cpu(kernels, placement, cpu);
    tracing::info!(
        "ranking through {}",
        memdex_rank::BatchRanker::describe(&ranker)
    );
    Ok(Arc::new(ranker))
}

/// The kernels of `device`: the CPU reference, or memdex's CUDA kernels (feature `cuda`),
/// keeping at most `resident_mb` MiB of tenants' rows on the device (None: a quarter of its
/// memory).
pub fn kernels(
    device: DeviceChoice,
    resident_mb: Option<u64>,
) -> Result<Box<dyn Kernels + Send + Sync>, MemoryError> {
    match device {
        DeviceChoice::Cpu => Ok(Box::new(memdex_kernels::cpu::Cpu)),
        DeviceChoice::Cuda(n) => cuda(n, resident_mb),
        DeviceChoice::Auto => cuda(0, resident_mb).or_else(|e| {
            tracing::warn!("no CUDA device for the kernels ({e}); using the CPU reference");
            Ok(Box::new(memdex_kernels::cpu::Cpu))
        }),
    }
}

#[cfg(feature = "cuda")]
fn cuda(n: usize, resident_mb: Option<u64>) -> Result<Box<dyn Kernels + Send + Sync>, MemoryError> {
    let g = memdex_kernels::gpu::Gpu::new(n)
        .map_err(|e| MemoryError::Invalid(format!("cuda:{n}: {e}")))?;
    Ok(Box::new(match resident_mb {
        Some(mb) => g.with_resident_budget(usize::try_from(mb << 20).unwrap_or(usize::MAX)),
        None => g,
    }))
}

#[cfg(not(feature = "cuda"))]
fn cuda(n: usize, _: Option<u64>) -> Result<Box<dyn Kernels + Send + Sync>, MemoryError> {
    Err(MemoryError::Invalid(format!(
        "cuda:{n}: this memdex was built without the `cuda` feature (scripts/build-cuda.sh \
         builds one)"
    )))
}
