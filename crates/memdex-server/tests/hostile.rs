//! Hostile input against a real loopback server: a date far outside the calendar stops
//! nothing; strangers holding connections open (headers without a body, headers that never
//! end) cannot take what callers with a key need; health answers whatever the load.

#![allow(clippy::unwrap_used)]

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::{session, TestServer};
use memdex_server::{HttpLimits, Keys, ServerConfig};
use serde_json::json;

const ADMIN: &str = "admin-key";

fn keyed(limits: HttpLimits) -> ServerConfig {
    ServerConfig {
        keys: Keys {
            admin: Some(ADMIN.into()),
            ..Keys::default()
        },
        limits,
        ..ServerConfig::default()
    }
}

/// Opens a connection and sends `head` (no body), keeping the socket.
fn half_request(addr: SocketAddr, head: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    s
}

fn status_of(s: &mut TcpStream) -> Option<u16> {
    let mut buf = [0u8; 512];
    let n = s.read(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf[..n]);
    text.split(' ').nth(1)?.parse().ok()
}

#[test]
fn an_extreme_date_is_refused_and_writes_go_on() {
    let s = TestServer::start(ServerConfig::default());
    let bad = json!({"session_id": "x1", "date": "+262142-12-31",
        "turns": [{"role": "user", "content": "see you tomorrow"}]});
    let (st, b) = s.json("POST", "/v1/tenants/alice/sessions", None, &bad);
    assert!(st == 400 && b.to_string().contains("262142"), "{st} {b}");
    let (st, b) = s.json(
        "POST",
        "/v1/tenants/alice/sessions",
        None,
        &session("x2", 3, &["see you tomorrow", "ok"]),
    );
    assert_eq!(st, 200, "{b}");
    let q = json!({"query": "what did I do today", "date": "+262142-12-31"});
    let (st, b) = s.json("POST", "/v1/tenants/alice/search", None, &q);
    assert_eq!(st, 400, "{b}");
    let (st, b) = s.json("GET", "/healthz", None, &serde_json::Value::Null);
    assert!(st == 200 && b["status"] == "ok", "{b}");
}

#[test]
fn strangers_cannot_starve_callers() {
    let limits = HttpLimits {
        max_in_flight: 8,
        body_timeout: Duration::from_millis(300),
        header_timeout: Duration::from_millis(300),
        ..HttpLimits::default()
    };
    let s = TestServer::start_in(
        tempfile::tempdir().unwrap(),
        keyed(limits),
        Default::default(),
    );
    let (st, _) = s.json(
        "POST",
        "/v1/tenants/x/sessions",
        Some(ADMIN),
        &session("s1", 1, &["I like tea", "ok"]),
    );
    assert_eq!(st, 200);
    // 60 keyless requests that announce a body and never send it: refused from the headers
    let head = "POST /v1/tenants/x/search HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n";
    let mut strangers: Vec<TcpStream> = (0..60).map(|_| half_request(s.addr, head)).collect();
    for c in &mut strangers {
        assert_eq!(status_of(c), Some(401), "answered before any body");
    }
    // 20 connections whose headers never end
    let mut slow: Vec<TcpStream> = (0..20)
        .map(|_| half_request(s.addr, "POST /v1/te"))
        .collect();
    let q = json!({"query": "tea", "k": 1});
    let (st, b) = s.json("POST", "/v1/tenants/x/search", Some(ADMIN), &q);
    assert_eq!(st, 200, "{b}");
    assert_eq!(s.call("GET", "/healthz", None, b"").0, 200);
    // slow headers are cut off by the header timeout
    let t = Instant::now();
    for c in &mut slow {
        let mut buf = [0u8; 256];
        let _ = c.read(&mut buf);
    }
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "slow headers held for {:?}",
        t.elapsed()
    );

    // callers with a key who stall their bodies hold permits only until the body timeout
    let keyed_head = format!(
        "POST /v1/tenants/x/search HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {ADMIN}\r\nContent-Length: 100\r\n\r\n"
    );
    let mut stalled: Vec<TcpStream> = (0..8).map(|_| half_request(s.addr, &keyed_head)).collect();
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        s.call("GET", "/healthz", None, b"").0,
        200,
        "health needs no permit"
    );
    for c in &mut stalled {
        assert_eq!(status_of(c), Some(408), "the body timed out");
    }
    let (st, b) = s.json("POST", "/v1/tenants/x/search", Some(ADMIN), &q);
    assert_eq!(st, 200, "permits are back: {b}");
}
