//! Tokens and the small vocabularies (numbers, months, weekdays, units) the extractors match.

use std::borrow::Cow;
use std::ops::Deref;

use chrono::Weekday;

/// A token's lower-cased text: borrowed from the input when it already is lower-case ASCII (most
/// words: no allocation per token), owned otherwise.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Lower<'a>(Cow<'a, str>);

impl<'a> Lower<'a> {
    /// `word`, known to be lower-case ASCII already when `plain`.
    fn known(word: &'a str, plain: bool) -> Lower<'a> {
        if plain {
            Lower(Cow::Borrowed(word))
        } else {
            Lower(Cow::Owned(word.to_lowercase()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Deref for Lower<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

/// A word of the input: lower-cased text, whether the original started upper-case, byte span.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token<'a> {
    pub lower: Lower<'a>,
    pub capital: bool,
    pub start: usize,
    pub end: usize,
}

/// Splits `text` into alphanumeric runs; `/` and `-` stay inside a run between two digits, so
/// `2023-05-08` and `5/8/2023` are one token. Sentence punctuation is a token of its own
/// (`.`, `!`, `?`, `;`) so patterns do not match across sentences.
pub(crate) fn tokens(text: &str) -> Vec<Token<'_>> {
    // about one token per 5 bytes of English prose: one allocation for most texts
    let mut out = Vec::with_capacity(text.len() / 4 + 1);
    let mut i = 0;
    while i < text.len() {
        let c = char_at(text, i);
        if matches!(c, '.' | '!' | '?' | ';') {
            out.push(Token {
                lower: Lower::known(&text[i..i + 1], true),
                capital: false,
                start: i,
                end: i + 1,
            });
            i += 1;
        } else if c.is_alphanumeric() {
            let (end, plain) = run_end(text, i);
            out.push(Token {
                lower: Lower::known(&text[i..end], plain),
                capital: c.is_uppercase(),
                start: i,
                end,
            });
            i = end;
        } else {
            i += c.len_utf8();
        }
    }
    out
}

/// `tokens` with a decimal or a number with thousands separators as one token: `4.1`,
/// `8,000`, `1,250.50` (a value is the whole number, not its parts).
pub(crate) fn number_tokens(text: &str) -> Vec<Token<'_>> {
    let mut out: Vec<Token<'_>> = Vec::new();
    let digits = |t: &Token<'_>| t.lower.bytes().all(|b| b.is_ascii_digit());
    // a number so far: a digit, then digits and the separators already joined
    let number = |t: &Token<'_>| {
        let mut b = t.lower.bytes();
        b.next().is_some_and(|c| c.is_ascii_digit())
            && b.all(|c| c.is_ascii_digit() || c == b'.' || c == b',')
    };
    for t in tokens(text) {
        let joins = |prev: &Token<'_>| {
            let sep = text.as_bytes().get(prev.end).copied();
            digits(&t)
                && number(prev)
                && prev.end + 1 == t.start
                && matches!(sep, Some(b'.' | b','))
        };
        // "4" "." "1": the full stop is a token of its own
        let n = out.len();
        if n >= 2 && out[n - 1].lower.as_str() == "." && joins(&out[n - 2]) {
            out.pop();
        }
        match out.last_mut() {
            Some(prev) if joins(prev) => {
                prev.lower = Lower::known(&text[prev.start..t.end], true);
                prev.end = t.end;
            }
            _ => out.push(t),
        }
    }
    out
}

/// The character starting at byte `i` (a char boundary), decoded only when it is not ASCII.
fn char_at(text: &str, i: usize) -> char {
    match text.as_bytes()[i] {
        b if b.is_ascii() => char::from(b),
        _ => text[i..].chars().next().unwrap_or_default(),
    }
}

/// Where the word starting at byte `i` ends (alphanumerics, and `/` or `-` between two ASCII
/// digits), and whether it is lower-case ASCII already.
fn run_end(text: &str, i: usize) -> (usize, bool) {
    let bytes = text.as_bytes();
    let mut plain = true;
    let mut j = i;
    while let Some(&b) = bytes.get(j) {
        if b.is_ascii_alphanumeric() {
            plain &= !b.is_ascii_uppercase();
            j += 1;
        } else if b.is_ascii() {
            let joins = j > i
                && matches!(b, b'/' | b'-')
                && bytes[j - 1].is_ascii_digit()
                && bytes.get(j + 1).is_some_and(u8::is_ascii_digit);
            if !joins {
                break;
            }
            j += 1;
        } else {
            let c = char_at(text, j);
            if !c.is_alphanumeric() {
                break;
            }
            plain = false;
            j += c.len_utf8();
        }
    }
    (j, plain)
}

/// Number words and their values: what [`number`] reads besides digits.
pub(crate) const NUMBER_WORDS: &[(&str, u32)] = &[
    ("zero", 0),
    ("one", 1),
    ("two", 2),
    ("three", 3),
    ("four", 4),
    ("five", 5),
    ("six", 6),
    ("seven", 7),
    ("eight", 8),
    ("nine", 9),
    ("ten", 10),
    ("eleven", 11),
    ("twelve", 12),
    ("thirteen", 13),
    ("fourteen", 14),
    ("fifteen", 15),
    ("sixteen", 16),
    ("seventeen", 17),
    ("eighteen", 18),
    ("nineteen", 19),
    ("twenty", 20),
    ("a", 1),
    ("an", 1),
    ("couple", 2),
    ("few", 3),
    ("several", 3),
];

/// Whether `word` is a cardinal: ASCII digits (`3`) or a number word (`three`).
pub(crate) fn cardinal(word: &str) -> bool {
    word.bytes().all(|b| b.is_ascii_digit()) || number(word).is_some()
}

/// `8`, `8th`, `21st`, `eight`, `a`, `an`, `couple` (the caller skips a following `of`),
/// `few` (→ 3), `several` (→ 3).
pub(crate) fn number(word: &str) -> Option<u32> {
    lookup(NUMBER_WORDS, word).or_else(|| day_number(word))
}

/// The value of `word` in a (word, value) list.
fn lookup<T: Copy>(list: &[(&str, T)], word: &str) -> Option<T> {
    list.iter().find(|(w, _)| *w == word).map(|&(_, v)| v)
}

/// Digits with an optional ordinal suffix: `8`, `08`, `8th`, `1st`, `22nd`, `3rd`.
pub(crate) fn day_number(word: &str) -> Option<u32> {
    // the digits are a non-empty prefix: a word starting otherwise is no day (the common case)
    if !word.as_bytes().first().is_some_and(u8::is_ascii_digit) {
        return None;
    }
    let digits = word
        .strip_suffix("st")
        .or_else(|| word.strip_suffix("nd"))
        .or_else(|| word.strip_suffix("rd"))
        .or_else(|| word.strip_suffix("th"))
        .unwrap_or(word);
    if digits.is_empty() || digits.len() > 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// A four-digit year between 1900 and 2099.
pub(crate) fn year(word: &str) -> Option<i32> {
    if word.len() != 4 || !word.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let y: i32 = word.parse().ok()?;
    (1900..2100).contains(&y).then_some(y)
}

/// Abbreviated English month names and their numbers (the full names are
/// [`memdex_core::MONTH_NAMES`]).
pub(crate) const MONTH_ABBREVIATIONS: &[(&str, u32)] = &[
    ("jan", 1),
    ("feb", 2),
    ("mar", 3),
    ("apr", 4),
    ("jun", 6),
    ("jul", 7),
    ("aug", 8),
    ("sep", 9),
    ("sept", 9),
    ("oct", 10),
    ("nov", 11),
    ("dec", 12),
];

/// Month 1..=12 from a full or abbreviated English name. `may` and `march` are also common
/// words, so alone they count only when capitalised (see [`month_alone`]).
pub(crate) fn month(tok: &Token<'_>) -> Option<u32> {
    let w = tok.lower.as_str();
    memdex_core::month_number(w).or_else(|| lookup(MONTH_ABBREVIATIONS, w))
}

/// Whether a month token is unambiguous on its own (not the verb `may`/`march`, not `mar`…).
pub(crate) fn month_alone(tok: &Token<'_>) -> bool {
    match tok.lower.as_str() {
        "may" | "march" | "mar" | "jan" | "jun" | "jul" | "aug" | "sep" | "sept" | "oct"
        | "nov" | "dec" | "feb" | "apr" => tok.capital,
        _ => true,
    }
}

pub(crate) fn weekday(word: &str) -> Option<Weekday> {
    Some(match word {
        "monday" => Weekday::Mon,
        "tuesday" => Weekday::Tue,
        "wednesday" => Weekday::Wed,
        "thursday" => Weekday::Thu,
        "friday" => Weekday::Fri,
        "saturday" => Weekday::Sat,
        "sunday" => Weekday::Sun,
        _ => return None,
    })
}

/// Calendar units of "N <unit> ago" / "last <unit>".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    Day,
    Week,
    Month,
    Year,
}

pub(crate) fn unit(word: &str) -> Option<Unit> {
    Some(match word {
        "day" | "days" => Unit::Day,
        "week" | "weeks" => Unit::Week,
        "month" | "months" => Unit::Month,
        "year" | "years" => Unit::Year,
        _ => return None,
    })
}

/// Seasons (northern hemisphere) as (first month, number of months).
pub(crate) const SEASONS: &[(&str, (u32, u32))] = &[
    ("spring", (3, 3)),
    ("summer", (6, 3)),
    ("fall", (9, 3)),
    ("autumn", (9, 3)),
    ("winter", (12, 3)),
];

/// A season's (first month, number of months).
pub(crate) fn season(word: &str) -> Option<(u32, u32)> {
    lookup(SEASONS, word)
}

/// A Bloom-style filter over fixed word lists, built at compile time: true for every listed
/// word and for few others (about one in ten), so it rejects most words before exact matching.
#[derive(Debug)]
pub(crate) struct WordFilter([u64; 16]);

impl WordFilter {
    pub const EMPTY: Self = Self([0; 16]);

    /// This filter, also passing `words`.
    pub const fn with(mut self, words: &[&str]) -> Self {
        let mut i = 0;
        while i < words.len() {
            self = self.add(words[i]);
            i += 1;
        }
        self
    }

    /// This filter, also passing the words of a (word, value) list.
    pub const fn with_keys<T>(mut self, list: &[(&str, T)]) -> Self {
        let mut i = 0;
        while i < list.len() {
            self = self.add(list[i].0);
            i += 1;
        }
        self
    }

    const fn add(mut self, word: &str) -> Self {
        let h = filter_hash(word.as_bytes());
        self.0[h / 64] |= 1 << (h % 64);
        self
    }

    pub fn may_contain(&self, word: &str) -> bool {
        let h = filter_hash(word.as_bytes());
        self.0[h / 64] >> (h % 64) & 1 == 1
    }
}

/// 10 bits (the filter's 1024) from a word's length and its first, middle and last bytes: one
/// multiplication, cheaper than hashing every byte, and words that share all four are rare.
const fn filter_hash(bytes: &[u8]) -> usize {
    let n = bytes.len();
    if n == 0 {
        return 0;
    }
    let key = (n as u64) << 24
        | (bytes[0] as u64) << 16
        | (bytes[n / 2] as u64) << 8
        | bytes[n - 1] as u64;
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 54) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_stay_one_token_and_punctuation_splits() {
        let t: Vec<String> = tokens("On 2023-05-08, I went. 5/8/2023 x-ray")
            .into_iter()
            .map(|t| t.lower.as_str().to_string())
            .collect();
        assert_eq!(
            t,
            ["on", "2023-05-08", "i", "went", ".", "5/8/2023", "x", "ray"]
        );
    }

    #[test]
    fn numbers_and_ordinals() {
        assert_eq!(number("two"), Some(2));
        assert_eq!(number("8th"), Some(8));
        assert_eq!(number("22nd"), Some(22));
        assert_eq!(number("123"), None);
        assert_eq!(day_number("th"), None);
        assert_eq!(year("2023"), Some(2023));
        assert_eq!(year("3023"), None);
    }

    #[test]
    fn word_filters_pass_their_words() {
        let f = WordFilter::EMPTY.with(&["may", "x"]).with_keys(SEASONS);
        for w in ["may", "x", "spring", "autumn"] {
            assert!(f.may_contain(w), "{w}");
        }
        assert!(!WordFilter::EMPTY.may_contain("may"));
    }

    /// The tokenizer as first written (one decoded `char` at a time, every word lower-cased
    /// into a `String`): the fast one must give the same tokens.
    fn reference_tokens(text: &str) -> Vec<(String, bool, usize, usize)> {
        let chars: Vec<(usize, char)> = text.char_indices().collect();
        let mut out = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let (start, c) = chars[i];
            if matches!(c, '.' | '!' | '?' | ';') {
                out.push((c.to_string(), false, start, start + 1));
                i += 1;
                continue;
            }
            if !c.is_alphanumeric() {
                i += 1;
                continue;
            }
            let mut j = i + 1;
            while j < chars.len() {
                let ch = chars[j].1;
                let joins = matches!(ch, '/' | '-')
                    && chars[j - 1].1.is_ascii_digit()
                    && chars.get(j + 1).is_some_and(|n| n.1.is_ascii_digit());
                if ch.is_alphanumeric() || joins {
                    j += 1;
                } else {
                    break;
                }
            }
            let end = chars.get(j).map_or(text.len(), |c| c.0);
            out.push((
                text[start..end].to_lowercase(),
                c.is_uppercase(),
                start,
                end,
            ));
            i = j;
        }
        out
    }

    /// `day_number` as first written (no early exit).
    fn reference_day_number(word: &str) -> Option<u32> {
        let digits = word
            .strip_suffix("st")
            .or_else(|| word.strip_suffix("nd"))
            .or_else(|| word.strip_suffix("rd"))
            .or_else(|| word.strip_suffix("th"))
            .unwrap_or(word);
        if digits.is_empty() || digits.len() > 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok()
    }

    #[test]
    fn a_decimal_or_a_grouped_number_is_one_token() {
        let words = |s: &str| -> Vec<String> {
            (number_tokens(s).into_iter())
                .map(|t| t.lower.as_str().to_string())
                .collect()
        };
        assert_eq!(words("4.1% on £8,000."), ["4.1", "on", "8,000", "."]);
        assert_eq!(
            words("I have 4. 1 more"),
            ["i", "have", "4", ".", "1", "more"]
        );
        assert_eq!(
            words("1,250.50 or 2023-05-08"),
            ["1,250.50", "or", "2023-05-08"]
        );
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        /// Text dense in what the tokenizer branches on: digits next to `/` and `-`, case,
        /// sentence punctuation, and non-ASCII letters, digits and case (`İ`, Kelvin `K`, `²`).
        const TRICKY: &str = "[a-zA-Z0-9/\\-.!?;:, \n'éÉİ\u{212A}²٣ß\u{1F600}]{0,48}";

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(4000))]

            #[test]
            fn tokens_match_the_reference(text in prop_oneof![TRICKY, any::<String>()]) {
                let fast: Vec<_> = tokens(&text)
                    .into_iter()
                    .map(|t| (t.lower.as_str().to_string(), t.capital, t.start, t.end))
                    .collect();
                prop_assert_eq!(fast, reference_tokens(&text));
            }

            #[test]
            fn number_tokens_cover_their_text(text in prop_oneof![TRICKY, any::<String>()]) {
                // each token is its own text (lower-cased), in order, apart from its neighbours
                let toks = number_tokens(&text);
                for w in toks.windows(2) {
                    prop_assert!(w[0].end <= w[1].start);
                }
                for t in &toks {
                    prop_assert_eq!(t.lower.as_str(), text[t.start..t.end].to_lowercase());
                }
            }

            #[test]
            fn day_numbers_match_the_reference(word in "[0-9a-z]{0,5}|[0-9]{0,3}(st|nd|rd|th)?") {
                prop_assert_eq!(day_number(&word), reference_day_number(&word));
            }
        }
    }
}
