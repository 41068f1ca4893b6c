//! Retrieval for every question, metrics, aggregation.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Instant;

use memdex_core::{Granularity, TextKind};
use memdex_engine::{Query, RankOptions, Retriever, Searcher};
use serde::Serialize;

use crate::dataset::{Dataset, EvalQuestion, Gold, Skip};
use crate::metrics::{evaluate, evaluate_turn2session, Metrics};
use crate::EvalError;

/// Evaluation settings.
#[derive(Debug, Clone, PartialEq)]
pub struct EvalOptions {
    pub dataset: Dataset,
    pub granularity: Granularity,
    pub ks: Vec<usize>,
    /// The ranking pipeline under test.
    pub rank: RankOptions,
}

/// Metric name (`recall_any@5`) → mean.
pub type LevelMetrics = BTreeMap<String, f64>;

/// What `memdex eval --json` prints.
#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    pub questions: usize,
    pub skipped: BTreeMap<String, usize>,
    pub levels: BTreeMap<String, LevelMetrics>,
    pub by_type: BTreeMap<String, BTreeMap<String, LevelMetrics>>,
    /// LongMemEval only: gold = `answer_session_ids`, over all non-abstention questions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer_session_gold: Option<AltGold>,
    /// Per-query latency on this machine, milliseconds.
    pub latency_ms: Latency,
    pub config: serde_json::Value,
}

/// Query latency percentiles (ms). `embed` is one query embedded alone (measured on up to 200
/// questions); `rank` is scoring and ordering the tenant's items; `search` is their sum per
/// question, i.e. what a `search` call costs after the model is loaded.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Latency {
    pub embed_p50: f64,
    pub embed_p99: f64,
    pub rank_p50: f64,
    pub rank_p99: f64,
    pub search_p50: f64,
    pub search_p99: f64,
}

/// The `p`-th percentile (0–100) of `v` (sorted in place): the element at rank
/// `round(p/100 · (n−1))`; 0 for an empty slice.
pub fn percentile(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let i = ((p / 100.0) * (v.len() - 1) as f64).round() as usize;
    v[i]
}

#[derive(Debug, Clone, Serialize)]
pub struct AltGold {
    pub note: &'static str,
    pub questions: usize,
    pub levels: BTreeMap<String, LevelMetrics>,
}

#[derive(Default)]
struct Acc {
    sums: BTreeMap<String, BTreeMap<String, (f64, usize)>>,
}

impl Acc {
    fn add(&mut self, level: &str, k: usize, m: Metrics) {
        let l = self.sums.entry(level.to_string()).or_default();
        for (name, v) in [
            ("recall_any", m.recall_any),
            ("recall_all", m.recall_all),
            ("ndcg_any", m.ndcg_any),
        ] {
            let e = l.entry(format!("{name}@{k}")).or_insert((0.0, 0));
            e.0 += v;
            e.1 += 1;
        }
    }

    fn means(&self) -> BTreeMap<String, LevelMetrics> {
        self.sums
            .iter()
            .map(|(l, m)| {
                (
                    l.clone(),
                    m.iter()
                        .map(|(k, (s, n))| (k.clone(), s / *n as f64))
                        .collect(),
                )
            })
            .collect()
    }
}

#[derive(Serialize)]
struct LogRanked<'a> {
    id: &'a str,
    score: f64,
}

#[derive(Serialize)]
struct LogLine<'a> {
    question_id: &'a str,
    question_type: &'a str,
    granularity: &'a str,
    retriever: Retriever,
    ranked: Vec<LogRanked<'a>>,
    gold: &'a [&'a str],
}

/// Ranks every question's corpus and scores it. `log` receives one JSON line per evaluated
/// question: its id, type, the whole ranking with scores, and the gold ids.
pub fn evaluate_questions(
    searcher: &Searcher,
    questions: &[EvalQuestion],
    opts: &EvalOptions,
    mut log: Option<&mut dyn Write>,
) -> Result<EvalReport, EvalError> {
    let queries: Vec<&str> = questions.iter().map(|q| q.query.as_str()).collect();
    let qvecs = searcher.embedder().embed(&queries, TextKind::Query)?;
    let (mut all, mut alt) = (Acc::default(), Acc::default());
    let mut by_type: BTreeMap<String, Acc> = BTreeMap::new();
    let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
    let (mut evaluated, mut alt_n) = (0usize, 0usize);
    let (mut embed_times, mut rank_times, mut search_times) = (Vec::new(), Vec::new(), Vec::new());

    for (qi, q) in questions.iter().enumerate() {
        let mut skip = |why: Skip| *skipped.entry(why.reason().to_string()).or_default() += 1;
        if q.skip == Some(Skip::Abstention) {
            skip(Skip::Abstention);
            continue;
        }
        let embed_ms = if embed_times.len() < 200 {
            let t = Instant::now();
            searcher
                .embedder()
                .embed(&[q.query.as_str()], TextKind::Query)?;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            embed_times.push(ms);
            Some(ms)
        } else {
            None
        };
        let t = Instant::now();
        let query = Query {
            text: &q.query,
            vector: qvecs.row(qi),
            date_ms: q.question_date_ms,
            dense: None,
        };
        let ranked = searcher.rank(&q.tenant, &query, &opts.rank);
        let rank_ms = t.elapsed().as_secs_f64() * 1e3;
        rank_times.push(rank_ms);
        if let Some(e) = embed_ms {
            search_times.push(e + rank_ms);
        }
        let ranking = match ranked {
            Ok(r) => r,
            Err(memdex_engine::EngineError::UnknownTenant { .. }) => {
                skip(Skip::EmptyHaystack);
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        // corpus ids in storage (timeline) order
        let raw_ids: Vec<String> = (0..ranking.len())
            .map(|i| {
                let it = ranking.item(i);
                opts.dataset
                    .base_id(opts.granularity, it.session_id, it.turn)
            })
            .collect();
        let mut ids = raw_ids.clone();
        let gold: Vec<&str> = match &q.gold {
            Gold::ContainsAnswer { rename } => {
                for id in ids.iter_mut() {
                    if rename.contains(id.as_str()) {
                        *id = id.replace("answer", "noans");
                    }
                }
                let mut g: Vec<&str> = ids
                    .iter()
                    .map(String::as_str)
                    .filter(|i| i.contains("answer"))
                    .collect();
                g.sort_unstable();
                g.dedup();
                g
            }
            Gold::Ids(g) => g.iter().map(String::as_str).collect(),
        };
        let (scores, order) = (&ranking.scores, &ranking.order);
        let ranked: Vec<&str> = order.iter().map(|&i| ids[i].as_str()).collect();

        if !q.answer_sessions.is_empty() {
            alt_n += 1;
            let g: Vec<&str> = q.answer_sessions.iter().map(String::as_str).collect();
            for &k in &opts.ks {
                let m = match opts.granularity {
                    Granularity::Session => evaluate(&ranked, &g, k),
                    _ => {
                        // gold sessions as pseudo turn ids so the turn → session rule applies
                        let gt: Vec<String> = g.iter().map(|s| format!("{s}_0")).collect();
                        let gt: Vec<&str> = gt.iter().map(String::as_str).collect();
                        let raw: Vec<&str> = order.iter().map(|&i| raw_ids[i].as_str()).collect();
                        evaluate_turn2session(&raw, &gt, k)
                    }
                };
                alt.add("session", k, m);
            }
        }

        if let Some(why) = q.skip.or(gold.is_empty().then_some(Skip::NoGoldInCorpus)) {
            skip(why);
            continue;
        }
        evaluated += 1;
        let t = by_type.entry(q.qtype.clone()).or_default();
        for &k in &opts.ks {
            match opts.granularity {
                Granularity::Session => {
                    let m = evaluate(&ranked, &gold, k);
                    all.add("session", k, m);
                    t.add("session", k, m);
                }
                _ => {
                    let m = evaluate(&ranked, &gold, k);
                    all.add("turn", k, m);
                    t.add("turn", k, m);
                    let m = evaluate_turn2session(&ranked, &gold, k);
                    all.add("session", k, m);
                    t.add("session", k, m);
                }
            }
        }
        if let Some(w) = log.as_deref_mut() {
            let line = LogLine {
                question_id: &q.id,
                question_type: &q.qtype,
                granularity: if opts.granularity == Granularity::Session {
                    "session"
                } else {
                    "turn"
                },
                retriever: opts.rank.retriever,
                ranked: order
                    .iter()
                    .map(|&i| LogRanked {
                        id: &ids[i],
                        score: scores[i],
                    })
                    .collect(),
                gold: &gold,
            };
            serde_json::to_writer(&mut *w, &line).map_err(std::io::Error::from)?;
            w.write_all(b"\n")?;
        }
    }
    Ok(EvalReport {
        questions: evaluated,
        skipped,
        levels: all.means(),
        by_type: by_type.into_iter().map(|(k, a)| (k, a.means())).collect(),
        latency_ms: Latency {
            embed_p50: percentile(&mut embed_times, 50.0),
            embed_p99: percentile(&mut embed_times, 99.0),
            rank_p50: percentile(&mut rank_times, 50.0),
            rank_p99: percentile(&mut rank_times, 99.0),
            search_p50: percentile(&mut search_times, 50.0),
            search_p99: percentile(&mut search_times, 99.0),
        },
        answer_session_gold: (opts.dataset == Dataset::LongMemEval).then(|| AltGold {
            note: "gold = answer_session_ids, all non-abstention questions (not the official rule)",
            questions: alt_n,
            levels: alt.means(),
        }),
        config: serde_json::json!({
            "dataset": format!("{:?}", opts.dataset).to_lowercase(),
            "granularity": opts.granularity.to_string(),
            "retriever": opts.rank.retriever,
            "ks": opts.ks,
            "bm25": opts.rank.bm25,
            "weights": [opts.rank.weights.0, opts.rank.weights.1],
            "fusion": opts.rank.fusion,
            "recency": opts.rank.recency,
            "importance": opts.rank.importance,
            "fragrel": opts.rank.fragrel.map(|(p, scope)| serde_json::json!({"alpha": p.alpha, "w": p.w, "scope": scope})),
            "model": searcher.embedder().info().name,
        }),
    })
}
