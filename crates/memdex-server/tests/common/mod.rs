//! A real server on a loopback port over the tiny fixture model, and a minimal HTTP/1.1
//! client (one request per connection).

#![allow(clippy::unwrap_used, dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;

use memdex_memory::{DeviceChoice, EngineOptions, Memory, OpenOptions, RankChoice};
use memdex_server::ServerConfig;
use serde_json::Value;

pub use memdex_testkit::http;

pub mod schema;

pub struct TestServer {
    pub addr: SocketAddr,
    pub memory: Arc<Memory>,
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
        Self::start_ranked(dir, config, opts, RankChoice::default())
    }

    /// A server over the tiny model whose memory ranks as `rank` says.
    pub fn start_ranked(
        dir: tempfile::TempDir,
        config: ServerConfig,
        opts: EngineOptions,
        rank: RankChoice,
    ) -> Self {
        let open = OpenOptions {
            model: Some(memdex_testkit::tiny_model().display().to_string()),
            device: DeviceChoice::Cpu,
            engine: opts,
            rank,
            limits: Some(config.limits.memory),
            ..OpenOptions::default()
        };
        let memory = Arc::new(Memory::open(dir.path(), open).unwrap());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let e = memory.clone();
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
            memory,
            dir,
            stop: Some(tx),
            thread: Some(thread),
        }
    }

    pub fn call(&self, method: &str, path: &str, key: Option<&str>, body: &[u8]) -> (u16, String) {
        http(self.addr, method, path, key, body)
    }

    /// [`Self::call`] with the response's header lines (lower-cased): (status, headers, body).
    pub fn call_headers(&self, method: &str, path: &str, body: &[u8]) -> (u16, String, String) {
        memdex_testkit::http_headers(self.addr, method, path, None, body)
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

pub fn session(id: &str, day: u32, texts: &[&str]) -> Value {
    let turns: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| serde_json::json!({"role": if i % 2 == 0 {"user"} else {"assistant"}, "content": t}))
        .collect();
    serde_json::json!({"session_id": id, "date": format!("2023-05-{day:02}T10:00:00Z"), "turns": turns})
}
