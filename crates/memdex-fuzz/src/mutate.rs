//! Mutators. Random bytes rarely get past a JSON parser, so JSON inputs are mostly mutated as
//! trees (a value replaced by an extreme one, a field dropped, renamed, added or retyped, a
//! subtree copied elsewhere) and re-serialised, then sometimes damaged as bytes. Text inputs
//! are mutated as words from a vocabulary of the parsers' own tokens.

use serde_json::{Map, Value};

use crate::rng::Rng;

/// How a target's inputs are shaped, which decides how they are mutated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One JSON document.
    Json,
    /// One JSON document per line.
    JsonLines,
    /// Free text (dates, queries, chat turns).
    Text,
    /// A binary file of little-endian fields (model files): bytes, plus boundary integers
    /// written over 4 or 8 bytes.
    Binary,
}

/// Inputs never grow past this many bytes (keeps one execution cheap).
pub const MAX_INPUT: usize = 256 << 10;

/// Field names the readers and the server know, and near misses.
const FIELDS: &[&str] = &[
    "tenant",
    "session_id",
    "date",
    "turns",
    "role",
    "content",
    "sessions",
    "query",
    "recent_turns",
    "k",
    "stages",
    "context",
    "input",
    "model",
    "encoding_format",
    "dimensions",
    "user",
    "question_id",
    "question_type",
    "question",
    "answer",
    "question_date",
    "haystack_session_ids",
    "haystack_dates",
    "haystack_sessions",
    "answer_session_ids",
    "has_answer",
    "sample_id",
    "conversation",
    "session_1",
    "session_1_date_time",
    "session_01",
    "session_+1",
    "session_4294967296",
    "session_2",
    "session_2_date_time",
    "speaker",
    "dia_id",
    "text",
    "blip_caption",
    "qa",
    "evidence",
    "category",
    "adversarial_answer",
    "retriever",
    "bm25",
    "fusion",
    "dense_weight",
    "fragrel_alpha",
    "fragrel_w",
    "fragrel_scope",
    "fragrel_semantic",
    "recency",
    "importance",
    "time",
    "time_boost",
    "when_boost",
    "",
    "tenant ",
];

/// Strings that have found bugs in parsers like these.
const STRINGS: &[&str] = &[
    "",
    " ",
    "user",
    "assistant",
    "system",
    "+262142-12-31",
    "-262143-01-01",
    "+262142/12/31 (Fri) 10:00",
    "9999-12-31T23:59:59-23:59",
    "1000-01-01T00:00:00+23:59",
    "0999-12-31",
    "2023-05-30T23:40:00Z",
    "2023/05/30 (Tue) 23:40",
    "2023/02/29 (Wed) 10:00",
    "2023-05-30",
    "1:56 pm on 8 May, 2023",
    "1:56 pm on 8 May, +262142",
    "12:00 am on 31 December, 9999",
    "D1:1",
    "D:11:26",
    "D30:05; D1:2",
    "D4294967296:1",
    "see you tomorrow",
    "next week on 8 May, in the last 3 years, 100 years ago",
    "q 1/x",
    "a\"b\\c\nd",
    "é😀\u{0}\u{feff}",
    "conv-1",
    "alice",
    "other",
    "dense",
    "hybrid",
    "rrf",
    "minmax",
    "boost",
    "front",
    "off",
    "base64",
    "float",
    "session",
    "history",
];

const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "1",
    "-1",
    "0.5",
    "1.5",
    "101",
    "1e308",
    "-1e308",
    "1e-320",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "123456789012345678901234567890",
];

fn interesting(rng: &mut Rng, donor: Option<&Value>) -> Value {
    match rng.below(11) {
        0..=3 => Value::String((*rng.pick(STRINGS).unwrap_or(&"")).to_string()),
        4 | 5 => serde_json::from_str(rng.pick(NUMBERS).unwrap_or(&"0")).unwrap_or(Value::Null),
        6 => match rng.below(4) {
            0 => Value::Null,
            1 => Value::Bool(rng.one_in(2)),
            2 => Value::Array(Vec::new()),
            _ => Value::Object(Map::new()),
        },
        7 => {
            // a long value (the readers must not keep it whole in errors)
            let unit = *rng.pick(STRINGS).unwrap_or(&"x");
            let unit = if unit.is_empty() { "x" } else { unit };
            Value::String(unit.repeat(1 + rng.below(4096) / unit.len().max(1)))
        }
        8 => {
            // deep nesting, past serde_json's recursion limit at times
            let mut v = Value::Null;
            for _ in 0..rng.below(200) {
                v = if rng.one_in(2) {
                    Value::Array(vec![v])
                } else {
                    let mut m = Map::new();
                    m.insert("a".into(), v);
                    Value::Object(m)
                };
            }
            v
        }
        9 => donor.cloned().unwrap_or(Value::Null),
        _ => {
            let mut m = Map::new();
            for _ in 0..1 + rng.below(3) {
                let k = *rng.pick(FIELDS).unwrap_or(&"x");
                let v = Value::String((*rng.pick(STRINGS).unwrap_or(&"")).to_string());
                m.insert(k.to_string(), v);
            }
            Value::Object(m)
        }
    }
}

/// Counts the nodes of `v`.
fn count(v: &Value) -> usize {
    1 + match v {
        Value::Array(a) => a.iter().map(count).sum(),
        Value::Object(o) => o.values().map(count).sum(),
        _ => 0,
    }
}

fn nth(v: &Value, mut i: usize) -> Option<Value> {
    fn go(v: &Value, i: &mut usize) -> Option<Value> {
        if *i == 0 {
            return Some(v.clone());
        }
        *i -= 1;
        match v {
            Value::Array(a) => a.iter().find_map(|c| go(c, i)),
            Value::Object(o) => o.values().find_map(|c| go(c, i)),
            _ => None,
        }
    }
    go(v, &mut i)
}

/// Applies `f` to a random node of `v`.
fn at_random_node(v: &mut Value, rng: &mut Rng, f: impl FnOnce(&mut Value, &mut Rng)) {
    let n = count(v);
    let mut i = rng.below(n);
    // the i-th node in pre-order
    let mut target: Option<&mut Value> = None;
    {
        let mut stack: Vec<&mut Value> = vec![v];
        while let Some(node) = stack.pop() {
            if i == 0 {
                target = Some(node);
                break;
            }
            i -= 1;
            match node {
                Value::Array(a) => stack.extend(a.iter_mut().rev()),
                Value::Object(o) => {
                    let mut kids: Vec<&mut Value> = o.values_mut().collect();
                    kids.reverse();
                    stack.extend(kids);
                }
                _ => {}
            }
        }
    }
    if let Some(t) = target {
        f(t, rng);
    }
}

/// One tree mutation of `v`.
pub fn mutate_tree(v: &mut Value, rng: &mut Rng) {
    let donor = nth(v, rng.below(count(v)));
    at_random_node(v, rng, |node, rng| match rng.below(9) {
        0..=2 => *node = interesting(rng, donor.as_ref()),
        3 => {
            // drop a field or an element
            match node {
                Value::Object(o) if !o.is_empty() => {
                    let k = o
                        .keys()
                        .nth(rng.below(o.len()))
                        .cloned()
                        .unwrap_or_default();
                    o.remove(&k);
                }
                Value::Array(a) if !a.is_empty() => {
                    a.remove(rng.below(a.len()));
                }
                _ => *node = interesting(rng, donor.as_ref()),
            }
        }
        4 => {
            // add a known field, or an element copied from a sibling
            match node {
                Value::Object(o) => {
                    let k = *rng.pick(FIELDS).unwrap_or(&"x");
                    o.insert(k.to_string(), interesting(rng, donor.as_ref()));
                }
                Value::Array(a) => {
                    let v = match a.get(rng.below(a.len())) {
                        Some(x) if rng.one_in(2) => x.clone(),
                        _ => interesting(rng, donor.as_ref()),
                    };
                    let at = rng.below(a.len() + 1);
                    a.insert(at, v);
                }
                _ => *node = interesting(rng, donor.as_ref()),
            }
        }
        5 => {
            // rename a field
            if let Value::Object(o) = node {
                if let Some(k) = o.keys().nth(rng.below(o.len().max(1))).cloned() {
                    if let Some(v) = o.remove(&k) {
                        let new = match rng.below(3) {
                            0 => format!("{k}_"),
                            1 => k.to_uppercase(),
                            _ => (*rng.pick(FIELDS).unwrap_or(&"x")).to_string(),
                        };
                        o.insert(new, v);
                    }
                }
            }
        }
        6 => {
            // edit a string or a number in place
            match node {
                Value::String(s) => {
                    let mut b = s.clone().into_bytes();
                    mutate_bytes(&mut b, rng, &[]);
                    *s = String::from_utf8_lossy(&b).into_owned();
                }
                Value::Number(_) => {
                    *node = serde_json::from_str(rng.pick(NUMBERS).unwrap_or(&"0"))
                        .unwrap_or(Value::Null)
                }
                _ => *node = interesting(rng, donor.as_ref()),
            }
        }
        7 => {
            // retype: wrap in an array, or take the first element out
            *node = match std::mem::take(node) {
                Value::Array(mut a) if !a.is_empty() => a.swap_remove(0),
                other => Value::Array(vec![other]),
            }
        }
        _ => {
            // duplicate an array many times (big but valid)
            if let Value::Array(a) = node {
                if let Some(x) = a.first().cloned() {
                    for _ in 0..rng.small(64) {
                        a.push(x.clone());
                    }
                }
            } else {
                *node = interesting(rng, donor.as_ref());
            }
        }
    });
}

/// Tokens worth inserting into raw bytes.
const TOKENS: &[&[u8]] = &[
    b"\"",
    b"\\",
    b"\\u",
    b"\\ud800",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"\n",
    b"\r\n",
    b"null",
    b"\xff",
    b"\xc3",
    b"\xef\xbb\xbf",
    b"1e999",
    b"-",
    b"/",
    b" (",
    b") ",
];

/// One byte-level mutation; `donors` are other inputs to splice from.
pub fn mutate_bytes(b: &mut Vec<u8>, rng: &mut Rng, donors: &[&[u8]]) {
    let len = b.len();
    match rng.below(8) {
        0 if len > 0 => {
            let i = rng.below(len);
            b[i] ^= 1 << rng.below(8);
        }
        1 if len > 0 => {
            let i = rng.below(len);
            b[i] = rng.next_u64() as u8;
        }
        2 if len > 0 => {
            let at = rng.below(len);
            let n = rng.small(len - at).max(1).min(len - at);
            b.drain(at..at + n);
        }
        3 if len > 0 => {
            // duplicate a chunk
            let at = rng.below(len);
            let n = rng.small(len - at).max(1).min(len - at);
            let chunk = b[at..at + n].to_vec();
            let to = rng.below(len + 1);
            b.splice(to..to, chunk);
        }
        4 => {
            let t = *rng.pick(TOKENS).unwrap_or(&&b"\""[..]);
            let to = rng.below(len + 1);
            b.splice(to..to, t.iter().copied());
        }
        5 if !donors.is_empty() => {
            // splice a piece of another input
            let d = donors[rng.below(donors.len())];
            if !d.is_empty() {
                let at = rng.below(d.len());
                let n = rng.small(d.len() - at).max(1).min(d.len() - at);
                let to = rng.below(len + 1);
                b.splice(to..to, d[at..at + n].iter().copied());
            }
        }
        6 if len > 0 => {
            // truncate
            b.truncate(rng.below(len));
        }
        _ => {
            let to = rng.below(len + 1);
            let digits = format!("{}", rng.next_u64() % 100_000);
            b.splice(to..to, digits.bytes());
        }
    }
    b.truncate(MAX_INPUT);
}

/// Integers at the edges of what a length, count, dimension or offset field may hold.
const EDGE_INTS: &[u64] = &[
    0,
    1,
    2,
    3,
    7,
    31,
    32,
    33,
    255,
    4096,
    65_535,
    1 << 20,
    i32::MAX as u64,
    1 << 31,
    u32::MAX as u64,
    1 << 32,
    1 << 40,
    i64::MAX as u64,
    1 << 63,
    u64::MAX,
];

/// One mutation of a binary input: a boundary integer over 4 or 8 bytes at any offset (the
/// fields of a header with strings in it are not aligned), or a byte-level mutation.
pub fn mutate_binary(b: &mut Vec<u8>, rng: &mut Rng, donors: &[&[u8]]) {
    let width = if rng.one_in(2) { 4 } else { 8 };
    if b.len() < width || rng.one_in(3) {
        mutate_bytes(b, rng, donors);
        return;
    }
    let at = rng.below(b.len() - width + 1);
    let mut v = *rng.pick(EDGE_INTS).unwrap_or(&0);
    if rng.one_in(4) {
        v = v.wrapping_sub(1);
    }
    b[at..at + width].copy_from_slice(&v.to_le_bytes()[..width]);
}

/// Date-format pieces beside the time-expression words (`memdex_extract::time::TIME_WORDS`).
const DATE_WORDS: &[&str] = &[
    "what",
    "date",
    "Caroline:",
    "(Tue)",
    "23:40",
    "T10:00:00Z",
    "+02:00",
    "pm",
    "am",
    "+262142",
    "-262143",
    "9999",
    "1000",
    "0999",
    "12:00",
    "1:56",
];

/// One mutation of a text input, as words or as bytes.
pub fn mutate_text(b: &mut Vec<u8>, rng: &mut Rng, donors: &[&[u8]]) {
    if rng.one_in(3) {
        mutate_bytes(b, rng, donors);
        return;
    }
    let text = String::from_utf8_lossy(b).into_owned();
    let mut words: Vec<String> = text.split(' ').map(str::to_string).collect();
    let w = pick_word(rng).to_string();
    match rng.below(4) {
        0 => {
            let at = rng.below(words.len() + 1);
            words.insert(at, w);
        }
        1 if !words.is_empty() => {
            let at = rng.below(words.len());
            words[at] = w;
        }
        2 if words.len() > 1 => {
            words.remove(rng.below(words.len()));
        }
        _ => {
            let at = rng.below(words.len() + 1);
            words.insert(at, format!("{}", rng.next_u64() % 10_000));
        }
    }
    *b = words.join(" ").into_bytes();
    b.truncate(MAX_INPUT);
}

/// One to a few mutations of `input`, by its shape.
pub fn mutate(input: &[u8], shape: Shape, rng: &mut Rng, donors: &[&[u8]]) -> Vec<u8> {
    let mut b = input.to_vec();
    let rounds = 1 + rng.small(4);
    for _ in 0..rounds {
        match shape {
            Shape::Text => mutate_text(&mut b, rng, donors),
            Shape::Binary => mutate_binary(&mut b, rng, donors),
            Shape::Json if !rng.one_in(5) => {
                b = match serde_json::from_slice::<Value>(&b) {
                    Ok(mut v) => {
                        mutate_tree(&mut v, rng);
                        to_json(&v, rng)
                    }
                    Err(_) => {
                        mutate_bytes(&mut b, rng, donors);
                        b
                    }
                }
            }
            Shape::JsonLines if !rng.one_in(5) => {
                let mut lines: Vec<Vec<u8>> =
                    b.split(|&c| c == b'\n').map(<[u8]>::to_vec).collect();
                let i = rng.below(lines.len());
                if let Some(line) = lines.get_mut(i) {
                    if let Ok(mut v) = serde_json::from_slice::<Value>(line) {
                        mutate_tree(&mut v, rng);
                        *line = serde_json::to_vec(&v).unwrap_or_default();
                    } else {
                        mutate_bytes(line, rng, donors);
                    }
                }
                if rng.one_in(8) {
                    let j = rng.below(lines.len());
                    let dup = lines[j].clone();
                    lines.insert(rng.below(lines.len() + 1), dup);
                }
                b = lines.join(&b'\n');
            }
            _ => mutate_bytes(&mut b, rng, donors),
        }
    }
    b.truncate(MAX_INPUT);
    b
}

/// Compact or pretty, as a file could be written.
fn to_json(v: &Value, rng: &mut Rng) -> Vec<u8> {
    if rng.one_in(3) {
        serde_json::to_vec_pretty(v)
    } else {
        serde_json::to_vec(v)
    }
    .unwrap_or_default()
}

/// A word of the date and time-expression grammars.
fn pick_word(rng: &mut Rng) -> &'static str {
    let words = memdex_extract::time::TIME_WORDS;
    let i = rng.below(words.len() + DATE_WORDS.len());
    words
        .get(i)
        .or_else(|| DATE_WORDS.get(i - words.len()))
        .copied()
        .unwrap_or("x")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_mutations_keep_json_valid_and_change_it() {
        let mut rng = Rng::new(7);
        let seed: Value = serde_json::json!({"a": [1, {"b": "c"}], "d": null});
        let mut changed = 0;
        for _ in 0..500 {
            let mut v = seed.clone();
            mutate_tree(&mut v, &mut rng);
            let bytes = serde_json::to_vec(&v).unwrap_or_default();
            assert!(!bytes.is_empty());
            changed += usize::from(v != seed);
        }
        assert!(changed > 400, "{changed}");
    }

    #[test]
    fn mutation_is_reproducible_from_the_seed() {
        let run = |seed| {
            let mut rng = Rng::new(seed);
            mutate(br#"{"x": [1, 2, "y"]}"#, Shape::Json, &mut rng, &[])
        };
        assert_eq!(run(3), run(3));
    }
}
