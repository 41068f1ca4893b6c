//! Weight types without a SIMD kernel in candle's CPU backend (`Q4_1`, `Q5_0`, `Q5_1`: a
//! scalar dot product, ~10× slower) are requantized to `Q8_0` (AVX2 kernel) at load time. Q8_0
//! holds every 4- or 5-bit value of those blocks to within 1/254 of the block's largest
//! magnitude, so the model is the same up to that rounding.

use std::io::{Cursor, Read, Seek};

use candle_core::quantized::gguf_file::{self, Content};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::Device;

/// True for the types [`requantize`] converts.
pub fn slow_on_cpu(t: GgmlDType) -> bool {
    matches!(t, GgmlDType::Q4_1 | GgmlDType::Q5_0 | GgmlDType::Q5_1)
}

/// The tensor as it will be loaded: `Q8_0` for the types [`slow_on_cpu`] names (when its rows
/// are whole Q8_0 blocks), unchanged otherwise.
pub fn requantize_tensor(t: QTensor) -> candle_core::Result<QTensor> {
    let cols = t.shape().dims().last().copied().unwrap_or(0);
    if !slow_on_cpu(t.dtype()) || cols % GgmlDType::Q8_0.block_size() != 0 {
        return Ok(t);
    }
    QTensor::quantize(&t.dequantize(&Device::Cpu)?, GgmlDType::Q8_0)
}

/// `content` rewritten in memory with its slow tensors requantized, or None when it has none.
pub fn requantize<R: Read + Seek>(
    content: &Content,
    reader: &mut R,
) -> candle_core::Result<Option<(Content, Cursor<Vec<u8>>)>> {
    if !content
        .tensor_infos
        .values()
        .any(|i| slow_on_cpu(i.ggml_dtype))
    {
        return Ok(None);
    }
    let mut names: Vec<&String> = content.tensor_infos.keys().collect();
    names.sort();
    let mut tensors = Vec::with_capacity(names.len());
    for name in names {
        let t = content.tensor(reader, name, &Device::Cpu)?;
        tensors.push((name.as_str(), requantize_tensor(t)?));
    }
    let md: Vec<(&str, &gguf_file::Value)> = content
        .metadata
        .iter()
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    let ts: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, t)| (*k, t)).collect();
    let mut buf = Cursor::new(Vec::new());
    gguf_file::write(&mut buf, &md, &ts)?;
    buf.rewind()?;
    let content = Content::read(&mut buf)?;
    Ok(Some((content, buf)))
}

#[cfg(test)]
mod tests {
    use candle_core::Tensor;

    use super::*;

    #[test]
    fn requantized_weights_match_the_originals_within_q8_rounding() -> candle_core::Result<()> {
        let x = Tensor::randn(0f32, 1.0, (8, 64), &Device::Cpu)?;
        for dtype in [GgmlDType::Q4_1, GgmlDType::Q5_0, GgmlDType::Q5_1] {
            let q = QTensor::quantize(&x, dtype)?;
            let want: Vec<Vec<f32>> = q.dequantize(&Device::Cpu)?.to_vec2()?;
            let r = requantize_tensor(q)?;
            assert_eq!(r.dtype(), GgmlDType::Q8_0);
            let got: Vec<Vec<f32>> = r.dequantize(&Device::Cpu)?.to_vec2()?;
            for (w, g) in want.iter().zip(&got) {
                for (wb, gb) in w.chunks(32).zip(g.chunks(32)) {
                    let amax = wb.iter().fold(0f32, |m, v| m.max(v.abs()));
                    for (a, b) in wb.iter().zip(gb) {
                        // half a Q8_0 step, plus the f16 rounding of the block scale
                        assert!((a - b).abs() <= amax / 127.0 * 0.5 + amax * 1e-3, "{a} {b}");
                    }
                }
            }
        }
        let odd = QTensor::quantize(
            &Tensor::zeros((2, 64), candle_core::DType::F32, &Device::Cpu)?,
            GgmlDType::F32,
        )?;
        assert_eq!(
            requantize_tensor(odd)?.dtype(),
            GgmlDType::F32,
            "others untouched"
        );
        Ok(())
    }
}
