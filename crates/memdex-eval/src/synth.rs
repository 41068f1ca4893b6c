//! `memdex synth`: deterministic LongMemEval-format files for scale and speed tests.
//!
//! Each question gets a haystack of filler sessions drawn from one shared pool (as the real
//! M set draws from a shared pool) plus planted evidence sessions (`answer_…` ids) whose user
//! turns state dated facts marked `has_answer: true`. Question kinds: single-session fact,
//! knowledge update (old and new value in two sessions), multi-session aggregation, temporal.
//! Quality numbers on this data are not claims: the text is templated.

use std::io::Write;

use serde::Serialize;

/// Size presets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SynthOptions {
    pub questions: usize,
    pub sessions_per_question: usize,
    /// Filler sessions in the shared pool.
    pub pool: usize,
    /// User/assistant rounds per session.
    pub rounds: usize,
    pub seed: u64,
}

impl SynthOptions {
    /// LongMemEval_S-like: 500 questions × ~50 sessions, ~115k tokens each.
    pub fn s_scale(seed: u64) -> Self {
        Self {
            questions: 500,
            sessions_per_question: 50,
            pool: 4_000,
            rounds: 16,
            seed,
        }
    }

    /// LongMemEval_M-like: 500 questions × 500 sessions, ~1.5M tokens each, shared pool.
    pub fn m_scale(seed: u64) -> Self {
        Self {
            questions: 500,
            sessions_per_question: 500,
            pool: 12_000,
            rounds: 22,
            seed,
        }
    }
}

/// The generator (SplitMix64, `memdex_core::rng`).
type Rng = memdex_core::rng::SplitMix64;

const TOPICS: &[&str] = &[
    "gardening",
    "python code",
    "a trip to Lisbon",
    "sourdough bread",
    "marathon training",
    "jazz records",
    "a job interview",
    "home insurance",
    "a birthday party",
    "the history of Rome",
    "chess openings",
    "a used car",
    "watercolor painting",
    "budget spreadsheets",
    "a camping trip",
    "learning Spanish",
];
const VERBS: &[&str] = &[
    "recommend",
    "explain",
    "compare",
    "summarize",
    "plan",
    "review",
    "improve",
    "organize",
];
const FILL: &[&str] = &[
    "That is a good question, and there are several things to consider.",
    "Here is a step by step overview that should help.",
    "Many people find it useful to start small and build a routine.",
    "You can also check local resources and community groups.",
    "Keep notes as you go so you can track what works.",
    "It depends on your budget, your schedule and your goals.",
    "A common mistake is to try to do everything at once.",
    "Let me know if you want more detail on any of these points.",
];
const PETS: &[&str] = &[
    "Luna", "Milo", "Biscuit", "Pepper", "Nala", "Otis", "Ziggy", "Maple",
];
const ITEMS: &[&str] = &[
    "board games",
    "plants",
    "vinyl records",
    "books",
    "mugs",
    "sneakers",
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

#[derive(Serialize)]
struct Turn<'a> {
    role: &'a str,
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
    haystack_sessions: Vec<Vec<Turn<'a>>>,
    answer_session_ids: Vec<String>,
}

fn filler_session(seed: u64, id: usize, rounds: usize) -> Vec<Turn<'static>> {
    let mut r = Rng::new(seed ^ (id as u64).wrapping_mul(0xA24B_AED4_963E_E407));
    let topic = r.pick(TOPICS);
    (0..rounds)
        .flat_map(|_| {
            let user = format!(
                "Can you {} {} for me? I want to understand {} better, especially {} and {}.",
                r.pick(VERBS),
                topic,
                topic,
                r.pick(TOPICS),
                r.pick(TOPICS)
            );
            let n = 4 + r.below(5);
            let reply: Vec<&str> = (0..n).map(|_| r.pick(FILL)).collect();
            let reply = format!("About {topic}: {}", reply.join(" "));
            [
                Turn {
                    role: "user",
                    content: user,
                    has_answer: false,
                },
                Turn {
                    role: "assistant",
                    content: reply,
                    has_answer: false,
                },
            ]
        })
        .collect()
}

/// `YYYY/MM/DD (Day) HH:MM`: sessions every 5 hours from 2023-01-01.
fn date(slot: i64) -> String {
    chrono::DateTime::from_timestamp(1_672_531_200 + slot * 3600 * 5, 0)
        .map(|d| d.format("%Y/%m/%d (%a) %H:%M").to_string())
        .unwrap_or_default()
}

/// Streams the file to `out`; returns (questions, sessions written, distinct sessions).
pub fn write_synth(
    out: &mut dyn Write,
    o: &SynthOptions,
) -> std::io::Result<(usize, usize, usize)> {
    let mut rng = Rng::new(o.seed);
    let mut used = std::collections::HashSet::new();
    let mut written = 0usize;
    let mut evidence_sessions = 0usize;
    out.write_all(b"[")?;
    for q in 0..o.questions {
        let qid = format!("synth_{:04x}", q);
        let kind = q % 4;
        let n_evidence = [1, 2, 3, 1][kind];
        let n_filler = o.sessions_per_question.saturating_sub(n_evidence).max(1);
        // distinct filler sessions per haystack (without replacement while the pool allows)
        let mut picked = std::collections::HashSet::new();
        let mut slots: Vec<Option<usize>> = Vec::with_capacity(n_filler + n_evidence);
        while slots.len() < n_filler {
            let p = rng.below(o.pool);
            if picked.insert(p) || picked.len() >= o.pool {
                slots.push(Some(p));
            }
        }
        // evidence at random positions, in order
        let mut ev_pos: Vec<usize> = (0..n_evidence)
            .map(|_| rng.below(slots.len() + 1))
            .collect();
        ev_pos.sort_unstable();
        for (i, p) in ev_pos.iter().enumerate() {
            slots.insert(p + i, None);
        }
        let pet = rng.pick(PETS);
        let city = rng.pick(CITIES);
        let item = rng.pick(ITEMS);
        let event = rng.pick(EVENTS);
        let counts: Vec<usize> = (0..3).map(|_| 1 + rng.below(4)).collect();
        let mut ids = Vec::new();
        let mut dates = Vec::new();
        let mut sessions = Vec::new();
        let mut answer_ids = Vec::new();
        let mut ev = 0usize;
        let mut event_date = String::new();
        for (pos, slot) in slots.iter().enumerate() {
            let day = (pos as i64) * 1200 / slots.len() as i64;
            let d = date(day);
            match slot {
                Some(p) => {
                    ids.push(format!("pool_{p:05}"));
                    used.insert(*p);
                    sessions.push(filler_session(o.seed, *p, o.rounds));
                }
                None => {
                    let fact = match kind {
                        0 => format!(
                            "By the way, I named my new puppy {pet}, she is a golden retriever."
                        ),
                        1 if ev == 0 => format!("I live in {city} now, I moved there for work."),
                        1 => format!(
                            "Update: I just moved again, I now live in {}.",
                            CITIES[(CITIES.iter().position(|c| *c == city).unwrap_or(0) + 1)
                                % CITIES.len()]
                        ),
                        2 => format!("Today I bought {} more {item} at the market.", counts[ev]),
                        _ => {
                            event_date = d.clone();
                            format!("Big news: yesterday I {event}!")
                        }
                    };
                    let mut s = filler_session(o.seed, usize::MAX - q * 8 - ev, o.rounds.min(3));
                    s.insert(
                        0,
                        Turn {
                            role: "user",
                            content: fact,
                            has_answer: true,
                        },
                    );
                    s.insert(
                        1,
                        Turn {
                            role: "assistant",
                            content: "That is great to hear, thanks for sharing!".into(),
                            has_answer: false,
                        },
                    );
                    let id = format!("answer_{:04x}_{}", q, ev + 1);
                    answer_ids.push(id.clone());
                    ids.push(id);
                    sessions.push(s);
                    ev += 1;
                    evidence_sessions += 1;
                }
            }
            dates.push(d);
        }
        let (qtype, question, answer) = match kind {
            0 => (
                "single-session-user",
                "What is the name of my puppy?".to_string(),
                pet.to_string(),
            ),
            1 => (
                "knowledge-update",
                "Which city do I live in now?".to_string(),
                CITIES[(CITIES.iter().position(|c| *c == city).unwrap_or(0) + 1) % CITIES.len()]
                    .to_string(),
            ),
            2 => (
                "multi-session",
                format!("How many {item} did I buy in total?"),
                counts.iter().sum::<usize>().to_string(),
            ),
            _ => (
                "temporal-reasoning",
                format!("When did I mention that I {event}?"),
                event_date.clone(),
            ),
        };
        written += sessions.len();
        let inst = Instance {
            question_id: qid,
            question_type: qtype,
            question,
            answer,
            question_date: date(1300),
            haystack_session_ids: ids,
            haystack_dates: dates,
            haystack_sessions: sessions,
            answer_session_ids: answer_ids,
        };
        if q > 0 {
            out.write_all(b",\n")?;
        }
        serde_json::to_writer(&mut *out, &inst)?;
    }
    out.write_all(b"]\n")?;
    let distinct = used.len() + evidence_sessions;
    Ok((o.questions, written, distinct))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_longmemeval_shaped_and_valid() {
        assert_eq!(date(0), "2023/01/01 (Sun) 00:00");
        for day in [0, 100, 1199, 1300] {
            let d = date(day);
            memdex_ingest::parse_date(&d).unwrap();
        }
    }

    #[test]
    fn deterministic_and_readable() {
        let o = SynthOptions {
            questions: 6,
            sessions_per_question: 7,
            pool: 20,
            rounds: 2,
            seed: 7,
        };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        write_synth(&mut a, &o).unwrap();
        write_synth(&mut b, &o).unwrap();
        assert_eq!(a, b);
        let insts: Vec<_> =
            memdex_ingest::LongMemEvalReader::new(std::path::Path::new("s.json"), &a[..])
                .map(Result::unwrap)
                .collect();
        assert_eq!(insts.len(), 6);
        for i in &insts {
            assert!(i.sessions.len() >= 7);
            assert!(!i.answer_session_ids.is_empty());
            assert!(i.warnings.is_empty(), "{:?}", i.warnings);
            let gold = i.has_answer.iter().flatten().filter(|f| **f).count();
            assert_eq!(gold, i.answer_session_ids.len());
        }
    }
}
