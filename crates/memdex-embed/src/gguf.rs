//! GGUF weights as dense tensors (the fast CPU encoder's `--weights gguf`).

use std::collections::HashMap;
use std::path::Path;

use candle_core::quantized::gguf_file;
use candle_core::{DType, Device, Result};

/// Every tensor of a GGUF file dequantised to f32, as a `VarBuilder` for the dense encoders
/// (`--weights gguf` with the fast CPU encoder: the small file, the fused kernels' speed, and
/// the same vectors as the dequantised `model.safetensors`).
pub(crate) fn dequantized_var_builder(
    path: &Path,
    device: &Device,
) -> Result<candle_nn::VarBuilder<'static>> {
    let mut f = std::fs::File::open(path)?;
    let content = gguf_file::Content::read(&mut f)?;
    let mut map = HashMap::with_capacity(content.tensor_infos.len());
    for name in content.tensor_infos.keys() {
        let t = content.tensor(&mut f, name, &Device::Cpu)?;
        map.insert(name.clone(), t.dequantize(&Device::Cpu)?);
    }
    Ok(candle_nn::VarBuilder::from_tensors(map, DType::F32, device))
}
