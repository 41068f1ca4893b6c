//! The size rules of every front end, applied by [`crate::Memory`] (the one way in): the
//! HTTP server's defaults (`memdex serve` may set its own [`Limits`]), and the same per-text
//! and per-session limits for the Python package and the MCP server, so a text one front end
//! refuses is refused by all of them. A text over a limit is [`crate::MemoryError::TooLarge`]
//! (HTTP 413).

use memdex_ingest::SessionLimits;

/// Bytes of one turn, query, recent turn or embedding input.
pub const MAX_TEXT_BYTES: usize = 32 << 10;
/// Turns of one session (the server: of one request, all sessions together).
pub const MAX_TURNS: usize = 2000;
/// Hits one search returns at most.
pub const MAX_K: usize = 1000;
/// Recent turns one search may carry.
pub const MAX_RECENT_TURNS: usize = 16;

/// Hits one search returns by default.
pub const DEFAULT_K: usize = 10;

/// What one call may carry. [`Limits::default`] is the HTTP server's default;
/// [`Limits::in_process`] lifts the per-call counts (a whole benchmark file in one `add`)
/// and keeps every per-text and per-session rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Sessions in one append.
    pub max_sessions: usize,
    /// Turns in one append, all sessions together.
    pub max_call_turns: usize,
    /// Turns of one session.
    pub max_turns: usize,
    /// Bytes of one turn, query, recent turn or embedding input.
    pub max_text_bytes: usize,
    /// Hits one search returns at most.
    pub max_k: usize,
    /// Texts one embedding call takes.
    pub max_embed_inputs: usize,
    /// Recent turns one search carries.
    pub max_recent_turns: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_sessions: 100,
            max_call_turns: MAX_TURNS,
            max_turns: MAX_TURNS,
            max_text_bytes: MAX_TEXT_BYTES,
            max_k: MAX_K,
            max_embed_inputs: 256,
            max_recent_turns: MAX_RECENT_TURNS,
        }
    }
}

impl Limits {
    /// The server's rules for texts and sessions, no bound on how many sessions, turns or
    /// texts one call carries.
    pub fn in_process() -> Limits {
        Limits {
            max_sessions: usize::MAX,
            max_call_turns: usize::MAX,
            max_embed_inputs: usize::MAX,
            ..Limits::default()
        }
    }

    /// No bound at all: an offline tool's own files and flags (`memdex search`).
    pub fn offline() -> Limits {
        Limits {
            max_sessions: usize::MAX,
            max_call_turns: usize::MAX,
            max_turns: usize::MAX,
            max_text_bytes: usize::MAX,
            max_k: usize::MAX,
            max_embed_inputs: usize::MAX,
            max_recent_turns: usize::MAX,
        }
    }

    /// The per-session rules of the wire validation (`memdex-ingest`).
    pub fn sessions(&self) -> SessionLimits {
        SessionLimits {
            max_turns: self.max_turns,
            max_text_bytes: self.max_text_bytes,
        }
    }
}

/// A text over a size limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TooLarge(pub String);

/// A search's query and recent turns: at most `max_text_bytes` each, at most
/// `max_recent_turns` recent turns.
pub fn check_search_texts(
    query: &str,
    recent_turns: &[String],
    limits: &Limits,
) -> Result<(), TooLarge> {
    let long = |t: &str| t.len() > limits.max_text_bytes;
    if long(query)
        || recent_turns.len() > limits.max_recent_turns
        || recent_turns.iter().any(|t| long(t))
    {
        return Err(TooLarge(format!(
            "query and recent turns: at most {} bytes each, {} recent turns",
            limits.max_text_bytes, limits.max_recent_turns
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
        let lim = Limits::default();
        assert!(check_search_texts(&ok, std::slice::from_ref(&ok), &lim).is_ok());
        assert!(check_search_texts(&big, &[], &lim).is_err());
        assert!(check_search_texts("q", std::slice::from_ref(&big), &lim).is_err());
        let many = vec!["t".to_string(); MAX_RECENT_TURNS + 1];
        assert!(check_search_texts("q", &many, &lim).is_err());
        assert!(check_search_texts(&big, &many, &Limits::offline()).is_ok());
        assert!(check_embed_texts(&[ok], MAX_TEXT_BYTES).is_ok());
        let e = check_embed_texts(&[big], MAX_TEXT_BYTES).unwrap_err();
        assert!(e.0.contains("the limit is 32768"), "{e}");
    }
}
