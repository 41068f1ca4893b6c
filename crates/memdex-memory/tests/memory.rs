//! The in-process memory over the real runtime with the test-double encoder: add in every
//! shape, search with stages, date and recent turns, list, forget, compact, errors.

use memdex_memory::{
    DeleteTarget, EngineOptions, Memory, MemoryError, OpenOptions, SearchRequest, Stages, TextKind,
};
use memdex_testkit::HashEncoder;
use serde_json::json;

fn open(dir: &std::path::Path) -> Memory {
    let opts = OpenOptions {
        engine: EngineOptions {
            compact_every: None,
            ..EngineOptions::default()
        },
        ..OpenOptions::default()
    };
    Memory::open_with_encoder(dir, Box::new(HashEncoder::new(32)), opts).expect("open")
}

fn history() -> serde_json::Value {
    json!([
        {"tenant": "alice", "session_id": "s1", "date": "2023-05-01T10:00:00Z",
         "turns": [{"role": "user", "content": "I adopted a dog named Rex."},
                   {"role": "assistant", "content": "Congrats on Rex!"}]},
        {"tenant": "alice", "session_id": "s2", "date": "2023-05-20T10:00:00Z",
         "turns": [{"role": "user", "content": "My sister lives in Lisbon."},
                   {"role": "assistant", "content": "Nice city."}]},
        {"tenant": "bob", "session_id": "s1", "date": "2023-05-02T10:00:00Z",
         "turns": [{"role": "user", "content": "I play the cello every evening."}]}
    ])
}

#[test]
fn add_search_list_forget_compact() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    let added = m.add_json(history(), None).unwrap();
    let tenants: Vec<&str> = added.iter().map(|a| a.tenant.as_str()).collect();
    assert_eq!(tenants, ["alice", "bob"]);
    assert_eq!(added[0].report.sessions.len(), 2);
    // idempotent: the same sessions again write nothing
    let again = m.add_json(history(), None).unwrap();
    assert!(
        again.iter().all(|a| a.report.items_written == 0),
        "{again:?}"
    );
    // the same id with other content is a conflict, named
    let other = json!({"session_id": "s1", "turns": [{"role": "user", "content": "changed"}]});
    let e = m.add_json(other, Some("alice")).unwrap_err();
    assert!(matches!(e, MemoryError::Conflict(_)), "{e}");
    assert!(
        e.to_string()
            .contains("already stored with different content"),
        "{e}"
    );

    let ans = m
        .search("alice", &SearchRequest::new("dog Rex", 1))
        .unwrap();
    assert_eq!(ans.hits.len(), 1);
    assert_eq!(ans.hits[0].session_id, "s1");
    assert!(ans.hits[0].value.contains("Rex"));
    // stages and date
    let mut req = SearchRequest::new("sister Lisbon", 2);
    req.stages = Stages {
        retriever: Some(memdex_rank::Retriever::Bm25),
        ..Stages::default()
    };
    req.date = Some("2023-06-01".into());
    let ans = m.search("alice", &req).unwrap();
    assert_eq!(ans.hits[0].session_id, "s2");
    assert_eq!(ans.date_ms, 1_685_577_600_000);
    let cx = ans.context();
    assert!(
        cx["prompt"].is_string() || cx.get("items").is_some(),
        "{cx}"
    );
    // recent turns: an ambiguous query is searched with them
    let mut req = SearchRequest::new("and its name?", 1);
    req.recent_turns = vec!["my dog".into()];
    assert_ne!(m.search("alice", &req).unwrap().searched, "and its name?");
    // tenants are isolated
    let bob = m.search("bob", &SearchRequest::new("dog Rex", 5)).unwrap();
    assert!(bob.hits.iter().all(|h| h.tenant == "bob"));

    assert_eq!(
        m.tenants(),
        vec![("alice".to_string(), 2), ("bob".to_string(), 1)]
    );
    let sessions = m.sessions("alice").unwrap();
    let ids: Vec<&str> = sessions.iter().map(|s| s.session_id.as_str()).collect();
    assert_eq!(ids, ["s1", "s2"]);
    let items = m.items("alice", Some("s2")).unwrap();
    assert_eq!(items.len(), 1);
    assert!(items[0].value.contains("Lisbon"));

    // forget an item, then a session: gone from search and listing at once
    let r = m
        .delete(DeleteTarget::Item {
            tenant: "alice".into(),
            item_id: items[0].item_id,
        })
        .unwrap();
    assert_eq!(r.items_deleted, 1);
    assert!(matches!(
        m.items("alice", Some("s2")),
        Err(MemoryError::NotFound(_))
    ));
    m.delete(DeleteTarget::Session {
        tenant: "alice".into(),
        session_id: "s1".into(),
    })
    .unwrap();
    let e = m
        .search("alice", &SearchRequest::new("dog", 3))
        .unwrap_err();
    assert_eq!(e.to_string(), "tenant \"alice\" has no memory");
    let e = m
        .delete(DeleteTarget::Tenant {
            tenant: "alice".into(),
        })
        .unwrap_err();
    assert!(matches!(e, MemoryError::NotFound(_)), "{e}");
    let c = m.compact().unwrap();
    assert!(c.rows_removed >= 2, "{c:?}");
    assert_eq!(m.tenants(), vec![("bob".to_string(), 1)]);
}

#[test]
fn bad_calls_are_errors_with_memdex_messages() {
    let dir = tempfile::tempdir().unwrap();
    let m = open(dir.path());
    m.add_json(history(), None).unwrap();
    let invalid = |r: Result<memdex_memory::SearchAnswer, MemoryError>, want: &str| {
        let e = r.unwrap_err();
        assert!(matches!(e, MemoryError::Invalid(_)), "{e}");
        assert!(e.to_string().contains(want), "{e} lacks {want}");
    };
    let too_large = |r: Result<memdex_memory::SearchAnswer, MemoryError>, want: &str| {
        let e = r.unwrap_err();
        assert!(matches!(e, MemoryError::TooLarge(_)), "{e}");
        assert!(e.to_string().contains(want), "{e} lacks {want}");
    };
    invalid(
        m.search("alice", &SearchRequest::new(" ", 3)),
        "the query is empty",
    );
    invalid(
        m.search("alice", &SearchRequest::new("x", 0)),
        "k must be 1 to",
    );
    invalid(m.search("a b", &SearchRequest::new("x", 1)), "tenant");
    let mut req = SearchRequest::new("x", 1);
    req.date = Some("someday".into());
    invalid(m.search("alice", &req), "date \"someday\"");
    let mut req = SearchRequest::new("x", 1);
    req.stages.dense_weight = Some(2.0);
    invalid(m.search("alice", &req), "dense_weight must be in [0, 1]");
    let e = m.search("nobody", &SearchRequest::new("x", 1)).unwrap_err();
    assert!(matches!(e, MemoryError::NotFound(_)), "{e}");
    // a new tenant's first search, where the caller wants it so: no hits, not an error
    let empty = m
        .search_or_empty("nobody", &SearchRequest::new("x", 1))
        .unwrap();
    assert!(empty.hits.is_empty() && empty.tenant == "nobody");
    invalid(
        m.search_or_empty("nobody", &SearchRequest::new(" ", 1)),
        "the query is empty",
    );
    let e = m.add_json(json!({"turns": []}), Some("alice")).unwrap_err();
    assert!(e.to_string().contains("missing field `session_id`"), "{e}");
    // texts the HTTP server refuses (its default limits) are refused here too
    let big = "w ".repeat(memdex_memory::MAX_TEXT_BYTES / 2 + 1);
    let e = m
        .add_json(
            json!({"session_id": "big", "turns": [{"role": "user", "content": big}]}),
            Some("alice"),
        )
        .unwrap_err();
    assert!(matches!(e, MemoryError::TooLarge(_)), "{e}");
    assert!(
        e.to_string().contains("turns[0].content") && e.to_string().contains("limit is 32768"),
        "{e}"
    );
    too_large(
        m.search("alice", &SearchRequest::new(big.clone(), 1)),
        "at most 32768 bytes",
    );
    let mut req = SearchRequest::new("x", 1);
    req.recent_turns = vec![big.clone()];
    too_large(m.search("alice", &req), "at most 32768 bytes");
    let e = m.embed(vec![big], TextKind::Passage).unwrap_err();
    assert!(matches!(e, MemoryError::TooLarge(_)), "{e}");
    assert!(e.to_string().contains("the limit is 32768"), "{e}");
    // explain with context: the one rule of every front end
    let mut req = SearchRequest::new("x", 1);
    (req.explain, req.context) = (true, true);
    invalid(m.search("alice", &req), "explain and context");
    // nothing of a request with one bad session is stored
    let bad = json!([{"tenant": "carol", "session_id": "ok", "turns": [{"role": "user", "content": "hi"}]},
                     {"tenant": "carol", "session_id": "bad", "turns": []}]);
    assert!(m.add_json(bad, None).is_err());
    assert!(m.tenants().iter().all(|(t, _)| t != "carol"));
    // embeddings
    let e = m
        .embed(vec!["a".into(), "b c".into()], TextKind::Passage)
        .unwrap();
    assert_eq!((e.len(), e.dim, e.data.len()), (2, 32, 64));
    assert!(m.embed(vec![], TextKind::Query).unwrap().is_empty());
    // a second writer on the same store is refused while this one is open, then admitted
    let dir2 = dir.path().to_path_buf();
    let e = Memory::open_with_encoder(
        &dir2,
        Box::new(HashEncoder::new(32)),
        OpenOptions::default(),
    )
    .unwrap_err();
    assert!(!e.to_string().is_empty());
    m.close();
    for e in [
        m.search("nobody", &SearchRequest::new("x", 1)).unwrap_err(),
        m.add_json(history(), None).unwrap_err(),
        m.items("alice", None).unwrap_err(),
    ] {
        assert!(matches!(e, MemoryError::Closed), "{e}");
    }
    assert!(m.tenants().is_empty());
    let reopened = open(&dir2);
    assert_eq!(reopened.tenants().len(), 2);
}
