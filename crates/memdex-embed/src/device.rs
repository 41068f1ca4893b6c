use candle_core::Device;
use memdex_core::DeviceChoice;

use crate::EmbedError;

/// Resolves a `--device` choice. `auto` takes CUDA device 0 when this build has the `cuda`
/// feature and a device answers, else the CPU, and says so in the log (a warning with the
/// driver's reason in a CUDA build, where a GPU was expected). Asking for CUDA in a CPU build,
/// or for a device that does not answer, is an error.
pub fn select_device(choice: DeviceChoice) -> Result<Device, EmbedError> {
    match choice {
        DeviceChoice::Cpu => Ok(Device::Cpu),
        DeviceChoice::Auto => Ok(auto_device()),
        DeviceChoice::Cuda(n) => cuda(n, &choice.to_string()),
    }
}

#[cfg(feature = "cuda")]
fn auto_device() -> Device {
    match Device::new_cuda(0) {
        Ok(d) => {
            keep_pool_memory(&d);
            d
        }
        Err(e) => {
            tracing::warn!(
                "--device auto: no usable CUDA device ({}); running on the CPU",
                plain_message(&e)
            );
            Device::Cpu
        }
    }
}

/// Sets up a CUDA device memdex has just opened, before anything is allocated on it (the
/// model's device, and memdex-kernels' `Gpu`):
///
/// - **The pool keeps its memory.** candle (through cudarc) allocates every tensor and kernel
///   buffer with `cuMemAllocAsync` from the device's default pool, whose release threshold is
///   0: each batch ends in a synchronisation (its answers are copied back), so every batch's
///   buffers were mapped afresh. With the threshold at its maximum the pool keeps what the
///   process has used at its peak, as RMM and CCCL's pools do by default.
/// - **No stream waits on another's frees.** The pool's default lets `cuMemAllocAsync` reuse a
///   block another stream freed by making the allocating stream wait for that stream's work
///   (`CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES`). memdex's threads each issue on a
///   stream of their own (candle's per-thread default stream, the fused encoder's own stream),
///   so with it a model worker's allocation could wait for a rank worker's kernels or another
///   model worker's batch: the streams serialised through the allocator. Off, each stream
///   reuses its own frees (and those already complete); the pool holds each stream's working
///   set. `MEMDEX_CUDA_POOL_SHARE=1` keeps the driver's default (for an A/B on a device).
/// - **No events per buffer.** cudarc creates two CUDA events for every buffer while its event
///   tracking is on (its default), to order a buffer's uses across streams it manages; memdex
///   never shares a buffer between streams (work crosses threads through the host, after a
///   synchronisation), so every event was pure host cost: ≈2 per kernel output on the candle
///   encoder's ≈200 outputs a batch. Turned off for the context before its first buffer.
///
/// The pool settings are per device (every `Device` opened on it shares them); event tracking
/// is per cudarc context object (each `Device::new_cuda` makes one). A driver that refuses a
/// setting is logged and changes nothing else.
#[cfg(feature = "cuda")]
pub fn keep_pool_memory(device: &Device) {
    use candle_core::cuda_backend::cudarc::driver::sys::CUmemPool_attribute as Attr;
    let Ok(cuda) = device.as_cuda_device() else {
        return;
    };
    // SAFETY (cudarc's contract for turning tracking off: memdex orders buffer uses across
    // streams itself): cudarc records and waits on these events only once a context object has
    // a second stream object. candle's device has one (the per-thread default stream), so the
    // events were made and never used: nothing changes for candle's tensors. The one second
    // stream is the fused encoder's own (memdex-fused-bert), whose buffers no other stream
    // touches; its weights are synchronised before first use, and a model's load ends with a
    // synchronisation (`Embedder::from_files`) before another thread uses its weights.
    #[allow(unsafe_code)]
    unsafe {
        cuda.disable_event_tracking()
    };
    let ordinal = cuda.cuda_stream().context().cu_device();
    let share = std::env::var("MEMDEX_CUDA_POOL_SHARE").as_deref() == Ok("1");
    let settings: [(Attr, u64, &str); 2] = [
        (
            Attr::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            u64::MAX,
            "keeps the memory it reserves",
        ),
        (
            Attr::CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES,
            share as u64,
            "reuses no other stream's frees by waiting on it",
        ),
    ];
    for (attr, value, what) in settings {
        match set_pool_attribute(ordinal, attr, value) {
            Ok(()) => tracing::debug!("cuda: the memory pool {what}"),
            Err(e) => tracing::warn!("cuda: could not make the memory pool: {what} ({e})"),
        }
    }
}

/// Sets one attribute of device `ordinal`'s default memory pool (the release threshold is a
/// u64, the reuse flags an int).
#[cfg(feature = "cuda")]
fn set_pool_attribute(
    ordinal: candle_core::cuda_backend::cudarc::driver::sys::CUdevice,
    attr: candle_core::cuda_backend::cudarc::driver::sys::CUmemPool_attribute,
    value: u64,
) -> Result<(), candle_core::cuda_backend::cudarc::driver::DriverError> {
    use candle_core::cuda_backend::cudarc::driver::{result, sys::CUmemPool_attribute as Attr};
    let mut wide = value;
    let mut int = value as std::ffi::c_int;
    let ptr: *mut std::ffi::c_void = match attr {
        Attr::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD => (&mut wide as *mut u64).cast(),
        _ => (&mut int as *mut std::ffi::c_int).cast(),
    };
    #[allow(unsafe_code)]
    // SAFETY: `ordinal` is the CUdevice of an open context (candle opened it); `ptr` points at a
    // value of the attribute's type (u64 for the threshold, int for the reuse flags) that
    // outlives the call.
    unsafe {
        result::device::get_default_mem_pool(ordinal)
            .and_then(|pool| result::mem_pool::set_attribute(pool, attr, ptr))
    }
}

#[cfg(not(feature = "cuda"))]
fn auto_device() -> Device {
    tracing::info!("--device auto: this memdex was built without `cuda`; running on the CPU");
    Device::Cpu
}

#[cfg(feature = "cuda")]
fn cuda(n: usize, requested: &str) -> Result<Device, EmbedError> {
    let device = Device::new_cuda(n).map_err(|e| EmbedError::Device {
        requested: requested.to_string(),
        message: format!(
            "no usable CUDA device {n} ({}); use --device cpu, or --device auto to fall back \
             to the CPU",
            plain_message(&e)
        ),
    })?;
    keep_pool_memory(&device);
    Ok(device)
}

#[cfg(not(feature = "cuda"))]
fn cuda(_n: usize, requested: &str) -> Result<Device, EmbedError> {
    Err(EmbedError::CudaNotBuilt {
        requested: requested.to_string(),
    })
}

/// A candle error's message without the backtrace candle attaches when `RUST_BACKTRACE` is
/// set: a user-facing error names the failure, it does not dump frames.
pub(crate) fn plain_message(e: &candle_core::Error) -> String {
    match e {
        candle_core::Error::WithBacktrace { inner, .. } => plain_message(inner),
        e => e.to_string(),
    }
}

/// `cpu` or `cuda:N`, for logs and reports.
pub fn device_name(device: &Device) -> String {
    match device.location() {
        candle_core::DeviceLocation::Cpu => "cpu".into(),
        candle_core::DeviceLocation::Cuda { gpu_id } => format!("cuda:{gpu_id}"),
        candle_core::DeviceLocation::Metal { gpu_id } => format!("metal:{gpu_id}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_and_auto_work_everywhere() {
        assert!(select_device(DeviceChoice::Cpu).unwrap().is_cpu());
        select_device(DeviceChoice::Auto).unwrap();
    }

    #[cfg(not(feature = "cuda"))]
    #[test]
    fn cuda_in_cpu_build_names_the_feature() {
        let e = select_device(DeviceChoice::Cuda(0))
            .unwrap_err()
            .to_string();
        assert!(e.contains("`cuda` feature"), "{e}");
    }

    #[test]
    fn plain_message_drops_the_backtrace() {
        let e = candle_core::Error::Msg("no device".into());
        let with_bt = candle_core::Error::WithBacktrace {
            inner: Box::new(e),
            backtrace: Box::new(std::backtrace::Backtrace::force_capture()),
        };
        assert_eq!(plain_message(&with_bt), "no device");
        assert!(with_bt.to_string().len() > "no device".len());
    }
}
