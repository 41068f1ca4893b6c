//! Tokens and the small vocabularies (numbers, months, weekdays, units) the extractors match.

use chrono::Weekday;

/// A word of the input: lower-cased text, whether the original started upper-case, byte span.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    pub lower: String,
    pub capital: bool,
    pub start: usize,
    pub end: usize,
}

/// Splits `text` into alphanumeric runs; `/` and `-` stay inside a run between two digits, so
/// `2023-05-08` and `5/8/2023` are one token. Sentence punctuation is a token of its own
/// (`.`, `!`, `?`, `;`) so patterns do not match across sentences.
pub(crate) fn tokens(text: &str) -> Vec<Token> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let (start, c) = chars[i];
        if matches!(c, '.' | '!' | '?' | ';') {
            out.push(Token {
                lower: c.to_string(),
                capital: false,
                start,
                end: start + 1,
            });
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
        out.push(Token {
            lower: text[start..end].to_lowercase(),
            capital: c.is_uppercase(),
            start,
            end,
        });
        i = j;
    }
    out
}

/// `8`, `8th`, `21st`, `eight`, `a`, `an`, `couple` (the caller skips a following `of`),
/// `few` (→ 3), `several` (→ 3).
pub(crate) fn number(word: &str) -> Option<u32> {
    const WORDS: [&str; 21] = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
    ];
    if let Some(n) = WORDS.iter().position(|w| *w == word) {
        return Some(n as u32);
    }
    match word {
        "a" | "an" => return Some(1),
        "couple" => return Some(2),
        "few" | "several" => return Some(3),
        _ => {}
    }
    day_number(word)
}

/// Digits with an optional ordinal suffix: `8`, `08`, `8th`, `1st`, `22nd`, `3rd`.
pub(crate) fn day_number(word: &str) -> Option<u32> {
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

/// Month 1..=12 from a full or abbreviated English name. `may` and `march` are also common
/// words, so alone they count only when capitalised (the caller passes `capital`).
pub(crate) fn month(tok: &Token) -> Option<u32> {
    let m = match tok.lower.as_str() {
        "january" | "jan" => 1,
        "february" | "feb" => 2,
        "march" | "mar" => 3,
        "april" | "apr" => 4,
        "may" => 5,
        "june" | "jun" => 6,
        "july" | "jul" => 7,
        "august" | "aug" => 8,
        "september" | "sep" | "sept" => 9,
        "october" | "oct" => 10,
        "november" | "nov" => 11,
        "december" | "dec" => 12,
        _ => return None,
    };
    Some(m)
}

/// Whether a month token is unambiguous on its own (not the verb `may`/`march`, not `mar`…).
pub(crate) fn month_alone(tok: &Token) -> bool {
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
pub(crate) fn season(word: &str) -> Option<(u32, u32)> {
    Some(match word {
        "spring" => (3, 3),
        "summer" => (6, 3),
        "fall" | "autumn" => (9, 3),
        "winter" => (12, 3),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_stay_one_token_and_punctuation_splits() {
        let t: Vec<String> = tokens("On 2023-05-08, I went. 5/8/2023 x-ray")
            .into_iter()
            .map(|t| t.lower)
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
}
