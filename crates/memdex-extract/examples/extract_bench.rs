//! Times the index-time extractors over a file of texts and prints a digest of their outputs,
//! so an optimisation can be checked to change nothing.
//!
//! Input: one JSON object per line with a `"text"` string field. Every text is resolved against
//! the fixed anchor 2023-05-08.
//! `cargo run --release -p memdex-extract --example extract_bench -- TEXTS.jsonl [PASSES]`
//!
//! Prints, per function, the best pass's ns per text and an FNV-1a 64 digest over the `Debug`
//! output of every result (for facts: the facts and `expand_key(facts, text)`), and checks that
//! `events_and_invalid_dates` gives what the two separate calls give.

use std::fmt::Debug;
use std::time::Instant;

use chrono::NaiveDate;
use memdex_extract::{
    events_and_invalid_dates, expand_key, extract_events, invalid_dates, parse_query,
    FactExtractor, HeuristicFacts,
};

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .unwrap_or_else(|| "/tmp/extract-texts.jsonl".into());
    let passes: usize = args.next().and_then(|p| p.parse().ok()).unwrap_or(3);
    let data = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let texts: Vec<String> = data.lines().filter_map(text_field).collect();
    let anchor = NaiveDate::from_ymd_opt(2023, 5, 8).expect("valid anchor");
    let facts = HeuristicFacts::default();
    let bytes: usize = texts.iter().map(String::len).sum();
    println!(
        "{} texts ({bytes} bytes) from {path}, best of {passes} passes",
        texts.len()
    );
    let events = bench("extract_events", &texts, passes, |t| {
        extract_events(t, anchor)
    });
    let invalid = bench("invalid_dates", &texts, passes, invalid_dates);
    let facts = bench("facts+expand_key", &texts, passes, |t| {
        let found = facts.extract(t, Some(anchor));
        let key = expand_key(&found, t);
        (found, key)
    });
    // not an index-time call: its digest checks the query side of the shared scanner
    bench("parse_query", &texts, passes, |t| parse_query(t, anchor));
    let both = bench("events_and_invalid_dates", &texts, passes, |t| {
        events_and_invalid_dates(t, anchor)
    });
    let same = texts.iter().all(|t| {
        events_and_invalid_dates(t, anchor) == (extract_events(t, anchor), invalid_dates(t))
    });
    println!("events_and_invalid_dates equals the two calls on every text: {same}");
    let per_item = events + invalid + facts;
    println!("{:<24} {per_item:>10.0} ns/text", "per item, three calls");
    let shared = both + facts;
    println!("{:<24} {shared:>10.0} ns/text", "per item, shared call");
}

/// Runs `f` over every text `passes` times; prints the best ns per text and the digest.
fn bench<R: Debug>(name: &str, texts: &[String], passes: usize, f: impl Fn(&str) -> R) -> f64 {
    let mut best = f64::MAX;
    let mut digest = 0;
    for _ in 0..passes.max(1) {
        let t = Instant::now();
        let out: Vec<R> = texts.iter().map(|s| f(s)).collect();
        best = best.min(t.elapsed().as_nanos() as f64 / texts.len().max(1) as f64);
        digest = fnv(&out);
    }
    println!("{name:<24} {best:>10.0} ns/text  digest {digest:016x}");
    best
}

/// FNV-1a 64 over the `Debug` output of each result, with a separator between results.
fn fnv<R: Debug>(out: &[R]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for r in out {
        for b in format!("{r:?}").bytes().chain([0xff]) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// The `"text"` string of a one-line JSON object (a minimal reader: no serde in this crate).
fn text_field(line: &str) -> Option<String> {
    let rest = &line[line.find("\"text\"")? + 6..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    unescape(rest.strip_prefix('"')?)
}

/// A JSON string body up to its closing quote, escapes decoded.
fn unescape(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => match chars.next()? {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                'b' => out.push('\u{8}'),
                'f' => out.push('\u{c}'),
                'u' => out.push(unicode(&mut chars)?),
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    None
}

/// The character of a `\uXXXX` escape (the `\u` already read), joining surrogate pairs.
fn unicode(chars: &mut std::str::Chars<'_>) -> Option<char> {
    let mut hex = || u32::from_str_radix(&chars.by_ref().take(4).collect::<String>(), 16).ok();
    let hi = hex()?;
    if !(0xd800..0xdc00).contains(&hi) {
        return Some(char::from_u32(hi).unwrap_or('\u{fffd}'));
    }
    // a high surrogate: the low one follows as `\uXXXX`
    let mut skip = chars.clone();
    if skip.next() == Some('\\') && skip.next() == Some('u') {
        *chars = skip;
        let lo = u32::from_str_radix(&chars.by_ref().take(4).collect::<String>(), 16).ok()?;
        return char::from_u32(0x10000 + ((hi - 0xd800) << 10) + (lo.wrapping_sub(0xdc00)));
    }
    Some('\u{fffd}')
}
