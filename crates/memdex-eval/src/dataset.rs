//! Benchmark files → sessions to index + questions with gold labels.
//!
//! Corpus ids follow LongMemEval's official retrieval code, so its metric definitions apply
//! unchanged: a turn item is `{session_id}_{n}`, a session item is `{session_id}`.
//! * LongMemEval: only user turns are indexed; `n` is the 1-based position of the turn in its
//!   session; in evidence sessions (ids containing `answer`) a user turn without
//!   `has_answer` — or, at session granularity, a session with no such user turn — is renamed
//!   `noans`; gold = every corpus id containing `answer`.
//! * LoCoMo: every turn of both speakers is indexed (as `Speaker: text [image: caption]`);
//!   `n` is the 0-based position; gold = the evidence turns (turn level) and their sessions.
//!
//! Session keys are the (user) turn texts joined with a space in both datasets.

use std::collections::HashSet;

use memdex_core::Granularity;
use memdex_ingest::{LmeInstance, LocomoConversation};

/// How the gold ids of a question are found.
#[derive(Debug, Clone, PartialEq)]
pub enum Gold {
    /// LongMemEval: corpus ids containing `answer`, after renaming these base ids `noans`.
    ContainsAnswer { rename: HashSet<String> },
    /// Explicit gold ids at the item granularity (LoCoMo evidence).
    Ids(Vec<String>),
}

/// One question to evaluate.
#[derive(Debug, Clone, PartialEq)]
pub struct EvalQuestion {
    pub id: String,
    pub qtype: String,
    /// The question as searched (`memdex_memory::searched_question`: an assistant's "the
    /// user" in the first person, as every front door searches it).
    pub query: String,
    pub tenant: String,
    pub question_date_ms: Option<i64>,
    pub gold: Gold,
    /// LongMemEval's `answer_session_ids`: the alternative, session-level gold.
    pub answer_sessions: Vec<String>,
    /// Why this question is left out of the averages, if it is.
    pub skip: Option<Skip>,
}

/// Why a question is left out of the official averages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// LongMemEval `_abs` questions: nothing to retrieve (also left out of the alternative gold).
    Abstention,
    /// LongMemEval questions whose evidence is only in assistant turns.
    NoUserEvidence,
    /// LoCoMo questions with no evidence id naming a turn.
    NoEvidence,
    /// No corpus item carries a gold id.
    NoGoldInCorpus,
    /// The question's tenant holds no items.
    EmptyHaystack,
}

impl Skip {
    pub fn reason(self) -> &'static str {
        match self {
            Skip::Abstention => "abstention question (_abs)",
            Skip::NoUserEvidence => "no user-side evidence (has_answer only on assistant turns)",
            Skip::NoEvidence => "no usable evidence",
            Skip::NoGoldInCorpus => "no gold item in the corpus",
            Skip::EmptyHaystack => "tenant has no items (empty haystack)",
        }
    }
}

/// Which dataset convention turns stored items into corpus ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dataset {
    LongMemEval,
    Locomo,
}

impl Dataset {
    /// The benchmark whose questions a file of `format` carries (None: a format without
    /// questions).
    pub fn of(format: &memdex_ingest::Format) -> Option<Dataset> {
        match format.name {
            "longmemeval" => Some(Dataset::LongMemEval),
            "locomo" => Some(Dataset::Locomo),
            _ => None,
        }
    }

    /// The corpus id of a stored item, before any `noans` renaming.
    pub fn base_id(self, granularity: Granularity, session_id: &str, turn: u32) -> String {
        match (granularity, self) {
            (Granularity::Session, _) => session_id.to_string(),
            (_, Dataset::LongMemEval) => format!("{session_id}_{}", turn + 1),
            (_, Dataset::Locomo) => format!("{session_id}_{turn}"),
        }
    }
}

/// The question of a LongMemEval instance (its sessions are indexed separately).
pub fn longmemeval_question(inst: &LmeInstance, granularity: Granularity) -> EvalQuestion {
    let mut rename = HashSet::new();
    for (s, flags) in inst.sessions.iter().zip(&inst.has_answer) {
        if !s.session_id.contains("answer") {
            continue;
        }
        let user: Vec<(usize, bool)> = s
            .turns
            .iter()
            .zip(flags)
            .enumerate()
            .filter(|(_, (t, _))| t.role == memdex_core::Role::User)
            .map(|(i, (_, &f))| (i, f))
            .collect();
        match granularity {
            Granularity::Session => {
                if user.iter().all(|(_, f)| !f) {
                    rename.insert(s.session_id.clone());
                }
            }
            _ => {
                for (i, f) in user {
                    if !f {
                        rename.insert(Dataset::LongMemEval.base_id(
                            granularity,
                            &s.session_id,
                            i as u32,
                        ));
                    }
                }
            }
        }
    }
    let has_user_evidence = inst
        .sessions
        .iter()
        .zip(&inst.has_answer)
        .any(|(s, flags)| {
            s.session_id.contains("answer")
                && s.turns
                    .iter()
                    .zip(flags)
                    .any(|(t, &f)| f && t.role == memdex_core::Role::User)
        });
    let skip = if inst.is_abstention() {
        Some(Skip::Abstention)
    } else if !has_user_evidence {
        Some(Skip::NoUserEvidence)
    } else {
        None
    };
    EvalQuestion {
        id: inst.question_id.clone(),
        qtype: inst.question_type.clone(),
        query: memdex_memory::searched_question(&inst.question).into_owned(),
        tenant: inst.tenant.clone(),
        question_date_ms: inst.question_date_ms,
        gold: Gold::ContainsAnswer { rename },
        answer_sessions: inst.answer_session_ids.clone(),
        skip,
    }
}

/// The questions of LoCoMo conversations (their sessions: [`memdex_ingest::locomo_sessions`]).
pub fn locomo_questions(
    convs: &[LocomoConversation],
    granularity: Granularity,
) -> Vec<EvalQuestion> {
    let mut questions = Vec::new();
    for c in convs {
        for (i, qa) in c.qa.iter().enumerate() {
            let ids: Vec<String> = match granularity {
                Granularity::Session => {
                    let mut s: Vec<String> =
                        qa.evidence.iter().map(|e| e.session_id.clone()).collect();
                    s.sort();
                    s.dedup();
                    s
                }
                _ => qa
                    .evidence
                    .iter()
                    .map(|e| Dataset::Locomo.base_id(granularity, &e.session_id, e.turn))
                    .collect(),
            };
            questions.push(EvalQuestion {
                id: format!("{}:q{}", c.tenant, i + 1),
                qtype: memdex_ingest::category_name(qa.category).to_string(),
                query: memdex_memory::searched_question(&qa.question).into_owned(),
                tenant: c.tenant.clone(),
                question_date_ms: None,
                skip: ids.is_empty().then_some(Skip::NoEvidence),
                gold: Gold::Ids(ids),
                answer_sessions: Vec::new(),
            });
        }
    }
    questions
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_is_evaluated_as_every_front_door_searches_it() {
        let inst = LmeInstance {
            question_id: "q1".into(),
            tenant: "q1".into(),
            question_type: "knowledge-update".into(),
            question: "What is the user's diet?".into(),
            answer: "vegan".into(),
            question_date_ms: None,
            sessions: Vec::new(),
            has_answer: Vec::new(),
            answer_session_ids: Vec::new(),
            warnings: Vec::new(),
        };
        let q = longmemeval_question(&inst, Granularity::Turn);
        assert_eq!(q.query, "What is my diet?");
    }
}
