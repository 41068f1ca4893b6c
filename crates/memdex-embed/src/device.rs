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

/// Keeps the memory CUDA's stream-ordered allocator has reserved, instead of returning it to
/// the driver at every synchronisation. candle (through cudarc) allocates every tensor and
/// kernel buffer with `cuMemAllocAsync` from the device's default pool, whose release threshold
/// is 0: each batch ends in a synchronisation (its answers are copied back), so every batch's
/// buffers were mapped afresh, model activations and the kernels' batch matrix alike. With the
/// threshold at its maximum the pool keeps what the process has used at its peak, as RMM and
/// CCCL's pools do by default. The pool is per device: every `Device` opened on it shares the
/// setting. A driver that refuses it is logged and changes nothing else.
#[cfg(feature = "cuda")]
pub fn keep_pool_memory(device: &Device) {
    use candle_core::cuda_backend::cudarc::driver::{result, sys};
    let Ok(cuda) = device.as_cuda_device() else {
        return;
    };
    let ordinal = cuda.cuda_stream().context().cu_device();
    let mut threshold = u64::MAX;
    #[allow(unsafe_code)]
    // SAFETY: `ordinal` is the CUdevice of an open context (candle opened it); the release
    // threshold attribute takes a u64, which `threshold` is and outlives the call.
    let set = unsafe {
        result::device::get_default_mem_pool(ordinal).and_then(|pool| {
            result::mem_pool::set_attribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                (&mut threshold as *mut u64).cast(),
            )
        })
    };
    match set {
        Ok(()) => tracing::debug!("cuda: the memory pool keeps the memory it reserves"),
        Err(e) => {
            tracing::warn!("cuda: the memory pool keeps releasing memory at every sync ({e})")
        }
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
