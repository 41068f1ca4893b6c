//! LongMemEval's official file (`longmemeval_{s,m,oracle}.json`): one JSON array of question
//! instances, each with its own haystack of sessions. Streamed element by element (the M file
//! is 2.7 GB): only one instance is held in memory at a time.
//!
//! Each question is its own tenant, named after `question_id` when that is a valid tenant name
//! (the official ids are) and otherwise made valid by [`memdex_core::tenant_name_from`].

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use memdex_core::{clip, content_hash, tenant_name_from, Role, Session, Turn};
use serde::Deserialize;

use crate::{check_session, parse_date, IngestError, SessionLimits};
use memdex_core::clip_message;

/// One question with its haystack. Each question is its own tenant.
#[derive(Debug, Clone, PartialEq)]
pub struct LmeInstance {
    pub question_id: String,
    /// The question's tenant: `question_id`, made a valid tenant name if it is not one.
    pub tenant: String,
    pub question_type: String,
    pub question: String,
    /// The answer as text (the file has strings and numbers).
    pub answer: String,
    pub question_date_ms: Option<i64>,
    pub sessions: Vec<Session>,
    /// `has_answer` of every turn, parallel to `sessions[i].turns`.
    pub has_answer: Vec<Vec<bool>>,
    pub answer_session_ids: Vec<String>,
    /// Problems that did not stop the read (bad or non-monotonic dates), for the report.
    pub warnings: Vec<String>,
}

impl LmeInstance {
    pub fn is_abstention(&self) -> bool {
        self.question_id.contains("_abs")
    }
}

#[derive(Deserialize)]
struct RawTurn {
    role: String,
    content: String,
    #[serde(default)]
    has_answer: Option<bool>,
}

#[derive(Deserialize)]
struct RawInstance {
    question_id: String,
    question_type: String,
    question: String,
    answer: serde_json::Value,
    #[serde(default)]
    question_date: Option<String>,
    haystack_session_ids: Vec<String>,
    haystack_dates: Vec<String>,
    haystack_sessions: Vec<Vec<RawTurn>>,
    #[serde(default)]
    answer_session_ids: Vec<String>,
}

/// Streams [`LmeInstance`]s from a LongMemEval JSON array.
#[derive(Debug)]
pub struct LongMemEvalReader<R> {
    path: PathBuf,
    reader: R,
    offset: u64,
    index: usize,
    started: bool,
    done: bool,
    buf: Vec<u8>,
    /// Content hash of every session id seen, to catch one id with two contents.
    seen_sessions: HashMap<String, (u64, String)>,
    /// The input's size when known.
    total: Option<u64>,
}

impl LongMemEvalReader<BufReader<File>> {
    pub fn open(path: &Path) -> Result<Self, IngestError> {
        let f = File::open(path).map_err(|source| IngestError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let total = f.metadata().ok().map(|m| m.len());
        let mut r = Self::new(path, BufReader::with_capacity(1 << 20, f));
        r.total = total;
        Ok(r)
    }
}

impl<R: BufRead> LongMemEvalReader<R> {
    pub fn new(path: &Path, reader: R) -> Self {
        Self {
            path: path.to_path_buf(),
            reader,
            offset: 0,
            index: 0,
            started: false,
            done: false,
            buf: Vec::new(),
            seen_sessions: HashMap::new(),
            total: None,
        }
    }

    /// (bytes consumed, file size) when the size is known: progress and ETA.
    pub fn position(&self) -> Option<(u64, u64)> {
        self.total.map(|t| (self.offset.min(t), t))
    }

    fn json_err(&self, message: String) -> IngestError {
        IngestError::Malformed {
            path: self.path.clone(),
            offset: self.offset,
            message,
        }
    }

    fn peek(&mut self) -> Result<Option<u8>, IngestError> {
        let buf = self.reader.fill_buf().map_err(|source| IngestError::Io {
            path: self.path.clone(),
            source,
        })?;
        Ok(buf.first().copied())
    }

    fn bump(&mut self) {
        self.reader.consume(1);
        self.offset += 1;
    }

    fn skip_ws(&mut self) -> Result<Option<u8>, IngestError> {
        while let Some(b) = self.peek()? {
            if b.is_ascii_whitespace() {
                self.bump();
            } else {
                return Ok(Some(b));
            }
        }
        Ok(None)
    }

    /// Copies one JSON object (balanced braces, strings respected) into `self.buf`.
    fn read_object(&mut self) -> Result<(), IngestError> {
        self.buf.clear();
        let start = self.offset;
        let (mut depth, mut in_str, mut esc) = (0usize, false, false);
        loop {
            let chunk = self.reader.fill_buf().map_err(|source| IngestError::Io {
                path: self.path.clone(),
                source,
            })?;
            if chunk.is_empty() {
                return Err(self.json_err(format!(
                    "truncated: file ends inside question #{} (which starts at byte {start})",
                    self.index + 1
                )));
            }
            let mut used = 0;
            let mut end = None;
            for (i, &b) in chunk.iter().enumerate() {
                used = i + 1;
                if in_str {
                    match (esc, b) {
                        (true, _) => esc = false,
                        (false, b'\\') => esc = true,
                        (false, b'"') => in_str = false,
                        _ => {}
                    }
                    continue;
                }
                match b {
                    b'"' => in_str = true,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            end = Some(i);
                            break;
                        }
                    }
                    _ => {}
                }
            }
            self.buf.extend_from_slice(&chunk[..used]);
            self.reader.consume(used);
            self.offset += used as u64;
            if end.is_some() {
                return Ok(());
            }
        }
    }

    fn next_raw(&mut self) -> Result<Option<(RawInstance, u64)>, IngestError> {
        if !self.started {
            match self.skip_ws()? {
                Some(b'[') => self.bump(),
                Some(_) => return Err(self.json_err("expected a JSON array of questions".into())),
                None => return Err(self.json_err("empty file".into())),
            }
            self.started = true;
        } else {
            match self.skip_ws()? {
                Some(b',') => self.bump(),
                Some(b']') => return Ok(None),
                Some(c) => {
                    return Err(self.json_err(format!(
                        "expected ',' or ']' after question #{}, found {:?}",
                        self.index, c as char
                    )))
                }
                None => return Err(self.json_err("truncated: the array is not closed".into())),
            }
        }
        match self.skip_ws()? {
            Some(b'{') => {}
            Some(b']') if self.index == 0 => return Ok(None),
            Some(c) => {
                return Err(
                    self.json_err(format!("expected a question object, found {:?}", c as char))
                )
            }
            None => return Err(self.json_err("truncated: the array is not closed".into())),
        }
        let start = self.offset;
        self.read_object()?;
        self.index += 1;
        let raw: RawInstance = serde_json::from_slice(&self.buf).map_err(|e| {
            let id = question_id_hint(&self.buf);
            IngestError::Record {
                path: self.path.clone(),
                location: format!("question #{} {id}(byte {start})", self.index),
                message: format!("wrong schema: {}", clip_message(&e.to_string())),
            }
        })?;
        Ok(Some((raw, start)))
    }

    fn convert(&mut self, raw: RawInstance, start: u64) -> Result<LmeInstance, IngestError> {
        let qid = clip(&raw.question_id, 64).into_owned();
        let tenant = tenant_name_from(&raw.question_id);
        let schema = |message: String| IngestError::Record {
            path: self.path.clone(),
            location: format!("question {qid:?} (byte {start})"),
            message,
        };
        let n = raw.haystack_sessions.len();
        if raw.haystack_session_ids.len() != n || raw.haystack_dates.len() != n {
            return Err(schema(format!(
                "haystack_session_ids ({}), haystack_dates ({}) and haystack_sessions ({n}) differ in length",
                raw.haystack_session_ids.len(),
                raw.haystack_dates.len()
            )));
        }
        if n == 0 {
            return Err(schema("empty haystack".into()));
        }
        let answer = match &raw.answer {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Number(x) => x.to_string(),
            other => {
                return Err(schema(format!(
                    "field `answer` must be a string or number, not {}",
                    clip(&other.to_string(), 64)
                )))
            }
        };
        let mut warnings = Vec::new();
        let question_date_ms = match raw.question_date.as_deref().map(parse_date) {
            Some(Ok(ms)) => Some(ms),
            Some(Err(e)) => {
                warnings.push(format!("question {qid:?}: bad question_date: {e}"));
                None
            }
            None => None,
        };
        let mut sessions = Vec::with_capacity(n);
        let mut has_answer = Vec::with_capacity(n);
        let mut last_ms: Option<i64> = None;
        for ((sid, date), turns) in raw
            .haystack_session_ids
            .into_iter()
            .zip(raw.haystack_dates)
            .zip(raw.haystack_sessions)
        {
            let (sid_shown, date_shown) = (clip(&sid, 64), clip(&date, 64));
            let ms = match parse_date(&date) {
                Ok(ms) => ms,
                Err(e) => {
                    let fallback = last_ms.or(question_date_ms).unwrap_or(0);
                    warnings.push(format!(
                        "question {qid:?}, session {sid_shown:?}: bad date {date_shown:?} ({e}); using the previous session's date"
                    ));
                    fallback
                }
            };
            if last_ms.is_some_and(|l| ms < l) {
                warnings.push(format!(
                    "question {qid:?}, session {sid_shown:?}: date {date_shown:?} is earlier than the session before it (kept in file order)"
                ));
            }
            last_ms = Some(ms);
            let mut out_turns = Vec::with_capacity(turns.len());
            let mut flags = Vec::with_capacity(turns.len());
            let mut hasher_input = Vec::new();
            for (i, t) in turns.into_iter().enumerate() {
                let role = match t.role.as_str() {
                    "user" => Role::User,
                    "assistant" => Role::Assistant,
                    other => {
                        return Err(schema(format!(
                            "session {sid_shown:?} turn {i}: role {:?}, expected user or assistant",
                            clip(other, 32)
                        )))
                    }
                };
                hasher_input.extend_from_slice(t.role.as_bytes());
                hasher_input.push(0);
                hasher_input.extend_from_slice(t.content.as_bytes());
                hasher_input.push(0);
                flags.push(t.has_answer.unwrap_or(false));
                out_turns.push(Turn {
                    role,
                    content: t.content,
                });
            }
            let h = content_hash(&hasher_input);
            match self.seen_sessions.get(&sid) {
                Some((prev, other_q)) if *prev != h => {
                    return Err(schema(format!(
                        "session id {sid_shown:?} also appears in question {other_q:?} with different content"
                    )))
                }
                Some(_) => {}
                None => {
                    self.seen_sessions.insert(sid.clone(), (h, qid.clone()));
                }
            }
            if out_turns.is_empty() {
                warnings.push(format!(
                    "question {qid:?}, session {:?}: no turns (skipped)",
                    clip(&sid, 64)
                ));
                continue;
            }
            let session = Session {
                tenant: tenant.clone(),
                session_id: sid,
                timestamp_ms: ms,
                turns: out_turns,
            };
            check_session(&session, &SessionLimits::FILES)
                .map_err(|e| schema(format!("session {:?}: {e}", clip(&session.session_id, 64))))?;
            sessions.push(session);
            has_answer.push(flags);
        }
        Ok(LmeInstance {
            question_id: raw.question_id,
            tenant,
            question_type: raw.question_type,
            question: raw.question,
            answer,
            question_date_ms,
            sessions,
            has_answer,
            answer_session_ids: raw.answer_session_ids,
            warnings,
        })
    }
}

/// `"question_id": "…"` from raw bytes, for messages about objects that failed to parse.
fn question_id_hint(buf: &[u8]) -> String {
    let text = String::from_utf8_lossy(&buf[..buf.len().min(4096)]);
    text.find("\"question_id\"")
        .and_then(|p| {
            text[p + 13..]
                .split('"')
                .nth(1)
                .map(|id| format!("{:?} ", clip(id, 64)))
        })
        .unwrap_or_default()
}

impl<R: BufRead> Iterator for LongMemEvalReader<R> {
    type Item = Result<LmeInstance, IngestError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let res = match self.next_raw() {
            Ok(None) => {
                self.done = true;
                return None;
            }
            Ok(Some((raw, start))) => self.convert(raw, start),
            Err(e) => {
                // framing errors leave the stream unusable; schema errors skip one question
                if !matches!(e, IngestError::Record { .. }) {
                    self.done = true;
                }
                Err(e)
            }
        };
        Some(res)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(id: &str, sessions: &str) -> String {
        format!(
            r#"{{"question_id": "{id}", "question_type": "single-session-user", "question": "What?",
            "answer": 42, "question_date": "2023/05/30 (Tue) 23:40",
            "haystack_session_ids": ["answer_s1", "s2"], "haystack_dates": ["2023/05/20 (Sat) 10:00", "2023/05/10 (Wed) 10:00"],
            "haystack_sessions": {sessions}, "answer_session_ids": ["answer_s1"]}}"#
        )
    }

    const SESSIONS: &str = r#"[[{"role": "user", "content": "I have a cat", "has_answer": true}, {"role": "assistant", "content": "Nice"}], [{"role": "user", "content": "hello"}]]"#;

    fn read(text: &str) -> Vec<Result<LmeInstance, IngestError>> {
        LongMemEvalReader::new(Path::new("lme.json"), text.as_bytes()).collect()
    }

    #[test]
    fn streams_instances() {
        let text = format!("[\n{},\n{}\n]\n", q("q1", SESSIONS), q("q2_abs", SESSIONS));
        let out: Vec<LmeInstance> = read(&text).into_iter().map(Result::unwrap).collect();
        assert_eq!(out.len(), 2);
        let a = &out[0];
        assert_eq!(a.answer, "42");
        assert_eq!(a.sessions.len(), 2);
        assert_eq!(a.sessions[0].tenant, "q1");
        assert_eq!(a.tenant, "q1");
        assert_eq!(a.has_answer[0], vec![true, false]);
        assert_eq!(
            a.warnings.len(),
            1,
            "non-monotonic dates are reported: {:?}",
            a.warnings
        );
        assert!(out[1].is_abstention());
        assert!(read("[]").is_empty());
    }

    #[test]
    fn reports_truncation_schema_and_conflicts() {
        let text = format!("[{}, {}", q("q1", SESSIONS), &q("q2", SESSIONS)[..120]);
        let out = read(&text);
        assert!(out[0].is_ok());
        let e = out[1].as_ref().unwrap_err().to_string();
        assert!(
            e.contains("lme.json: byte") && e.contains("truncated"),
            "{e}"
        );

        let bad = q("q3", SESSIONS).replace("\"question\": \"What?\",", "");
        let e = read(&format!("[{bad}]"))[0]
            .as_ref()
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"q3\"") && e.contains("question"), "{e}");

        let short = q("q4", SESSIONS).replace(r#", "2023/05/10 (Wed) 10:00""#, "");
        let e = read(&format!("[{short}]"))[0]
            .as_ref()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"q4\"") && e.contains("differ in length"),
            "{e}"
        );

        let other = SESSIONS.replace("I have a cat", "I have a dog");
        let out = read(&format!("[{}, {}]", q("q5", SESSIONS), q("q6", &other)));
        let e = out[1].as_ref().unwrap_err().to_string();
        assert!(
            e.contains("answer_s1") && e.contains("q5") && e.contains("different content"),
            "{e}"
        );

        let e = read("{}")[0].as_ref().unwrap_err().to_string();
        assert!(e.contains("expected a JSON array"), "{e}");
    }

    #[test]
    fn question_ids_that_are_not_tenant_names_are_made_valid() {
        let text = format!("[{}, {}]", q("q 1/x", SESSIONS), q("q_1_x", SESSIONS));
        let out: Vec<LmeInstance> = read(&text).into_iter().map(Result::unwrap).collect();
        let t = &out[0].tenant;
        assert!(t.starts_with("q_1_x-"), "{t}");
        assert_eq!(memdex_core::check_tenant_name(t), Ok(()));
        assert!(out[0].sessions.iter().all(|s| &s.tenant == t));
        assert_eq!(out[0].question_id, "q 1/x", "the id itself is kept");
        assert_eq!(out[1].tenant, "q_1_x", "a valid id is the tenant as is");
    }

    #[test]
    fn errors_quote_only_a_prefix_of_huge_values() {
        let big = "r".repeat(1 << 20);
        let bad_role = q(
            "q1",
            &SESSIONS.replace("\"assistant\"", &format!("\"{big}\"")),
        );
        let bad_type = q("q2", SESSIONS).replace("\"What?\"", &format!("[\"{big}\"]"));
        let bad_answer = q("q3", SESSIONS).replace("42", &format!("{{\"a\": \"{big}\"}}"));
        let long_id = q(&big, SESSIONS).replace("\"question\": \"What?\",", "");
        let text = format!("[{bad_role}, {bad_type}, {bad_answer}, {long_id}]");
        let out = read(&text);
        assert_eq!(out.len(), 4);
        for r in &out {
            let e = r.as_ref().unwrap_err().to_string();
            assert!(e.len() < 500, "{} bytes: {}", e.len(), &e[..200]);
        }
    }
}
