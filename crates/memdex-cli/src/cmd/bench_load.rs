//! `memdex bench load`: searches against a running `memdex serve`, every answer checked.
//!
//! Each of `--connections` keep-alive connections runs on its own thread and sends
//! `POST /v1/tenants/{tenant}/search` with one of 216 template questions and a random tenant,
//! or, for one search in `--planted N`, a planted question: the load tests' histories hold
//! per tenant `{prefix}{i}` a session `planted-THING` naming its THING with a name only that
//! tenant has (`scripts/load/planted.py`; the same rule below), so the right first hit is
//! known. A response counts as a success only when it is a 200 whose JSON names the tenant
//! asked for and holds exactly `k` hits, each of that tenant, and, for a planted question,
//! whose first hit is the planted session's round holding the name; anything else is an error
//! counted by kind.
//!
//! Closed loop (no `--rate`): each connection sends its next request when the last answer
//! came; latency is send → answer. Open loop (`--rate R`): request i is due at start + i / R
//! (spread over the connections in turn) and its latency runs from when it was due, not from
//! when it could be sent, so a stalled server shows as latency (no coordinated omission).
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use memdex_core::rng::SplitMix64;
use serde::Serialize;

use crate::cli::BenchLoadArgs;
use crate::output::print_json;

const WORDS: [&str; 18] = [
    "dog", "cat", "paris", "coffee", "sister", "guitar", "marathon", "job", "garden", "trip",
    "book", "piano", "doctor", "car", "birthday", "recipe", "movie", "camera",
];
const TEMPLATES: [&str; 12] = [
    "what did I say about my {}?",
    "when did we talk about the {}?",
    "which {} did I mention last month?",
    "how is my {} doing these days?",
    "what was the name of the {} I liked?",
    "where did I buy the {}?",
    "remind me what happened with the {} after the trip",
    "who gave me the {}?",
    "what advice did you give me on my {}?",
    "how much did the {} cost in the end?",
    "what do I usually do with my {} on weekends?",
    "did I ever tell you about the {}?",
];
/// The planted facts (`scripts/load/planted.py`, whose `--self-test` checks this copy): the
/// j-th thing of tenant i is named `PLANT_SYL_A[(i + j) % 10] + PLANT_SYL_B[(i / 10 + 3 j) % 10]`
/// in its session `planted-THING`; asked "what did I name my THING?", that round comes first.
const PLANT_THINGS: [&str; 4] = ["iguana", "kayak", "telescope", "harmonica"];
const PLANT_SYL_A: [&str; 10] = [
    "Bal", "Cor", "Dun", "Fen", "Gal", "Hol", "Jas", "Kel", "Lom", "Mir",
];
const PLANT_SYL_B: [&str; 10] = [
    "abar", "edric", "imon", "ova", "ulf", "enna", "orin", "astel", "ibeth", "othar",
];

/// A planted question's right first hit: its session id and the name its value holds.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Expected {
    session_id: String,
    name: String,
}

/// Tenant number `tenant`'s planted question `j`: the question and its right first hit.
fn planted(tenant: usize, j: usize) -> (String, Expected) {
    let thing = PLANT_THINGS[j % PLANT_THINGS.len()];
    let name = format!(
        "{}{}",
        PLANT_SYL_A[(tenant + j) % 10],
        PLANT_SYL_B[(tenant / 10 + 3 * j) % 10]
    );
    (
        format!("what did I name my {thing}?"),
        Expected {
            session_id: format!("planted-{thing}"),
            name,
        },
    )
}

/// Wrong answers quoted in the report (the first ones seen).
const SAMPLES: usize = 5;
/// Largest response body read (a search answer is a few KB).
const MAX_BODY: usize = 64 << 20;

#[derive(Serialize)]
struct Latency {
    p50: f64,
    p90: f64,
    p99: f64,
    p999: f64,
    max: f64,
    mean: f64,
}

#[derive(Serialize)]
struct Report {
    bench: &'static str,
    /// `closed` (each connection waits for its answer) or `open` (requests due at `rate`).
    mode: &'static str,
    addr: String,
    connections: usize,
    tenants: usize,
    k: usize,
    seconds: f64,
    /// Open loop: the rate asked for (requests/s).
    target_rate: Option<f64>,
    requests: u64,
    /// 200s with k hits, all of the tenant asked for (and, for a planted question, the
    /// planted round first).
    ok: u64,
    ok_per_s: f64,
    /// One search in this many asked a planted question (0: none).
    planted_every: usize,
    /// Planted questions answered right (those answered wrong are among `errors`).
    planted_ok: u64,
    /// Everything else, by kind (`status 429`, `hit count`, `foreign hit`, `wrong top hit`,
    /// `io`, ...).
    errors: BTreeMap<String, u64>,
    error_samples: Vec<String>,
    /// Open loop: requests sent more than 1 ms after they were due (the client fell behind:
    /// every connection was still waiting for an answer).
    late_sends: u64,
    /// Milliseconds over every answered request (successes and wrong answers alike).
    latency_ms: Latency,
}

#[derive(Default)]
struct Tally {
    latencies_us: Vec<u64>,
    ok: u64,
    planted_ok: u64,
    late: u64,
    errors: BTreeMap<String, u64>,
    samples: Vec<String>,
}

impl Tally {
    fn error(&mut self, kind: String, detail: impl FnOnce() -> String) {
        *self.errors.entry(kind).or_default() += 1;
        if self.samples.len() < SAMPLES {
            self.samples.push(detail());
        }
    }
    fn merge(&mut self, o: Tally) {
        self.latencies_us.extend(o.latencies_us);
        self.ok += o.ok;
        self.planted_ok += o.planted_ok;
        self.late += o.late;
        for (k, v) in o.errors {
            *self.errors.entry(k).or_default() += v;
        }
        self.samples.extend(o.samples);
        self.samples.truncate(SAMPLES);
    }
}

pub fn run(a: BenchLoadArgs) -> Result<()> {
    if a.connections == 0 || a.tenants == 0 || a.seconds <= 0.0 {
        bail!("--connections, --tenants and --seconds must be > 0");
    }
    if matches!(a.rate, Some(r) if r.is_nan() || r <= 0.0) {
        bail!("--rate must be > 0 requests/s");
    }
    // one connection first: a server that is not there is one clear error, not N
    TcpStream::connect(&a.addr).with_context(|| format!("cannot connect to {}", a.addr))?;
    if a.warmup_seconds > 0.0 {
        drive(&a, a.warmup_seconds, None);
    }
    let (tally, seconds) = drive(&a, a.seconds, a.rate);
    let report = report(&a, tally, seconds);
    if a.json {
        print_json(&report)?;
    } else {
        print_text(&report);
    }
    let wrong: u64 = report.errors.values().sum();
    if wrong > 0 {
        bail!(
            "{wrong} of {} responses were not a 200 with {} hits of the tenant asked for \
             (for a planted question: the planted round first): {:?}",
            report.requests,
            a.k,
            report.errors
        );
    }
    if a.planted > 0 && report.planted_ok == 0 {
        bail!("--planted {}: no planted question was answered", a.planted);
    }
    Ok(())
}

/// Runs every connection for `seconds`; returns what they saw and the wall time.
fn drive(a: &BenchLoadArgs, seconds: f64, rate: Option<f64>) -> (Tally, f64) {
    let start = Instant::now() + Duration::from_millis(20);
    let end = start + Duration::from_secs_f64(seconds);
    let tallies: Vec<Tally> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..a.connections)
            .map(|c| s.spawn(move || connection(a, c, start, end, rate)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut all = Tally::default();
    for t in tallies {
        all.merge(t);
    }
    (
        all,
        (Instant::now().min(end) - start).as_secs_f64().max(1e-9),
    )
}

/// One connection's loop until `end`.
fn connection(
    a: &BenchLoadArgs,
    c: usize,
    start: Instant,
    end: Instant,
    rate: Option<f64>,
) -> Tally {
    let mut t = Tally::default();
    // a different, fixed stream per connection
    let mut rng = SplitMix64::new(0x5eed ^ (c as u64).wrapping_mul(0x2545_F491_4F6C_DD1D));
    let mut conn: Option<BufReader<TcpStream>> = None;
    std::thread::sleep(start.saturating_duration_since(Instant::now()));
    for i in 0.. {
        let due = match rate {
            Some(r) => start + Duration::from_secs_f64((i * a.connections + c) as f64 / r),
            None => Instant::now(),
        };
        if due >= end {
            break;
        }
        let now = Instant::now();
        if now < due {
            std::thread::sleep(due - now);
        } else if rate.is_some() && now - due > Duration::from_millis(1) {
            t.late += 1;
        }
        let number = rng.below(a.tenants);
        let tenant = format!("{}{}", a.tenant_prefix, number);
        let (query, expected) = if a.planted > 0 && rng.below(a.planted) == 0 {
            let (q, e) = planted(number, rng.below(PLANT_THINGS.len()));
            (q, Some(e))
        } else {
            (rng.pick(&TEMPLATES).replace("{}", rng.pick(&WORDS)), None)
        };
        let sent = if rate.is_some() { due } else { Instant::now() };
        match exchange(&mut conn, a, &tenant, &query) {
            Ok((status, body)) => {
                t.latencies_us.push(sent.elapsed().as_micros() as u64);
                match check(status, &body, &tenant, a.k, expected.as_ref()) {
                    Ok(()) => {
                        t.ok += 1;
                        t.planted_ok += u64::from(expected.is_some());
                    }
                    Err(kind) => t.error(kind, || {
                        format!(
                            "{tenant}: {}",
                            String::from_utf8_lossy(&body[..body.len().min(300)])
                        )
                    }),
                }
            }
            Err(e) => {
                conn = None; // reconnect on the next request
                t.error("io".into(), || format!("{tenant}: {e:#}"));
            }
        }
    }
    t
}

/// One request on the connection (opened if needed); returns the status and body.
fn exchange(
    conn: &mut Option<BufReader<TcpStream>>,
    a: &BenchLoadArgs,
    tenant: &str,
    query: &str,
) -> Result<(u16, Vec<u8>)> {
    if conn.is_none() {
        let s = TcpStream::connect(&a.addr)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        *conn = Some(BufReader::new(s));
    }
    let r = conn.as_mut().context("no connection")?;
    let body = serde_json::json!({"query": query, "k": a.k}).to_string();
    let mut req = format!(
        "POST /v1/tenants/{tenant}/search HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        a.addr,
        body.len()
    );
    if let Some(key) = &a.api_key {
        req.push_str(&format!("Authorization: Bearer {key}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    r.get_mut().write_all(req.as_bytes())?;
    let (status, close, body) = read_response(r)?;
    if close {
        *conn = None;
    }
    Ok((status, body))
}

/// Reads one HTTP/1.1 response: status, whether the server closes, body (length or chunked).
fn read_response(r: &mut BufReader<TcpStream>) -> Result<(u16, bool, Vec<u8>)> {
    let mut line = String::new();
    r.read_line(&mut line)?;
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("bad status line {line:?}"))?;
    let (mut length, mut chunked, mut close) = (None, false, false);
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            bail!("connection closed in the headers");
        }
        let h = line.trim_end();
        if h.is_empty() {
            break;
        }
        let (name, value) = h.split_once(':').unwrap_or((h, ""));
        let (name, value) = (name.to_ascii_lowercase(), value.trim().to_ascii_lowercase());
        match name.as_str() {
            "content-length" => length = Some(value.parse::<usize>()?),
            "transfer-encoding" => chunked = value.contains("chunked"),
            "connection" => close = value == "close",
            _ => {}
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            r.read_line(&mut line)?;
            let n = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                .with_context(|| format!("bad chunk size {line:?}"))?;
            let at = body.len();
            if at + n > MAX_BODY {
                bail!("response body over {MAX_BODY} bytes");
            }
            body.resize(at + n + 2, 0); // the chunk and its CRLF
            r.read_exact(&mut body[at..])?;
            body.truncate(at + n);
            if n == 0 {
                break;
            }
        }
    } else {
        let n = length.context("response without Content-Length")?;
        if n > MAX_BODY {
            bail!("response body over {MAX_BODY} bytes");
        }
        body.resize(n, 0);
        r.read_exact(&mut body)?;
    }
    Ok((status, close, body))
}

/// A success is a 200 whose JSON names `tenant` and holds exactly `k` hits of `tenant`, the
/// first one `expected` when given (its session, its value holding the planted name).
fn check(
    status: u16,
    body: &[u8],
    tenant: &str,
    k: usize,
    expected: Option<&Expected>,
) -> Result<(), String> {
    if status != 200 {
        return Err(format!("status {status}"));
    }
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|_| "body not JSON".to_string())?;
    if v["tenant"] != tenant {
        return Err("wrong tenant".into());
    }
    let hits = v["hits"].as_array().ok_or("no hits array")?;
    if hits.len() != k {
        return Err("hit count".into());
    }
    if hits.iter().any(|h| h["tenant"] != tenant) {
        return Err("foreign hit".into());
    }
    if let Some(e) = expected {
        let first = &hits[0];
        let right = first["session_id"] == e.session_id.as_str()
            && first["value"].as_str().is_some_and(|v| v.contains(&e.name));
        if !right {
            return Err("wrong top hit".into());
        }
    }
    Ok(())
}

fn report(a: &BenchLoadArgs, mut t: Tally, seconds: f64) -> Report {
    t.latencies_us.sort_unstable();
    let l = &t.latencies_us;
    let at = |q: f64| {
        l.get(((l.len() as f64 * q).ceil() as usize).saturating_sub(1))
            .map_or(0.0, |&us| us as f64 / 1e3)
    };
    let mean = l.iter().sum::<u64>() as f64 / l.len().max(1) as f64 / 1e3;
    Report {
        bench: "load",
        mode: if a.rate.is_some() { "open" } else { "closed" },
        addr: a.addr.clone(),
        connections: a.connections,
        tenants: a.tenants,
        k: a.k,
        seconds,
        target_rate: a.rate,
        requests: t.ok + t.errors.values().sum::<u64>(),
        ok: t.ok,
        ok_per_s: t.ok as f64 / seconds,
        planted_every: a.planted,
        planted_ok: t.planted_ok,
        errors: t.errors,
        error_samples: t.samples,
        late_sends: t.late,
        latency_ms: Latency {
            p50: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
            p999: at(0.999),
            max: l.last().map_or(0.0, |&us| us as f64 / 1e3),
            mean,
        },
    }
}

fn print_text(r: &Report) {
    let target = r
        .target_rate
        .map_or(String::new(), |x| format!(" at {x:.0}/s"));
    println!(
        "{} loop{target}, {} connections, {:.1} s: {} requests, {} ok ({:.1}/s; {} planted \
         questions answered right), errors {:?}",
        r.mode, r.connections, r.seconds, r.requests, r.ok, r.ok_per_s, r.planted_ok, r.errors
    );
    let l = &r.latency_ms;
    println!(
        "latency ms: p50 {:.2}  p90 {:.2}  p99 {:.2}  p99.9 {:.2}  max {:.2}",
        l.p50, l.p90, l.p99, l.p999, l.max
    );
    if r.late_sends > 0 {
        println!(
            "{} requests sent more than 1 ms after they were due",
            r.late_sends
        );
    }
}

#[cfg(test)]
mod tests {
    use super::{check, planted};

    fn body(tenant: &str, hits: &[&str]) -> Vec<u8> {
        let hits: Vec<_> = hits
            .iter()
            .map(|t| serde_json::json!({"tenant": t, "session_id": "s1", "value": "user: hi"}))
            .collect();
        serde_json::json!({"tenant": tenant, "hits": hits})
            .to_string()
            .into_bytes()
    }

    #[test]
    fn only_a_200_with_k_hits_of_the_tenant_is_a_success() {
        let good = body("t1", &["t1", "t1"]);
        assert_eq!(check(200, &good, "t1", 2, None), Ok(()));
        assert_eq!(check(429, &good, "t1", 2, None).unwrap_err(), "status 429");
        assert_eq!(check(200, &good, "t1", 3, None).unwrap_err(), "hit count");
        assert_eq!(
            check(200, &good, "t2", 2, None).unwrap_err(),
            "wrong tenant"
        );
        let foreign = body("t1", &["t1", "t2"]);
        assert_eq!(
            check(200, &foreign, "t1", 2, None).unwrap_err(),
            "foreign hit"
        );
        assert_eq!(
            check(200, b"<html>", "t1", 2, None).unwrap_err(),
            "body not JSON"
        );
    }

    #[test]
    fn a_planted_question_needs_its_planted_round_first() {
        // scripts/load/planted.py: tenant 17's kayak (thing 1) is Lomulf, its iguana Keledric
        let (q, e) = planted(17, 1);
        assert_eq!(q, "what did I name my kayak?");
        assert_eq!(
            (e.session_id.as_str(), e.name.as_str()),
            ("planted-kayak", "Lomulf")
        );
        assert_eq!(planted(17, 0).1.name, "Keledric");
        let answer = |first: (&str, &str)| {
            let hit = |sid: &str, value: &str| serde_json::json!({"tenant": "tenant-17", "session_id": sid, "value": value});
            let hits = [hit(first.0, first.1), hit("s3", "user: I love my dog.")];
            serde_json::json!({"tenant": "tenant-17", "hits": hits})
                .to_string()
                .into_bytes()
        };
        let right = answer((
            "planted-kayak",
            "user: I named my kayak Lomulf.\nassistant: Noted.",
        ));
        assert_eq!(check(200, &right, "tenant-17", 2, Some(&e)), Ok(()));
        // the template questions' check does not look at the first hit
        let other = answer(("s9", "user: I love my cat."));
        assert_eq!(check(200, &other, "tenant-17", 2, None), Ok(()));
        for wrong in [
            other,
            // the right session id with another tenant's name
            answer(("planted-kayak", "user: I named my kayak Balabar.")),
            // the name in another session
            answer(("planted-iguana", "user: I named my kayak Lomulf.")),
        ] {
            assert_eq!(
                check(200, &wrong, "tenant-17", 2, Some(&e)).unwrap_err(),
                "wrong top hit"
            );
        }
    }
}
