//! A real server on a loopback port over the tiny fixture model, and a minimal HTTP/1.1
//! client (one request per connection).

#![allow(clippy::unwrap_used, dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use memdex_core::DeviceChoice;
use memdex_embed::{select_device, EmbedOptions, Embedder};
use memdex_engine::{Engine, EngineOptions};
use memdex_server::ServerConfig;
use serde_json::Value;

pub fn tiny_model() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../memdex-embed/tests/fixtures/tiny-bert")
}

pub fn embedder() -> Embedder {
    let dev = select_device(DeviceChoice::Cpu).unwrap();
    Embedder::load(
        tiny_model().to_str().unwrap(),
        dev,
        &EmbedOptions::default(),
    )
    .unwrap()
}

pub struct TestServer {
    pub addr: SocketAddr,
    pub engine: Engine,
    pub dir: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TestServer {
    pub fn start(config: ServerConfig) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        Self::start_in(dir, config, EngineOptions::default())
    }

    pub fn start_in(dir: tempfile::TempDir, config: ServerConfig, opts: EngineOptions) -> Self {
        let engine = Engine::start(dir.path(), embedder(), opts).unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let e = engine.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let l = memdex_server::bind("127.0.0.1:0".parse().unwrap(), &config)
                    .await
                    .unwrap();
                addr_tx.send(l.local_addr().unwrap()).unwrap();
                memdex_server::serve(l, e, config, async move {
                    let _ = rx.await;
                })
                .await
                .unwrap();
            });
        });
        let addr = addr_rx.recv().unwrap();
        TestServer {
            addr,
            engine,
            dir,
            stop: Some(tx),
            thread: Some(thread),
        }
    }

    pub fn call(&self, method: &str, path: &str, key: Option<&str>, body: &[u8]) -> (u16, String) {
        http(self.addr, method, path, key, body)
    }

    /// Calls with a JSON body and parses the JSON answer.
    pub fn json(&self, method: &str, path: &str, key: Option<&str>, body: &Value) -> (u16, Value) {
        let b = if body.is_null() {
            Vec::new()
        } else {
            body.to_string().into_bytes()
        };
        let (status, text) = self.call(method, path, key, &b);
        let v = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, v)
    }

    pub fn stop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop();
    }
}

pub fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: &[u8],
) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(k) = key {
        head.push_str(&format!("Authorization: Bearer {k}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    // a server may answer (413) before reading a huge body: ignore write errors then
    let _ = s.write_all(body);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).to_string();
    let status: u16 = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let (headers, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let body = if headers
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    (status, body)
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

pub fn session(id: &str, day: u32, texts: &[&str]) -> Value {
    let turns: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| serde_json::json!({"role": if i % 2 == 0 {"user"} else {"assistant"}, "content": t}))
        .collect();
    serde_json::json!({"session_id": id, "date": format!("2023-05-{day:02}T10:00:00Z"), "turns": turns})
}

/// Every byte of the store's segment files.
pub fn segment_bytes(dir: &Path) -> Vec<u8> {
    let mut all = Vec::new();
    for e in std::fs::read_dir(dir.join("segments")).unwrap() {
        all.extend(std::fs::read(e.unwrap().path()).unwrap());
    }
    all
}

pub fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}
