//! `memdex synth`: deterministic LongMemEval-format files that cost what the real ones cost.
//!
//! The profiles reproduce the real files' shape (`../shared/reviews/longmemeval-facts.md`):
//! 500 questions; haystacks of 38–62 sessions (S) or ≈ 502 (M) summing to the real slot counts
//! (25,112 and 250,948); filler sessions drawn **with replacement from one shared pool** per
//! file, sized so the expected number of distinct sessions is the real one (S 19,829, M 52,476;
//! the pools come out at ≈ 45.6 k and ≈ 52.6 k — one 52.6 k pool would give S 2.7 % too many,
//! outside the 2 % asked for); each haystack dates its sessions itself, so a pool session
//! appears under different dates in different haystacks. Session and turn lengths are bootstrapped from the
//! real S haystack (`calibration`), and the text is common English words, one token each
//! (`text`), so embedding costs match and distinct turns are distinct keys.
//!
//! Every question plants evidence sessions (`answer_…` ids, user turns with `has_answer`)
//! of one of four kinds: a single-session fact, a knowledge update (old and new value in two
//! sessions), a multi-session aggregation (three sessions), a dated event (temporal). Quality
//! numbers on this data are not claims; its purpose is cost and scale.

mod calibration;
mod text;

use std::collections::HashSet;
use std::io::Write;

use memdex_core::rng::SplitMix64;
use serde::Serialize;

use calibration::{ASSISTANT_TOKENS, ROUNDS, USER_TOKENS};

/// What a synthetic file looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SynthOptions {
    pub questions: usize,
    /// Haystack size range (inclusive), evidence included.
    pub haystack: (usize, usize),
    /// Σ haystack sizes; `None`: whatever the draws give.
    pub slots: Option<usize>,
    /// Filler sessions in the shared pool.
    pub pool: usize,
    pub seed: u64,
}

/// The real files' shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SynthScale {
    /// `longmemeval_s.json`: 500 questions, 25,112 slots, 19,829 distinct sessions.
    LongMemEvalS,
    /// `longmemeval_m.json`: 500 questions, 250,948 slots, 52,476 distinct sessions.
    LongMemEvalM,
}

/// Evidence sessions per question kind (fact, update, aggregation, temporal).
const EVIDENCE: [usize; 4] = [1, 2, 3, 1];

impl SynthOptions {
    pub fn profile(p: SynthScale, seed: u64) -> Self {
        let (haystack, slots, distinct) = match p {
            SynthScale::LongMemEvalS => ((38, 62), 25_112, 19_829),
            SynthScale::LongMemEvalM => ((480, 524), 250_948, 52_476),
        };
        Self {
            questions: 500,
            haystack,
            slots: Some(slots),
            pool: pool_for(500, slots, distinct),
            seed,
        }
    }
}

/// The pool size whose expected distinct draws give `distinct` sessions in a file of
/// `questions` haystacks and `slots` slots: with `F` filler slots drawn uniformly with
/// replacement from `P` sessions, `E[distinct] = P·(1 − e^{−F/P})`, plus the evidence
/// sessions; solved for `P` by bisection.
pub fn pool_for(questions: usize, slots: usize, distinct: usize) -> usize {
    let evidence: usize = (0..questions).map(|q| EVIDENCE[q % 4]).sum();
    let filler = slots.saturating_sub(evidence) as f64;
    let target = distinct.saturating_sub(evidence) as f64;
    let (mut lo, mut hi) = (target, 4.0 * target);
    for _ in 0..60 {
        let p = (lo + hi) / 2.0;
        if p * (1.0 - (-filler / p).exp()) < target {
            lo = p;
        } else {
            hi = p;
        }
    }
    hi.round() as usize
}

/// One haystack slot: a pool session, or the question's `k`-th evidence session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    Pool(usize),
    Evidence(usize),
}

/// Haystack sizes of every question: uniform in the range, then nudged one by one (within
/// the range) until they sum to `slots`.
fn haystack_sizes(o: &SynthOptions, rng: &mut SplitMix64) -> Vec<usize> {
    let (lo, hi) = (o.haystack.0.max(1), o.haystack.1.max(o.haystack.0.max(1)));
    let mut sizes: Vec<usize> = (0..o.questions)
        .map(|_| lo + rng.below(hi - lo + 1))
        .collect();
    if let Some(target) = o.slots {
        let mut sum: usize = sizes.iter().sum();
        let mut i = 0;
        let n = sizes.len().max(1);
        while sum != target && (lo..=hi).contains(&(target / n)) {
            let s = &mut sizes[i % n];
            if sum < target && *s < hi {
                *s += 1;
                sum += 1;
            } else if sum > target && *s > lo {
                *s -= 1;
                sum -= 1;
            }
            i += 1;
        }
    }
    sizes
}

/// Every question's haystack, in file order: pool draws with replacement (no session twice
/// in one haystack) and evidence at random positions.
pub fn plan(o: &SynthOptions) -> Vec<Vec<Slot>> {
    let mut rng = SplitMix64::new(o.seed);
    let sizes = haystack_sizes(o, &mut rng);
    sizes
        .iter()
        .enumerate()
        .map(|(q, &size)| {
            let n_ev = EVIDENCE[q % 4].min(size);
            let mut seen = HashSet::new();
            let mut slots: Vec<Slot> = Vec::with_capacity(size);
            while slots.len() < size - n_ev {
                let p = rng.below(o.pool.max(1));
                if seen.insert(p) || seen.len() >= o.pool {
                    slots.push(Slot::Pool(p));
                }
            }
            let mut at: Vec<usize> = (0..n_ev).map(|_| rng.below(slots.len() + 1)).collect();
            at.sort_unstable();
            for (k, p) in at.iter().enumerate() {
                slots.insert(p + k, Slot::Evidence(k));
            }
            slots
        })
        .collect()
}

/// What `write_synth` wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SynthReport {
    pub questions: usize,
    /// Σ haystack sizes.
    pub slots: usize,
    pub distinct_sessions: usize,
}

/// The file's counts without writing it.
pub fn count(o: &SynthOptions) -> SynthReport {
    let plan = plan(o);
    let mut pool = HashSet::new();
    let mut evidence = 0;
    for s in plan.iter().flatten() {
        match s {
            Slot::Pool(p) => {
                pool.insert(*p);
            }
            Slot::Evidence(_) => evidence += 1,
        }
    }
    SynthReport {
        questions: plan.len(),
        slots: plan.iter().map(Vec::len).sum(),
        distinct_sessions: pool.len() + evidence,
    }
}

#[derive(Serialize)]
struct Turn {
    role: &'static str,
    content: String,
    has_answer: bool,
}

#[derive(Serialize)]
struct Instance<'a> {
    question_id: String,
    question_type: &'a str,
    question: String,
    answer: String,
    question_date: String,
    haystack_session_ids: Vec<String>,
    haystack_dates: Vec<String>,
    haystack_sessions: Vec<Vec<Turn>>,
    answer_session_ids: Vec<String>,
}

/// Session `id` of the pool: its rounds, user and assistant turn lengths bootstrapped from the
/// real haystack. Depends only on (seed, id): the same session wherever it is drawn.
fn pool_session(words: &[&str], seed: u64, id: u64) -> Vec<Turn> {
    let mut r = SplitMix64::new(seed ^ id.wrapping_mul(0xA24B_AED4_963E_E407));
    let rounds = ROUNDS[r.below(ROUNDS.len())] as usize;
    let mut turns = Vec::with_capacity(rounds * 2);
    for _ in 0..rounds {
        let u = USER_TOKENS[r.below(USER_TOKENS.len())] as usize;
        let a = ASSISTANT_TOKENS[r.below(ASSISTANT_TOKENS.len())] as usize;
        turns.push(turn("user", text::turn(words, &mut r, u), false));
        turns.push(turn("assistant", text::turn(words, &mut r, a), false));
    }
    turns
}

fn turn(role: &'static str, content: String, has_answer: bool) -> Turn {
    Turn {
        role,
        content,
        has_answer,
    }
}

/// `YYYY/MM/DD (Day) HH:MM`, `slot` five-hour steps after 2023-01-01.
fn date(slot: i64) -> String {
    chrono::DateTime::from_timestamp(1_672_531_200 + slot * 3600 * 5, 0)
        .map(|d| d.format("%Y/%m/%d (%a) %H:%M").to_string())
        .unwrap_or_default()
}

const PETS: &[&str] = &["Biscuit", "Pepper", "Mochi", "Juniper", "Waffles", "Clover"];
const ITEMS: &[&str] = &[
    "apples",
    "notebooks",
    "candles",
    "plants",
    "mugs",
    "records",
];
const CITIES: &[&str] = &[
    "Lyon", "Osaka", "Denver", "Porto", "Krakow", "Austin", "Hanoi", "Quito",
];
const EVENTS: &[&str] = &[
    "ran my first half marathon",
    "adopted a rescue cat",
    "started pottery classes",
    "moved into a new apartment",
    "got promoted to team lead",
    "finished a 1000-piece puzzle",
];

/// A question's planted facts and its question and answer.
struct Planted {
    kind: usize,
    pet: &'static str,
    city: &'static str,
    next_city: &'static str,
    item: &'static str,
    event: &'static str,
    counts: [usize; 3],
}

impl Planted {
    fn new(kind: usize, rng: &mut SplitMix64) -> Planted {
        let c = rng.below(CITIES.len());
        Planted {
            kind,
            pet: PETS[rng.below(PETS.len())],
            city: CITIES[c],
            next_city: CITIES[(c + 1) % CITIES.len()],
            item: ITEMS[rng.below(ITEMS.len())],
            event: EVENTS[rng.below(EVENTS.len())],
            counts: [1 + rng.below(4), 1 + rng.below(4), 1 + rng.below(4)],
        }
    }

    /// The user turn of evidence session `k`.
    fn fact(&self, k: usize) -> String {
        match (self.kind, k) {
            (0, _) => format!(
                "By the way, I named my new puppy {}, she is a golden retriever.",
                self.pet
            ),
            (1, 0) => format!("I live in {} now, I moved there for work.", self.city),
            (1, _) => format!(
                "Update: I just moved again, I now live in {}.",
                self.next_city
            ),
            (2, k) => format!(
                "Today I bought {} more {} at the market.",
                self.counts[k.min(2)],
                self.item
            ),
            _ => format!("Big news: yesterday I {}!", self.event),
        }
    }

    /// (type, question, answer); `event_date` is when the temporal fact was told.
    fn question(&self, event_date: &str) -> (&'static str, String, String) {
        match self.kind {
            0 => (
                "single-session-user",
                "What is the name of my puppy?".into(),
                self.pet.into(),
            ),
            1 => (
                "knowledge-update",
                "Which city do I live in now?".into(),
                self.next_city.into(),
            ),
            2 => (
                "multi-session",
                format!("How many {} did I buy in total?", self.item),
                self.counts.iter().sum::<usize>().to_string(),
            ),
            _ => (
                "temporal-reasoning",
                format!("When did I mention that I {}?", self.event),
                event_date.into(),
            ),
        }
    }
}

/// Streams the file to `out`, one question at a time (an M haystack is a few MB; the file
/// is never held whole).
pub fn write_synth(out: &mut dyn Write, o: &SynthOptions) -> std::io::Result<SynthReport> {
    let words = text::lexicon();
    let plan = plan(o);
    let mut rng = SplitMix64::new(o.seed ^ 0x5EED);
    let mut report = SynthReport::default();
    let mut used = HashSet::new();
    out.write_all(b"[")?;
    for (q, slots) in plan.iter().enumerate() {
        let planted = Planted::new(q % 4, &mut rng);
        let mut inst = Instance {
            question_id: format!("synth_{q:04x}"),
            question_type: "",
            question: String::new(),
            answer: String::new(),
            question_date: date(1300),
            haystack_session_ids: Vec::with_capacity(slots.len()),
            haystack_dates: Vec::with_capacity(slots.len()),
            haystack_sessions: Vec::with_capacity(slots.len()),
            answer_session_ids: Vec::new(),
        };
        let mut event_date = String::new();
        for (pos, slot) in slots.iter().enumerate() {
            let d = date((pos as i64) * 1200 / slots.len() as i64);
            let (id, session) = match *slot {
                Slot::Pool(p) => {
                    used.insert(p);
                    (
                        format!("pool_{p:05}"),
                        pool_session(&words, o.seed, p as u64),
                    )
                }
                Slot::Evidence(k) => {
                    let id = format!("answer_{q:04x}_{}", k + 1);
                    inst.answer_session_ids.push(id.clone());
                    report.distinct_sessions += 1;
                    if planted.kind == 3 {
                        event_date = d.clone();
                    }
                    let salt = u64::MAX - (q * 8 + k) as u64;
                    let mut s = pool_session(&words, o.seed, salt);
                    s.truncate(4);
                    s.insert(0, turn("user", planted.fact(k), true));
                    s.insert(
                        1,
                        turn(
                            "assistant",
                            "That is great to hear, thanks for sharing!".into(),
                            false,
                        ),
                    );
                    (id, s)
                }
            };
            inst.haystack_session_ids.push(id);
            inst.haystack_dates.push(d);
            inst.haystack_sessions.push(session);
        }
        let (qtype, question, answer) = planted.question(&event_date);
        (inst.question_type, inst.question, inst.answer) = (qtype, question, answer);
        if q > 0 {
            out.write_all(b",\n")?;
        }
        serde_json::to_writer(&mut *out, &inst)?;
        report.questions += 1;
        report.slots += slots.len();
    }
    out.write_all(b"]\n")?;
    report.distinct_sessions += used.len();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_longmemeval_shaped_and_valid() {
        assert_eq!(date(0), "2023/01/01 (Sun) 00:00");
        for day in [0, 100, 1199, 1300] {
            memdex_ingest::parse_date(&date(day)).unwrap();
        }
    }

    /// The profiles reproduce the real files' counts: questions and slots exactly, distinct
    /// sessions within 2 % (M is what the pool is solved for; S follows from the same pool).
    #[test]
    fn profiles_reproduce_the_real_counts() {
        let p = pool_for(500, 250_948, 52_476);
        assert!((52_000..54_000).contains(&p), "pool {p}");
        for (profile, slots, distinct) in [
            (SynthScale::LongMemEvalS, 25_112, 19_829),
            (SynthScale::LongMemEvalM, 250_948, 52_476),
        ] {
            let c = count(&SynthOptions::profile(profile, 42));
            assert_eq!((c.questions, c.slots), (500, slots), "{profile:?}");
            let off = (c.distinct_sessions as f64 / distinct as f64 - 1.0).abs();
            assert!(
                off < 0.02,
                "{profile:?}: {} distinct vs {distinct}",
                c.distinct_sessions
            );
        }
    }

    #[test]
    fn deterministic_readable_and_calibrated() {
        let o = SynthOptions {
            questions: 4,
            haystack: (6, 6),
            slots: None,
            pool: 20,
            seed: 7,
        };
        let mut a = Vec::new();
        let mut b = Vec::new();
        let ra = write_synth(&mut a, &o).unwrap();
        write_synth(&mut b, &o).unwrap();
        assert_eq!(a, b, "same seed, same file");
        assert_eq!((ra.questions, ra.slots), (4, 24));
        let v: serde_json::Value = serde_json::from_slice(&a).unwrap();
        let q = &v.as_array().unwrap()[1];
        assert_eq!(q["question_type"], "knowledge-update");
        assert_eq!(q["answer_session_ids"].as_array().unwrap().len(), 2);
        let planted = q["haystack_sessions"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|s| s.as_array().unwrap())
            .filter(|t| t["has_answer"] == true)
            .count();
        assert_eq!(planted, 2);
        // the same pool session in two haystacks: same text, its own date in each
        let text = |qi: usize, id: &str| -> Option<(String, String)> {
            let q = &v[qi];
            let pos = q["haystack_session_ids"]
                .as_array()?
                .iter()
                .position(|x| x == id)?;
            Some((
                q["haystack_sessions"][pos].to_string(),
                q["haystack_dates"][pos].to_string(),
            ))
        };
        let ids: Vec<String> = (0..4)
            .flat_map(|qi| {
                v[qi]["haystack_session_ids"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_str().unwrap().to_string())
                    .collect::<Vec<_>>()
            })
            .filter(|id| id.starts_with("pool_"))
            .collect();
        let shared = ids
            .iter()
            .find(|id| (0..4).filter(|&qi| text(qi, id).is_some()).count() > 1)
            .expect("20 pool sessions over 4 haystacks of 6: one is shared");
        let seen: Vec<(String, String)> = (0..4).filter_map(|qi| text(qi, shared)).collect();
        assert!(seen.windows(2).all(|w| w[0].0 == w[1].0), "same content");
        let mut lengths: Vec<usize> = seen.iter().map(|s| s.0.len()).collect();
        lengths.dedup();
        assert_eq!(lengths.len(), 1);
    }
}
