//! `tokenizer.json` for an XLM-R SentencePiece-unigram vocabulary, in the shape Hugging Face's
//! converter gives `xlm-roberta-base` and `multilingual-e5-small`: the `Precompiled`
//! normaliser (here built from the container's code-point map) then runs of spaces collapsed,
//! `Metaspace` (▁, always prepended, split), the `Unigram` model over the pieces and scores,
//! and `<s> $A </s>`.

use serde_json::{json, Value};

use crate::e5s1::Vocab;
use crate::{charsmap, ConvertError};

/// The metaspace marker.
pub const METASPACE: &str = "\u{2581}";

/// The tokenizer document for `vocab` (`path` names the container in errors).
pub fn tokenizer_json(vocab: &Vocab, path: &std::path::Path) -> Result<Value, ConvertError> {
    let piece = |id: u32, role: &str| -> Result<&str, ConvertError> {
        vocab
            .pieces
            .get(id as usize)
            .map(|p| p.0.as_str())
            .ok_or_else(|| ConvertError::Container {
                path: path.to_path_buf(),
                offset: 0,
                message: format!("{role} id {id} is not a piece"),
            })
    };
    let (bos, eos) = (piece(vocab.bos, "bos")?, piece(vocab.eos, "eos")?);
    piece(vocab.pad, "pad")?;
    piece(vocab.unk, "unk")?;
    let cm = charsmap::build(&vocab.normalize).ok_or_else(|| ConvertError::Container {
        path: path.to_path_buf(),
        offset: 0,
        message: "normalisation map too large for a SentencePiece charsmap".into(),
    })?;
    // control pieces (<s>, <pad>, </s>, <unk> and XLM-R's <mask>) are added tokens, never split
    let added: Vec<Value> = vocab
        .pieces
        .iter()
        .enumerate()
        .filter(|(i, (p, _))| {
            let i = *i as u32;
            [vocab.bos, vocab.eos, vocab.pad, vocab.unk].contains(&i) || p == "<mask>"
        })
        .map(|(i, (p, _))| {
            json!({
                "id": i, "content": p, "single_word": false,
                "lstrip": p == "<mask>", "rstrip": false, "normalized": false, "special": true,
            })
        })
        .collect();
    let special = |t: &str, id: u32| json!({ "id": t, "ids": [id], "tokens": [t] });
    let metaspace = json!({
        "type": "Metaspace", "replacement": METASPACE, "prepend_scheme": "always", "split": true,
    });
    Ok(json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": {
            "type": "Sequence",
            "normalizers": [
                { "type": "Precompiled", "precompiled_charsmap": base64(&cm) },
                { "type": "Replace", "pattern": { "Regex": " {2,}" }, "content": " " },
            ],
        },
        "pre_tokenizer": metaspace,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [
                { "SpecialToken": { "id": bos, "type_id": 0 } },
                { "Sequence": { "id": "A", "type_id": 0 } },
                { "SpecialToken": { "id": eos, "type_id": 0 } },
            ],
            "pair": [
                { "SpecialToken": { "id": bos, "type_id": 0 } },
                { "Sequence": { "id": "A", "type_id": 0 } },
                { "SpecialToken": { "id": eos, "type_id": 0 } },
                { "SpecialToken": { "id": eos, "type_id": 0 } },
                { "Sequence": { "id": "B", "type_id": 0 } },
                { "SpecialToken": { "id": eos, "type_id": 0 } },
            ],
            "special_tokens": { bos: special(bos, vocab.bos), eos: special(eos, vocab.eos) },
        },
        "decoder": metaspace,
        "model": {
            "type": "Unigram",
            "unk_id": vocab.unk,
            "vocab": vocab.pieces.iter().map(|(p, s)| json!([p, s])).collect::<Vec<_>>(),
            "byte_fallback": false,
        },
    }))
}

/// Standard base64 with padding (the charsmap's encoding in `tokenizer.json`).
pub fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for k in 0..4 {
            if k <= c.len() {
                s.push(A[(n >> (18 - 6 * k)) as usize & 63] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (raw, enc) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(raw.as_bytes()), enc);
        }
        assert_eq!(base64(&[0xff, 0xfe, 0xfd]), "//79");
    }
}
