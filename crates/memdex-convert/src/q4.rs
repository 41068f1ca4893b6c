//! ggml's Q4_0 blocks: 32 weights as an IEEE half scale `d` and 16 bytes of nibbles; byte
//! `j` holds weight `j` (low nibble) and weight `j + 16` (high nibble); weight = (q − 8)·d.

use half::f16;

/// Weights per block.
pub const Q4_BLOCK: usize = 32;
/// Bytes per block: the f16 scale and 16 nibble bytes.
pub const Q4_BLOCK_BYTES: usize = 18;

/// Dequantises whole blocks (`bytes.len()` a multiple of 18) into `out` (32 per block).
pub fn dequantize_into(bytes: &[u8], out: &mut Vec<f32>) {
    for b in bytes.chunks_exact(Q4_BLOCK_BYTES) {
        let d = f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32();
        let q = &b[2..];
        let start = out.len();
        out.resize(start + Q4_BLOCK, 0.0);
        let o = &mut out[start..];
        for j in 0..16 {
            o[j] = ((q[j] & 0x0F) as i32 - 8) as f32 * d;
            o[j + 16] = ((q[j] >> 4) as i32 - 8) as f32 * d;
        }
    }
}

/// Dequantises whole blocks into a new vector.
pub fn dequantize(bytes: &[u8]) -> Vec<f32> {
    let mut v = Vec::with_capacity(bytes.len() / Q4_BLOCK_BYTES * Q4_BLOCK);
    dequantize_into(bytes, &mut v);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_block_by_hand() {
        // d = 0.5 (f16 0x3800); byte j = (hi << 4) | lo with lo = j, hi = 15 − j
        let mut b = vec![0x00, 0x38];
        b.extend((0..16u8).map(|j| ((15 - j) << 4) | j));
        let w = dequantize(&b);
        assert_eq!(w.len(), 32);
        for j in 0..16 {
            assert_eq!(w[j], (j as f32 - 8.0) * 0.5, "low nibble {j}");
            assert_eq!(w[j + 16], ((15 - j) as f32 - 8.0) * 0.5, "high nibble {j}");
        }
        assert_eq!(w[0], -4.0);
        assert_eq!(w[16], 3.5);
    }

    #[test]
    fn blocks_follow_each_other_and_partial_bytes_are_ignored() {
        let mut b = vec![0x00, 0x3C]; // d = 1
        b.extend([0x88; 16]); // all zeros
        b.extend([0x00, 0xC0]); // d = -2
        b.extend([0x9F; 16]); // lo 15 → 7·−2, hi 9 → 1·−2
        b.push(0xFF); // a trailing partial block
        let w = dequantize(&b);
        assert_eq!(w.len(), 64);
        assert!(w[..32].iter().all(|&x| x == 0.0));
        assert!(w[32..48].iter().all(|&x| x == -14.0));
        assert!(w[48..].iter().all(|&x| x == -2.0));
    }
}
