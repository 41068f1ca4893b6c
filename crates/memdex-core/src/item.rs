use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

use crate::CoreError;

/// Who spoke a turn (or, for items spanning several turns, whose words form the key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
    /// An item whose key mixes both speakers (a session or round keyed on all roles).
    Mixed,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Mixed => "mixed",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = CoreError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "user" => Ok(Role::User),
            "assistant" => Ok(Role::Assistant),
            "mixed" => Ok(Role::Mixed),
            _ => Err(CoreError::InvalidChoice {
                what: "role",
                value: s.to_string(),
                expected: "user, assistant, mixed",
            }),
        }
    }
}

/// One message of a chat session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    pub role: Role,
    pub content: String,
}

/// A chat session of one tenant, as read from any input format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub tenant: String,
    pub session_id: String,
    /// Session start, milliseconds since the Unix epoch (UTC).
    pub timestamp_ms: i64,
    pub turns: Vec<Turn>,
}

/// A unit of memory ready to embed and store: a session, a round or a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryItem {
    pub tenant: String,
    pub session_id: String,
    /// Index of the item inside its session (turn index, round index, or 0 for a session).
    pub turn: u32,
    pub timestamp_ms: i64,
    pub role: Role,
    /// The text returned to the reader.
    pub value: String,
    /// The text that is embedded and matched against queries.
    pub key: String,
    /// Hash of role, key and value (see [`MemoryItem::compute_hash`]): equal items hash equal
    /// in every tenant, which drives idempotent appends and embedding dedup.
    pub content_hash: u64,
}

impl MemoryItem {
    /// The item hash stored in the `content_hash` column: xxh3 over role, key and value.
    pub fn compute_hash(role: Role, key: &str, value: &str) -> u64 {
        let mut buf = Vec::with_capacity(key.len() + value.len() + 16);
        buf.extend_from_slice(role.as_str().as_bytes());
        buf.push(0);
        buf.extend_from_slice(key.as_bytes());
        buf.push(0);
        buf.extend_from_slice(value.as_bytes());
        content_hash(&buf)
    }
}

/// Stable 64-bit content hash (xxh3) used for idempotent appends and cross-tenant dedup.
pub fn content_hash(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_round_trips_through_strings() {
        for r in [Role::User, Role::Assistant, Role::Mixed] {
            assert_eq!(r.as_str().parse::<Role>(), Ok(r));
        }
        assert!("system".parse::<Role>().is_err());
    }

    #[test]
    fn content_hash_is_stable() {
        // Pinned: stores written by older builds must keep deduplicating against new ones.
        assert_eq!(content_hash(b""), 0x2d06800538d394c2);
        assert_ne!(content_hash(b"a"), content_hash(b"b"));
    }
}
