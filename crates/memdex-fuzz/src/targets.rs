//! The harnesses: each feeds one input to a parser (and to what consumes its output on the
//! way to the store) and panics when a property fails. Properties: no panic; every error names
//! the file and line, byte offset or record, and quotes at most a short prefix of the input;
//! a reader yields at most one result per line (or byte) of its input, so it cannot loop; what
//! a reader accepts satisfies the store's rules (tenant names, four-digit years). Each returns
//! a small signature of what happened (kinds of results and errors), which the driver uses to
//! keep inputs that behave in a new way.

use std::path::Path;

use chrono::{Datelike, NaiveDate};
use memdex_core::{check_tenant_name, Granularity, Session};
use memdex_extract::{extract_events, invalid_dates, parse_query, FactExtractor, HeuristicFacts};
use memdex_ingest::{
    itemize, parse_date, parse_locomo, parse_locomo_date, IngestError, ItemizeOptions,
    JsonlOptions, JsonlSessions, LongMemEvalReader, SessionSource as _, MAX_YEAR, MIN_YEAR,
};
use memdex_memory::{input::sessions_from_json, plan_search, StageNames};
use memdex_pipeline::derive_item;
use memdex_rank::{contextual_query, format_ms, reading_context, RankOptions, Stages};
use memdex_score::text::Analyzer;
use memdex_server::{bodies, ApiError, HttpLimits};
use memdex_structures::tree::aggregate;
use memdex_structures::{Context, RuleThoughts, ThoughtExtractor, ThoughtInput};
use serde_json::Value;

use crate::harness::{Sig, MAX_ERROR};
use crate::models;
use crate::mutate::Shape;
use crate::seeds;
use crate::store;

/// A fuzz target.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    pub name: &'static str,
    pub shape: Shape,
    /// Runs one input; panics when a property fails; returns the input's behaviour signature.
    pub run: fn(&[u8]) -> u64,
    pub seeds: fn() -> Vec<Vec<u8>>,
}

/// Every target.
pub const TARGETS: &[Target] = &[
    Target {
        name: "jsonl",
        shape: Shape::JsonLines,
        run: jsonl,
        seeds: seeds::jsonl,
    },
    Target {
        name: "longmemeval",
        shape: Shape::Json,
        run: longmemeval,
        seeds: seeds::longmemeval,
    },
    Target {
        name: "longmemeval_truncation",
        shape: Shape::Json,
        run: longmemeval_truncation,
        seeds: seeds::longmemeval,
    },
    Target {
        name: "locomo",
        shape: Shape::Json,
        run: locomo,
        seeds: seeds::locomo,
    },
    Target {
        name: "dates",
        shape: Shape::Text,
        run: dates,
        seeds: seeds::dates,
    },
    Target {
        name: "extract",
        shape: Shape::Text,
        run: extract,
        seeds: seeds::texts,
    },
    Target {
        name: "structures",
        shape: Shape::Text,
        run: structures,
        seeds: seeds::texts,
    },
    Target {
        name: "query",
        shape: Shape::Text,
        run: query,
        seeds: seeds::queries,
    },
    Target {
        name: "http_bodies",
        shape: Shape::Json,
        run: http_bodies,
        seeds: seeds::http_bodies,
    },
    Target {
        name: "gguf",
        shape: Shape::Binary,
        run: models::gguf,
        seeds: models::gguf_seeds,
    },
    Target {
        name: "e5s1",
        shape: Shape::Binary,
        run: models::e5s1,
        seeds: models::e5s1_seeds,
    },
    Target {
        name: "model_dir",
        shape: Shape::Json,
        run: models::model_dir,
        seeds: models::model_dir_seeds,
    },
    Target {
        name: "embed_gguf",
        shape: Shape::Binary,
        run: models::embed_gguf,
        seeds: models::embed_gguf_seeds,
    },
    Target {
        name: "store_manifest",
        shape: Shape::Json,
        run: store::manifest,
        seeds: store::manifest_seeds,
    },
    Target {
        name: "store_segment",
        shape: Shape::Binary,
        run: store::segment,
        seeds: store::segment_seeds,
    },
    Target {
        name: "model_answer",
        shape: Shape::Text,
        run: models::model_answer,
        seeds: models::answer_seeds,
    },
];

/// The target called `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

fn year_ok(ms: i64) -> bool {
    // the year as written is bounded; an offset may move the instant a day either way
    chrono::DateTime::from_timestamp_millis(ms)
        .is_some_and(|d| (MIN_YEAR - 1..=MAX_YEAR + 1).contains(&d.year()))
}

/// What happens to a session on its way to the store: items at every granularity, then the
/// writer's event and fact extraction.
fn store_path(s: &Session, sig: &mut Sig) {
    assert_eq!(
        check_tenant_name(&s.tenant),
        Ok(()),
        "tenant {:?}",
        s.tenant
    );
    assert!(
        year_ok(s.timestamp_ms),
        "date out of range: {}",
        s.timestamp_ms
    );
    let facts = HeuristicFacts {
        relative_dates: true,
        ..HeuristicFacts::default()
    };
    for g in [Granularity::Turn, Granularity::Round, Granularity::Session] {
        for mut item in itemize(s, &ItemizeOptions::new(g)) {
            let d = derive_item(&mut item, true, Some(&facts));
            assert!(d.events.len().is_multiple_of(2));
            sig.add(d.events.len().min(4));
        }
    }
}

fn check_error(e: &IngestError, file: &str, lines: u64, bytes: u64, sig: &mut Sig) {
    let m = e.to_string();
    assert!(
        m.starts_with(&format!("{file}:")),
        "error without the file: {m}"
    );
    assert!(
        m.len() <= MAX_ERROR,
        "error keeps {} bytes: {}",
        m.len(),
        m.chars().take(200).collect::<String>()
    );
    match e {
        IngestError::Json { line, .. }
        | IngestError::Schema { line, .. }
        | IngestError::Date { line, .. }
        | IngestError::TooLarge { line, .. }
        | IngestError::Utf8 { line, .. } => {
            assert!((1..=lines).contains(line), "line {line} of {lines}: {m}");
            assert!(m.starts_with(&format!("{file}:{line}: ")), "{m}");
        }
        IngestError::Malformed { offset, .. } => {
            assert!(*offset <= bytes, "offset {offset} of {bytes}: {m}");
            assert!(m.contains(&format!("byte {offset}")), "{m}");
        }
        IngestError::Record { location, .. } => assert!(!location.is_empty(), "{m}"),
        IngestError::Io { .. } => panic!("I/O error from memory: {m}"),
    }
    sig.add_msg(&m);
}

/// The JSONL reader, under both error policies and a small line cap.
pub fn jsonl(data: &[u8]) -> u64 {
    let mut sig = Sig::default();
    let lines = data.split(|&b| b == b'\n').count() as u64;
    for opts in [
        JsonlOptions {
            on_error: memdex_core::OnError::Skip,
            ..JsonlOptions::default()
        },
        JsonlOptions {
            on_error: memdex_core::OnError::Abort,
            max_line_bytes: 300,
        },
    ] {
        let mut r = JsonlSessions::new(Path::new("fuzz.jsonl"), data, opts);
        let mut n = 0u64;
        for x in r.by_ref() {
            n += 1;
            assert!(
                n <= lines,
                "{n} results from {lines} lines: the reader loops"
            );
            match x {
                Ok(s) => {
                    assert!(!s.session_id.trim().is_empty());
                    store_path(&s, &mut sig);
                    sig.add(("ok", s.turns.len().min(3)));
                }
                Err(e) => check_error(&e, "fuzz.jsonl", lines, data.len() as u64, &mut sig),
            }
        }
        assert!(r.skipped().len() as u64 <= lines);
        for e in r.skipped() {
            check_error(e, "fuzz.jsonl", lines, data.len() as u64, &mut sig);
        }
    }
    sig.done()
}

/// Reads a LongMemEval stream to its end; the number of errors.
fn read_lme(data: &[u8], sig: &mut Sig) -> usize {
    let mut errors = 0;
    let mut n = 0usize;
    for x in LongMemEvalReader::new(Path::new("fuzz.json"), data) {
        n += 1;
        assert!(n <= data.len() + 1, "{n} results from {} bytes", data.len());
        match x {
            Ok(inst) => {
                assert_eq!(check_tenant_name(&inst.tenant), Ok(()));
                assert_eq!(inst.has_answer.len(), inst.sessions.len());
                for (s, flags) in inst.sessions.iter().zip(&inst.has_answer) {
                    assert_eq!(s.tenant, inst.tenant);
                    assert_eq!(flags.len(), s.turns.len());
                    // an unparsable date falls back to an earlier one, or 0
                    assert!(s.timestamp_ms == 0 || year_ok(s.timestamp_ms));
                }
                if let Some(s) = inst.sessions.first() {
                    if s.timestamp_ms != 0 {
                        store_path(s, sig);
                    }
                }
                sig.add(("ok", inst.sessions.len().min(3), inst.warnings.len().min(3)));
            }
            Err(e) => {
                errors += 1;
                check_error(&e, "fuzz.json", 0, data.len() as u64, sig);
            }
        }
    }
    errors
}

/// The LongMemEval streaming scanner.
pub fn longmemeval(data: &[u8]) -> u64 {
    let mut sig = Sig::default();
    read_lme(data, &mut sig);
    sig.done()
}

/// A LongMemEval file cut at `cut` bytes: an error unless the cut keeps the whole array.
pub fn lme_cut(data: &[u8], cut: usize) {
    let part = &data[..cut];
    let errors = read_lme(part, &mut Sig::default());
    if serde_json::from_slice::<Value>(part).is_err() {
        assert!(
            errors > 0,
            "cut at byte {cut} of {} read without an error",
            data.len()
        );
    }
}

/// Whether every question of `data` reads and the whole is one JSON document.
pub fn lme_is_valid(data: &[u8]) -> bool {
    serde_json::from_slice::<Value>(data).is_ok_and(|v| v.is_array())
        && read_lme(data, &mut Sig::default()) == 0
}

/// A valid LongMemEval file read after truncation at many byte offsets (at every offset of
/// files up to 2 KiB, else at 64 offsets spread over the file and its last 64 bytes).
pub fn longmemeval_truncation(data: &[u8]) -> u64 {
    let mut sig = Sig::default();
    if !lme_is_valid(data) {
        let errors = read_lme(data, &mut sig);
        sig.add(errors.min(3));
        return sig.done();
    }
    let n = data.len();
    let cuts: Vec<usize> = if n <= 2048 {
        (0..n).collect()
    } else {
        (0..64)
            .map(|i| i * n / 64)
            .chain(n.saturating_sub(64)..n)
            .collect()
    };
    for cut in cuts {
        lme_cut(data, cut);
    }
    sig.add(("valid", n.min(1 << 12) >> 8));
    sig.done()
}

/// The LoCoMo reader.
pub fn locomo(data: &[u8]) -> u64 {
    let mut sig = Sig::default();
    match parse_locomo(Path::new("fuzz.json"), data) {
        Ok(convs) => {
            for c in &convs {
                assert_eq!(check_tenant_name(&c.tenant), Ok(()), "{:?}", c.tenant);
                assert!(!c.sessions.is_empty());
                for s in &c.sessions {
                    assert_eq!(s.tenant, c.tenant);
                    assert!(s.timestamp_ms == 0 || year_ok(s.timestamp_ms));
                    assert!(
                        c.sessions
                            .iter()
                            .filter(|o| o.session_id == s.session_id)
                            .count()
                            == 1,
                        "session {:?} twice",
                        s.session_id
                    );
                }
                for q in &c.qa {
                    for e in &q.evidence {
                        let s = c.sessions.iter().find(|s| s.session_id == e.session_id);
                        assert!(
                            s.is_some_and(|s| (e.turn as usize) < s.turns.len()),
                            "{e:?}"
                        );
                    }
                }
                if let Some(s) = c.sessions.iter().find(|s| s.timestamp_ms != 0) {
                    store_path(s, &mut sig);
                }
                sig.add((
                    c.sessions.len().min(3),
                    c.qa.len().min(3),
                    c.warnings.len().min(3),
                ));
            }
        }
        Err(e) => check_error(&e, "fuzz.json", 0, data.len() as u64, &mut sig),
    }
    sig.done()
}

/// Session dates (`parse_date`, LoCoMo's `parse_locomo_date`).
pub fn dates(data: &[u8]) -> u64 {
    let mut sig = Sig::default();
    let s = String::from_utf8_lossy(data);
    for r in [parse_date(&s), parse_locomo_date(&s)] {
        match r {
            Ok(ms) => {
                assert!(year_ok(ms), "{s:?} -> {ms}");
                sig.add("ok");
            }
            Err(m) => {
                assert!(m.len() <= 400, "{} bytes: {}", m.len(), &m[..200]);
                sig.add_msg(&m);
            }
        }
    }
    sig.done()
}

/// `ANCHOR_DAYS\nrest`: any integer maps to a date in chrono's range.
fn anchor_and_rest(data: &[u8]) -> (NaiveDate, String) {
    let s = String::from_utf8_lossy(data).into_owned();
    let (head, rest) = s.split_once('\n').unwrap_or(("738648", s.as_str()));
    let lo = i64::from(NaiveDate::MIN.num_days_from_ce());
    let hi = i64::from(NaiveDate::MAX.num_days_from_ce());
    let n = head.trim().parse::<i64>().unwrap_or(738_648);
    let days = lo + (n - lo).rem_euclid(hi - lo + 1);
    let anchor = i32::try_from(days)
        .ok()
        .and_then(NaiveDate::from_num_days_from_ce_opt)
        .unwrap_or(NaiveDate::MIN);
    (anchor, rest.to_string())
}

fn check_text(text: &str, anchor: NaiveDate, sig: &mut Sig) {
    for e in extract_events(text, anchor) {
        assert!(e.range.start <= e.range.end, "{e:?}");
        assert!(e.start < e.end && e.end <= text.len(), "{e:?}");
        assert!(text.is_char_boundary(e.start) && text.is_char_boundary(e.end));
        let (a, b) = e.range.to_ms();
        assert!(a <= b);
        sig.add((e.relative, e.range.days().min(400)));
    }
    sig.add(invalid_dates(text).min(3));
}

/// Event dates and facts of a chat turn, against any anchor.
pub fn extract(data: &[u8]) -> u64 {
    let mut sig = Sig::default();
    let (anchor, text) = anchor_and_rest(data);
    check_text(&text, anchor, &mut sig);
    let facts = HeuristicFacts {
        relative_dates: true,
        ..HeuristicFacts::default()
    }
    .extract(&text, Some(anchor));
    sig.add(facts.len());
    sig.add(memdex_score::signals::importance(&text));
    sig.done()
}

/// TiM's rule thoughts (each line a turn, pronouns resolved across lines, with and without
/// third-person names) and MemTree's aggregation of the lines: no panic, bounded triples with
/// non-empty parts, an aggregate within its byte budget.
pub fn structures(data: &[u8]) -> u64 {
    static ANALYZER: std::sync::OnceLock<Analyzer> = std::sync::OnceLock::new();
    let mut sig = Sig::default();
    let (anchor, text) = anchor_and_rest(data);
    for names in [false, true] {
        let x = RuleThoughts {
            names,
            ..RuleThoughts::default()
        };
        let mut context = Context::default();
        for line in text.lines() {
            let input = ThoughtInput {
                text: line,
                speaker: None,
                anchor: Some(anchor),
            };
            let triples = x.extract(&input, &mut context);
            assert!(triples.len() <= x.max_triples, "{triples:?}");
            for t in &triples {
                let parts = [&t.subject, &t.relation, &t.object];
                assert!(parts.iter().all(|p| !p.trim().is_empty()), "{t:?}");
                assert!(
                    t.sentence().len() <= 3 * line.len() + 64,
                    "{t:?} from {line:?}"
                );
                sig.add((
                    format!("{:?}", t.polarity),
                    t.functional,
                    t.relation.len() % 7,
                ));
            }
        }
    }
    let analyzer = ANALYZER.get_or_init(Analyzer::english);
    let lines: Vec<&str> = text.lines().collect();
    for budget in [1, 24, 400] {
        let out = aggregate(&lines, budget, analyzer);
        assert!(out.len() <= budget.max(3), "{budget}: {out:?}");
        sig.add(out.len().min(budget) * 8 / budget.max(1));
    }
    sig.done()
}

/// A query's time range and its contextual form, against any question date.
pub fn query(data: &[u8]) -> u64 {
    let mut sig = Sig::default();
    let (anchor, rest) = anchor_and_rest(data);
    let mut parts = rest.split('\t');
    let q = parts.next().unwrap_or("").to_string();
    let recent: Vec<String> = parts.map(str::to_string).collect();
    let searched = contextual_query(&q, &recent);
    for text in [&q, &searched] {
        let t = parse_query(text, anchor);
        if let Some(r) = t.range {
            assert!(r.start <= r.end, "{r:?}");
            let _ = r.to_ms();
        }
        sig.add((
            t.asks_when,
            t.range.map(|r| r.days().min(400)),
            t.exprs.len().min(4),
        ));
    }
    let ms = i64::from(anchor.num_days_from_ce() - 719_163) * 86_400_000;
    let _ = format_ms(ms);
    let _ = reading_context(&q, ms, &[]);
    sig.done()
}

/// The server's request bodies through the very functions the handlers and the front door
/// call (`memdex_server::bodies`, then `memdex_memory`'s session reader and search plan):
/// every failure is a 4xx with a short message; accepted appends hold valid tenants and
/// in-range years and go on to the store's extraction; accepted searches go on to query
/// context, query time and the reading stage.
pub fn http_bodies(data: &[u8]) -> u64 {
    let mut sig = Sig::default();
    let lim = HttpLimits::default();
    let now = 1_685_490_000_000;
    let appended = serde_json::from_slice::<Value>(data)
        .map_err(|e| memdex_server::bad_json(&e))
        .and_then(|v| Ok(sessions_from_json(v, Some("t"), now, &lim.memory)?));
    match appended {
        Ok(sessions) => {
            for s in &sessions {
                assert!(check_tenant_name(&s.tenant).is_ok(), "{:?}", s.tenant);
                store_path(s, &mut sig);
            }
            sig.add(("append", sessions.len().min(4)));
        }
        Err(e) => refused(&e, &mut sig),
    }
    let searched = bodies::search_request(data).and_then(|r| {
        Ok((
            plan_search(&r, &lim.memory, Some(now), StageNames::Body)?,
            r,
        ))
    });
    match searched {
        Ok((plan, r)) => {
            assert_eq!(plan.searched, contextual_query(&r.query, &r.recent_turns));
            let date_ms = plan.date_ms.unwrap_or(now);
            if let Some(anchor) = memdex_extract::time::ms_day(date_ms) {
                let t = parse_query(&plan.searched, anchor);
                sig.add((t.asks_when, t.range.is_some()));
            }
            let _ = reading_context(&r.query, date_ms, &[]);
            sig.add(("search", r.k.min(20), format!("{:?}", plan.opts.retriever)));
        }
        Err(e) => refused(&e, &mut sig),
    }
    let model = memdex_core::ModelInfo {
        name: "m".into(),
        fingerprint: "f".into(),
        dim: 8,
        pooling: memdex_core::Pooling::Mean,
        normalize: true,
        max_length: 16,
        query_prefix: String::new(),
        passage_prefix: String::new(),
    };
    match bodies::embeddings_request(data, &lim.memory, &model) {
        Ok((texts, b64)) => sig.add(("embed", texts.len().min(4), b64)),
        Err(e) => refused(&e, &mut sig),
    }
    if let Ok(st) = serde_json::from_slice::<Stages>(data) {
        apply_stages(&st, &mut sig);
    }
    sig.done()
}

/// A refused body: a client error, with a message of bounded size.
fn refused(e: &ApiError, sig: &mut Sig) {
    let m = e.to_string();
    assert!(
        e.status().is_client_error(),
        "{} for a body: {m}",
        e.status()
    );
    assert!(m.len() <= 1024, "a {}-byte message", m.len());
    sig.add_msg(&m);
}

fn apply_stages(st: &Stages, sig: &mut Sig) {
    match st.apply(RankOptions::default(), &|f| format!("stages.{f}")) {
        Ok(o) => sig.add(format!("{:?}", o.retriever)),
        Err(m) => {
            let m = m.to_string();
            assert!(m.contains("stages."), "error without the field: {m}");
            sig.add_msg(&m);
        }
    }
}
