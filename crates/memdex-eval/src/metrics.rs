//! LongMemEval's retrieval metrics, exactly as its official `eval_utils.py` computes them.
//!
//! A ranking is the list of corpus ids of the *whole* corpus, best first.
//! * `recall_any@k` / `recall_all@k`: any / every gold id among the first k ids.
//! * `ndcg_any@k`: binary relevance; DCG = `rel_0 + Σ_{i≥1} rel_i / log2(i + 1)` (positions 0
//!   and 1 both weigh 1); ideal DCG over all corpus relevances sorted descending.
//! * turn → session: strip the last `_suffix` from every id, then grow the cut-off from k
//!   until it holds k distinct sessions (or the corpus ends).
//! * `mrr` (not in LongMemEval's code; the top of the list is what an assistant reads): the
//!   reciprocal rank of the first gold id, 0 when none is ranked; turn → session ranks the
//!   distinct sessions in the order their first turn appears.

use std::collections::HashSet;

use serde::Serialize;

/// The k values LongMemEval reports.
pub const DEFAULT_KS: [usize; 6] = [1, 3, 5, 10, 30, 50];

/// The three metrics at one cut-off.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CutoffMetrics {
    pub recall_any: f64,
    pub recall_all: f64,
    pub ndcg_any: f64,
}

fn dcg(rels: impl Iterator<Item = f64>) -> f64 {
    rels.enumerate()
        .map(|(i, r)| {
            if i == 0 {
                r
            } else {
                r / ((i + 1) as f64).log2()
            }
        })
        .sum()
}

/// `evaluate_retrieval(rankings, correct_docs, corpus_ids, k)`.
pub fn evaluate(ranked: &[&str], gold: &[&str], k: usize) -> CutoffMetrics {
    let k = k.min(ranked.len());
    let recalled: HashSet<&str> = ranked[..k].iter().copied().collect();
    let gold_set: HashSet<&str> = gold.iter().copied().collect();
    let recall_any = f64::from(u8::from(gold_set.iter().any(|g| recalled.contains(g))));
    let recall_all = f64::from(u8::from(gold_set.iter().all(|g| recalled.contains(g))));
    let rel = |id: &&str| if gold_set.contains(id) { 1.0 } else { 0.0 };
    let relevant = ranked.iter().filter(|id| gold_set.contains(*id)).count();
    let ideal = dcg((0..k).map(|i| if i < relevant { 1.0 } else { 0.0 }));
    let actual = dcg(ranked[..k].iter().map(rel));
    let ndcg_any = if ideal == 0.0 { 0.0 } else { actual / ideal };
    CutoffMetrics {
        recall_any,
        recall_all,
        ndcg_any,
    }
}

/// Reciprocal rank of the first gold id in `ranked` (0: none).
pub fn reciprocal_rank(ranked: &[&str], gold: &[&str]) -> f64 {
    ranked
        .iter()
        .position(|id| gold.contains(id))
        .map_or(0.0, |i| 1.0 / (i + 1) as f64)
}

/// [`reciprocal_rank`] over the distinct sessions of `ranked_turns`, in the order their
/// first turn appears, against the sessions of `gold_turns`.
pub fn reciprocal_rank_turn2session(ranked_turns: &[&str], gold_turns: &[&str]) -> f64 {
    let gold: HashSet<&str> = gold_turns.iter().map(|t| session_of(t)).collect();
    let mut seen = HashSet::new();
    let sessions = ranked_turns
        .iter()
        .map(|t| session_of(t))
        .filter(|s| seen.insert(*s));
    for (i, s) in sessions.enumerate() {
        if gold.contains(s) {
            return 1.0 / (i + 1) as f64;
        }
    }
    0.0
}

/// The session a turn id belongs to: everything before the last `_`.
pub fn session_of(turn_id: &str) -> &str {
    turn_id.rsplit_once('_').map_or("", |(s, _)| s)
}

/// `evaluate_retrieval_turn2session(rankings, correct_docs, corpus_ids, k)`.
pub fn evaluate_turn2session(
    ranked_turns: &[&str],
    gold_turns: &[&str],
    k: usize,
) -> CutoffMetrics {
    let ranked: Vec<&str> = ranked_turns.iter().map(|t| session_of(t)).collect();
    let mut gold: Vec<&str> = gold_turns.iter().map(|t| session_of(t)).collect();
    gold.sort_unstable();
    gold.dedup();
    let mut seen = HashSet::new();
    let mut k_eff = ranked.len();
    for (i, s) in ranked.iter().enumerate() {
        seen.insert(*s);
        if seen.len() >= k {
            k_eff = k_eff.min((i + 1).max(k));
            break;
        }
    }
    evaluate(&ranked, &gold, k_eff.max(k.min(ranked.len())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reciprocal_rank_of_the_first_gold_id() {
        assert_eq!(reciprocal_rank(&["x", "g", "h"], &["h", "g"]), 0.5);
        assert_eq!(reciprocal_rank(&["x"], &["g"]), 0.0);
        // sessions in order of first appearance: s1, s2 (s1_1 repeats s1)
        let turns = ["s1_0", "s1_1", "s2_0"];
        assert_eq!(reciprocal_rank_turn2session(&turns, &["s2_4"]), 0.5);
        assert_eq!(reciprocal_rank_turn2session(&turns, &["s3_0"]), 0.0);
    }

    #[test]
    fn dcg_weighs_first_two_positions_equally() {
        let m = evaluate(&["x", "g"], &["g"], 2);
        assert_eq!(m.ndcg_any, 1.0);
        let m = evaluate(&["x", "y", "g"], &["g"], 3);
        assert!((m.ndcg_any - 1.0 / 3f64.log2()).abs() < 1e-15);
        assert_eq!((m.recall_any, m.recall_all), (1.0, 1.0));
        let m = evaluate(&["g1", "x", "g2"], &["g1", "g2"], 2);
        assert_eq!((m.recall_any, m.recall_all), (1.0, 0.0));
        assert_eq!(evaluate(&["x"], &["g"], 1).ndcg_any, 0.0, "ideal 0");
        // by hand: rel [0, 1, 0, 1] → DCG = 0 + 1/log2(2) + 0 + 1/log2(4) = 1.5; ideal
        // [1, 1, 0, 0] → 2
        let m = evaluate(&["x", "g1", "y", "g2"], &["g1", "g2"], 4);
        assert_eq!(m.ndcg_any, 0.75);
        // a gold id below the cut-off still counts in the ideal: rel [0, 1] → 1; ideal
        // [1, 1] → 2
        let m = evaluate(&["x", "g1", "g2"], &["g1", "g2"], 2);
        assert_eq!(m.ndcg_any, 0.5);
        assert_eq!((m.recall_any, m.recall_all), (1.0, 0.0));
    }

    #[test]
    fn turn_to_session_grows_k_until_k_sessions() {
        // sessions A, A, A, B: k = 2 needs the first 4 turns
        let ranked = ["A_1", "A_2", "A_3", "B_1", "C_1"];
        let m = evaluate_turn2session(&ranked, &["B_1"], 2);
        assert_eq!((m.recall_any, m.recall_all), (1.0, 1.0));
        // every turn of a gold session is relevant, in the ideal too: sessions A A A B over
        // the first 4, gold A: rel [1, 1, 1, 0] = the ideal
        let m = evaluate_turn2session(&ranked, &["A_2"], 2);
        assert_eq!((m.recall_any, m.ndcg_any), (1.0, 1.0));
        // gold B: rel [0, 0, 0, 1] → DCG 1/log2(4) = 0.5; ideal [1, 0, 0, 0] → 1
        let m = evaluate_turn2session(&ranked, &["B_1"], 2);
        assert_eq!(m.ndcg_any, 0.5);
        // session ids with underscores keep them
        assert_eq!(session_of("answer_4be1_2_7"), "answer_4be1_2");
        // k beyond the number of sessions: the whole corpus
        let m = evaluate_turn2session(&ranked, &["C_1"], 10);
        assert_eq!(m.recall_all, 1.0);
    }
}
