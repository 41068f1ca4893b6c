use super::*;
use crate::facts::FactExtractor as _;

fn d(y: i32, m: u32, day: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, day).expect("valid test date")
}

/// Session on Monday 8 May 2023.
fn anchor() -> NaiveDate {
    d(2023, 5, 8)
}

fn one(text: &str) -> DayRange {
    let e = extract_events(text, anchor());
    assert_eq!(e.len(), 1, "{text}: {e:?}");
    e[0].range
}

fn span(a: NaiveDate, b: NaiveDate) -> DayRange {
    DayRange { start: a, end: b }
}

#[test]
fn relative_days() {
    assert_eq!(one("I went yesterday"), DayRange::day(d(2023, 5, 7)));
    assert_eq!(one("Went there last night."), DayRange::day(d(2023, 5, 7)));
    assert_eq!(one("today was great"), DayRange::day(anchor()));
    assert_eq!(one("see you tomorrow"), DayRange::day(d(2023, 5, 9)));
}

#[test]
fn ago_with_words_and_digits() {
    assert_eq!(one("two days ago"), DayRange::day(d(2023, 5, 6)));
    assert_eq!(one("3 days ago"), DayRange::day(d(2023, 5, 5)));
    assert_eq!(one("a couple of days ago"), DayRange::day(d(2023, 5, 6)));
    assert_eq!(
        one("two weeks ago I moved"),
        DayRange::day(d(2023, 4, 24)).pad(3)
    );
    assert_eq!(one("a month ago"), DayRange::day(d(2023, 4, 8)).pad(15));
    assert_eq!(one("10 years ago"), DayRange::day(d(2013, 5, 8)).pad(182));
}

#[test]
fn weekdays_and_weeks() {
    // 8 May 2023 is a Monday
    assert_eq!(one("last Tuesday"), DayRange::day(d(2023, 5, 2)));
    assert_eq!(one("next Friday"), DayRange::day(d(2023, 5, 12)));
    assert_eq!(one("this Friday"), DayRange::day(d(2023, 5, 12)));
    assert_eq!(one("on Saturday we hiked"), DayRange::day(d(2023, 5, 6)));
    assert_eq!(one("last weekend"), span(d(2023, 5, 6), d(2023, 5, 7)));
    assert_eq!(
        one("the weekend before"),
        span(d(2023, 5, 6), d(2023, 5, 7))
    );
    assert_eq!(
        one("the weekend before last"),
        span(d(2023, 4, 29), d(2023, 4, 30))
    );
    assert_eq!(one("last week"), span(d(2023, 5, 1), d(2023, 5, 7)));
    assert_eq!(one("last month"), span(d(2023, 4, 1), d(2023, 4, 30)));
    assert_eq!(one("last year"), span(d(2022, 1, 1), d(2022, 12, 31)));
    assert_eq!(one("last summer"), span(d(2022, 6, 1), d(2022, 8, 31)));
    // no plural weekdays: a habit, not an event
    assert!(extract_events("I work on Tuesdays", anchor()).is_empty());
    assert!(extract_events("I swim on Tuesday mornings", anchor()).is_empty());
    let q = parse_query("Which class do I go to on Thursday evenings?", anchor());
    assert_eq!(q.range, None);
    // one evening is a day
    assert_eq!(one("on Thursday evening"), DayRange::day(d(2023, 5, 4)));
}

#[test]
fn absolute_dates() {
    assert_eq!(one("on 8 May"), DayRange::day(d(2023, 5, 8)));
    assert_eq!(one("the 8th of May"), DayRange::day(d(2023, 5, 8)));
    assert_eq!(one("May 3rd, 2022"), DayRange::day(d(2022, 5, 3)));
    assert_eq!(one("on 1 May, 2022"), DayRange::day(d(2022, 5, 1)));
    assert_eq!(one("2023-04-30"), DayRange::day(d(2023, 4, 30)));
    assert_eq!(one("4/30/2023"), DayRange::day(d(2023, 4, 30)));
    // a yearless date far ahead is last year's; within 60 days ahead it is a plan
    assert_eq!(one("on Aug 15th"), DayRange::day(d(2022, 8, 15)));
    assert_eq!(one("on June 15"), DayRange::day(d(2023, 6, 15)));
    assert_eq!(one("in March"), span(d(2023, 3, 1), d(2023, 3, 31)));
    assert_eq!(one("in July 2022"), span(d(2022, 7, 1), d(2022, 7, 31)));
    assert_eq!(one("in September"), span(d(2022, 9, 1), d(2022, 9, 30)));
    assert_eq!(one("summer of 2021"), span(d(2021, 6, 1), d(2021, 8, 31)));
    assert_eq!(one("back in 2019"), span(d(2019, 1, 1), d(2019, 12, 31)));
}

#[test]
fn ambiguous_words_are_not_dates() {
    for text in [
        "I may go there",
        "we march on",
        "I have two dogs",
        "the last time we talked",
        "a few days",
        "it was 2 am",
        "call me at 5/8",
        "",
        "!!!",
        "日本語のテキスト",
    ] {
        assert!(
            extract_events(text, anchor()).is_empty(),
            "{text}: {:?}",
            extract_events(text, anchor())
        );
    }
}

#[test]
fn query_ranges_are_padded_and_joined() {
    let q = parse_query("What did I buy last weekend?", anchor());
    assert_eq!(q.range, Some(span(d(2023, 5, 4), d(2023, 5, 9))));
    assert!(!q.asks_when);
    let q = parse_query("What did I do in March and April?", anchor());
    assert_eq!(q.range, Some(span(d(2023, 2, 27), d(2023, 5, 2))));
    // relative expressions next to an absolute date are resolved against that date
    let q = parse_query(
        "Where was Tim in the week before 16 November 2023?",
        anchor(),
    );
    assert_eq!(q.range, Some(span(d(2023, 11, 4), d(2023, 11, 18))));
    let q = parse_query(
        "What is the puppy she got two weeks before August 11, 2023?",
        anchor(),
    );
    assert_eq!(q.range, Some(span(d(2023, 7, 23), d(2023, 8, 13))));
    let q = parse_query("Which books did I read in the past two weeks?", anchor());
    assert_eq!(q.range, Some(span(d(2023, 4, 22), d(2023, 5, 10))));
}

#[test]
fn when_questions_ask_about_time_without_a_range() {
    for q in [
        "When did Caroline go to the LGBTQ support group?",
        "How many days before the trip did I buy the tent?",
        "How long ago was Caroline's 18th birthday?",
        "What date did I adopt the puppy?",
    ] {
        let t = parse_query(q, anchor());
        assert!(t.asks_when, "{q}");
        assert_eq!(t.range, None, "{q}");
    }
    let t = parse_query("What is my dog's name?", anchor());
    assert!(!t.asks_when && t.range.is_none());
}

#[test]
fn invalid_dates_are_counted_not_resolved() {
    let text = "on 2023-02-30 and 13/45/2023, then May 32, but 2023-02-28 is fine";
    assert_eq!(invalid_dates(text), 3);
    let e = extract_events(text, anchor());
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].range, DayRange::day(d(2023, 2, 28)));
    assert_eq!(invalid_dates("no dates, 2 am, x-ray"), 0);
}

#[test]
fn one_tokenization_gives_events_and_invalid_dates() {
    let text = "on 2023-02-30 and 13/45/2023, then May 32; yesterday and 8 May 2023.";
    let (events, invalid) = events_and_invalid_dates(text, anchor());
    assert_eq!(events, extract_events(text, anchor()));
    assert_eq!(invalid, invalid_dates(text));
    assert_eq!((events.len(), invalid), (2, 3));
}

/// Every word a rule can start with, in the case it is written and capitalised, and in the
/// places the rules look at (first, after `in`/`the`/`a`): `may_start` must pass each start.
#[test]
fn the_start_filter_passes_every_expression() {
    let mut words: Vec<&str> = TIME_WORDS.to_vec();
    words.extend(crate::lexicon::NUMBER_WORDS.iter().map(|(w, _)| *w));
    words.extend(memdex_core::MONTH_NAMES);
    words.extend(crate::lexicon::MONTH_ABBREVIATIONS.iter().map(|(w, _)| *w));
    words.extend(crate::lexicon::SEASONS.iter().map(|(w, _)| *w));
    words.extend([
        "autumn",
        "several",
        "three",
        "tuesday",
        "weekends",
        "evening",
        "afternoon",
        "jan",
        "sept",
        "2023-5-8",
        "08",
        "3rd",
        "0",
        "32",
    ]);
    let capitalised: Vec<String> = words
        .iter()
        .map(|w| w[..1].to_uppercase() + &w[1..])
        .collect();
    let all: Vec<&str> = words
        .iter()
        .copied()
        .chain(capitalised.iter().map(String::as_str))
        .collect();
    for a in &all {
        for b in &all {
            for c in [
                "",
                "ago",
                "2023",
                "of 2023",
                "before last",
                "of",
                "days ago",
            ] {
                let text = format!("{a} {b} {c}");
                assert_starts_pass(&text, anchor());
            }
        }
    }
}

/// At every word of `text` where an expression matches, `may_start` lets it through.
fn assert_starts_pass(text: &str, a: NaiveDate) {
    let toks = tokens(text);
    for i in 0..toks.len() {
        for query in [false, true] {
            if match_at(&toks, i, a, query).is_some() {
                assert!(may_start(&toks[i]), "{text:?} at word {i}");
            }
        }
    }
}

/// `numeric_date` and the date shape of `invalid_dates` as first written (a `Vec` of parts).
fn reference_numeric_date(word: &str) -> (Option<NaiveDate>, bool) {
    let parts: Vec<&str> = word.split(['-', '/']).collect();
    let shaped = parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && (parts[0].len() == 4 || parts[2].len() == 4);
    if parts.len() != 3 || !parts.iter().all(|p| p.bytes().all(|b| b.is_ascii_digit())) {
        return (None, shaped);
    }
    let n = |s: &str| s.parse::<u32>().ok();
    let date = if parts[0].len() == 4 {
        year(parts[0]).and_then(|y| NaiveDate::from_ymd_opt(y, n(parts[1])?, n(parts[2])?))
    } else if parts[2].len() == 4 && word.contains('/') {
        year(parts[2]).and_then(|y| NaiveDate::from_ymd_opt(y, n(parts[0])?, n(parts[1])?))
    } else {
        None
    };
    (date, shaped)
}

#[test]
fn ms_round_trip() {
    let r = span(d(2023, 5, 6), d(2023, 5, 7));
    let (a, b) = r.to_ms();
    assert_eq!(b - a + 1, 2 * 86_400_000);
    assert_eq!(DayRange::from_ms(a, b), Some(r));
    assert_eq!(ms_day(-1), Some(d(1969, 12, 31)));
}

/// One phrase for every rule, each of which moves the anchor.
const EVERY_RULE: &[&str] = &[
    "see you tomorrow",
    "I went yesterday",
    "last night",
    "today",
    "this morning",
    "next week",
    "last week",
    "this week",
    "next weekend",
    "last weekend",
    "the weekend before last",
    "the week before",
    "on Monday",
    "on Sunday",
    "next Friday",
    "last Tuesday",
    "this Sunday",
    "on 8 May",
    "on 31 December",
    "on 1 January",
    "May 8th",
    "in March",
    "in December",
    "next month",
    "last month",
    "next year",
    "last year",
    "last summer",
    "next winter",
    "this spring",
    "3 days ago",
    "two weeks ago",
    "a month ago",
    "100 years ago",
    "in 3 years",
    "in the last 3 years",
    "the past two weeks",
    "in the past 99 days",
    "two weeks before",
    "8 May 2023",
    "2023-05-08",
];

/// The ends of chrono's range and dates next to them.
fn extreme_anchors() -> Vec<NaiveDate> {
    let mut out = vec![NaiveDate::MIN, NaiveDate::MAX];
    for n in 1..=400 {
        out.extend(NaiveDate::MIN.checked_add_days(chrono::Days::new(n)));
        out.extend(NaiveDate::MAX.checked_sub_days(chrono::Days::new(n)));
    }
    out
}

#[test]
fn anchors_at_the_ends_of_the_date_range_never_panic() {
    for a in extreme_anchors() {
        for text in EVERY_RULE {
            for e in extract_events(text, a) {
                assert!(e.range.start <= e.range.end, "{text} @ {a}: {e:?}");
                let _ = e.range.to_ms();
            }
            let q = parse_query(text, a);
            if let Some(r) = q.range {
                assert!(r.start <= r.end, "{text} @ {a}: {r:?}");
                let _ = r.to_ms();
            }
            let _ = crate::facts::HeuristicFacts {
                relative_dates: true,
                ..Default::default()
            }
            .extract(&format!("Ann: I moved {text}."), Some(a));
        }
    }
    // a date past the end is no event, not a panic
    assert!(extract_events("see you tomorrow", NaiveDate::MAX).is_empty());
    assert!(extract_events("I went yesterday", NaiveDate::MIN).is_empty());
    assert!(extract_events("next week", NaiveDate::MAX).is_empty());
    assert!(extract_events("on Monday", NaiveDate::MIN).len() <= 1);
    // while dates inside the range still resolve
    assert_eq!(
        one_at("I went yesterday", NaiveDate::MAX),
        NaiveDate::MAX.pred_opt().map(DayRange::day)
    );
    // query padding stops at the end of the range
    let q = parse_query("what did I do today?", NaiveDate::MAX);
    assert_eq!(q.range.map(|r| r.end), Some(NaiveDate::MAX));
}

fn one_at(text: &str, a: NaiveDate) -> Option<DayRange> {
    let e = extract_events(text, a);
    assert!(e.len() <= 1, "{e:?}");
    e.first().map(|e| e.range)
}

mod props {
    use super::*;
    use proptest::prelude::*;

    /// Any date chrono can hold, with extra weight at both ends.
    fn anchor() -> impl Strategy<Value = NaiveDate> {
        let lo = NaiveDate::MIN.num_days_from_ce();
        let hi = NaiveDate::MAX.num_days_from_ce();
        prop_oneof![
            lo..=hi,
            lo..=lo + 800,
            hi - 800..=hi,
            // 1000..=9999, what parse_date accepts
            365_000..3_652_000i32,
        ]
        .prop_map(|n| NaiveDate::from_num_days_from_ce_opt(n).unwrap_or(NaiveDate::MIN))
    }

    /// Word salads of the rules' vocabulary, with numbers and arbitrary strings mixed in.
    fn text() -> impl Strategy<Value = String> {
        let word = prop_oneof![
            4 => prop::sample::select(TIME_WORDS).prop_map(str::to_string),
            1 => "[0-9]{1,4}([-/][0-9]{1,4}){0,2}",
            1 => any::<String>(),
        ];
        prop::collection::vec(word, 0..14).prop_map(|w| w.join(" "))
    }

    fn check(text: &str, a: NaiveDate) {
        for e in extract_events(text, a) {
            assert!(e.range.start <= e.range.end, "{e:?}");
            assert!(e.start < e.end && e.end <= text.len(), "{e:?}");
            assert!(text.is_char_boundary(e.start) && text.is_char_boundary(e.end));
            let _ = e.range.to_ms();
            let _ = e.range.days();
        }
        let q = parse_query(text, a);
        if let Some(r) = q.range {
            assert!(r.start <= r.end, "{r:?}");
            let _ = r.to_ms();
        }
        let _ = invalid_dates(text);
        let _ = crate::facts::HeuristicFacts {
            relative_dates: true,
            ..Default::default()
        }
        .extract(text, Some(a));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn any_text_at_any_anchor_resolves_without_panicking(t in text(), a in anchor()) {
            check(&t, a);
        }

        #[test]
        fn only_words_the_filter_passes_start_expressions(t in text(), a in anchor()) {
            assert_starts_pass(&t, a);
        }

        #[test]
        fn one_tokenization_equals_two(t in text(), a in anchor()) {
            prop_assert_eq!(
                events_and_invalid_dates(&t, a),
                (extract_events(&t, a), invalid_dates(&t))
            );
        }

        #[test]
        fn numeric_dates_match_the_reference(w in "[0-9a-]{0,5}([-/][0-9]{0,5}){0,4}") {
            let shaped = date_parts(&w).is_some_and(|p| p[0].len() == 4 || p[2].len() == 4);
            prop_assert_eq!((numeric_date(&w), shaped), reference_numeric_date(&w));
        }

        #[test]
        fn timestamps_of_any_value_map_to_a_day_or_none(ms in any::<i64>()) {
            if let Some(d) = ms_day(ms) {
                check("see you tomorrow, last week and on 8 May", d);
            }
        }
    }
}

#[test]
fn questions_about_an_earlier_state_are_told_apart_from_present_ones() {
    for q in [
        "Where did my sister live before?",
        "What car did I use to drive?",
        "Who was my previous manager?",
        "What was my old phone?",
        "Where did we originally plan to go?",
        "What did I eat at first?",
        "Where did I first work?",
    ] {
        assert!(parse_query(q, anchor()).asks_earlier, "{q}");
    }
    for q in [
        "Where does my sister live?",
        "How old is my son?",
        "What am I getting used to?",
        "Who is my manager these days?",
        "What is the first step of the recipe?",
    ] {
        assert!(!parse_query(q, anchor()).asks_earlier, "{q}");
    }
}

#[test]
fn present_tense_questions_ask_for_the_state_now() {
    for q in [
        "Where does my sister live?",
        "What car do I drive?",
        "Who is my manager?",
        "What's my rent?",
        "Do I still smoke?",
        "Whom am I dating?",
        "Who coaches my son's soccer team now?",
        "Who walks our dog in the morning?",
        "What did Aisha get in her latest maths mock?",
        "Which phone did I buy most recently?",
        "What was my current address?",
    ] {
        assert!(parse_query(q, anchor()).asks_present, "{q}");
    }
    for q in [
        "Where did my sister live?",
        "What was my old car?",
        "How many times has Melanie gone to the beach?",
        "Would Caroline pursue writing?",
        "Which city",
        "Who was my manager?",
        "Who walked our dog?",
        "Who asked Caroline?",
        "What did I do recently?",
    ] {
        assert!(!parse_query(q, anchor()).asks_present, "{q}");
    }
}
