//! A tiny random llama GGUF with a byte-level vocabulary and ChatML markers, written with
//! candle's GGUF writer, for tests of the plumbing here and in the CLI (not for quality).

use std::path::Path;

use candle_core::quantized::gguf_file::{self, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};

const DIM: usize = 32;
const HEADS: usize = 4;
const KV_HEADS: usize = 2;
const HIDDEN: usize = 64;

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

fn q(t: Tensor) -> candle_core::Result<QTensor> {
    QTensor::quantize(&t, GgmlDType::F32)
}

fn rand(shape: &[usize]) -> candle_core::Result<Tensor> {
    Tensor::randn(0f32, 0.2, shape, &Device::Cpu)
}

/// Writes a one-layer llama with a byte-level vocabulary to `path`.
pub fn write_tiny(path: &Path, arch: &str) -> candle_core::Result<()> {
    let (toks, types, merges) = tokens();
    let vocab = toks.len();
    let u = |v: usize| Value::U32(v as u32);
    let strs = |v: &[String]| Value::Array(v.iter().map(|s| Value::String(s.clone())).collect());
    let md: Vec<(&str, Value)> = vec![
        ("general.architecture", Value::String(arch.into())),
        ("llama.attention.head_count", u(HEADS)),
        ("llama.attention.head_count_kv", u(KV_HEADS)),
        ("llama.block_count", u(1)),
        ("llama.embedding_length", u(DIM)),
        ("llama.rope.dimension_count", u(DIM / HEADS)),
        ("llama.attention.layer_norm_rms_epsilon", Value::F32(1e-5)),
        ("tokenizer.ggml.model", Value::String("gpt2".into())),
        ("tokenizer.ggml.pre", Value::String("smollm".into())),
        ("tokenizer.ggml.tokens", strs(&toks)),
        (
            "tokenizer.ggml.token_type",
            Value::Array(types.iter().map(|&t| Value::I32(t)).collect()),
        ),
        ("tokenizer.ggml.merges", strs(&merges)),
        ("tokenizer.ggml.eos_token_id", u(vocab - 1)),
    ];
    let kv = DIM / HEADS * KV_HEADS;
    let ones = Tensor::ones(DIM, candle_core::DType::F32, &Device::Cpu)?;
    let tensors: Vec<(&str, QTensor)> = vec![
        ("token_embd.weight", q(rand(&[vocab, DIM])?)?),
        ("output_norm.weight", q(ones.clone())?),
        ("blk.0.attn_q.weight", q(rand(&[DIM, DIM])?)?),
        ("blk.0.attn_k.weight", q(rand(&[kv, DIM])?)?),
        ("blk.0.attn_v.weight", q(rand(&[kv, DIM])?)?),
        ("blk.0.attn_output.weight", q(rand(&[DIM, DIM])?)?),
        ("blk.0.ffn_gate.weight", q(rand(&[HIDDEN, DIM])?)?),
        ("blk.0.ffn_up.weight", q(rand(&[HIDDEN, DIM])?)?),
        ("blk.0.ffn_down.weight", q(rand(&[DIM, HIDDEN])?)?),
        ("blk.0.attn_norm.weight", q(ones.clone())?),
        ("blk.0.ffn_norm.weight", q(ones)?),
    ];
    let md: Vec<(&str, &Value)> = md.iter().map(|(k, v)| (*k, v)).collect();
    let ts: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, v)| (*k, v)).collect();
    let mut f = std::fs::File::create(path)?;
    gguf_file::write(&mut f, &md, &ts)
}
