//! LoCoMo (`locomo10.json` layout): a JSON array of conversations, each with
//! `conversation.session_N` turn lists `{speaker, dia_id, text, blip_caption?}`,
//! `conversation.session_N_date_time` (`1:56 pm on 8 May, 2023`) and `qa` items
//! `{question, answer | adversarial_answer, evidence: [dia_id], category}`.
//!
//! Each conversation is a tenant, named after `sample_id` (`conv-N`, N counting from 1, when
//! it has none), made a valid tenant name by [`memdex_core::tenant_name_from`] if it is not
//! one. Both speakers are people, so every turn has the user role
//! and carries its speaker's name: `Caroline: text`, and an image turn's caption is part of
//! its text: `Caroline: text [image: caption]` (the text the reference Python baselines embed). Evidence ids are normalised (`"D8:6; D9:17"`, `"D:11:26"`,
//! `"D30:05"`); ids naming no turn are reported and dropped.

use std::collections::HashMap;
use std::path::Path;

use chrono::{Datelike, NaiveDateTime};
use memdex_core::{clip, tenant_name_from, Role, Session, Turn};
use serde::Deserialize;
use serde_json::Value;

use crate::date::check_year;
use crate::{check_session, IngestError, SessionLimits};
use memdex_core::clip_message;

/// LoCoMo's question categories.
pub fn category_name(c: u8) -> &'static str {
    match c {
        1 => "multi-hop",
        2 => "temporal",
        3 => "open-domain",
        4 => "single-hop",
        5 => "adversarial",
        _ => "unknown",
    }
}

/// A turn located in a conversation: session id and position in that session.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TurnRef {
    pub session_id: String,
    pub turn: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LocomoQa {
    pub question: String,
    pub answer: String,
    pub category: u8,
    /// Evidence turns that exist in the conversation.
    pub evidence: Vec<TurnRef>,
    /// Evidence ids that named no turn (after normalisation), as written in the file.
    pub dropped: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LocomoConversation {
    pub tenant: String,
    pub sessions: Vec<Session>,
    pub qa: Vec<LocomoQa>,
    /// Sessions whose date did not parse (they got the previous session's date).
    pub warnings: Vec<String>,
}

#[derive(Deserialize)]
struct RawTurn {
    speaker: String,
    dia_id: String,
    #[serde(default)]
    text: String,
    #[serde(default)]
    blip_caption: Option<String>,
}

/// Parses `1:56 pm on 8 May, 2023` (UTC; years 1000 to 9999, as [`crate::parse_date`]).
pub fn parse_locomo_date(s: &str) -> Result<i64, String> {
    let t = s.trim().replace("am on", "AM on").replace("pm on", "PM on");
    let d = NaiveDateTime::parse_from_str(&t, "%I:%M %p on %d %B, %Y").map_err(|e| {
        format!(
            "{:?} is not like \"1:56 pm on 8 May, 2023\" ({e})",
            clip(s, 64)
        )
    })?;
    check_year(d.year()).map_err(|e| format!("{:?}: {e}", clip(s, 64)))?;
    Ok(d.and_utc().timestamp_millis())
}

/// `D8:6` → (8, 6); accepts `D:11:26` and zero-padded numbers.
fn parse_dia(id: &str) -> Option<(u32, u32)> {
    let rest = id.trim().strip_prefix('D')?;
    let rest = rest.strip_prefix(':').unwrap_or(rest);
    let (s, t) = rest.split_once(':')?;
    Some((s.trim().parse().ok()?, t.trim().parse().ok()?))
}

/// Splits an evidence entry that may hold several ids (`"D8:6; D9:17"`).
fn split_evidence(e: &str) -> impl Iterator<Item = &str> {
    e.split([';', ',']).flat_map(str::split_whitespace)
}

/// Reads a whole LoCoMo file (a few MB; not streamed).
pub fn read_locomo(path: &Path) -> Result<Vec<LocomoConversation>, IngestError> {
    let bytes = std::fs::read(path).map_err(|source| IngestError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_locomo(path, &bytes)
}

/// [`read_locomo`] of the file's bytes; `path` is used in error messages only.
pub fn parse_locomo(path: &Path, bytes: &[u8]) -> Result<Vec<LocomoConversation>, IngestError> {
    let root: Value = serde_json::from_slice(bytes).map_err(|e| IngestError::Malformed {
        path: path.to_path_buf(),
        offset: byte_offset(bytes, e.line(), e.column()),
        message: format!("malformed JSON: {}", clip_message(&e.to_string())),
    })?;
    let convs = match root {
        Value::Array(a) => a,
        obj @ Value::Object(_) => vec![obj],
        _ => {
            return Err(IngestError::Malformed {
                path: path.to_path_buf(),
                offset: 0,
                message: "expected an array of conversations".into(),
            })
        }
    };
    convs
        .into_iter()
        .enumerate()
        .map(|(i, c)| conversation(path, i, c))
        .collect()
}

fn byte_offset(bytes: &[u8], line: usize, column: usize) -> u64 {
    let mut l = 1;
    for (i, &b) in bytes.iter().enumerate() {
        if l == line {
            return (i + column.saturating_sub(1)) as u64;
        }
        if b == b'\n' {
            l += 1;
        }
    }
    bytes.len() as u64
}

fn conversation(path: &Path, index: usize, c: Value) -> Result<LocomoConversation, IngestError> {
    let tenant = c
        .get("sample_id")
        .and_then(Value::as_str)
        .map_or_else(|| format!("conv-{}", index + 1), tenant_name_from);
    let err = |message: String| IngestError::Record {
        path: path.to_path_buf(),
        location: format!("conversation #{} {tenant:?}", index + 1),
        message,
    };
    let conv = c
        .get("conversation")
        .and_then(Value::as_object)
        .ok_or_else(|| err("missing object `conversation`".into()))?;
    // `session_<digits>` keys in numeric order; each key is its session's id (so
    // `session_1` and `session_01` stay two sessions) and names its date key
    let mut keys: Vec<(usize, &str, &String)> = conv
        .keys()
        .filter_map(|k| {
            let digits = k.strip_prefix("session_")?;
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let n = digits.trim_start_matches('0');
            Some((n.len(), n, k))
        })
        .collect();
    keys.sort_unstable();
    let mut sessions = Vec::new();
    let mut warnings = Vec::new();
    let mut dia: HashMap<(u32, u32), TurnRef> = HashMap::new();
    let mut last_ms = 0i64;
    for (_, _, key) in keys {
        let shown = clip(key, 64);
        let raw = conv.get(key).cloned().unwrap_or_default();
        let turns: Vec<RawTurn> = serde_json::from_value(raw)
            .map_err(|e| err(format!("`{shown}`: {}", clip_message(&e.to_string()))))?;
        let date = conv
            .get(&format!("{key}_date_time"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let ms = match parse_locomo_date(date) {
            Ok(ms) => ms,
            Err(e) => {
                warnings.push(format!(
                    "{tenant}: {shown}: bad date: {e}; using the previous session's date"
                ));
                last_ms
            }
        };
        last_ms = ms;
        let mut out = Vec::with_capacity(turns.len());
        for (i, t) in turns.into_iter().enumerate() {
            if let Some(d) = parse_dia(&t.dia_id) {
                dia.insert(
                    d,
                    TurnRef {
                        session_id: key.clone(),
                        turn: i as u32,
                    },
                );
            }
            let mut content = format!("{}: {}", t.speaker, t.text);
            if let Some(cap) = t.blip_caption.filter(|c| !c.trim().is_empty()) {
                content.push_str(&format!(" [image: {cap}]"));
            }
            out.push(Turn {
                role: Role::User,
                content,
            });
        }
        if out.is_empty() {
            warnings.push(format!("{tenant}: {key}: no turns (skipped)"));
            continue;
        }
        let session = Session {
            tenant: tenant.clone(),
            session_id: key.clone(),
            timestamp_ms: ms,
            turns: out,
        };
        check_session(&session, &SessionLimits::FILES)
            .map_err(|e| err(format!("{}: {e}", session.session_id)))?;
        sessions.push(session);
    }
    if sessions.is_empty() {
        return Err(err("no sessions".into()));
    }
    let qa = c
        .get("qa")
        .and_then(Value::as_array)
        .map(|qs| qs.iter().map(|q| qa_item(q, &dia)).collect())
        .unwrap_or_default();
    Ok(LocomoConversation {
        tenant,
        sessions,
        qa,
        warnings,
    })
}

fn qa_item(q: &Value, dia: &HashMap<(u32, u32), TurnRef>) -> LocomoQa {
    let text = |v: Option<&Value>| match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    let mut evidence = Vec::new();
    let mut dropped = Vec::new();
    for e in q
        .get("evidence")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(e) = e.as_str() else { continue };
        for id in split_evidence(e) {
            match parse_dia(id).and_then(|d| dia.get(&d)) {
                Some(r) if !evidence.contains(r) => evidence.push(r.clone()),
                Some(_) => {}
                None => dropped.push(id.to_string()),
            }
        }
    }
    LocomoQa {
        question: text(q.get("question")),
        answer: text(q.get("answer").or_else(|| q.get("adversarial_answer"))),
        category: q.get("category").and_then(Value::as_u64).unwrap_or(0) as u8,
        evidence,
        dropped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_dates_and_evidence_ids() {
        assert_eq!(
            parse_locomo_date("1:56 pm on 8 May, 2023"),
            Ok(1_683_554_160_000)
        );
        assert!(parse_locomo_date("12:09 am on 13 September, 2023").is_ok());
        assert!(parse_locomo_date("yesterday").is_err());
        assert_eq!(parse_dia("D8:6"), Some((8, 6)));
        assert_eq!(parse_dia("D:11:26"), Some((11, 26)));
        assert_eq!(parse_dia("D30:05"), Some((30, 5)));
        assert_eq!(parse_dia("X1:2"), None);
        let ids: Vec<&str> = split_evidence("D8:6; D9:17").collect();
        assert_eq!(ids, ["D8:6", "D9:17"]);
    }

    #[test]
    fn reads_a_conversation() {
        let json = r#"[{"sample_id": "c1", "conversation": {"speaker_a": "Ann", "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I got a puppy"},
                          {"speaker": "Bo", "dia_id": "D1:2", "text": "Look!", "blip_caption": "a photo of a dog"}],
            "session_2_date_time": "garbage",
            "session_2": [{"speaker": "Bo", "dia_id": "D2:1", "text": "hi"}]},
          "qa": [{"question": "What did Ann get?", "answer": "a puppy", "evidence": ["D1:1; D2:01", "D9:9"], "category": 4},
                 {"question": "Adv?", "adversarial_answer": "x", "evidence": [], "category": 5}]}]"#;
        let dir = std::env::temp_dir().join(format!("memdex-locomo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("l.json");
        std::fs::write(&p, json).unwrap();
        let c = read_locomo(&p).unwrap();
        assert_eq!(c.len(), 1);
        let c = &c[0];
        assert_eq!(c.tenant, "c1");
        assert_eq!(c.sessions.len(), 2);
        assert_eq!(
            c.sessions[0].turns[1].content,
            "Bo: Look! [image: a photo of a dog]"
        );
        assert_eq!(c.sessions[0].turns[1].role, Role::User);
        assert_eq!(
            c.sessions[1].timestamp_ms, c.sessions[0].timestamp_ms,
            "bad date falls back"
        );
        assert_eq!(c.warnings.len(), 1);
        assert_eq!(c.qa[0].evidence.len(), 2);
        assert_eq!(
            c.qa[0].evidence[1],
            TurnRef {
                session_id: "session_2".into(),
                turn: 0
            }
        );
        assert_eq!(c.qa[0].dropped, ["D9:9"]);
        assert_eq!(c.qa[1].answer, "x");
        assert_eq!(category_name(c.qa[1].category), "adversarial");
        std::fs::write(&p, &json[..200]).unwrap();
        let e = read_locomo(&p).unwrap_err().to_string();
        assert!(e.contains("l.json") && e.contains("byte"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn session_keys_are_taken_as_written() {
        // found by fuzzing: `session_+1` parsed as session 1 and `conversation["session_1"]`
        // panicked when only the former existed; `session_1` with `session_01` gave one id twice
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l.json");
        let plus = r#"[{"conversation": {"session_+1": [], "session_1_date_time": "1:56 pm on 8 May, 2023"}}]"#;
        std::fs::write(&p, plus).unwrap();
        let e = read_locomo(&p).unwrap_err().to_string();
        assert!(e.contains("conversation #1 \"conv-1\": no sessions"), "{e}");
        let two = r#"[{"conversation": {"session_10": [{"speaker": "C", "dia_id": "D10:1", "text": "x"}],
            "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}],
            "session_01": [{"speaker": "B", "dia_id": "D1:1", "text": "yo"}],
            "session_01_date_time": "1:56 pm on 8 May, 2023"}}]"#;
        std::fs::write(&p, two).unwrap();
        let c = read_locomo(&p).unwrap();
        let ids: Vec<&str> = c[0]
            .sessions
            .iter()
            .map(|s| s.session_id.as_str())
            .collect();
        assert_eq!(ids, ["session_01", "session_1", "session_10"]);
        assert_eq!(c[0].sessions[0].timestamp_ms, 1_683_554_160_000);
    }

    #[test]
    fn sample_ids_become_valid_tenants_and_years_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l.json");
        let json = r#"[{"sample_id": "conv 26/x", "conversation": {
            "session_1_date_time": "1:56 pm on 8 May, +262142",
            "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "see you tomorrow"}]}}]"#;
        std::fs::write(&p, json).unwrap();
        let c = read_locomo(&p).unwrap();
        assert!(c[0].tenant.starts_with("conv_26_x-"), "{}", c[0].tenant);
        assert_eq!(memdex_core::check_tenant_name(&c[0].tenant), Ok(()));
        assert_eq!(c[0].sessions[0].tenant, c[0].tenant);
        assert_eq!(c[0].sessions[0].timestamp_ms, 0, "a bad date falls back");
        assert!(
            c[0].warnings[0].contains("outside the supported range"),
            "{:?}",
            c[0].warnings
        );
    }
}
