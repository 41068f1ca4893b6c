//! Query context (Mimir): use the recent conversation when the question alone is ambiguous.
//!
//! Rule: a query is ambiguous when, after analysis (stop words removed), it keeps fewer than
//! three terms, or it leans on a pronoun (it, that, this, these, those, they, them, he, she,
//! him, her, there) and names nobody (no capitalised word past the first). An ambiguous query
//! is searched as the last two recent turns followed by the query; a specific one is searched
//! alone, so recent chatter never drowns a clear question.

use memdex_score::text::Analyzer;

const PRONOUNS: &[&str] = &[
    "it", "that", "this", "these", "those", "they", "them", "he", "she", "him", "her", "there",
];

/// Whether `query` needs the recent turns (see the module docs).
pub fn is_ambiguous(query: &str, analyzer: &Analyzer) -> bool {
    if analyzer.terms(query).len() < 3 {
        return true;
    }
    let words: Vec<&str> = query
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .collect();
    let pronoun = words
        .iter()
        .any(|w| PRONOUNS.contains(&w.to_lowercase().as_str()));
    let named = words
        .iter()
        .skip(1)
        .any(|w| w.chars().next().is_some_and(char::is_uppercase) && *w != "I");
    pronoun && !named
}

/// The text actually searched for `query` given the recent turns (oldest first).
pub fn contextual_query(query: &str, recent_turns: &[String]) -> String {
    if recent_turns.is_empty() || !is_ambiguous(query, &Analyzer::english()) {
        return query.to_string();
    }
    let start = recent_turns.len().saturating_sub(2);
    let mut text = recent_turns[start..].join(" ");
    text.push(' ');
    text.push_str(query);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_or_pronoun_only_queries_take_context() {
        let a = Analyzer::english();
        assert!(is_ambiguous("what about it?", &a));
        assert!(is_ambiguous("when did she move there?", &a));
        assert!(!is_ambiguous("when did Caroline move to Paris?", &a));
        assert!(!is_ambiguous(
            "which city did my sister move to last spring",
            &a
        ));
        let recent = vec!["a".to_string(), "my sister moved".into(), "to paris".into()];
        assert_eq!(
            contextual_query("and then?", &recent),
            "my sister moved to paris and then?"
        );
        assert_eq!(
            contextual_query("which city did my sister move to", &recent),
            "which city did my sister move to"
        );
        assert_eq!(contextual_query("and then?", &[]), "and then?");
    }
}
