//! The fused encoder of `memdex-fused-bert` as an embedder backend: on CUDA
//! (`--cuda-encoder fused`, `MEMDEX_CUDA_ENCODER=fused`; f16 dense weights) its plans run on the
//! device, products on cuBLAS, each bucket's pass replayed as a CUDA graph on the encoder's own
//! stream; on the CPU (`--cpu-backend fused`) the same plans run on their CPU reference — slow,
//! a correctness check of the plan against candle's BERT without a GPU.

use candle_core::{DType, Device};
use candle_nn::VarBuilder;
use half::f16;
use memdex_fused_bert::{Act, CpuBert, Shape, Weights};

use crate::config::{BertConfig, HiddenAct};
use crate::files::{ModelFiles, WeightFiles};

/// Which implementation runs the encoder on a CUDA device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum CudaEncoder {
    /// candle-transformers' BERT layers (f16 by default): the reference, one kernel per op.
    #[default]
    Candle,
    /// memdex's fused forward pass (`memdex-fused-bert`): f16, about 50 operations per
    /// batch replayed as a CUDA graph per batch shape.
    Fused,
}

/// The environment variable that chooses the CUDA encoder when no option does.
pub const CUDA_ENCODER_ENV: &str = "MEMDEX_CUDA_ENCODER";

impl CudaEncoder {
    /// `MEMDEX_CUDA_ENCODER` (candle or fused), else candle; another value is an error.
    pub fn from_env() -> Result<CudaEncoder, crate::EmbedError> {
        match std::env::var(CUDA_ENCODER_ENV).as_deref() {
            Err(_) | Ok("") | Ok("candle") => Ok(CudaEncoder::Candle),
            Ok("fused") => Ok(CudaEncoder::Fused),
            Ok(other) => Err(crate::EmbedError::Setting {
                name: CUDA_ENCODER_ENV,
                message: format!(
                    "{:?}: expected candle or fused",
                    memdex_core::clip(other, 40)
                ),
            }),
        }
    }
}

/// The fused encoder's shape for a BERT config and the model's pooling.
pub(crate) fn shape(config: &BertConfig, files: &ModelFiles) -> Shape {
    Shape {
        vocab: config.vocab_size,
        max_positions: config.max_position_embeddings,
        hidden: config.hidden_size,
        heads: config.num_attention_heads,
        layers: config.num_hidden_layers,
        intermediate: config.intermediate_size,
        eps: config.layer_norm_eps as f32,
        act: match config.hidden_act {
            HiddenAct::Gelu => Act::Gelu,
            HiddenAct::GeluApproximate => Act::GeluTanh,
            HiddenAct::Relu => Act::Relu,
        },
        pooling: files.pooling,
        normalize: files.normalize,
    }
}

/// The dense weights as f16 on the host, in the fused encoder's order (Q, K, V concatenated
/// into one matrix per layer); names as Hugging Face BERT writes them, with or without a
/// `bert.` prefix.
pub(crate) fn host_weights(
    files: &ModelFiles,
    config: &BertConfig,
    shape: &Shape,
) -> candle_core::Result<Weights> {
    let vb = match &files.weights {
        WeightFiles::Safetensors(paths) => {
            crate::mmap::safetensors_var_builder(paths, DType::F16, &Device::Cpu)?
        }
        WeightFiles::Pth(p) => VarBuilder::from_pth(p, DType::F16, &Device::Cpu)?,
        WeightFiles::Gguf(_) => candle_core::bail!("the fused encoder runs dense weights"),
    };
    let vb = if vb.contains_tensor("embeddings.word_embeddings.weight") {
        vb
    } else {
        vb.pp(config.model_type.as_deref().unwrap_or("bert"))
    };
    let get = |vb: &VarBuilder<'_>, dims: &[usize], name: &str| -> candle_core::Result<Vec<f16>> {
        vb.get(dims, name)?
            .to_dtype(DType::F16)?
            .flatten_all()?
            .to_vec1::<f16>()
    };
    let (h, i) = (shape.hidden, shape.intermediate);
    let e = vb.pp("embeddings");
    let types = get(
        &e,
        &[config.type_vocab_size, h],
        "token_type_embeddings.weight",
    )?;
    let mut t = vec![
        get(&e, &[shape.vocab, h], "word_embeddings.weight")?,
        get(&e, &[shape.max_positions, h], "position_embeddings.weight")?,
        types[..h].to_vec(),
        get(&e, &[h], "LayerNorm.weight")?,
        get(&e, &[h], "LayerNorm.bias")?,
    ];
    for l in 0..shape.layers {
        let v = vb.pp(format!("encoder.layer.{l}"));
        let (mut qkv, mut qkv_b) = (Vec::new(), Vec::new());
        for n in ["query", "key", "value"] {
            qkv.extend(get(&v, &[h, h], &format!("attention.self.{n}.weight"))?);
            qkv_b.extend(get(&v, &[h], &format!("attention.self.{n}.bias"))?);
        }
        t.extend([
            qkv,
            qkv_b,
            get(&v, &[h, h], "attention.output.dense.weight")?,
            get(&v, &[h], "attention.output.dense.bias")?,
            get(&v, &[h], "attention.output.LayerNorm.weight")?,
            get(&v, &[h], "attention.output.LayerNorm.bias")?,
            get(&v, &[i, h], "intermediate.dense.weight")?,
            get(&v, &[i], "intermediate.dense.bias")?,
            get(&v, &[h, i], "output.dense.weight")?,
            get(&v, &[h], "output.dense.bias")?,
            get(&v, &[h], "output.LayerNorm.weight")?,
            get(&v, &[h], "output.LayerNorm.bias")?,
        ]);
    }
    Weights::new(shape, t).map_err(|e| candle_core::Error::Msg(e.to_string()))
}

/// The plan on the CPU reference (`--cpu-backend fused`).
pub(crate) fn load_reference(
    files: &ModelFiles,
    config: &BertConfig,
) -> candle_core::Result<CpuBert> {
    let shape = shape(config, files);
    shape
        .check()
        .map_err(|e| candle_core::Error::Msg(e.to_string()))?;
    let w = host_weights(files, config, &shape)?;
    CpuBert::new(shape, &w).map_err(|e| candle_core::Error::Msg(e.to_string()))
}

/// The plan on `device` (CUDA): Err with the reason when the fused encoder cannot run this
/// model there (the caller falls back to candle and says why).
#[cfg(feature = "cuda")]
pub(crate) fn load_cuda(
    files: &ModelFiles,
    config: &BertConfig,
    device: &Device,
    pad: u32,
) -> Result<memdex_fused_bert::cuda::CudaBert, String> {
    let shape = shape(config, files);
    shape.check().map_err(|e| e.to_string())?;
    let cuda = device.as_cuda_device().map_err(|e| e.to_string())?;
    let w = host_weights(files, config, &shape).map_err(|e| e.to_string())?;
    let ctx = cuda.cuda_stream().context().clone();
    memdex_fused_bert::cuda::CudaBert::new(&ctx, shape, &w, pad).map_err(|e| e.to_string())
}
