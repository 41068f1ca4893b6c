//! The size rules every front end applies to the texts it is given: the HTTP server's default
//! limits (`memdex serve` may set its own), and the same limits for the Python package and the
//! MCP server, so a text one front end refuses is refused by all of them. The server maps a
//! [`TooLarge`] to 413; in-process callers get [`crate::MemoryError::Invalid`].

use memdex_ingest::SessionLimits;

/// Bytes of one turn, query, recent turn or embedding input.
pub const MAX_TEXT_BYTES: usize = 32 << 10;
/// Turns of one session (the server: of one request, all sessions together).
pub const MAX_TURNS: usize = 2000;
/// Hits one search returns at most.
pub const MAX_K: usize = 1000;
/// Recent turns one search may carry.
pub const MAX_RECENT_TURNS: usize = 16;

/// The session limits of every front end's defaults (the wire validation of `memdex-ingest`
/// applies them to each session).
pub const SESSION_LIMITS: SessionLimits = SessionLimits {
    max_turns: MAX_TURNS,
    max_text_bytes: MAX_TEXT_BYTES,
};

/// A text over a size limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TooLarge(pub String);

/// A search's query and recent turns: at most `max_text_bytes` each, at most
/// [`MAX_RECENT_TURNS`] recent turns.
pub fn check_search_texts(
    query: &str,
    recent_turns: &[String],
    max_text_bytes: usize,
) -> Result<(), TooLarge> {
    let long = |t: &str| t.len() > max_text_bytes;
    if long(query) || recent_turns.len() > MAX_RECENT_TURNS || recent_turns.iter().any(|t| long(t))
    {
        return Err(TooLarge(format!(
            "query and recent turns: at most {max_text_bytes} bytes each, \
             {MAX_RECENT_TURNS} recent turns"
        )));
    }
    Ok(())
}

/// Texts to embed: each at most `max_text_bytes`.
pub fn check_embed_texts(texts: &[String], max_text_bytes: usize) -> Result<(), TooLarge> {
    match texts.iter().find(|t| t.len() > max_text_bytes) {
        Some(t) => Err(TooLarge(format!(
            "an input of {} bytes; the limit is {max_text_bytes}",
            t.len()
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_rule_for_search_and_embed_texts() {
        let big = "x".repeat(MAX_TEXT_BYTES + 1);
        let ok = "x".repeat(MAX_TEXT_BYTES);
        assert!(check_search_texts(&ok, std::slice::from_ref(&ok), MAX_TEXT_BYTES).is_ok());
        assert!(check_search_texts(&big, &[], MAX_TEXT_BYTES).is_err());
        assert!(check_search_texts("q", std::slice::from_ref(&big), MAX_TEXT_BYTES).is_err());
        let many = vec!["t".to_string(); MAX_RECENT_TURNS + 1];
        assert!(check_search_texts("q", &many, MAX_TEXT_BYTES).is_err());
        assert!(check_embed_texts(&[ok], MAX_TEXT_BYTES).is_ok());
        let e = check_embed_texts(&[big], MAX_TEXT_BYTES).unwrap_err();
        assert!(e.0.contains("the limit is 32768"), "{e}");
    }
}
