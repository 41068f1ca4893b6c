//! SentencePiece's `precompiled_charsmap` (the normaliser inside XLM-R's tokenizer, which
//! Hugging Face `tokenizers` reads as the `Precompiled` normaliser), built from a
//! code-point map.
//!
//! Layout: `u32` trie size in bytes, the trie (a darts-clone double array of `u32` units),
//! then the replacement strings, each ended by `\0`. The trie maps each key's UTF-8 bytes to
//! the offset of its replacement. Units (darts-clone): bits 0–7 the label of the byte that
//! leads to the node, bit 8 "has a leaf", bits 10–30 the offset XORed with the node's
//! position to reach its children (child = pos ^ offset ^ byte; the leaf is at pos ^ offset
//! and holds `value | 1 << 31`).

use std::collections::BTreeMap;

const LEAF: u32 = 1 << 31;
const HAS_LEAF: u32 = 1 << 8;
/// Offsets are stored unscaled in 21 bits.
const MAX_OFFSET: usize = (1 << 21) - 1;

#[derive(Default)]
struct Node {
    children: BTreeMap<u8, usize>,
    value: Option<u32>,
}

/// Builds the charsmap for `map` (each code point to its replacement, possibly empty).
/// `None` when the double array would not fit darts' 21-bit offsets (far beyond any
/// per-code-point map).
pub fn build(map: &[(char, String)]) -> Option<Vec<u8>> {
    // replacement strings, shared when equal
    let mut strings = Vec::<u8>::new();
    let mut at: BTreeMap<&str, u32> = BTreeMap::new();
    let mut nodes = vec![Node::default()];
    for (from, to) in map {
        let off = *at.entry(to.as_str()).or_insert_with(|| {
            let o = strings.len() as u32;
            strings.extend_from_slice(to.as_bytes());
            strings.push(0);
            o
        });
        let mut buf = [0u8; 4];
        let mut n = 0;
        for &b in from.encode_utf8(&mut buf).as_bytes() {
            n = match nodes[n].children.get(&b) {
                Some(&c) => c,
                None => {
                    nodes.push(Node::default());
                    let c = nodes.len() - 1;
                    nodes[n].children.insert(b, c);
                    c
                }
            };
        }
        nodes[n].value = Some(off);
    }
    let mut units = place(&nodes)?;
    // readers XOR a base with any byte without a bounds check: whole blocks of 256 units
    // keep every such position inside the array, as darts-clone's own arrays do
    units.resize(units.len().next_multiple_of(256), 0);
    let mut out = Vec::with_capacity(4 + units.len() * 4 + strings.len());
    out.extend_from_slice(&((units.len() * 4) as u32).to_le_bytes());
    for u in &units {
        out.extend_from_slice(&u.to_le_bytes());
    }
    out.extend_from_slice(&strings);
    Some(out)
}

/// Lays the trie out as a double array (breadth first; each node's children and leaf get a
/// base no other node uses, so a lookup can never land on another node's child).
fn place(nodes: &[Node]) -> Option<Vec<u32>> {
    let mut units: Vec<u32> = vec![0];
    let mut used = vec![true];
    let mut bases = std::collections::HashSet::new();
    let mut queue = std::collections::VecDeque::from([(0usize, 0usize)]); // (node, position)
    let mut first_free = 1usize;
    while let Some((n, pos)) = queue.pop_front() {
        let node = &nodes[n];
        let mut labels: Vec<u8> = node.children.keys().copied().collect();
        if node.value.is_some() {
            labels.insert(0, 0);
        }
        if labels.is_empty() {
            continue;
        }
        while first_free < used.len() && used[first_free] {
            first_free += 1;
        }
        // try bases that put the first label on a free slot, lowest first
        let mut q = first_free;
        let base = loop {
            let b = q ^ labels[0] as usize;
            let fits = b != 0
                && !bases.contains(&b)
                && labels.iter().all(|&l| {
                    let p = b ^ l as usize;
                    p != 0 && !used.get(p).copied().unwrap_or(false)
                });
            if fits {
                break b;
            }
            q += 1;
        };
        let offset = pos ^ base;
        if offset > MAX_OFFSET {
            return None;
        }
        bases.insert(base);
        let top = labels
            .iter()
            .map(|&l| base ^ l as usize)
            .max()
            .unwrap_or(base);
        if top >= used.len() {
            used.resize(top + 1, false);
            units.resize(top + 1, 0);
        }
        units[pos] |= (offset as u32) << 10;
        if let Some(v) = node.value {
            units[pos] |= HAS_LEAF;
            units[base] = v | LEAF;
            used[base] = true;
        }
        for (&byte, &child) in &node.children {
            let p = base ^ byte as usize;
            used[p] = true;
            units[p] = byte as u32;
            queue.push_back((child, p));
        }
    }
    Some(units)
}

/// Looks `key` up the way `spm_precompiled` (and so `tokenizers`) does: the values of every
/// prefix of `key` that is a key, shortest first. `None` when the lookup reads past the
/// trie (where `spm_precompiled` would panic).
pub fn prefixes(charsmap: &[u8], key: &[u8]) -> Option<Vec<u32>> {
    let size = u32::from_le_bytes(charsmap.get(..4)?.try_into().ok()?) as usize;
    let unit = |i: usize| -> Option<u32> {
        let at = 4 + 4 * i;
        let b = charsmap.get(at..at + 4).filter(|_| 4 * i < size)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let offset = |u: u32| ((u >> 10) << ((u & (1 << 9)) >> 6)) as usize;
    let mut out = Vec::new();
    let mut pos = offset(unit(0)?);
    for &c in key {
        if c == 0 {
            break;
        }
        pos ^= c as usize;
        let u = unit(pos)?;
        if u & (LEAF | 0xFF) != c as u32 {
            return Some(out);
        }
        pos ^= offset(u);
        if u & HAS_LEAF != 0 {
            out.push(unit(pos)? & !LEAF);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replacement(charsmap: &[u8], value: u32) -> String {
        let size = u32::from_le_bytes([charsmap[0], charsmap[1], charsmap[2], charsmap[3]]);
        let strings = &charsmap[4 + size as usize..];
        let s = &strings[value as usize..];
        let end = s.iter().position(|&b| b == 0).unwrap();
        String::from_utf8(s[..end].to_vec()).unwrap()
    }

    fn sample_map() -> Vec<(char, String)> {
        let mut m: Vec<(char, String)> = vec![
            ('\t', " ".into()),
            ('\u{ad}', String::new()),
            ('ﬁ', "fi".into()),
            ('Ａ', "A".into()),
            ('①', "1".into()),
            ('\u{1d400}', "A".into()), // 4-byte key sharing a replacement
        ];
        // a dense block of 3-byte keys sharing prefixes
        m.extend((0xFF01..0xFF5Eu32).map(|c| {
            let from = char::from_u32(c).unwrap();
            (from, char::from_u32(c - 0xFEE0).unwrap().to_string())
        }));
        m.sort();
        m.dedup_by_key(|e| e.0);
        m
    }

    #[test]
    fn every_key_finds_its_replacement_and_nothing_else_matches() {
        let map = sample_map();
        let cm = build(&map).unwrap();
        for (from, to) in &map {
            let mut b = [0u8; 4];
            let v = prefixes(&cm, from.encode_utf8(&mut b).as_bytes()).unwrap();
            assert_eq!(v.len(), 1, "{from:?}");
            assert_eq!(&replacement(&cm, v[0]), to, "{from:?}");
        }
        let keys: std::collections::HashSet<char> = map.iter().map(|e| e.0).collect();
        for c in (0..0x3_0000u32).filter_map(char::from_u32) {
            if keys.contains(&c) {
                continue;
            }
            let mut b = [0u8; 4];
            assert_eq!(
                prefixes(&cm, c.encode_utf8(&mut b).as_bytes()),
                Some(vec![]),
                "U+{:04X} is not a key",
                c as u32
            );
        }
    }

    #[test]
    fn a_longer_key_reports_its_prefix_first() {
        // "ab" style: a 1-byte key that is a prefix of nothing else, then text after it
        let cm = build(&[('\t', " ".into())]).unwrap();
        let v = prefixes(&cm, b"\tx").unwrap();
        assert_eq!(v.len(), 1);
        assert_eq!(replacement(&cm, v[0]), " ");
        assert_eq!(prefixes(&cm, b"x\t"), Some(vec![]));
        // every byte sequence stays inside the array (readers do not check bounds)
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                assert!(prefixes(&cm, &[a, b]).is_some(), "{a} {b}");
            }
        }
    }

    #[test]
    fn tokenizers_reads_it_as_the_precompiled_normaliser() {
        use tokenizers::NormalizedString;
        use tokenizers::Normalizer;
        let map = sample_map();
        let cm = build(&map).unwrap();
        let json = serde_json::json!({
            "type": "Precompiled",
            "precompiled_charsmap": crate::tokenizer::base64(&cm),
        });
        let n: tokenizers::NormalizerWrapper = serde_json::from_value(json).unwrap();
        let mut s = NormalizedString::from("Ａｂ\tﬁ① x\u{ad}y \u{1d400}!");
        n.normalize(&mut s).unwrap();
        assert_eq!(s.get(), "Ab fi1 xy A!");
    }
}
