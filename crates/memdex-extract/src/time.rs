//! Time expressions: event dates in memory items (relative to the session date) and the time
//! range of a query (relative to the question date), LongMemEval §5.4 without an LLM.
//!
//! Rules, in the order they are tried at each word (all case-insensitive except where noted):
//! * `yesterday`, `today`, `tonight`, `tomorrow`, `last night`, `this morning|afternoon|evening`
//! * ISO `2023-05-08`, `2023/05/08`, US `5/8/2023`
//! * `N days|weeks|months|years ago` (N in digits, words, `a`, `a couple of`, `a few`)
//! * `last|this|next <weekday|week|weekend|month|year|season>`, `the weekend before [last]`
//! * `on <weekday>` (the most recent one; never a habit: a plural `Tuesdays`, or a weekday
//!   before a plural part of the day, `on Thursday evenings`)
//! * `8 May`, `8th of May`, `May 8`, `May 8th, 2023`, `8 May 2023`
//! * `<Month> [of] <year>`, and a month alone when unambiguous (`may`/`march` and short forms
//!   only capitalised): `in March`
//! * `<season> [of] <year>`, `in|since|during <year>`
//! * queries also: `(in) the last|past N units`, `the past week|month|year`.
//!
//! A date without a year is the most recent one on or before the anchor, unless it falls in
//! the next 60 days (plans: "on 15 June I'll…"). Ranges are inclusive days.
//!
//! Every date computation is checked: an expression whose date would leave chrono's range
//! (anchors near `NaiveDate::MIN`/`MAX`) yields nothing instead of panicking, and query
//! padding stops at the ends of the range.

use chrono::{Datelike, Duration, Months, NaiveDate};

use crate::lexicon::{
    day_number, month, month_alone, number, season, tokens, unit, weekday, year, Token, Unit,
    WordFilter, MONTH_ABBREVIATIONS, NUMBER_WORDS, SEASONS,
};

/// An inclusive range of calendar days.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DayRange {
    pub start: NaiveDate,
    pub end: NaiveDate,
}

const MS_PER_DAY: i64 = 86_400_000;

impl DayRange {
    pub fn day(d: NaiveDate) -> Self {
        Self { start: d, end: d }
    }

    /// `[start - days, end + days]`, stopping at the ends of chrono's date range.
    pub fn pad(self, days: i64) -> Self {
        Self {
            start: add_days(self.start, days.saturating_neg()).unwrap_or(NaiveDate::MIN),
            end: add_days(self.end, days).unwrap_or(NaiveDate::MAX),
        }
    }

    /// The smallest range holding both.
    pub fn hull(self, other: Self) -> Self {
        Self {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    /// `[first ms, last ms]` in UTC.
    pub fn to_ms(self) -> (i64, i64) {
        (day_ms(self.start), day_ms(self.end) + MS_PER_DAY - 1)
    }

    /// The range of UTC milliseconds `(a, b)` (inclusive), rounded out to whole days.
    pub fn from_ms(a: i64, b: i64) -> Option<Self> {
        Some(Self {
            start: ms_day(a)?,
            end: ms_day(b)?,
        })
    }

    pub fn days(self) -> i64 {
        (self.end - self.start).num_days() + 1
    }
}

/// `d` moved by `n` days; None outside chrono's date range.
fn add_days(d: NaiveDate, n: i64) -> Option<NaiveDate> {
    d.checked_add_signed(Duration::try_days(n)?)
}

fn day_ms(d: NaiveDate) -> i64 {
    d.signed_duration_since(epoch()).num_days() * MS_PER_DAY
}

fn epoch() -> NaiveDate {
    NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default()
}

/// The UTC calendar day of a millisecond timestamp.
pub fn ms_day(ms: i64) -> Option<NaiveDate> {
    epoch().checked_add_signed(Duration::try_days(ms.div_euclid(MS_PER_DAY))?)
}

/// One resolved time expression and where it is in the text (byte offsets).
#[derive(Debug, Clone, PartialEq)]
pub struct TimeExpr {
    pub range: DayRange,
    /// Resolved against the anchor (no explicit year in it).
    pub relative: bool,
    pub start: usize,
    pub end: usize,
}

/// Every time expression in `text`, resolved against `anchor` (the session date).
pub fn extract_events(text: &str, anchor: NaiveDate) -> Vec<TimeExpr> {
    events_in(&tokens(text), anchor)
}

/// [`extract_events`] over the tokens of a text.
pub(crate) fn events_in(toks: &[Token<'_>], anchor: NaiveDate) -> Vec<TimeExpr> {
    scan(toks, anchor, false)
}

/// How many date-shaped words of `text` name no calendar day (`2023-02-30`, `13/45/2023`,
/// `May 32`): counted by the indexer, never fatal (the item keeps its session date).
pub fn invalid_dates(text: &str) -> usize {
    count_invalid(&tokens(text))
}

/// [`extract_events`] and [`invalid_dates`] of one text from one tokenization: what the indexer
/// needs of each item, for the cost of about one of them.
pub fn events_and_invalid_dates(text: &str, anchor: NaiveDate) -> (Vec<TimeExpr>, usize) {
    let toks = tokens(text);
    (events_in(&toks, anchor), count_invalid(&toks))
}

/// [`invalid_dates`] over the tokens of a text.
fn count_invalid(toks: &[Token<'_>]) -> usize {
    let shaped = |w: &str| date_parts(w).is_some_and(|p| p[0].len() == 4 || p[2].len() == 4);
    toks.iter()
        .enumerate()
        .filter(|(i, t)| {
            let bad_numeric = shaped(&t.lower) && numeric_date(&t.lower).is_none();
            // the rare day number first: most words are no month either
            let bad_day = toks
                .get(i + 1)
                .and_then(|n| day_number(&n.lower))
                .is_some_and(|d| d == 0 || d > 31)
                && month(t).is_some();
            bad_numeric || bad_day
        })
        .count()
}

/// What a query says about time.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryTime {
    /// The hull of the query's time expressions padded by ±2 days (LongMemEval's official
    /// padding); `None` when the query names no time.
    pub range: Option<DayRange>,
    /// The query asks about time itself (`when did…`, `how long ago…`, `what date…`, `how
    /// many days…`) without naming a range.
    pub asks_when: bool,
    /// The query asks for an earlier state of something ("where did I live **before**?",
    /// "my **old** car", "what **used to**…", "**previously**", "at **first**"): the update
    /// stage then prefers older statements instead of newer ones.
    pub asks_earlier: bool,
    /// The question is in the present tense (its first auxiliary or copula is `is`, `are`,
    /// `am`, `do`, `does` or a `'s` contraction: "where does my sister live?", "who is my
    /// manager?"): it asks for the state now, so the update stage prefers newer statements.
    /// Past (`did`, `was`), perfect (`has`) and modal (`would`) questions are left alone.
    pub asks_present: bool,
    pub exprs: Vec<TimeExpr>,
}

/// Parses a query's time reference against `anchor` (the question date).
pub fn parse_query(text: &str, anchor: NaiveDate) -> QueryTime {
    let toks = tokens(text);
    let mut exprs = scan(&toks, anchor, true);
    // "last week, as mentioned on 6 November 2023", "the week before 16 November 2023":
    // relative expressions refer to the query's absolute date, not to the question date
    let absolute = exprs
        .iter()
        .filter(|e| !e.relative)
        .map(|e| e.range.end)
        .max();
    if let Some(a) = absolute.filter(|_| exprs.iter().any(|e| e.relative)) {
        exprs = scan(&toks, a, true);
    }
    let range = exprs
        .iter()
        .map(|e| e.range)
        .reduce(DayRange::hull)
        .map(|r| r.pad(2));
    QueryTime {
        range,
        asks_when: asks_when(&toks),
        asks_earlier: asks_earlier(&toks),
        asks_present: asks_present(&toks),
        exprs,
    }
}

fn asks_when(toks: &[Token<'_>]) -> bool {
    let w = |i: usize| toks.get(i).map_or("", |t| t.lower.as_str());
    (0..toks.len()).any(|i| match w(i) {
        "when" => true,
        "what" | "which" => matches!(w(i + 1), "date" | "day" | "year" | "month" | "time"),
        "how" => {
            (w(i + 1) == "long" && matches!(w(i + 2), "ago" | "before" | "after" | "since"))
                || (w(i + 1) == "many" && unit(w(i + 2)).is_some())
        }
        _ => false,
    })
}

/// Whether the question asks for the newest state: it names it (`current`, `latest`,
/// `newest`, `most recent`: "What did Aisha get in her latest maths mock?"), or the first
/// auxiliary or copula of the question is in the present tense (words are alphanumeric
/// runs: "what's" is `what` `s`), or, without one, the question opens with `who`/`what` and
/// a present-tense verb ("Who coaches my son's team?").
fn asks_present(toks: &[Token<'_>]) -> bool {
    let newest = |i: usize| match toks[i].lower.as_str() {
        "current" | "latest" | "newest" => true,
        "recent" | "recently" => i > 0 && toks[i - 1].lower.as_str() == "most",
        _ => false,
    };
    if (0..toks.len()).any(newest) {
        return true;
    }
    let subject_verb = toks.len() > 1
        && matches!(toks[0].lower.as_str(), "who" | "what")
        && toks[1].lower.len() > 3
        && toks[1].lower.ends_with('s')
        && !toks[1].lower.ends_with("ss");
    for (i, t) in toks.iter().enumerate() {
        match t.lower.as_str() {
            "is" | "are" | "am" | "do" | "does" => return true,
            "s" | "re"
                if i > 0
                    && matches!(
                        toks[i - 1].lower.as_str(),
                        "what" | "where" | "who" | "how" | "which"
                    ) =>
            {
                return true
            }
            "did" | "was" | "were" | "had" | "has" | "have" | "would" | "could" | "will"
            | "might" | "should" | "can" | "may" | "must" => return false,
            _ => {}
        }
    }
    subject_verb
}

/// Words that ask for an earlier state (closed-class time adverbs and adjectives, not
/// relation words): `before`, `previously`, `used to`, `old` (not `how old`), `at first`, …
fn asks_earlier(toks: &[Token<'_>]) -> bool {
    let w = |i: usize| toks.get(i).map_or("", |t| t.lower.as_str());
    (0..toks.len()).any(|i| match w(i) {
        "before" | "previously" | "previous" | "formerly" | "former" | "originally"
        | "original" | "initially" | "earlier" | "prior" | "older" => true,
        "old" => i == 0 || w(i - 1) != "how",
        "used" => {
            w(i + 1) == "to"
                && (i == 0
                    || !matches!(
                        w(i - 1),
                        "get" | "got" | "getting" | "be" | "been" | "is" | "am" | "are"
                    ))
        }
        "use" => w(i + 1) == "to" && i >= 2 && w(i - 2) == "did",
        "first" => {
            i > 0
                && matches!(
                    w(i - 1),
                    "at" | "did" | "i" | "we" | "you" | "he" | "she" | "they"
                )
        }
        _ => false,
    })
}

fn scan(toks: &[Token<'_>], anchor: NaiveDate, query: bool) -> Vec<TimeExpr> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if !may_start(&toks[i]) {
            i += 1;
            continue;
        }
        match match_at(toks, i, anchor, query) {
            Some((range, n)) => {
                let explicit = toks[i..i + n]
                    .iter()
                    .any(|t| year(&t.lower).is_some() || numeric_date(&t.lower).is_some());
                out.push(TimeExpr {
                    range,
                    relative: !explicit,
                    start: toks[i].start,
                    end: toks[i + n - 1].end,
                });
                i += n;
            }
            None => i += 1,
        }
    }
    out
}

/// The words [`match_at`]'s rules start with, besides words starting with a digit (dates, day
/// numbers, `3 days ago`): its keywords, number words (`two weeks ago`, `a few days ago`),
/// months (`May 8`) and seasons (`summer 2023`). Keep in step with `match_at`: a word this
/// rejects is never tried.
const STARTS: WordFilter = WordFilter::EMPTY
    .with(&[
        "yesterday",
        "today",
        "tonight",
        "tomorrow",
        "last",
        "this",
        "next",
        "past",
        "the",
        "on",
        "in",
        "since",
        "during",
    ])
    .with_keys(NUMBER_WORDS)
    .with(&memdex_core::MONTH_NAMES)
    .with_keys(MONTH_ABBREVIATIONS)
    .with_keys(SEASONS);

/// Whether an expression may start at `tok`: a fast reject for most words of a text.
fn may_start(tok: &Token<'_>) -> bool {
    let w = tok.lower.as_bytes();
    w.first().is_some_and(u8::is_ascii_digit) || STARTS.may_contain(&tok.lower)
}

/// The expression starting at word `i`: its range and how many words it spans.
fn match_at(
    toks: &[Token<'_>],
    i: usize,
    anchor: NaiveDate,
    query: bool,
) -> Option<(DayRange, usize)> {
    let w = |k: usize| toks.get(i + k).map_or("", |t| t.lower.as_str());
    let day = |d: NaiveDate| Some((DayRange::day(d), 1));
    match w(0) {
        "yesterday" => return day(add_days(anchor, -1)?),
        "today" | "tonight" => return day(anchor),
        "tomorrow" => return day(add_days(anchor, 1)?),
        "last" if w(1) == "night" => return Some((DayRange::day(add_days(anchor, -1)?), 2)),
        "this" if matches!(w(1), "morning" | "afternoon" | "evening") => {
            return Some((DayRange::day(anchor), 2))
        }
        _ => {}
    }
    if let Some(d) = numeric_date(w(0)) {
        return Some((DayRange::day(d), 1));
    }
    if let Some(r) = ago(toks, i, anchor, query) {
        return Some(r);
    }
    if query {
        if let Some(r) = past_span(toks, i, anchor) {
            return Some(r);
        }
    }
    if matches!(w(0), "last" | "this" | "next" | "past") {
        if let Some(r) = relative(w(0), w(1), anchor) {
            return Some((r, 2));
        }
    }
    if w(0) == "the" && matches!(w(1), "weekend" | "week") && w(2) == "before" {
        let back = if w(3) == "last" { 2 } else { 1 };
        let r = if w(1) == "weekend" {
            weekend_back(anchor, back)?
        } else {
            week_back(anchor, back)?
        };
        return Some((r, if back == 2 { 4 } else { 3 }));
    }
    // "on Thursday evenings" is a habit, as "on Thursdays" is
    let habit = || matches!(w(2), "mornings" | "afternoons" | "evenings" | "nights");
    if w(0) == "on" && !habit() {
        if let Some(wd) = weekday(w(1)) {
            let mut d = anchor;
            while d.weekday() != wd {
                d = add_days(d, -1)?;
            }
            return Some((DayRange::day(d), 2));
        }
    }
    if let Some(r) = day_month(toks, i, anchor) {
        return Some(r);
    }
    if let Some(r) = month_year(toks, i, anchor) {
        return Some(r);
    }
    if let Some((first, len)) = season(w(0)) {
        let k = usize::from(w(1) == "of");
        if let Some(y) = year(w(1 + k)) {
            return Some((months_from(y, first, len)?, 2 + k));
        }
    }
    if matches!(w(0), "in" | "since" | "during") {
        if let Some(y) = year(w(1)) {
            let r = DayRange {
                start: NaiveDate::from_ymd_opt(y, 1, 1)?,
                end: NaiveDate::from_ymd_opt(y, 12, 31)?,
            };
            return Some((r, 2));
        }
    }
    None
}

/// `2023-05-08`, `2023/05/08`, `5/8/2023`.
fn numeric_date(word: &str) -> Option<NaiveDate> {
    let parts = date_parts(word)?;
    let n = |s: &str| s.parse::<u32>().ok();
    if parts[0].len() == 4 {
        NaiveDate::from_ymd_opt(year(parts[0])?, n(parts[1])?, n(parts[2])?)
    } else if parts[2].len() == 4 && word.contains('/') {
        NaiveDate::from_ymd_opt(year(parts[2])?, n(parts[0])?, n(parts[1])?)
    } else {
        None
    }
}

/// The three parts of a word split at `-` and `/` when there are exactly three and all are
/// non-empty runs of ASCII digits (an empty part names no date either way).
fn date_parts(word: &str) -> Option<[&str; 3]> {
    if !word.as_bytes().first().is_some_and(u8::is_ascii_digit) {
        return None;
    }
    let mut parts = word.split(['-', '/']);
    let three = [parts.next()?, parts.next()?, parts.next()?];
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    (parts.next().is_none() && three.iter().all(|p| digits(p))).then_some(three)
}

/// Reads `N unit` at word `i` (`two weeks`, `a couple of days`, `a few months`); returns
/// (N, unit, words used).
fn amount(toks: &[Token<'_>], i: usize) -> Option<(u32, Unit, usize)> {
    let w = |k: usize| toks.get(i + k).map_or("", |t| t.lower.as_str());
    let mut k = 0;
    if matches!(w(0), "a" | "an") && matches!(w(1), "couple" | "few") {
        k = 1;
    }
    let n = number(w(k))?;
    if w(k) == "couple" && w(k + 1) == "of" {
        k += 1;
    }
    let u = unit(w(k + 1))?;
    Some((n, u, k + 2))
}

fn shift(anchor: NaiveDate, n: u32, u: Unit, back: bool) -> Option<NaiveDate> {
    let n64 = i64::from(n);
    let sign = if back { -1 } else { 1 };
    match u {
        Unit::Day => add_days(anchor, sign * n64),
        Unit::Week => add_days(anchor, sign * 7 * n64),
        Unit::Month if back => anchor.checked_sub_months(Months::new(n)),
        Unit::Month => anchor.checked_add_months(Months::new(n)),
        Unit::Year if back => anchor.checked_sub_months(Months::new(12 * n)),
        Unit::Year => anchor.checked_add_months(Months::new(12 * n)),
    }
}

/// `N units ago` → that day, widened by the unit's vagueness (±3 days for weeks, ±15 for
/// months, ±182 for years). In queries also `N units before <date>` (re-anchored on the date).
fn ago(toks: &[Token<'_>], i: usize, anchor: NaiveDate, query: bool) -> Option<(DayRange, usize)> {
    let (n, u, used) = amount(toks, i)?;
    let word = toks.get(i + used)?.lower.as_str();
    if !(word == "ago" || (query && word == "before")) || n == 0 || n > 100 {
        return None;
    }
    let d = shift(anchor, n, u, true)?;
    let slack = match u {
        Unit::Day => 0,
        Unit::Week => 3,
        Unit::Month => 15,
        Unit::Year => 182,
    };
    Some((DayRange::day(d).pad(slack), used + 1))
}

/// Queries: `[in] the last|past N units`, `the past week` → `[anchor − N units, anchor]`.
fn past_span(toks: &[Token<'_>], i: usize, anchor: NaiveDate) -> Option<(DayRange, usize)> {
    let w = |k: usize| toks.get(i + k).map_or("", |t| t.lower.as_str());
    let mut k = usize::from(w(0) == "in");
    if w(k) != "the" || !matches!(w(k + 1), "last" | "past") {
        return None;
    }
    k += 2;
    let (n, u, used) = match unit(w(k)) {
        Some(u) => (1, u, 1),
        None => amount(toks, i + k)?,
    };
    let start = shift(anchor, n, u, true)?;
    Some((DayRange { start, end: anchor }, k + used))
}

fn monday_of(d: NaiveDate) -> Option<NaiveDate> {
    add_days(d, -i64::from(d.weekday().num_days_from_monday()))
}

/// The Monday–Sunday week `back` weeks before `anchor`'s.
fn week_back(anchor: NaiveDate, back: i64) -> Option<DayRange> {
    let start = add_days(monday_of(anchor)?, -7 * back)?;
    Some(DayRange {
        start,
        end: add_days(start, 6)?,
    })
}

/// The Saturday–Sunday `back` weekends before `anchor` (on a weekend day, the current
/// weekend is not "last weekend").
fn weekend_back(anchor: NaiveDate, back: i64) -> Option<DayRange> {
    let start = add_days(monday_of(anchor)?, 5 - 7 * back)?;
    Some(DayRange {
        start,
        end: add_days(start, 1)?,
    })
}

fn months_from(y: i32, first: u32, len: u32) -> Option<DayRange> {
    let start = NaiveDate::from_ymd_opt(y, first, 1)?;
    let end = start.checked_add_months(Months::new(len))?.pred_opt()?;
    Some(DayRange { start, end })
}

/// `last|this|next|past <weekday|week|weekend|month|year|season>`.
fn relative(which: &str, what: &str, anchor: NaiveDate) -> Option<DayRange> {
    let step: i64 = match which {
        "last" | "past" => -1,
        "this" => 0,
        _ => 1,
    };
    if let Some(wd) = weekday(what) {
        let mut d = anchor;
        if step == 0 {
            // this Tuesday: the one of the current week
            d = add_days(monday_of(anchor)?, i64::from(wd.num_days_from_monday()))?;
        } else {
            loop {
                d = add_days(d, step)?;
                if d.weekday() == wd {
                    break;
                }
            }
        }
        return Some(DayRange::day(d));
    }
    match what {
        "week" => week_back(anchor, -step),
        "weekend" => weekend_back(anchor, -step),
        "month" => {
            let m = NaiveDate::from_ymd_opt(anchor.year(), anchor.month(), 1)?;
            let first = if step < 0 {
                m.checked_sub_months(Months::new(1))?
            } else {
                m.checked_add_months(Months::new(step as u32))?
            };
            months_from(first.year(), first.month(), 1)
        }
        "year" => months_from(anchor.year() + step as i32, 1, 12),
        _ => {
            let (first, len) = season(what)?;
            // the season's instance that contains or last ended before the anchor
            let mut y = anchor.year();
            let mut r = months_from(y, first, len)?;
            if r.start > anchor {
                y -= 1;
                r = months_from(y, first, len)?;
            }
            match step {
                -1 if r.end >= anchor => months_from(y - 1, first, len),
                1 => months_from(y + 1, first, len),
                _ => Some(r),
            }
        }
    }
}

/// A month/day without a year: the most recent one on or before `anchor`, or up to 60 days
/// ahead (plans).
fn resolve_day(anchor: NaiveDate, m: u32, d: u32, y: Option<i32>) -> Option<NaiveDate> {
    if let Some(y) = y {
        return NaiveDate::from_ymd_opt(y, m, d);
    }
    let this = NaiveDate::from_ymd_opt(anchor.year(), m, d)?;
    // past the end of chrono's range, every date of the anchor's year is within 60 days
    if add_days(anchor, 60).is_none_or(|limit| this <= limit) {
        Some(this)
    } else {
        NaiveDate::from_ymd_opt(anchor.year() - 1, m, d)
    }
}

/// `8 May`, `8th of May`, `May 8`, `May 8th, 2023`, `8 May 2023`.
fn day_month(toks: &[Token<'_>], i: usize, anchor: NaiveDate) -> Option<(DayRange, usize)> {
    let tok = |k: usize| toks.get(i + k);
    let w = |k: usize| tok(k).map_or("", |t| t.lower.as_str());
    let (d, m, mut used) = if let Some(d) = day_number(w(0)) {
        let k = usize::from(w(1) == "of");
        (d, month(tok(1 + k)?)?, 2 + k)
    } else {
        let m = month(tok(0)?)?;
        (day_number(w(1))?, m, 2)
    };
    if !(1..=31).contains(&d) {
        return None;
    }
    let y = year(w(used));
    if y.is_some() {
        used += 1;
    }
    Some((DayRange::day(resolve_day(anchor, m, d, y)?), used))
}

/// `March 2023`, `March of 2023`, `in March` (an unambiguous month alone).
fn month_year(toks: &[Token<'_>], i: usize, anchor: NaiveDate) -> Option<(DayRange, usize)> {
    let t = toks.get(i)?;
    let m = month(t)?;
    let w = |k: usize| toks.get(i + k).map_or("", |t| t.lower.as_str());
    let k = usize::from(w(1) == "of");
    if let Some(y) = year(w(1 + k)) {
        return Some((months_from(y, m, 1)?, 2 + k));
    }
    // `May 32`: a failed day, not the whole month
    if !month_alone(t) || day_number(w(1)).is_some() {
        return None;
    }
    let y = if m > anchor.month() {
        anchor.year() - 1
    } else {
        anchor.year()
    };
    Some((months_from(y, m, 1)?, 1))
}

/// The words of the time-expression grammar (`extract_events`, `parse_query`): the vocabulary
/// property tests and fuzzers build inputs from.
pub const TIME_WORDS: &[&str] = &[
    "yesterday",
    "today",
    "tomorrow",
    "tonight",
    "last",
    "this",
    "next",
    "past",
    "night",
    "morning",
    "the",
    "week",
    "weeks",
    "weekend",
    "before",
    "month",
    "months",
    "year",
    "years",
    "day",
    "days",
    "ago",
    "in",
    "on",
    "of",
    "since",
    "during",
    "a",
    "an",
    "couple",
    "few",
    "two",
    "twenty",
    "monday",
    "Friday",
    "sunday",
    "May",
    "may",
    "March",
    "June",
    "dec",
    "summer",
    "winter",
    "fall",
    "spring",
    "8",
    "31",
    "1st",
    "22nd",
    "100",
    "99",
    "2023",
    "1900",
    "2099",
    "2023-05-08",
    "5/8/2023",
    "2023/02/30",
    "when",
    "how",
    "long",
    ",",
    ".",
    "?",
    "I",
    "my",
];

#[cfg(test)]
#[path = "time_tests.rs"]
mod tests;
