//! Reading what is stored (`GET /v1/tenants`, a tenant's sessions, a session's items) under
//! the same key rules as the rest of the API, answers as the OpenAPI document says, and the
//! inspector page's files: public, data-free, with their security headers; off with `no_ui`.
//! (The page itself is driven in a real browser by scripts/ui-test/inspector_test.py.)

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;

use common::schema::conforms;
use common::{session, TestServer};
use memdex_server::{Keys, ServerConfig};
use serde_json::{json, Value};

const ADMIN: &str = "admin-key";

fn keyed(no_ui: bool) -> ServerConfig {
    ServerConfig {
        keys: Keys {
            admin: Some(ADMIN.into()),
            tenants: HashMap::from([
                ("ann".to_string(), "key-ann".to_string()),
                ("ben".to_string(), "key-ben".to_string()),
                ("new".to_string(), "key-new".to_string()),
            ]),
        },
        no_ui,
        ..ServerConfig::default()
    }
}

/// ann: two sessions (3 items); ben: one; a third tenant without a key of its own.
fn seeded(no_ui: bool) -> TestServer {
    let s = TestServer::start(keyed(no_ui));
    let ann = json!([
        session(
            "a2",
            9,
            &["I moved to Lisbon.", "nice", "My cat is Tom.", "ok"]
        ),
        session("a1", 2, &["I live in Porto.", "ok"]),
    ]);
    for (tenant, body) in [
        ("ann", ann),
        ("ben", json!(session("b1", 3, &["ben's secret", "ok"]))),
        ("cy", json!(session("c1", 4, &["cy's note", "ok"]))),
    ] {
        let path = format!("/v1/tenants/{tenant}/sessions");
        let (st, r) = s.json("POST", &path, Some(ADMIN), &body);
        assert_eq!(st, 200, "{r}");
    }
    s
}

fn get(s: &TestServer, path: &str, key: Option<&str>) -> (u16, Value) {
    s.json("GET", path, key, &Value::Null)
}

fn names(v: &Value) -> Vec<(String, u64)> {
    let rows = v["tenants"].as_array().unwrap();
    (rows.iter())
        .map(|t| {
            (
                t["tenant"].as_str().unwrap().into(),
                t["items"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_key_lists_only_what_it_may_read() {
    let s = seeded(false);
    let (st, r) = get(&s, "/v1/tenants", Some(ADMIN));
    assert_eq!(st, 200, "{r}");
    assert_eq!(r["access"], "admin");
    let all = [("ann".into(), 3), ("ben".into(), 1), ("cy".into(), 1)];
    assert_eq!(names(&r), all);
    // a tenant key: its own tenant only, with its count (0 before its first append)
    let (_, r) = get(&s, "/v1/tenants", Some("key-ben"));
    assert_eq!(
        (r["access"].as_str(), names(&r)),
        (Some("tenant"), vec![("ben".into(), 1)])
    );
    let (_, r) = get(&s, "/v1/tenants", Some("key-new"));
    assert_eq!(names(&r), [("new".to_string(), 0)]);
    assert_eq!(get(&s, "/v1/tenants", None).0, 401);
    assert_eq!(get(&s, "/v1/tenants", Some("nope")).0, 401);
    // sessions and items: the tenant's own key or the admin key; another tenant's is 403
    for path in ["/v1/tenants/ann/sessions", "/v1/tenants/ann/sessions/a1"] {
        assert_eq!(get(&s, path, Some("key-ann")).0, 200, "{path}");
        assert_eq!(get(&s, path, Some(ADMIN)).0, 200, "{path}");
        let (st, r) = get(&s, path, Some("key-ben"));
        assert_eq!(st, 403, "{path}: {r}");
        assert!(!r.to_string().contains("Porto"), "{r}");
        assert_eq!(get(&s, path, None).0, 401, "{path}");
    }
    // nothing stored or nothing there: 404, as for search
    assert_eq!(get(&s, "/v1/tenants/new/sessions", Some("key-new")).0, 404);
    assert_eq!(get(&s, "/v1/tenants/ann/sessions/zz", Some(ADMIN)).0, 404);
    assert_eq!(
        get(&s, "/v1/tenants/%61nn/sessions", Some("key-ann")).0,
        400
    );
}

#[test]
fn sessions_and_items_in_order_as_documented() {
    let s = seeded(false);
    let (_, doc) = get(&s, "/openapi.json", None);
    let schema = |path: &str| {
        doc["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
            .clone()
    };
    let (st, r) = get(&s, "/v1/tenants", Some(ADMIN));
    assert_eq!(st, 200);
    conforms(&doc, &schema("/v1/tenants"), &r, "$").unwrap();

    let (st, r) = get(&s, "/v1/tenants/ann/sessions", Some("key-ann"));
    assert_eq!(st, 200, "{r}");
    conforms(&doc, &schema("/v1/tenants/{tenant}/sessions"), &r, "$").unwrap();
    assert_eq!(r["granularity"], "round");
    let sessions: Vec<(&str, u64)> = (r["sessions"].as_array().unwrap().iter())
        .map(|s| {
            (
                s["session_id"].as_str().unwrap(),
                s["items"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(sessions, [("a1", 1), ("a2", 2)], "oldest first");

    let (st, r) = get(&s, "/v1/tenants/ann/sessions/a2", Some("key-ann"));
    assert_eq!(st, 200, "{r}");
    conforms(
        &doc,
        &schema("/v1/tenants/{tenant}/sessions/{session_id}"),
        &r,
        "$",
    )
    .unwrap();
    let items = r["items"].as_array().unwrap();
    let rounds: Vec<u64> = items.iter().map(|i| i["turn"].as_u64().unwrap()).collect();
    assert_eq!(rounds, [0, 1]);
    assert!(
        items[0]["value"].as_str().unwrap().contains("Lisbon"),
        "{r}"
    );
    assert!(items[1]["value"].as_str().unwrap().contains("Tom"), "{r}");

    // forgetting shows at once in the listings (the same route the page uses)
    let id = items[1]["item_id"].as_u64().unwrap();
    let del = format!("/v1/tenants/ann/items/{id}");
    assert_eq!(s.json("DELETE", &del, Some("key-ann"), &Value::Null).0, 200);
    let (_, r) = get(&s, "/v1/tenants/ann/sessions/a2", Some("key-ann"));
    assert_eq!(r["items"].as_array().unwrap().len(), 1, "{r}");
    let d = "/v1/tenants/ann/sessions/a1";
    assert_eq!(s.json("DELETE", d, Some("key-ann"), &Value::Null).0, 200);
    assert_eq!(get(&s, d, Some("key-ann")).0, 404);
    let (_, r) = get(&s, "/v1/tenants", Some(ADMIN));
    assert_eq!(names(&r)[0], ("ann".to_string(), 1));
}

#[test]
fn odd_session_ids_round_trip_through_the_path() {
    let s = TestServer::start(ServerConfig::default());
    let id = "x/<b>&?# \"y\"%";
    s.json(
        "POST",
        "/v1/tenants/t/sessions",
        None,
        &session(id, 1, &["hello there", "hi"]),
    );
    let (_, r) = get(&s, "/v1/tenants/t/sessions", None);
    assert_eq!(r["sessions"][0]["session_id"], id, "{r}");
    // as the page sends it: encodeURIComponent
    let path = "/v1/tenants/t/sessions/x%2F%3Cb%3E%26%3F%23%20%22y%22%25";
    let (st, r) = get(&s, path, None);
    assert_eq!((st, r["session_id"].as_str()), (200, Some(id)), "{r}");
    assert_eq!(s.json("DELETE", path, None, &Value::Null).0, 200);
    assert_eq!(get(&s, path, None).0, 404);
}

#[test]
fn tenant_pages_follow_the_cursor_and_bad_queries_are_400() {
    let s = seeded(false);
    let (_, r) = get(&s, "/v1/tenants?limit=2", Some(ADMIN));
    assert_eq!(names(&r).len(), 2);
    assert_eq!(r["next"], "ben", "{r}");
    let (_, r) = get(&s, "/v1/tenants?limit=2&after=ben", Some(ADMIN));
    assert_eq!(names(&r), [("cy".to_string(), 1)]);
    assert!(r.get("next").is_none(), "{r}");
    let (_, r) = get(&s, "/v1/tenants?prefix=b", Some(ADMIN));
    assert_eq!(names(&r), [("ben".to_string(), 1)]);
    // a tenant key's filter applies to its own tenant only
    let (_, r) = get(&s, "/v1/tenants?prefix=a", Some("key-ben"));
    assert_eq!(names(&r), []);
    for bad in ["limit=0", "limit=99999", "sort=name", "prefix=%zz"] {
        let (st, r) = get(&s, &format!("/v1/tenants?{bad}"), Some(ADMIN));
        assert_eq!(st, 400, "{bad}: {r}");
        assert_eq!(r["error"]["code"], "bad_request", "{r}");
    }
}

#[test]
fn the_page_is_public_holds_no_data_and_forbids_foreign_script() {
    let s = seeded(false);
    let (st, headers, body) = s.call_headers("GET", "/ui", b"");
    assert_eq!(st, 200, "{body}");
    assert!(headers.contains("content-type: text/html"), "{headers}");
    let csp = headers
        .lines()
        .find(|l| l.starts_with("content-security-policy:"))
        .unwrap();
    for rule in [
        "default-src 'none'",
        "script-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(rule), "{csp}");
    }
    assert!(
        headers.contains("x-content-type-options: nosniff"),
        "{headers}"
    );
    assert!(
        !body.contains("Porto") && !body.contains("ben's"),
        "the page carries no data"
    );
    for (path, kind) in [
        ("/ui/app.js", "text/javascript"),
        ("/ui/app.css", "text/css"),
        ("/ui/", "text/html"),
    ] {
        let (st, headers, _) = s.call_headers("GET", path, b"");
        assert_eq!(st, 200, "{path}");
        assert!(
            headers.contains(&format!("content-type: {kind}")),
            "{path}: {headers}"
        );
    }
    let (st, headers, _) = s.call_headers("GET", "/", b"");
    assert!(
        st == 303 && headers.contains("location: /ui"),
        "{st} {headers}"
    );
    // still no data without a key, and unknown page files are 404
    assert_eq!(get(&s, "/v1/tenants", None).0, 401);
    assert_eq!(s.call_headers("GET", "/ui/secret.js", b"").0, 404);
}

#[test]
fn no_ui_serves_the_api_only() {
    let s = seeded(true);
    for path in ["/ui", "/ui/app.js", "/"] {
        let (st, _, body) = s.call_headers("GET", path, b"");
        assert_eq!(st, 404, "{path}: {body}");
    }
    assert_eq!(get(&s, "/v1/tenants", Some(ADMIN)).0, 200);
}

#[test]
fn the_listing_routes_are_documented() {
    let s = TestServer::start(ServerConfig::default());
    let (_, doc) = get(&s, "/openapi.json", None);
    let paths = &doc["paths"];
    let params: Vec<&str> = (paths["/v1/tenants"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter())
    .map(|p| p["name"].as_str().unwrap())
    .collect();
    assert_eq!(params, ["prefix", "after", "limit"]);
    for p in [
        "/v1/tenants/{tenant}/sessions",
        "/v1/tenants/{tenant}/sessions/{session_id}",
    ] {
        let item = paths[p].as_object().unwrap();
        assert!(item.contains_key("get"), "{p}: {item:?}");
        assert!(paths[p]["get"]["responses"]["403"].is_object(), "{p}");
    }
    // the append and forget twins of the same paths are still there
    assert!(paths["/v1/tenants/{tenant}/sessions"]["post"].is_object());
    assert!(paths["/v1/tenants/{tenant}/sessions/{session_id}"]["delete"].is_object());
    let items = &doc["components"]["schemas"]["ItemInfo"]["properties"];
    assert!(
        items["value"].is_object() && items["turn"].is_object(),
        "{items}"
    );
}
