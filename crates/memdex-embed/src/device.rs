use candle_core::Device;
use memdex_core::DeviceChoice;

use crate::EmbedError;

/// Resolves a `--device` choice. `auto` takes CUDA device 0 when this build has the `cuda`
/// feature and a device answers, else the CPU. Asking for CUDA in a CPU build is an error.
pub fn select_device(choice: DeviceChoice) -> Result<Device, EmbedError> {
    match choice {
        DeviceChoice::Cpu => Ok(Device::Cpu),
        DeviceChoice::Auto => {
            #[cfg(feature = "cuda")]
            if let Ok(d) = Device::new_cuda(0) {
                return Ok(d);
            }
            Ok(Device::Cpu)
        }
        DeviceChoice::Cuda(n) => cuda(n, &choice.to_string()),
    }
}

#[cfg(feature = "cuda")]
fn cuda(n: usize, requested: &str) -> Result<Device, EmbedError> {
    Device::new_cuda(n).map_err(|e| EmbedError::Device {
        requested: requested.to_string(),
        message: e.to_string(),
    })
}

#[cfg(not(feature = "cuda"))]
fn cuda(_n: usize, requested: &str) -> Result<Device, EmbedError> {
    Err(EmbedError::CudaNotBuilt {
        requested: requested.to_string(),
    })
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
}
