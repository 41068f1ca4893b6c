//! A tiny random llama or qwen2 GGUF with a byte-level vocabulary and ChatML markers, written
//! with candle's GGUF writer, for tests of the plumbing here and in the CLI (not for quality).
//! The weights come from a fixed-seed generator, so the same call writes the same bytes (the
//! fuzz harness starts from these files).

use std::path::Path;

use candle_core::quantized::gguf_file::{self, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};

const DIM: usize = 32;
const HEADS: usize = 4;
const KV_HEADS: usize = 2;
const HIDDEN: usize = 64;
const LAYERS: usize = 2;

/// GPT-2's byte → printable character map.
fn byte_chars() -> Vec<char> {
    let printable: Vec<u32> = (b'!'..=b'~')
        .chain(0xA1..=0xAC)
        .chain(0xAE..=0xFF)
        .map(u32::from)
        .collect();
    let mut out = vec!['\0'; 256];
    let mut extra = 0;
    for b in 0..256u32 {
        let c = if printable.contains(&b) {
            b
        } else {
            extra += 1;
            255 + extra
        };
        out[b as usize] = char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER);
    }
    out
}

fn tokens() -> (Vec<String>, Vec<i32>, Vec<String>) {
    let bc = byte_chars();
    let mut toks: Vec<String> = bc.iter().map(|c| c.to_string()).collect();
    let mut types = vec![1; toks.len()];
    let (t, h, e) = (bc[b't' as usize], bc[b'h' as usize], bc[b'e' as usize]);
    let merges = vec![format!("{t} {h}"), format!("{t}{h} {e}")];
    toks.extend([format!("{t}{h}"), format!("{t}{h}{e}")]);
    types.extend([1, 1]);
    for s in ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] {
        toks.push(s.into());
        types.push(3);
    }
    (toks, types, merges)
}

/// Fixed-seed weights, roughly normal with standard deviation 0.2 (a sum of four uniforms).
struct Weights(u64);

impl Weights {
    fn uniform(&mut self) -> f32 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let r = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (r >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }

    fn tensor(&mut self, shape: &[usize]) -> candle_core::Result<Tensor> {
        let n = shape.iter().product();
        let scale = 0.2 * 3f32.sqrt();
        let v: Vec<f32> = (0..n)
            .map(|_| scale * (0..4).map(|_| self.uniform()).sum::<f32>())
            .collect();
        Tensor::from_vec(v, shape, &Device::Cpu)
    }
}

/// Writes a two-layer model of architecture `arch` with a byte-level vocabulary to `path`:
/// `llama` as SmolLM2 lays it out, `qwen2` with query/key/value biases and tied embeddings;
/// any other name gets llama's tensors under that name (for tests of refusal).
pub fn write_tiny(path: &Path, arch: &str) -> candle_core::Result<()> {
    write_tiny_as(path, arch, GgmlDType::F32)
}

/// [`write_tiny`] with the weight matrices in `dtype` (norms and biases stay f32); the
/// widths are multiples of 32, so every block type fits.
pub fn write_tiny_as(path: &Path, arch: &str, dtype: GgmlDType) -> candle_core::Result<()> {
    let q = |t: Tensor| QTensor::quantize(&t, dtype);
    let f = |t: Tensor| QTensor::quantize(&t, GgmlDType::F32);
    let (toks, types, merges) = tokens();
    let vocab = toks.len();
    let mut w = Weights(0x9E37_79B9_7F4A_7C15);
    let mut rand = |shape: &[usize]| w.tensor(shape);
    let u = |v: usize| Value::U32(v as u32);
    let strs = |v: &[String]| Value::Array(v.iter().map(|s| Value::String(s.clone())).collect());
    let key = |k: &str| format!("{arch}.{k}");
    let md: Vec<(String, Value)> = vec![
        ("general.architecture".into(), Value::String(arch.into())),
        (key("attention.head_count"), u(HEADS)),
        (key("attention.head_count_kv"), u(KV_HEADS)),
        (key("block_count"), u(LAYERS)),
        (key("embedding_length"), u(DIM)),
        (key("context_length"), u(512)),
        (key("rope.dimension_count"), u(DIM / HEADS)),
        (key("attention.layer_norm_rms_epsilon"), Value::F32(1e-5)),
        ("tokenizer.ggml.model".into(), Value::String("gpt2".into())),
        ("tokenizer.ggml.pre".into(), Value::String("smollm".into())),
        ("tokenizer.ggml.tokens".into(), strs(&toks)),
        (
            "tokenizer.ggml.token_type".into(),
            Value::Array(types.iter().map(|&t| Value::I32(t)).collect()),
        ),
        ("tokenizer.ggml.merges".into(), strs(&merges)),
        ("tokenizer.ggml.eos_token_id".into(), u(vocab - 1)),
    ];
    let kv = DIM / HEADS * KV_HEADS;
    let ones = || Tensor::ones(DIM, candle_core::DType::F32, &Device::Cpu);
    let mut tensors: Vec<(String, QTensor)> = vec![
        ("token_embd.weight".into(), q(rand(&[vocab, DIM])?)?),
        ("output_norm.weight".into(), f(ones()?)?),
    ];
    if arch != "qwen2" {
        tensors.push(("output.weight".into(), q(rand(&[vocab, DIM])?)?));
    }
    for l in 0..LAYERS {
        let p = |n: &str| format!("blk.{l}.{n}");
        tensors.extend([
            (p("attn_q.weight"), q(rand(&[DIM, DIM])?)?),
            (p("attn_k.weight"), q(rand(&[kv, DIM])?)?),
            (p("attn_v.weight"), q(rand(&[kv, DIM])?)?),
            (p("attn_output.weight"), q(rand(&[DIM, DIM])?)?),
            (p("ffn_gate.weight"), q(rand(&[HIDDEN, DIM])?)?),
            (p("ffn_up.weight"), q(rand(&[HIDDEN, DIM])?)?),
            (p("ffn_down.weight"), q(rand(&[DIM, HIDDEN])?)?),
            (p("attn_norm.weight"), f(ones()?)?),
            (p("ffn_norm.weight"), f(ones()?)?),
        ]);
        if arch == "qwen2" {
            tensors.extend([
                (p("attn_q.bias"), f(rand(&[DIM])?)?),
                (p("attn_k.bias"), f(rand(&[kv])?)?),
                (p("attn_v.bias"), f(rand(&[kv])?)?),
            ]);
        }
    }
    let md: Vec<(&str, &Value)> = md.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let ts: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let mut f = std::fs::File::create(path)?;
    gguf_file::write(&mut f, &md, &ts)
}
