//! Sessions from JSON values as in-process callers hold them: any format of memdex-ingest's
//! registry that has a JSON value form — memdex's session shape (a JSONL line: `{tenant?,
//! session_id, date?, turns}`), an official LongMemEval question instance
//! (`{question_id, haystack_sessions, …}`: one tenant per question, as `memdex index --format
//! longmemeval` makes them) or an official LoCoMo conversation (`{sample_id, conversation,
//! …}`), each recognised by its key ([`memdex_ingest::detect_value`]). A value is one of
//! these, an array of them, or `{"sessions": [...]}`. Every session passes the one wire
//! validation of `memdex-ingest`; errors name the element (`sessions[2]: …`) and then what
//! `memdex index` would say.

use std::path::Path;

use memdex_core::{clip, Session};
use memdex_ingest::{detect_value, Context, Format, ReadOptions, SessionLimits, ValueError};
use serde_json::Value;

use crate::limits::Limits;
use crate::MemoryError;

/// The sessions `value` holds. `tenant`: the tenant of sessions that name none (a session
/// naming another is refused); `now_ms`: the date of undated sessions. Sizes over `limits`
/// (per text, per session, per call) are [`MemoryError::TooLarge`].
pub fn sessions_from_json(
    value: Value,
    tenant: Option<&str>,
    now_ms: i64,
    limits: &Limits,
) -> Result<Vec<Session>, MemoryError> {
    sessions_from_json_as(value, None, tenant, now_ms, limits)
}

/// [`sessions_from_json`] with every element read as `format` (None: each as the format its
/// key says).
pub fn sessions_from_json_as(
    value: Value,
    format: Option<&Format>,
    tenant: Option<&str>,
    now_ms: i64,
    limits: &Limits,
) -> Result<Vec<Session>, MemoryError> {
    let out = read_elements(value, format, tenant, now_ms, limits)?;
    if out.len() > limits.max_sessions {
        return Err(MemoryError::TooLarge(format!(
            "{} sessions in one request; the limit is {}",
            out.len(),
            limits.max_sessions
        )));
    }
    let turns: usize = out.iter().map(|s| s.turns.len()).sum();
    if turns > limits.max_call_turns {
        return Err(MemoryError::TooLarge(format!(
            "{turns} turns in one request; the limit is {}",
            limits.max_call_turns
        )));
    }
    Ok(out)
}

fn read_elements(
    value: Value,
    format: Option<&Format>,
    tenant: Option<&str>,
    now_ms: i64,
    limits: &Limits,
) -> Result<Vec<Session>, MemoryError> {
    let limits = limits.sessions();
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
        let label = format!("sessions[{i}]");
        if !v.is_object() {
            return Err(invalid(format!(
                "{label}: expected an object, not {}",
                clip(&v.to_string(), 64)
            )));
        }
        let read = format.unwrap_or_else(|| detect_value(&v)).from_value;
        out.extend(read(v, &label, &cx).map_err(|e| match e {
            ValueError::Invalid(m) => MemoryError::Invalid(m),
            ValueError::TooLarge(m) => MemoryError::TooLarge(m),
        })?);
    }
    Ok(out)
}

/// Every session of the file at `path`, read as `format` (None: as its first bytes say), the
/// sessions of a file passing the limits every file reader applies; the first bad record
/// fails the read, naming the file and where.
pub fn read_file(path: &Path, format: Option<&Format>) -> Result<Vec<Session>, MemoryError> {
    let format = match format {
        Some(f) => f,
        None => memdex_ingest::detect_file(path).map_err(|e| invalid(e.to_string()))?,
    };
    let source = (format.open)(path, ReadOptions::default()).map_err(|e| invalid(e.to_string()))?;
    source
        .map(|s| s.map_err(|e| invalid(e.to_string())))
        .collect()
}

/// The limits of a file's sessions ([`SessionLimits::FILES`]), no bound per call: what a
/// session read from a file and handed back in passes.
pub fn file_limits() -> Limits {
    let f = SessionLimits::FILES;
    Limits {
        max_turns: f.max_turns,
        max_text_bytes: f.max_text_bytes,
        ..Limits::offline()
    }
}

fn invalid(m: impl Into<String>) -> MemoryError {
    MemoryError::Invalid(m.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use memdex_ingest::SessionLimits;

    /// Benchmark files' session limits, no bound per call.
    fn lim() -> Limits {
        let f = SessionLimits::FILES;
        Limits {
            max_turns: f.max_turns,
            max_text_bytes: f.max_text_bytes,
            ..Limits::in_process()
        }
    }

    fn msg(r: Result<Vec<Session>, MemoryError>) -> String {
        r.expect_err("should fail").to_string()
    }

    #[test]
    fn every_shape_reads() {
        let one = json!({"tenant": "a", "session_id": "s1", "date": "2023-05-30",
                         "turns": [{"role": "user", "content": "I adopted a dog."}]});
        let s = sessions_from_json(one.clone(), None, 7, &lim()).unwrap();
        assert_eq!((s.len(), s[0].tenant.as_str()), (1, "a"));
        let wrapped = json!({"sessions": [one.clone(), {"session_id": "s2",
            "turns": [{"role": "assistant", "content": "ok"}]}]});
        let s = sessions_from_json(wrapped, Some("a"), 7, &lim()).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[1].timestamp_ms, 7, "undated: now");
        let lme = json!([{"question_id": "q1", "question_type": "single-session-user",
            "question": "what?", "answer": 3, "question_date": "2023/05/30 (Tue) 23:40",
            "haystack_session_ids": ["h1", "h2"],
            "haystack_dates": ["2023/05/20 (Sat) 10:00", "2023/05/21 (Sun) 10:00"],
            "haystack_sessions": [[{"role": "user", "content": "x", "has_answer": true}],
                                  [{"role": "assistant", "content": "y"}]]}]);
        let s = sessions_from_json(lme, None, 0, &lim()).unwrap();
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
        let s = sessions_from_json(locomo, None, 0, &lim()).unwrap();
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
            let small = Limits {
                max_turns: 10,
                max_text_bytes: 32,
                ..Limits::in_process()
            };
            let e = msg(sessions_from_json(v, tenant, 0, &small));
            assert!(e.contains(want), "{shown}: {e}");
        }
    }

    #[test]
    fn calls_over_a_count_limit_are_too_large() {
        let s = |id: &str| {
            json!({"session_id": id, "turns": [{"role": "user", "content": "x"},
                                                         {"role": "assistant", "content": "y"}]})
        };
        let lim = Limits {
            max_sessions: 2,
            max_call_turns: 4,
            ..Limits::default()
        };
        let three = json!([s("a"), s("b"), s("c")]);
        let e = sessions_from_json(three, Some("t"), 0, &lim).unwrap_err();
        assert!(
            matches!(&e, MemoryError::TooLarge(m) if m.contains("3 sessions")),
            "{e}"
        );
        let lim = Limits {
            max_call_turns: 3,
            ..lim
        };
        let e = sessions_from_json(json!([s("a"), s("b")]), Some("t"), 0, &lim).unwrap_err();
        assert!(
            matches!(&e, MemoryError::TooLarge(m) if m.contains("4 turns")),
            "{e}"
        );
        let long =
            json!({"session_id": "l", "turns": [{"role": "user", "content": "x".repeat(40)}]});
        let small = Limits {
            max_text_bytes: 32,
            ..Limits::default()
        };
        let e = sessions_from_json(long, Some("t"), 0, &small).unwrap_err();
        assert!(matches!(e, MemoryError::TooLarge(_)), "{e}");
    }
}
