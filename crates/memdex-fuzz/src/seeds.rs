//! Seed corpora: small valid inputs of every format, written here (no external data), so the
//! mutators start from what the parsers accept.

use serde_json::{json, Value};

fn session(tenant: &str, id: &str, date: &str, turns: &[(&str, &str)]) -> Value {
    let turns: Vec<Value> = turns
        .iter()
        .map(|(r, c)| json!({"role": r, "content": c}))
        .collect();
    json!({"tenant": tenant, "session_id": id, "date": date, "turns": turns})
}

const CHAT: &[(&str, &str)] = &[
    ("user", "I adopted a dog named Luna yesterday."),
    ("assistant", "Congratulations! How old is she?"),
    ("user", "Two years. We go to the park next week, on 8 May."),
    ("assistant", "Sounds lovely."),
];

/// JSONL files (one session per line).
pub fn jsonl() -> Vec<Vec<u8>> {
    let lines = [
        session("alice", "s1", "2023-05-30T23:40:00Z", CHAT),
        session("alice", "s2", "2023/05/30 (Tue) 23:40", &CHAT[..2]),
        session(
            "bob.b@x",
            "s1",
            "2023-05-30 10:00",
            &[("user", "see you tomorrow")],
        ),
        session(
            "A_b-1",
            "é",
            "2023-05-30",
            &[("assistant", "   "), ("user", "日本語 😀")],
        ),
        session(
            "t",
            "s9",
            "9999-12-31T23:59:59-23:59",
            &[("user", "in the last 3 years")],
        ),
    ];
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    vec![
        (text.join("\n") + "\n").into_bytes(),
        text[2].clone().into_bytes(),
        format!("\n\n{}\n\n{}", text[0], text[3]).into_bytes(),
        Vec::new(),
    ]
}

/// A haystack session: id, date, (role, content) turns.
type LmeSession<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);

fn lme_question(id: &str, answer: Value, sessions: &[LmeSession<'_>]) -> Value {
    let ids: Vec<&str> = sessions.iter().map(|s| s.0).collect();
    let dates: Vec<&str> = sessions.iter().map(|s| s.1).collect();
    let haystack: Vec<Value> = sessions
        .iter()
        .map(|s| {
            let turns: Vec<Value> =
                s.2.iter()
                    .enumerate()
                    .map(|(i, (r, c))| {
                        if i == 0 {
                            json!({"role": r, "content": c, "has_answer": true})
                        } else {
                            json!({"role": r, "content": c})
                        }
                    })
                    .collect();
            Value::Array(turns)
        })
        .collect();
    json!({
        "question_id": id,
        "question_type": "single-session-user",
        "question": "What is my dog's name?",
        "answer": answer,
        "question_date": "2023/05/30 (Tue) 23:40",
        "haystack_session_ids": ids,
        "haystack_dates": dates,
        "haystack_sessions": haystack,
        "answer_session_ids": [ids[0]],
    })
}

/// LongMemEval files (a JSON array of questions).
pub fn longmemeval() -> Vec<Vec<u8>> {
    let a = lme_question(
        "q1",
        json!("Luna"),
        &[
            ("answer_s1", "2023/05/20 (Sat) 10:00", CHAT),
            ("s2", "2023/05/21 (Sun) 11:30", &CHAT[2..]),
        ],
    );
    let b = lme_question(
        "q2_abs",
        json!(42),
        &[("s3", "2023/05/10 (Wed) 09:00", &[("user", "hello {[\"]}")])],
    );
    let mut c = lme_question(
        "gpt4_2655b836",
        json!("x"),
        &[("answer_s1", "2023/05/20 (Sat) 10:00", CHAT)],
    );
    if let Some(o) = c.as_object_mut() {
        o.remove("question_date");
        o.remove("answer_session_ids");
    }
    vec![
        serde_json::to_vec(&json!([a.clone(), b.clone()])).unwrap_or_default(),
        serde_json::to_vec_pretty(&json!([c])).unwrap_or_default(),
        serde_json::to_vec(&json!([b, a])).unwrap_or_default(),
        b"[]".to_vec(),
    ]
}

/// LoCoMo files (a JSON array of conversations).
pub fn locomo() -> Vec<Vec<u8>> {
    let conv = json!({
        "sample_id": "conv-26",
        "conversation": {
            "speaker_a": "Caroline",
            "speaker_b": "Melanie",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Caroline", "dia_id": "D1:1", "text": "I went to a support group yesterday."},
                {"speaker": "Melanie", "dia_id": "D1:2", "text": "Look!", "blip_caption": "a photo of a dog"}
            ],
            "session_2_date_time": "12:09 am on 13 September, 2023",
            "session_2": [
                {"speaker": "Melanie", "dia_id": "D2:1", "text": "We painted last weekend."}
            ]
        },
        "qa": [
            {"question": "When did Caroline go to the support group?", "answer": "7 May 2023", "evidence": ["D1:1"], "category": 2},
            {"question": "What did Melanie paint?", "adversarial_answer": "a lake", "evidence": ["D2:1; D1:2", "D9:9"], "category": 5}
        ]
    });
    let mut bare = conv.clone();
    if let Some(o) = bare.as_object_mut() {
        o.remove("sample_id");
        o.remove("qa");
    }
    vec![
        serde_json::to_vec(&json!([conv.clone()])).unwrap_or_default(),
        serde_json::to_vec_pretty(&json!([conv.clone(), bare])).unwrap_or_default(),
        serde_json::to_vec(&conv).unwrap_or_default(),
    ]
}

/// Session dates in every accepted form, and near misses.
pub fn dates() -> Vec<Vec<u8>> {
    [
        "2023-05-30T23:40:00Z",
        "2023-05-31T01:40:00+02:00",
        "2023/05/30 (Tue) 23:40",
        "2023-05-30 23:40",
        "2023-05-30 23:40:05",
        "2023-05-30T23:40",
        "2023-05-30",
        "1000-01-01",
        "9999-12-31T23:59:59Z",
        "1:56 pm on 8 May, 2023",
        "+262142-12-31",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

/// `ANCHOR_DAYS\ntext`: the anchor as days from the common era (738_000 ≈ 2021).
pub fn texts() -> Vec<Vec<u8>> {
    [
        "738648\nI went to a support group yesterday and we hike next week.",
        "738648\nCaroline: I moved to Lisbon on 3 March 2021, two weeks ago, last summer.",
        "-95746000\nsee you tomorrow, next Friday, on Monday, the weekend before last",
        "95747000\nin 3 years, in the last 3 years, 100 years ago, next month, in December",
        "738648\non 2023-02-30 and 13/45/2023, then May 32, but 2023-02-28 is fine",
        "0\nthis morning, last night, the past two weeks, this Sunday, next winter",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

/// `ANCHOR_DAYS\nquery\trecent turn\trecent turn`.
pub fn queries() -> Vec<Vec<u8>> {
    [
        "738648\nWhat did I buy last weekend?",
        "738648\nWhere was Tim in the week before 16 November 2023?\tTim went to Paris",
        "738648\nwhen did she move there?\tmy sister moved\tto paris",
        "95747000\nWhich books did I read in the past two weeks?",
        "-95746000\nHow many days before the trip did I buy the tent?",
        "738648\n私の妹はどこに引っ越しましたか\t¿Dónde vive mi hermana? 😀",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

/// Request bodies of every endpoint that takes one.
pub fn http_bodies() -> Vec<Vec<u8>> {
    let s1 = json!({"session_id": "s1", "date": "2023-05-30T23:40:00Z",
        "turns": [{"role": "user", "content": "see you tomorrow"}, {"role": "assistant", "content": "bye"}]});
    let s2 = json!({"tenant": "alice", "session_id": "s2", "turns": [{"role": "user", "content": "on 8 May"}]});
    [
        s1.clone(),
        json!([s1.clone(), s2.clone()]),
        json!({"sessions": [s2, s1]}),
        json!({"query": "what did I do last week?", "date": "2023/05/30 (Tue) 23:40", "k": 5,
            "recent_turns": ["hi", "my sister moved"], "context": true,
            "stages": {"retriever": "hybrid", "fusion": "rrf", "dense_weight": 0.5, "fragrel_alpha": 0.5,
                "fragrel_w": 0.8, "fragrel_scope": "session", "fragrel_semantic": 0.2, "recency": 0.3,
                "importance": 0.1, "time": "boost", "time_boost": 1.0, "when_boost": 0.2}}),
        json!({"query": "where is it?", "stages": {"time": "front", "bm25": "memdex"}}),
        json!({"input": "hello", "model": "all-MiniLM-L6-v2", "encoding_format": "base64"}),
        json!({"input": ["a", "b"], "dimensions": 384, "user": "u", "encoding_format": "float"}),
    ]
    .iter()
    .map(|v| serde_json::to_vec(v).unwrap_or_default())
    .collect()
}
