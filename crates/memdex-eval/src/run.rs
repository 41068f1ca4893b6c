//! Retrieval for every question, metrics, aggregation.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Instant;

use memdex_core::Granularity;
use memdex_memory::{IndexReport, Reader};
use memdex_rank::{RankOptions, Retriever};
use serde::Serialize;

use crate::dataset::{Dataset, EvalQuestion, Skip};
use crate::metrics::{
    evaluate, evaluate_turn2session, reciprocal_rank, reciprocal_rank_turn2session, CutoffMetrics,
};
use crate::options::EvalOptions;
use crate::ranked::{Ahead, Ranked};
use crate::EvalError;

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
    pub config: EvalConfig,
    /// With `memdex eval --rank-check`: the ranker's top-10 against the CPU ranker's on
    /// these questions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agreement: Option<crate::Agreement>,
}

/// What was evaluated, recorded whole: two reports with the same config ran the same thing.
#[derive(Debug, Clone, Serialize)]
pub struct EvalConfig {
    pub dataset: Dataset,
    pub granularity: Granularity,
    pub ks: Vec<usize>,
    /// The ranking pipeline, every stage and weight.
    pub rank: RankOptions,
    pub model: String,
    /// The ranker (`cpu`: the CPU pipeline, question by question; a batching ranker, e.g.
    /// `cuda:0` or `auto: cuda:0 or cpu per batch`: in batches of 256 questions).
    pub ranker: String,
    /// Batches the ranker ran per device (`cpu`, `cuda:N`): where `auto` put them.
    pub rank_batches: BTreeMap<String, u64>,
    /// How the run went (filled by the caller that read and indexed the input).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<RunInfo>,
}

/// The input and index side of an evaluation run.
#[derive(Debug, Clone, Serialize)]
pub struct RunInfo {
    pub input: String,
    /// What the store extracted at index time (events, facts, neighbours): with `rank`, the
    /// whole pipeline.
    pub extraction: memdex_store::Extraction,
    pub index: IndexReport,
    pub warnings: usize,
    pub rank_seconds: f64,
}

/// Query latency percentiles (ms). `embed` is one query embedded alone (measured on up to 200
/// questions); `rank` is scoring and ordering the tenant's items (with a batched scorer: its
/// share of its batch's scoring call plus the ordering); `search` is their sum per
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
    fn add(&mut self, level: &str, k: usize, m: CutoffMetrics) {
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

    /// A metric without a cut-off (`mrr`).
    fn add_one(&mut self, level: &str, name: &str, v: f64) {
        let e = self
            .sums
            .entry(level.to_string())
            .or_default()
            .entry(name.to_string())
            .or_insert((0.0, 0));
        e.0 += v;
        e.1 += 1;
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

/// Latency samples (ms).
#[derive(Default)]
struct Times {
    embed: Vec<f64>,
    rank: Vec<f64>,
    search: Vec<f64>,
}

impl Times {
    fn latency(mut self) -> Latency {
        Latency {
            embed_p50: percentile(&mut self.embed, 50.0),
            embed_p99: percentile(&mut self.embed, 99.0),
            rank_p50: percentile(&mut self.rank, 50.0),
            rank_p99: percentile(&mut self.rank, 99.0),
            search_p50: percentile(&mut self.search, 50.0),
            search_p99: percentile(&mut self.search, 99.0),
        }
    }
}

/// Everything a run accumulates.
#[derive(Default)]
struct Tally {
    all: Acc,
    alt: Acc,
    alt_n: usize,
    by_type: BTreeMap<String, Acc>,
    skipped: BTreeMap<String, usize>,
    evaluated: usize,
    times: Times,
}

impl Tally {
    fn skip(&mut self, why: Skip) {
        *self.skipped.entry(why.reason().to_string()).or_default() += 1;
    }

    /// The official metrics of one question at every k, at its granularity's levels.
    fn score(&mut self, qtype: &str, ranked: &[&str], gold: &[&str], opts: &EvalOptions) {
        self.evaluated += 1;
        let t = self.by_type.entry(qtype.to_string()).or_default();
        for &k in &opts.ks {
            let mut add = |level: &str, m: CutoffMetrics| {
                self.all.add(level, k, m);
                t.add(level, k, m);
            };
            match opts.granularity {
                Granularity::Session => add("session", evaluate(ranked, gold, k)),
                _ => {
                    add("turn", evaluate(ranked, gold, k));
                    add("session", evaluate_turn2session(ranked, gold, k));
                }
            }
        }
        let mrr = match opts.granularity {
            Granularity::Session => vec![("session", reciprocal_rank(ranked, gold))],
            _ => vec![
                ("turn", reciprocal_rank(ranked, gold)),
                ("session", reciprocal_rank_turn2session(ranked, gold)),
            ],
        };
        for (level, v) in mrr {
            self.all.add_one(level, "mrr", v);
            t.add_one(level, "mrr", v);
        }
    }

    /// LongMemEval's alternative gold (`answer_session_ids`), labelled as such.
    fn score_alt(&mut self, r: &Ranked, answer_sessions: &[String], opts: &EvalOptions) {
        self.alt_n += 1;
        let g: Vec<&str> = answer_sessions.iter().map(String::as_str).collect();
        for &k in &opts.ks {
            let m = match opts.granularity {
                Granularity::Session => evaluate(&r.ranked(), &g, k),
                _ => {
                    // gold sessions as pseudo turn ids so the turn → session rule applies
                    let gt: Vec<String> = g.iter().map(|s| format!("{s}_0")).collect();
                    let gt: Vec<&str> = gt.iter().map(String::as_str).collect();
                    let raw: Vec<&str> = r.order.iter().map(|&i| r.raw_ids[i].as_str()).collect();
                    evaluate_turn2session(&raw, &gt, k)
                }
            };
            self.alt.add("session", k, m);
        }
    }
}

/// Ranks every question's corpus and scores it. `log` receives one JSON line per evaluated
/// question: its id, type, the whole ranking with scores, and the gold ids.
pub fn evaluate_questions(
    reader: &Reader,
    questions: &[EvalQuestion],
    opts: &EvalOptions,
    mut log: Option<&mut dyn Write>,
) -> Result<EvalReport, EvalError> {
    let queries: Vec<&str> = questions.iter().map(|q| q.query.as_str()).collect();
    let qvecs = reader.embed_queries(&queries)?;
    let mut tally = Tally::default();
    let mut ahead = Ahead::default();
    for (qi, q) in questions.iter().enumerate() {
        if q.skip == Some(Skip::Abstention) {
            tally.skip(Skip::Abstention);
            continue;
        }
        let pre = ahead.take(reader, questions, &qvecs, qi, opts)?;
        let Some(mut r) = rank_question(reader, q, pre, &mut tally)? else {
            tally.skip(Skip::EmptyHaystack);
            continue;
        };
        if !q.answer_sessions.is_empty() {
            tally.score_alt(&r, &q.answer_sessions, opts);
        }
        let ranked: Vec<String> = r.ranked().into_iter().map(str::to_string).collect();
        let (scores, order) = (r.scores.clone(), r.order.clone());
        let gold = r.gold(&q.gold);
        if let Some(why) = q.skip.or(gold.is_empty().then_some(Skip::NoGoldInCorpus)) {
            tally.skip(why);
            continue;
        }
        let ranked: Vec<&str> = ranked.iter().map(String::as_str).collect();
        tally.score(&q.qtype, &ranked, &gold, opts);
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
                    .zip(&ranked)
                    .map(|(&i, id)| LogRanked {
                        id,
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
        questions: tally.evaluated,
        skipped: tally.skipped,
        levels: tally.all.means(),
        by_type: tally
            .by_type
            .into_iter()
            .map(|(k, a)| (k, a.means()))
            .collect(),
        latency_ms: tally.times.latency(),
        answer_session_gold: (opts.dataset == Dataset::LongMemEval).then(|| AltGold {
            note: "gold = answer_session_ids, all non-abstention questions (not the official rule)",
            questions: tally.alt_n,
            levels: tally.alt.means(),
        }),
        config: EvalConfig {
            dataset: opts.dataset,
            granularity: opts.granularity,
            ks: opts.ks.clone(),
            rank: opts.rank,
            model: reader.encoder().info().name.clone(),
            ranker: reader.ranker().describe(),
            rank_batches: reader
                .ranker()
                .counts()
                .into_iter()
                .map(|c| (c.device, c.batches))
                .collect(),
            run: None,
        },
        agreement: None,
    })
}

/// One question's ranking (None: its tenant has no items), taken from its batch's ranking
/// (`pre`, with its share of the batch's time in ms), timing the query's embedding (first 200
/// questions) beside it.
fn rank_question(
    reader: &Reader,
    q: &EvalQuestion,
    pre: (Option<Ranked>, f64),
    tally: &mut Tally,
) -> Result<Option<Ranked>, EvalError> {
    let times = &mut tally.times;
    let embed_ms = if times.embed.len() < 200 {
        let t = Instant::now();
        reader.embed_queries(&[q.query.as_str()])?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        times.embed.push(ms);
        Some(ms)
    } else {
        None
    };
    let (r, rank_ms) = pre;
    times.rank.push(rank_ms);
    if let Some(e) = embed_ms {
        times.search.push(e + rank_ms);
    }
    Ok(r)
}
