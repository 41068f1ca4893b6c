//! The update stage: TiM's forget and merge, applied where a question meets them.
//!
//! A memory that holds "my sister lives in Porto" and, months later, "She finally got the
//! keys to her own flat in Lisbon" holds two statements of one thing; the newer one is the
//! answer to a question about the present, the older one to a question about the past. TiM
//! decides this when a thought is inserted; at query time the question supplies what it
//! needs: the subject it asks about, and which items answer it.
//!
//! Among the top `window` items, an older item and a newer one (different session dates) are
//! **linked** when the older one answers the question (it scores at least `relevance` × the
//! best score in the window, so an item that is in the window only because the tenant is
//! small, or because its session lifted it, is never moved) and one of these holds:
//! 1. **a change of the question's subject**: one of the newer session's user sentences
//!    carries a cue of change (`no longer`, `moved`, `swapped`, `given up`, …) in a clause
//!    about the subject the question names: the user, a person or pet of theirs (with the
//!    names the history gives it), or someone named ([`memdex_extract::change`]: possessive
//!    chains, pronouns, plans and hedges are read), and the newer item answers the question
//!    too, or the sentence names a value the older statement gave ("Kieran swapped **the
//!    Audi** …"): then the pair decides, whatever the newer one's score;
//! 2. **the same attribute with a new value** ([`ValueTest`]): both items have a cosine of
//!    at least [`VALUE_COSINE`] with the question (without vectors: both answer it), and a
//!    statement of the subject's in the newer one gives the attribute an older statement
//!    gave, with a name, number or place the older one does not ("I live in Bristol" … "I
//!    live in Glasgow"), whether or not it says that anything changed; the pair decides,
//!    whatever the newer one's score.
//!
//! Both tests are absolute (they read the two statements and the question, and cosines of
//! the embedder's unit vectors, never how alike the rest of the tenant is), so they mean the
//! same on a 3-item tenant as on a 30,000-item one.
//!
//! Linked items form groups only as cliques: an item joins a group when it is linked to every
//! member, so no chain carries in an item that is not itself linked to the others. Each group
//! keeps the ranks it holds and is reordered by time, newest first for a question in the
//! present tense ("where does my sister live?"), oldest first for one that asks for an
//! earlier state ("before", "used to", "my old…"). Past-tense, perfect and modal questions,
//! and questions naming a time range (the time stage's), are left alone. The set of items in
//! the window never changes, only their order, so recall at `window` or more is untouched.

use std::collections::HashMap;

use memdex_core::Role;
use memdex_extract::change::{asks_now, carries_cue, Change, ChangeTest, Fact, Session};
use memdex_extract::question::{first_person, question_subject};
use memdex_extract::time::{ms_day, parse_query};
use memdex_store::ItemRef;
use serde::Serialize;

use super::value::ValueTest;
use super::FusedParams;
use super::{At, Fused, Note, Stage};
use crate::options::{RankOptions, UpdateStage};
use crate::query::Query;

/// The update stage over the ranked rows (see the module docs); the kernel path runs it on
/// the kernel's best `2 × window` hits, as the CPU pipeline reads them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Update {
    stage: UpdateStage,
}

impl Update {
    pub(crate) fn of(opts: &RankOptions) -> Option<Update> {
        opts.update.map(|stage| Update { stage })
    }
}

impl Stage for Update {
    fn name(&self) -> &'static str {
        "update"
    }

    fn reorder(
        &self,
        at: &At<'_, '_>,
        score: &dyn Fn(usize) -> f64,
        order: &mut Vec<usize>,
    ) -> Option<Note> {
        let rows = (at.rows.len(), |i| at.rows.item(i));
        Some(Note::Update(update_order(
            order, &rows, score, at.query, self.stage,
        )))
    }

    /// The stage reads the top `2 × window` (its bar) and reorders the top `window`.
    fn fused(&self, _: &mut FusedParams) -> Fused {
        Fused::AfterKernel {
            reads: 2 * self.stage.window,
        }
    }
}

/// Which way the stage orders a linked group for one question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UpdateDirection {
    /// A question about the present: the newest statement first.
    NewestFirst,
    /// A question about an earlier state: the oldest first.
    OldestFirst,
}

/// Why the stage moved an item: the item it was linked to (the one that held its new rank)
/// and the test the pair passed.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateMove {
    /// Timeline index of the moved item.
    pub item: usize,
    /// Timeline index of the item it was linked to.
    pub linked: usize,
    pub direction: UpdateDirection,
    /// The change the newer of the two items states.
    pub change: Change,
}

/// A tenant's rows as the stage reads them: how many, and the item at a timeline index.
pub trait UpdateRows<'s> {
    fn rows(&self) -> usize;
    fn item(&self, i: usize) -> ItemRef<'s>;
}

impl<'s, F: Fn(usize) -> ItemRef<'s>> UpdateRows<'s> for (usize, F) {
    fn rows(&self) -> usize {
        self.0
    }
    fn item(&self, i: usize) -> ItemRef<'s> {
        (self.1)(i)
    }
}

/// The update stage over a finished `order` (timeline indices, best first; `score(i)` is
/// index `i`'s final score) for `query`: the one entry point of every ranking path, so the
/// CPU pipeline and the fused kernel's hits agree. Returns the moves it made.
pub fn update_order<'s>(
    order: &mut [usize],
    rows: &impl UpdateRows<'s>,
    score: impl Fn(usize) -> f64,
    query: &Query<'_>,
    stage: UpdateStage,
) -> Vec<UpdateMove> {
    let w = order.len().min(stage.window);
    if w < 2 {
        return Vec::new();
    }
    let newest = order[..w].iter().map(|&i| rows.item(i).timestamp_ms).max();
    // an assistant asking about "the user" asks what the user would ask of "I"
    let question = first_person(query.text);
    let Some(dir) = newest.and_then(|n| direction(&question, query.date_ms, n)) else {
        return Vec::new();
    };
    let window: Vec<Entry> = order[..w]
        .iter()
        .map(|&i| Entry {
            index: i,
            time: rows.item(i).timestamp_ms,
            score: score(i),
            cosine: cosine(rows.item(i).embedding, query.vector),
        })
        .collect();
    let read = read_window(&window, rows, &question);
    // whether two window ranks' key vectors clear PAIR_COSINE: asked only of a pair whose
    // statements the value test compares
    let near = |a: usize, b: usize| {
        let vector = |r: usize| rows.item(window[r].index).embedding;
        cosine(vector(a), vector(b)).is_some_and(|c| c >= PAIR_COSINE)
    };
    let links = link(&window, &read, &near, stage.relevance);
    let linked: Vec<Vec<bool>> = (links.iter())
        .map(|row| row.iter().map(Option::is_some).collect())
        .collect();
    let new = reorder(&window, &linked, dir);
    let mut moves = Vec::new();
    for (rank, (&was, &now)) in order[..w].iter().zip(&new).enumerate() {
        if was == now {
            continue;
        }
        let from = window.iter().position(|e| e.index == now).unwrap_or(rank);
        if let Some(change) = links[from][rank].clone() {
            moves.push(UpdateMove {
                item: now,
                linked: was,
                direction: dir,
                change,
            });
        }
    }
    order[..w].copy_from_slice(&new);
    moves
}

/// How the stage treats `text` asked at `date_ms` (else at `newest_ms`): None when the
/// question names a time range (the time stage's) or no date anchors it.
pub fn direction(text: &str, date_ms: Option<i64>, newest_ms: i64) -> Option<UpdateDirection> {
    let q = parse_query(text, ms_day(date_ms.unwrap_or(newest_ms))?);
    match (q.range, q.asks_earlier, q.asks_present) {
        (Some(_), _, _) => None,
        (None, true, _) => Some(UpdateDirection::OldestFirst),
        (None, false, true) => Some(UpdateDirection::NewestFirst),
        (None, false, false) => None,
    }
}

/// One item of the window.
#[derive(Debug, Clone, Copy)]
struct Entry {
    index: usize,
    time: i64,
    score: f64,
    /// The cosine of its key vector and the question's (None without vectors).
    cosine: Option<f32>,
}

/// The cosine of two unit vectors, None when either is missing.
fn cosine(a: &[f32], b: &[f32]) -> Option<f32> {
    (!a.is_empty() && a.len() == b.len()).then(|| memdex_score::dot(a, b))
}

/// The cosine with the question both items of a value link need: a statement that only
/// shares a word with the question (MiniLM puts unrelated chat at 0–0.15 of a question) does
/// not say what the question asks. A link on a cue of change does not need it; the relevance
/// bar holds for the older item of every link, for the newer one of a cue's link unless its
/// sentence names the older value, and for both of a value link when there are no vectors.
pub const VALUE_COSINE: f32 = 0.2;

/// The cosine of two items' key vectors above which they count as saying the same kind of
/// thing (MiniLM puts two chats on one topic at 0.2–0.4 and two statements of one attribute
/// at 0.4–0.7): then a newer statement that shares one of the older one's terms of the
/// question, not all of them, gives its attribute ("I earn $18 an hour" … "At $23 an hour
/// I can finally afford …").
pub const PAIR_COSINE: f32 = 0.4;

/// Most items of one session the stage reads on each side of a window item.
const SESSION_SPAN: usize = 64;

/// What the stage read of the window: for each entry, the change it states about the
/// question's subject (a cue of change in a clause about it) and its statements about the
/// subject (for the value test), with pronouns resolved within its session and the
/// subject's names gathered from every window session.
struct Read {
    cues: Vec<Option<Change>>,
    facts: Vec<Vec<Fact>>,
    value: ValueTest,
}

fn read_window<'s>(window: &[Entry], rows: &impl UpdateRows<'s>, question: &str) -> Read {
    let value = ValueTest::new(question, &question_subject(question));
    let now = asks_now(question);
    let user = |e: &Entry| rows.item(e.index).role != Role::Assistant;
    // cheap tests first: most questions meet no cue and no second statement of what they
    // ask, and then no session is read
    let cued: Vec<bool> = (window.iter())
        .map(|e| user(e) && carries_cue(rows.item(e.index).value, now))
        .collect();
    // a cue, or a verb of ending (which may end what an item sharing no word with the
    // question gave), has every user item of the window read
    let read_all = cued.contains(&true)
        || (window.iter()).any(|e| user(e) && ValueTest::may_end(rows.item(e.index).value));
    let valued: Vec<bool> = (window.iter())
        .map(|e| user(e) && (read_all || value.mentions(rows.item(e.index).value)))
        .collect();
    let mut read = Read {
        cues: vec![None; window.len()],
        facts: vec![Vec::new(); window.len()],
        value,
    };
    if !read_all && valued.iter().filter(|&&v| v).count() < 2 {
        return read;
    }
    let mut sessions: HashMap<(&'s str, i64), String> = HashMap::new();
    for (e, _) in window.iter().zip(&valued).filter(|(_, &v)| v) {
        let it = rows.item(e.index);
        sessions
            .entry((it.session_id, it.timestamp_ms))
            .or_insert_with(|| session_text(e.index, rows));
    }
    let test = ChangeTest::new(question, sessions.values().map(String::as_str));
    read.value.name(&test.subject);
    // each session read once, however many window items it holds
    let read_sessions: HashMap<_, Session> = (sessions.iter())
        .map(|(key, text)| (*key, test.session(text)))
        .collect();
    for (k, e) in window.iter().enumerate().filter(|&(k, _)| valued[k]) {
        let it = rows.item(e.index);
        let session = read_sessions[&(it.session_id, it.timestamp_ms)];
        if cued[k] {
            read.cues[k] = test.stated_in(it.value, session);
        }
        read.facts[k] = test.facts_in(it.value, session);
    }
    read
}

/// The user-side text of the session holding timeline index `i` (its items are adjacent in
/// the timeline): each non-assistant item's value, one per line.
fn session_text<'s>(i: usize, rows: &impl UpdateRows<'s>) -> String {
    let at = rows.item(i);
    let same = |j: usize| {
        let it = rows.item(j);
        it.session_id == at.session_id && it.timestamp_ms == at.timestamp_ms
    };
    let mut lo = i;
    while lo > 0 && i - lo < SESSION_SPAN && same(lo - 1) {
        lo -= 1;
    }
    let mut hi = i;
    while hi + 1 < rows.rows() && hi - i < SESSION_SPAN && same(hi + 1) {
        hi += 1;
    }
    let mut text = String::new();
    for j in lo..=hi {
        let it = rows.item(j);
        if it.role != Role::Assistant {
            text.push_str(it.value);
            text.push('\n');
        }
    }
    text
}

/// The value test's evidence, as a [`Change`] names it.
pub const VALUE_CUE: &str = "same attribute, new value";

/// Which window ranks are linked (symmetric), each link with the newer one's evidence: its
/// cue of change, a verb of ending whose object the older statement gave
/// ([`ValueTest::ended`]), or a statement of the same attribute with another value.
fn link(
    window: &[Entry],
    read: &Read,
    near: &dyn Fn(usize, usize) -> bool,
    relevance: f32,
) -> Vec<Vec<Option<Change>>> {
    let w = window.len();
    let best = window.iter().map(|e| e.score).fold(f64::MIN, f64::max);
    let answers = |e: &Entry| best > 0.0 && e.score >= f64::from(relevance) * best;
    let mut links = vec![vec![None; w]; w];
    for a in 0..w {
        for b in a + 1..w {
            let (x, y) = (&window[a], &window[b]);
            if x.time == y.time {
                continue;
            }
            let (older, newer) = if x.time > y.time { (b, a) } else { (a, b) };
            // a cue of change that names the older statement's value links the pair
            // whatever the newer one's score; otherwise both must answer the question
            let cue = read.cues[newer].as_ref();
            let named =
                cue.is_some_and(|c| ValueTest::names_value(&read.facts[older], &c.sentence));
            let (o, n) = (&window[older], &window[newer]);
            if !answers(o) {
                continue;
            }
            let cue = cue.filter(|_| answers(n) || named);
            // the value test: the pair decides, both clearing the cosine bar
            let clear = |e: &Entry| e.cosine.map_or(answers(e), |c| c >= VALUE_COSINE);
            let value = || {
                if !clear(o) || !clear(n) {
                    return None;
                }
                let (was, now) = (&read.facts[older], &read.facts[newer]);
                if was.is_empty() || now.is_empty() {
                    return None;
                }
                let fact = read.value.changed(was, now, near(older, newer))?;
                Some(Change {
                    cue: VALUE_CUE,
                    sentence: fact.clause.clone(),
                })
            };
            let left = || {
                let (verb, fact) = read.value.ended(&read.facts[older], &read.facts[newer])?;
                Some(Change {
                    cue: verb,
                    sentence: fact.clause.clone(),
                })
            };
            let evidence = cue.cloned().or_else(left).or_else(value);
            links[a][b].clone_from(&evidence);
            links[b][a] = evidence;
        }
    }
    links
}

/// The window's timeline indices after each clique of linked ranks (formed greedily, best
/// rank first) is put in time order in the ranks it holds.
fn reorder(window: &[Entry], links: &[Vec<bool>], dir: UpdateDirection) -> Vec<usize> {
    let w = window.len();
    let mut group = vec![usize::MAX; w];
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for r in 0..w {
        if group[r] != usize::MAX {
            continue;
        }
        let mut members = vec![r];
        for s in r + 1..w {
            if group[s] == usize::MAX && members.iter().all(|&m| links[s][m]) {
                members.push(s);
            }
        }
        for &m in &members {
            group[m] = groups.len();
        }
        groups.push(members);
    }
    let mut out: Vec<usize> = window.iter().map(|e| e.index).collect();
    for ranks in groups.iter().filter(|g| g.len() > 1) {
        let mut members = ranks.clone();
        members.sort_by(|&x, &y| {
            let by_time = window[x].time.cmp(&window[y].time);
            match dir {
                UpdateDirection::NewestFirst => by_time.reverse(),
                UpdateDirection::OldestFirst => by_time,
            }
            .then(x.cmp(&y))
        });
        for (&rank, &m) in ranks.iter().zip(&members) {
            out[rank] = window[m].index;
        }
    }
    out
}

#[cfg(test)]
#[path = "update_tests.rs"]
mod tests;
