//! Sessions from JSON values as in-process callers hold them: memdex's session shape (a
//! JSONL line: `{tenant?, session_id, date?, turns}`), an official LongMemEval question
//! instance (`{question_id, haystack_sessions, …}`: one tenant per question, as `memdex index
//! --format longmemeval` makes them) or an official LoCoMo conversation (`{sample_id,
//! conversation, …}`). A value is one of these, an array of them, or `{"sessions": [...]}`.
//! Every session passes the one wire validation of `memdex-ingest`; errors name the element
//! (`sessions[2]: …`) and then what `memdex index` would say.

use std::io::Cursor;
use std::path::Path;

use memdex_core::{clip, Session};
use memdex_ingest::{
    check_session, parse_locomo, Context, LongMemEvalReader, SessionIn, SessionLimits,
};
use serde_json::Value;

use crate::MemoryError;

/// The shape of one element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// memdex's session (the JSONL line shape).
    Session,
    /// An official LongMemEval question instance.
    LongMemEval,
    /// An official LoCoMo conversation.
    Locomo,
}

/// Which shape `v` is, by its distinguishing key.
pub fn shape_of(v: &Value) -> Shape {
    if v.get("haystack_sessions").is_some() {
        Shape::LongMemEval
    } else if v.get("conversation").is_some() {
        Shape::Locomo
    } else {
        Shape::Session
    }
}

/// The sessions `value` holds. `tenant`: the tenant of sessions that name none (a session
/// naming another is refused); `now_ms`: the date of undated sessions.
pub fn sessions_from_json(
    value: Value,
    tenant: Option<&str>,
    now_ms: i64,
    limits: SessionLimits,
) -> Result<Vec<Session>, MemoryError> {
    let elements = match value {
        Value::Array(a) => a,
        Value::Object(mut o) if o.len() == 1 && o.contains_key("sessions") => {
            match o.remove("sessions") {
                Some(Value::Array(a)) => a,
                _ => return Err(invalid("`sessions` must be an array")),
            }
        }
        v @ Value::Object(_) => vec![v],
        other => {
            return Err(invalid(format!(
                "expected a session object or an array of them, not {}",
                clip(&other.to_string(), 64)
            )))
        }
    };
    if elements.is_empty() {
        return Err(invalid("no sessions"));
    }
    let cx = Context {
        tenant,
        now_ms,
        limits,
    };
    let mut out = Vec::new();
    for (i, v) in elements.into_iter().enumerate() {
        let at = |m: String| invalid(format!("sessions[{i}]: {m}"));
        if !v.is_object() {
            return Err(at(format!(
                "expected an object, not {}",
                clip(&v.to_string(), 64)
            )));
        }
        // the sessions of a benchmark file pass the same limits as memdex's own
        let from_file = |s: &Session| -> Result<(), MemoryError> {
            match tenant {
                Some(t) if s.tenant != t => Err(at(format!(
                    "names tenant {:?} but this memory is for {t:?}",
                    s.tenant
                ))),
                _ => check_session(s, &limits)
                    .map_err(|e| at(format!("session {:?}: {e}", clip(&s.session_id, 64)))),
            }
        };
        match shape_of(&v) {
            Shape::Session => {
                let s: SessionIn = serde_json::from_value(v).map_err(|e| at(e.to_string()))?;
                let id = clip(&s.session_id, 64).into_owned();
                let s = s
                    .into_session(&cx)
                    .map_err(|e| at(format!("session {id:?}: {e}")))?;
                out.push(s);
            }
            Shape::LongMemEval => {
                let bytes =
                    serde_json::to_vec(&Value::Array(vec![v])).map_err(|e| at(e.to_string()))?;
                let name = format!("sessions[{i}] (LongMemEval)");
                let reader = LongMemEvalReader::new(Path::new(&name), Cursor::new(bytes));
                for inst in reader {
                    let inst = inst.map_err(|e| invalid(e.to_string()))?;
                    for s in inst.sessions {
                        from_file(&s)?;
                        out.push(s);
                    }
                }
            }
            Shape::Locomo => {
                let bytes = serde_json::to_vec(&v).map_err(|e| at(e.to_string()))?;
                let name = format!("sessions[{i}] (LoCoMo)");
                let convs =
                    parse_locomo(Path::new(&name), &bytes).map_err(|e| invalid(e.to_string()))?;
                for c in convs {
                    for s in c.sessions {
                        from_file(&s)?;
                        out.push(s);
                    }
                }
            }
        }
    }
    Ok(out)
}

fn invalid(m: impl Into<String>) -> MemoryError {
    MemoryError::Invalid(m.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const LIM: SessionLimits = SessionLimits::FILES;

    fn msg(r: Result<Vec<Session>, MemoryError>) -> String {
        r.expect_err("should fail").to_string()
    }

    #[test]
    fn every_shape_reads() {
        let one = json!({"tenant": "a", "session_id": "s1", "date": "2023-05-30",
                         "turns": [{"role": "user", "content": "I adopted a dog."}]});
        let s = sessions_from_json(one.clone(), None, 7, LIM).unwrap();
        assert_eq!((s.len(), s[0].tenant.as_str()), (1, "a"));
        let wrapped = json!({"sessions": [one.clone(), {"session_id": "s2",
            "turns": [{"role": "assistant", "content": "ok"}]}]});
        let s = sessions_from_json(wrapped, Some("a"), 7, LIM).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[1].timestamp_ms, 7, "undated: now");
        let lme = json!([{"question_id": "q1", "question_type": "single-session-user",
            "question": "what?", "answer": 3, "question_date": "2023/05/30 (Tue) 23:40",
            "haystack_session_ids": ["h1", "h2"],
            "haystack_dates": ["2023/05/20 (Sat) 10:00", "2023/05/21 (Sun) 10:00"],
            "haystack_sessions": [[{"role": "user", "content": "x", "has_answer": true}],
                                  [{"role": "assistant", "content": "y"}]]}]);
        let s = sessions_from_json(lme, None, 0, LIM).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(
            (s[0].tenant.as_str(), s[1].session_id.as_str()),
            ("q1", "h2")
        );
        let locomo = json!({"sample_id": "conv-7", "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "hi Bob"},
                          {"speaker": "Bob", "dia_id": "D1:2", "text": "hi"}]}, "qa": []});
        let s = sessions_from_json(locomo, None, 0, LIM).unwrap();
        assert_eq!((s.len(), s[0].tenant.as_str()), (1, "conv-7"));
        assert_eq!(s[0].turns[0].content, "Ann: hi Bob");
    }

    #[test]
    fn errors_name_the_element_and_field() {
        let ok =
            json!({"tenant": "a", "session_id": "s", "turns": [{"role": "user", "content": "x"}]});
        let cases = [
            (
                json!([ok.clone(), {"tenant": "a", "session_id": "s", "turns": []}]),
                None,
                "sessions[1]: session \"s\": turns: no turns",
            ),
            (
                json!([{"tenant": "a", "session_id": "s", "title": 1, "turns": []}]),
                None,
                "sessions[0]: unknown field `title`",
            ),
            (
                json!([ok.clone()]),
                Some("b"),
                "sessions[0]: session \"s\": tenant: names \"a\"",
            ),
            (
                json!({"session_id": "s", "turns": [{"role": "user", "content": "x"}]}),
                None,
                "tenant: missing",
            ),
            (
                json!([{"tenant": "a", "session_id": "s", "date": "soon",
                     "turns": [{"role": "user", "content": "x"}]}]),
                None,
                "date \"soon\"",
            ),
            (json!([]), None, "no sessions"),
            (
                json!([{"tenant": "a", "session_id": "s", "turns": [
                    {"role": "user", "content": "x".repeat(40)}]}]),
                None,
                "turns[0].content: 40 bytes; the limit is 32",
            ),
            (
                json!([{"sample_id": "c", "conversation": {"speaker_a": "A", "speaker_b": "B",
                    "session_1_date_time": "1:56 pm on 8 May, 2023",
                    "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "y".repeat(40)}]}}]),
                None,
                "the limit is 32",
            ),
            (json!(3), None, "expected a session object"),
            (json!([1]), None, "sessions[0]: expected an object"),
            (json!({"sessions": 1}), None, "`sessions` must be an array"),
            (
                json!([{"question_id": "q", "haystack_sessions": []}]),
                None,
                "sessions[0] (LongMemEval)",
            ),
            (json!([{"conversation": 1}]), None, "sessions[0] (LoCoMo)"),
            (
                json!([{"sample_id": "c", "conversation": {"session_1": [
                {"speaker": "A", "dia_id": "D1:1", "text": "x"}]}}]),
                Some("z"),
                "names tenant \"c\" but this memory is for \"z\"",
            ),
        ];
        for (v, tenant, want) in cases {
            let shown = v.to_string();
            let small = SessionLimits {
                max_turns: 10,
                max_text_bytes: 32,
            };
            let e = msg(sessions_from_json(v, tenant, 0, small));
            assert!(e.contains(want), "{shown}: {e}");
        }
    }
}
