//! Writes the container's weights *as they are* into `model.gguf` (GGUF v3): the Q4_0
//! matrices as their original ggml blocks, byte for byte, everything else f32, under the
//! same Hugging Face BERT names as `model.safetensors`. memdex's quantized encoder
//! (`memdex --weights gguf`) runs them through candle's quantized matmul without ever
//! dequantising a matrix.
//!
//! Layout (ggml's `gguf.h`): magic `GGUF`, version 3, tensor and metadata counts, the
//! metadata (key, type, value), one info per tensor (name, dims innermost first, ggml type,
//! offset into the data section), padding to `general.alignment` (32), then the data, each
//! tensor starting on a multiple of 32.

use std::io::{BufWriter, Seek, Write};
use std::path::Path;

use crate::e5s1::hf_name;
use crate::e5s1::{DType, E5s1};
use crate::ConvertError;

const ALIGN: u64 = 32;
const GGUF_TYPE_UINT32: u32 = 4;
const GGUF_TYPE_STRING: u32 = 8;
const GGML_TYPE_F32: u32 = 0;
const GGML_TYPE_Q4_0: u32 = 2;

/// One tensor to write: its GGUF name, dims (outermost first, as in safetensors), ggml type
/// and the bytes of its data.
struct Entry<'a> {
    name: String,
    dims: Vec<usize>,
    ggml_type: u32,
    bytes: &'a [u8],
}

/// Writes `model.gguf` for `c` at `path` (through a `.partial` file renamed at the end).
/// Returns the number of tensors written.
pub fn write_gguf(c: &E5s1, path: &Path) -> Result<usize, ConvertError> {
    let entries = entries(c)?;
    let tmp = path.with_extension("gguf.partial");
    let io = |source| ConvertError::Io {
        path: tmp.clone(),
        source,
    };
    let file = std::fs::File::create(&tmp).map_err(io)?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    write_all(&mut w, c, &entries).map_err(io)?;
    w.into_inner()
        .map_err(|e| io(e.into_error()))?
        .sync_all()
        .map_err(io)?;
    std::fs::rename(&tmp, path).map_err(|source| ConvertError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(entries.len())
}

fn entries(c: &E5s1) -> Result<Vec<Entry<'_>>, ConvertError> {
    let mut out = Vec::new();
    for (name, dtype, dims) in c.expected_tensors() {
        let err = |message: &str| ConvertError::Tensor {
            path: c.path.clone(),
            name: name.clone(),
            message: message.into(),
        };
        let hf = hf_name(&name).ok_or_else(|| err("has no Hugging Face BERT name"))?;
        let (_, bytes) = c.bytes(&name).ok_or_else(|| err("missing"))?;
        let ggml_type = match dtype {
            DType::F32 => GGML_TYPE_F32,
            DType::Q4_0 => GGML_TYPE_Q4_0,
        };
        out.push(Entry {
            name: hf,
            dims,
            ggml_type,
            bytes,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

fn write_all<W: Write + Seek>(w: &mut W, c: &E5s1, entries: &[Entry<'_>]) -> std::io::Result<()> {
    w.write_all(b"GGUF")?;
    w.write_all(&3u32.to_le_bytes())?;
    w.write_all(&(entries.len() as u64).to_le_bytes())?;
    let meta: [(&str, Meta); 4] = [
        ("general.architecture", Meta::Str("bert".into())),
        ("general.alignment", Meta::U32(ALIGN as u32)),
        (
            "general.source",
            Meta::Str(format!(
                "E5S1 v{} container {}",
                c.version,
                c.path
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_default()
            )),
        ),
        (
            "memdex.note",
            Meta::Str(
                "matrices are the container's own Q4_0 blocks (not re-quantised); names and \
                 shapes follow Hugging Face BERT; config.json and tokenizer.json beside this file"
                    .into(),
            ),
        ),
    ];
    w.write_all(&(meta.len() as u64).to_le_bytes())?;
    for (key, value) in &meta {
        write_str(w, key)?;
        value.write(w)?;
    }
    let mut offset = 0u64;
    for e in entries {
        write_str(w, &e.name)?;
        w.write_all(&(e.dims.len() as u32).to_le_bytes())?;
        for d in e.dims.iter().rev() {
            w.write_all(&(*d as u64).to_le_bytes())?; // ggml order: innermost first
        }
        w.write_all(&e.ggml_type.to_le_bytes())?;
        w.write_all(&offset.to_le_bytes())?;
        offset = (offset + e.bytes.len() as u64).next_multiple_of(ALIGN);
    }
    pad(w)?;
    for e in entries {
        w.write_all(e.bytes)?;
        pad(w)?;
    }
    Ok(())
}

enum Meta {
    U32(u32),
    Str(String),
}

impl Meta {
    fn write<W: Write>(&self, w: &mut W) -> std::io::Result<()> {
        match self {
            Meta::U32(v) => {
                w.write_all(&GGUF_TYPE_UINT32.to_le_bytes())?;
                w.write_all(&v.to_le_bytes())
            }
            Meta::Str(s) => {
                w.write_all(&GGUF_TYPE_STRING.to_le_bytes())?;
                write_str(w, s)
            }
        }
    }
}

fn write_str<W: Write>(w: &mut W, s: &str) -> std::io::Result<()> {
    w.write_all(&(s.len() as u64).to_le_bytes())?;
    w.write_all(s.as_bytes())
}

/// Zero bytes up to the next multiple of [`ALIGN`] (the data section's start and every
/// tensor's start are aligned: the section starts aligned, each tensor is padded after).
fn pad<W: Write + Seek>(w: &mut W) -> std::io::Result<()> {
    let at = w.stream_position()?;
    let n = (at.next_multiple_of(ALIGN) - at) as usize;
    w.write_all(&[0u8; ALIGN as usize][..n])
}
