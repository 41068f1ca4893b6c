//! The one session wire type and its one validation.
//!
//! [`SessionIn`] is a line of a memdex JSONL file and the body of an HTTP append alike;
//! the LongMemEval and LoCoMo adapters build [`Session`]s from their own formats and pass them
//! through the same [`check_session`]. So every source agrees on what a session is: a valid
//! tenant name, a session id of 1–256 bytes, at least one turn, `user`/`assistant` roles, a
//! date in the supported range (or none: the time of ingest), texts within the limits.
//! Unknown fields are refused by name; a free-form `metadata` value is accepted and ignored,
//! so richer exports load.

use memdex_core::{check_tenant_name, clip, Role, Session, Turn};
use serde::de::IgnoredAny;
use serde::Deserialize;

use crate::parse_date;

/// Longest session id, in bytes.
pub const MAX_SESSION_ID_BYTES: usize = 256;

/// Size limits of one session (the HTTP server's are tighter than a file's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    pub max_turns: usize,
    /// Bytes of one turn's content.
    pub max_text_bytes: usize,
}

impl SessionLimits {
    /// For files: bounded by the reader's line cap in practice.
    pub const FILES: SessionLimits = SessionLimits {
        max_turns: 1 << 20,
        max_text_bytes: 16 << 20,
    };
}

/// A speaker as the wire names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum TurnRole {
    User,
    Assistant,
}

/// One message.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct TurnIn {
    pub role: TurnRole,
    pub content: String,
    /// Anything the source attaches (ignored).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub metadata: Option<IgnoredAny>,
}

/// One session: a JSONL line, or (with `tenant` optional, given by the path) an HTTP append.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SessionIn {
    /// Required in files; over HTTP the path names it (and a body that names another is
    /// refused).
    #[serde(default)]
    pub tenant: Option<String>,
    pub session_id: String,
    /// RFC 3339, `YYYY/MM/DD (Day) HH:MM` or `YYYY-MM-DD[ HH:MM[:SS]]` (UTC without an
    /// offset). Absent: the time of ingest.
    #[serde(default)]
    pub date: Option<String>,
    pub turns: Vec<TurnIn>,
    /// Anything the source attaches (ignored).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub metadata: Option<IgnoredAny>,
}

/// Why a session was refused; `field` is its path in the session (`turns[2].content`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    #[error("{field}: {message}")]
    TooLarge { field: String, message: String },
    #[error("date {value:?}: {message}")]
    Date { value: String, message: String },
}

impl WireError {
    fn invalid(field: impl Into<String>, message: impl Into<String>) -> WireError {
        WireError::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }

    pub fn field(&self) -> &str {
        match self {
            WireError::Invalid { field, .. } | WireError::TooLarge { field, .. } => field,
            WireError::Date { .. } => "date",
        }
    }
}

/// Where a session without its own tenant or date gets them.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The tenant the request is about (an HTTP path); a session naming another is refused.
    pub tenant: Option<&'a str>,
    /// "Now": the date of undated sessions (ms since the epoch).
    pub now_ms: i64,
    pub limits: SessionLimits,
}

impl SessionIn {
    /// The session this wire value describes, validated (see [`check_session`]).
    pub fn into_session(self, cx: &Context<'_>) -> Result<Session, WireError> {
        let tenant = match (self.tenant, cx.tenant) {
            (Some(t), Some(path)) if t != path => {
                return Err(WireError::invalid(
                    "tenant",
                    format!("names {:?} but the request is for {path:?}", clip(&t, 64)),
                ))
            }
            (Some(t), _) => t,
            (None, Some(path)) => path.to_string(),
            (None, None) => return Err(WireError::invalid("tenant", "missing")),
        };
        let timestamp_ms = match &self.date {
            Some(d) => parse_date(d).map_err(|message| WireError::Date {
                value: clip(d, 64).into_owned(),
                message,
            })?,
            None => cx.now_ms,
        };
        let turns = self
            .turns
            .into_iter()
            .map(|t| Turn {
                role: match t.role {
                    TurnRole::User => Role::User,
                    TurnRole::Assistant => Role::Assistant,
                },
                content: t.content,
            })
            .collect();
        let s = Session {
            tenant,
            session_id: self.session_id,
            timestamp_ms,
            turns,
        };
        check_session(&s, &cx.limits)?;
        Ok(s)
    }
}

/// `s` in the wire shape [`SessionIn`] reads (a JSONL line): `{tenant, session_id, date,
/// turns: [{role, content}]}`, the date RFC 3339 to the millisecond, so reading it back gives
/// the same session.
pub fn session_to_wire(s: &Session) -> serde_json::Value {
    let date = chrono::DateTime::from_timestamp_millis(s.timestamp_ms)
        .map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
    let turns: Vec<serde_json::Value> = (s.turns.iter())
        .map(|t| serde_json::json!({"role": t.role.as_str(), "content": t.content}))
        .collect();
    serde_json::json!({"tenant": s.tenant, "session_id": s.session_id, "date": date,
                       "turns": turns})
}

/// The one validation every source's sessions pass, whatever format they came in.
pub fn check_session(s: &Session, limits: &SessionLimits) -> Result<(), WireError> {
    check_tenant_name(&s.tenant).map_err(|e| WireError::invalid("tenant", e.to_string()))?;
    if s.session_id.trim().is_empty() || s.session_id.len() > MAX_SESSION_ID_BYTES {
        return Err(WireError::invalid(
            "session_id",
            format!("must be 1 to {MAX_SESSION_ID_BYTES} bytes, not blank"),
        ));
    }
    if s.turns.is_empty() {
        return Err(WireError::invalid("turns", "no turns"));
    }
    if s.turns.len() > limits.max_turns {
        return Err(WireError::TooLarge {
            field: "turns".into(),
            message: format!("{} turns; the limit is {}", s.turns.len(), limits.max_turns),
        });
    }
    if let Some((i, t)) = s
        .turns
        .iter()
        .enumerate()
        .find(|(_, t)| t.content.len() > limits.max_text_bytes)
    {
        return Err(WireError::TooLarge {
            field: format!("turns[{i}].content"),
            message: format!(
                "{} bytes; the limit is {}",
                t.content.len(),
                limits.max_text_bytes
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cx(tenant: Option<&str>) -> Context<'_> {
        Context {
            tenant,
            now_ms: 42,
            limits: SessionLimits {
                max_turns: 3,
                max_text_bytes: 10,
            },
        }
    }

    fn parse(json: &str, tenant: Option<&str>) -> Result<Session, String> {
        let s: SessionIn = serde_json::from_str(json).map_err(|e| e.to_string())?;
        s.into_session(&cx(tenant)).map_err(|e| e.to_string())
    }

    #[test]
    fn a_session_goes_out_and_back_the_same() {
        let s = Session {
            tenant: "a".into(),
            session_id: "s".into(),
            timestamp_ms: 1_685_490_000_123,
            turns: vec![
                Turn {
                    role: Role::User,
                    content: "hi".into(),
                },
                Turn {
                    role: Role::Assistant,
                    content: String::new(),
                },
            ],
        };
        let wire = session_to_wire(&s);
        assert_eq!(wire["date"], "2023-05-30T23:40:00.123Z");
        let back: SessionIn = serde_json::from_value(wire).unwrap();
        let cx = Context {
            tenant: None,
            now_ms: 0,
            limits: SessionLimits::FILES,
        };
        assert_eq!(back.into_session(&cx).unwrap(), s);
    }

    #[test]
    fn one_validation_for_every_source() {
        let ok = r#"{"tenant":"a","session_id":"s","turns":[{"role":"user","content":"hi"}],"metadata":{"x":[1]}}"#;
        let s = parse(ok, None).unwrap();
        assert_eq!(
            (s.tenant.as_str(), s.timestamp_ms),
            ("a", 42),
            "undated: now"
        );
        assert_eq!(parse(ok, Some("a")).unwrap().tenant, "a");
        let e = parse(ok, Some("b")).unwrap_err();
        assert!(e.starts_with("tenant: names \"a\""), "{e}");
        let path_only = r#"{"session_id":"s","date":"2023-05-30","turns":[{"role":"assistant","content":"x"}]}"#;
        assert_eq!(
            parse(path_only, Some("p")).unwrap().turns[0].role,
            Role::Assistant
        );
        assert_eq!(parse(path_only, None).unwrap_err(), "tenant: missing");
        let cases = [
            (
                r#"{"tenant":"a","session_id":"s","turns":[]}"#,
                "turns: no turns",
            ),
            (
                r#"{"tenant":"a b","session_id":"s","turns":[{"role":"user","content":"x"}]}"#,
                "tenant:",
            ),
            (
                r#"{"tenant":"a","session_id":" ","turns":[{"role":"user","content":"x"}]}"#,
                "session_id:",
            ),
            (
                r#"{"tenant":"a","session_id":"s","turns":[{"role":"user","content":"0123456789x"}]}"#,
                "turns[0].content: 11 bytes",
            ),
            (
                r#"{"tenant":"a","session_id":"s","date":"yesterday","turns":[{"role":"user","content":"x"}]}"#,
                "date \"yesterday\":",
            ),
            (
                r#"{"tenant":"a","session_id":"s","turns":[{"role":"system","content":"x"}]}"#,
                "unknown variant `system`",
            ),
            (
                r#"{"tenant":"a","session_id":"s","title":"t","turns":[]}"#,
                "unknown field `title`",
            ),
        ];
        for (json, want) in cases {
            let e = parse(json, None).unwrap_err();
            assert!(e.contains(want), "{json}: {e}");
        }
        let long = Session {
            tenant: "a".into(),
            session_id: "s".into(),
            timestamp_ms: 0,
            turns: vec![
                Turn {
                    role: Role::User,
                    content: "x".into()
                };
                4
            ],
        };
        let e = check_session(&long, &cx(None).limits).unwrap_err();
        assert!(
            matches!(e, WireError::TooLarge { .. }) && e.field() == "turns",
            "{e}"
        );
    }
}
