//! Sentence splitting for the rule extractors (facts and TiM triples): the one definition.
//!
//! A sentence ends at `!`, `?`, a newline, or a `.` followed by white space or the end, with
//! any closing quotes or brackets right after the mark kept in the sentence. A `.` does not end
//! one after a title or an abbreviation that never closes a sentence (`Dr. Patel`,
//! `St. Louis`, `e.g. Paris`, `approx. 3 km`), after an initial (`J. K. Rowling`), inside a
//! word or number (`3.5`, `memdex.io`); after an abbreviation that can close a sentence
//! (`etc.`, `p.m.`, `U.S.`) it ends one only when the next word starts in upper case (`etc.
//! and` goes on). After an ordinary word it ends one whatever the next word's case: chat
//! often starts a sentence in lower case.

/// Abbreviations that never end a sentence: titles and Latin or measure shorthands.
const NEVER_FINAL: &[&str] = &[
    "mr", "mrs", "ms", "mx", "dr", "prof", "st", "mt", "ft", "sen", "rep", "gov", "gen", "col",
    "lt", "sgt", "capt", "rev", "hon", "fr", "e.g", "i.e", "vs", "cf", "approx", "appt", "apt",
    "dept", "est", "fig", "no", "nos", "vol", "ave", "blvd", "rd", "hwy", "tel", "ext", "min",
    "max", "avg", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov",
    "dec", "mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "sun",
];

/// Abbreviations that may close a sentence: they end one before an upper-case word.
const MAYBE_FINAL: &[&str] = &[
    "etc", "a.m", "p.m", "u.s", "u.k", "u.s.a", "inc", "ltd", "co", "corp", "jr", "sr", "al",
];

/// The trimmed, non-empty sentences of `text`, in order (see the module docs).
pub fn sentences(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let end = sentence_end(rest);
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        (!piece.is_empty()).then_some(piece)
    })
    .map(str::trim)
    .filter(|s| !s.is_empty())
}

/// Byte length of the first sentence of `text` (all of it when no sentence ends inside).
fn sentence_end(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let ends = match bytes[i] {
            b'!' | b'?' | b'\n' => true,
            b'.' => period_ends(text, i),
            _ => false,
        };
        if ends {
            // closing marks stay with their sentence (all ASCII: never inside a character)
            let mut j = i + 1;
            while j < bytes.len()
                && matches!(bytes[j], b'"' | b'\'' | b')' | b']' | b'.' | b'!' | b'?')
            {
                j += 1;
            }
            return j;
        }
        i += 1;
    }
    bytes.len()
}

/// Whether the `.` at byte `at` of `text` ends a sentence.
fn period_ends(text: &str, at: usize) -> bool {
    let after = &text[at + 1..];
    let Some(next) = after.chars().next() else {
        return true;
    };
    if !next.is_whitespace() && !matches!(next, '"' | '\'' | ')' | ']') {
        return false; // 3.5, memdex.io, U.S. (inside), an ellipsis's first dots
    }
    let word = text[..at]
        .rsplit(char::is_whitespace)
        .next()
        .unwrap_or("")
        .trim_start_matches(['(', '[', '"', '\'']);
    if word.ends_with('.') {
        return true; // the last dot of an ellipsis
    }
    let next_word = after.trim_start().chars().next();
    let upper_next = next_word.is_some_and(char::is_uppercase);
    let lower = word.to_lowercase();
    if is_initial(word) || NEVER_FINAL.contains(&lower.as_str()) {
        return false;
    }
    if MAYBE_FINAL.contains(&lower.as_str()) {
        return upper_next || next_word.is_none();
    }
    // after an ordinary word a period ends the sentence whatever the next word's case: chat
    // often starts one in lower case ("every morning now. does it matter?")
    true
}

/// One upper-case letter: an initial (`J.`), never a sentence's last word in chat text.
fn is_initial(word: &str) -> bool {
    let mut c = word.chars();
    matches!((c.next(), c.next()), (Some(l), None) if l.is_uppercase())
}

#[cfg(test)]
mod tests {
    use super::sentences;

    fn split(text: &str) -> Vec<&str> {
        sentences(text).collect()
    }

    #[test]
    fn abbreviations_titles_and_initials_do_not_end_a_sentence() {
        assert_eq!(
            split("Dr. Patel is my new GP. She is great!"),
            ["Dr. Patel is my new GP.", "She is great!"]
        );
        assert_eq!(
            split("We moved to St. Louis in May. It is approx. 3 km from work."),
            [
                "We moved to St. Louis in May.",
                "It is approx. 3 km from work."
            ]
        );
        assert_eq!(
            split("I read J. K. Rowling again."),
            ["I read J. K. Rowling again."]
        );
        assert_eq!(
            split("It costs 3.50 now, see memdex.io."),
            ["It costs 3.50 now, see memdex.io."]
        );
        assert_eq!(
            split("Bring pens, paper, etc. and snacks."),
            ["Bring pens, paper, etc. and snacks."]
        );
    }

    #[test]
    fn abbreviations_that_can_close_a_sentence_end_one_before_a_capital() {
        assert_eq!(
            split("I moved to the U.S. Last year was hard."),
            ["I moved to the U.S.", "Last year was hard."]
        );
        assert_eq!(split("See you at 5 p.m."), ["See you at 5 p.m."]);
        assert_eq!(
            split("Pens, pads etc. and ink."),
            ["Pens, pads etc. and ink."]
        );
        // after an ordinary word, a lower-case start is a new sentence (chat)
        assert_eq!(
            split("it's matcha every morning now. does it matter?"),
            ["it's matcha every morning now.", "does it matter?"]
        );
        assert_eq!(
            split("Wait... I moved. Really?"),
            ["Wait...", "I moved.", "Really?"]
        );
    }

    #[test]
    fn closing_quotes_and_newlines() {
        assert_eq!(
            split("She said \"I quit.\" Then she left\nnew line"),
            ["She said \"I quit.\"", "Then she left", "new line"]
        );
        assert_eq!(split("  "), Vec::<&str>::new());
    }

    proptest::proptest! {
        /// Nothing is lost or reordered: the pieces are the text's non-blank parts, in order.
        #[test]
        fn sentences_keep_every_character(text in "[a-zA-Z .!?\n\t\"\u{3000}é]{0,60}") {
            let joined: String = sentences(&text).collect::<Vec<_>>().concat();
            let kept: String = text.chars().filter(|c| !c.is_whitespace()).collect();
            let got: String = joined.chars().filter(|c| !c.is_whitespace()).collect();
            proptest::prop_assert_eq!(got, kept);
        }
    }
}
