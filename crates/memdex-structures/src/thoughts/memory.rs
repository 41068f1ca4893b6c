//! One tenant's thought memory and TiM's organisation operations, as events.
//!
//! The state is the replay of the tenant's thought events ([`ThoughtRow`]s, oldest first).
//! [`ThoughtMemory::organise`] decides what a new triple does and returns the events, which
//! it also applies, so the persisted log and the state never diverge:
//! * **forget** — a negation or "forget that …" forgets the live thoughts it names; a new value
//!   of a functional relation (`lives in`, `works at`, …) forgets the older values of the same
//!   subject and relation (the newer time wins: a triple stated earlier than the live one is
//!   inserted already forgotten). Contradictions are looked up by (subject, relation) across
//!   the tenant, not only inside a bucket: with exact triples the lookup is free, and a
//!   contradiction hashed into another bucket would otherwise survive.
//! * **merge** — the same (subject, relation, object) restated, or a near-duplicate (same
//!   subject, a shared bucket, cosine ≥ the store's `merge_cosine`): the live thought takes
//!   the new source and the newer time.
//! * **insert** — anything else.
//!
//! Deleted sources ([`ThoughtMemory::drop_dead`]) retract a source, or forget a thought left
//! with none.
//!
//! A forget event names what replaced the thought, when something did: `other` = the newer
//! thought that contradicts it, or `sources` = the item that negated it. The ranking uses
//! that to put the newer statement ahead of the outdated one.

use std::collections::HashSet;

use memdex_score::dot;
use memdex_store::{ThoughtOp, ThoughtRow};

use super::extract::{object_key, Context, Polarity, Triple};
use super::lexicon::is_functional;

/// A thought as the memory holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Thought {
    /// Tenant-scoped id (insert order).
    pub id: u64,
    pub subject: String,
    pub relation: String,
    pub object: String,
    pub sentence: String,
    /// Newest statement of it (ms).
    pub time_ms: i64,
    /// Items that state it.
    pub sources: Vec<u64>,
    pub embedding: Vec<f32>,
    /// Bucket per LSH table.
    pub buckets: Vec<u16>,
    /// Why it was forgotten (None: live).
    pub forgotten: Option<String>,
    /// What replaced it, when it was forgotten for a newer statement.
    pub superseded_by: Option<Successor>,
}

/// What made a thought outdated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Successor {
    /// A newer value of the same functional relation (a thought id).
    Thought(u64),
    /// An item that negated it ("I don't live in Porto anymore").
    Item(u64),
}

impl Thought {
    pub fn is_live(&self) -> bool {
        self.forgotten.is_none()
    }

    fn same_key(&self, t: &Triple) -> bool {
        self.subject.to_lowercase() == t.subject_key() && self.relation == t.relation
    }
}

/// A triple ready to be organised: with its sentence's embedding and buckets (empty for
/// negations, which are never stored), the item it came from and that item's time.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub triple: Triple,
    pub embedding: Vec<f32>,
    pub buckets: Vec<u16>,
    pub item: u64,
    pub time_ms: i64,
}

/// One tenant's thoughts (live and forgotten) and the third parties they mention.
#[derive(Debug, Clone, Default)]
pub struct ThoughtMemory {
    tenant: String,
    pub thoughts: Vec<Thought>,
    /// Pronoun context for the next extraction.
    pub context: Context,
}

impl ThoughtMemory {
    pub fn new(tenant: &str) -> Self {
        Self {
            tenant: tenant.to_string(),
            ..Self::default()
        }
    }

    /// The state after `rows` (the tenant's events, oldest first).
    pub fn replay(tenant: &str, rows: &[ThoughtRow]) -> Self {
        let mut m = Self::new(tenant);
        for r in rows {
            m.apply(r);
        }
        m
    }

    pub fn live(&self) -> impl Iterator<Item = &Thought> {
        self.thoughts.iter().filter(|t| t.is_live())
    }

    /// Applies one event (unknown thought ids are ignored: a log is never refused).
    pub fn apply(&mut self, r: &ThoughtRow) {
        if r.op == ThoughtOp::Insert {
            if r.subject.contains("'s ") {
                self.context.mention(&r.subject);
            }
            self.thoughts.push(Thought {
                id: r.thought,
                subject: r.subject.clone(),
                relation: r.relation.clone(),
                object: r.object.clone(),
                sentence: r.sentence.clone(),
                time_ms: r.time_ms,
                sources: r.sources.clone(),
                embedding: r.embedding.clone(),
                buckets: r.buckets.clone(),
                forgotten: None,
                superseded_by: None,
            });
            return;
        }
        let Some(t) = self.get_mut(r.thought) else {
            return;
        };
        match r.op {
            ThoughtOp::Merge => {
                for s in &r.sources {
                    if !t.sources.contains(s) {
                        t.sources.push(*s);
                    }
                }
                t.time_ms = t.time_ms.max(r.time_ms);
            }
            ThoughtOp::Forget => {
                t.forgotten = Some(r.reason.clone());
                // a forget names its successor: the newer thought, or the negating item
                t.superseded_by = match (r.other, r.sources.first()) {
                    (Some(other), _) => Some(Successor::Thought(other)),
                    (None, Some(&item)) => Some(Successor::Item(item)),
                    (None, None) => None,
                };
            }
            ThoughtOp::Retract => t.sources.retain(|s| !r.sources.contains(s)),
            ThoughtOp::Insert => {}
        }
    }

    fn get_mut(&mut self, id: u64) -> Option<&mut Thought> {
        // ids are insert order: position = id, unless a log was cut
        match self.thoughts.get(id as usize) {
            Some(t) if t.id == id => self.thoughts.get_mut(id as usize),
            _ => self.thoughts.iter_mut().find(|t| t.id == id),
        }
    }

    fn next_id(&self) -> u64 {
        self.thoughts.last().map_or(0, |t| t.id + 1)
    }

    /// The event for `op` on thought `t`, with its triple copied so the log reads alone.
    fn event(&self, op: ThoughtOp, t: &Thought, item: Option<u64>, reason: String) -> ThoughtRow {
        ThoughtRow {
            tenant: self.tenant.clone(),
            op,
            thought: t.id,
            other: None,
            item,
            subject: t.subject.clone(),
            relation: t.relation.clone(),
            object: t.object.clone(),
            sentence: t.sentence.clone(),
            time_ms: t.time_ms,
            sources: Vec::new(),
            embedding: Vec::new(),
            buckets: Vec::new(),
            reason,
        }
    }

    /// Decides what `c` does (see the module docs), applies it and returns the events.
    pub fn organise(&mut self, c: Candidate, merge_cosine: f32) -> Vec<ThoughtRow> {
        let events = match c.triple.polarity {
            Polarity::Negate | Polarity::ForgetThat => self.forget_named(&c),
            Polarity::Assert => self.assert(c, merge_cosine),
        };
        for e in &events {
            if e.op != ThoughtOp::Insert {
                self.apply(e);
            }
        }
        events
    }

    /// Negation or "forget that …": the live thoughts with the same subject, relation and
    /// object (for a functional relation, any object when none matches).
    fn forget_named(&mut self, c: &Candidate) -> Vec<ThoughtRow> {
        let key = c.triple.object_key();
        let named: Vec<usize> = self
            .thoughts
            .iter()
            .enumerate()
            .filter(|(_, t)| t.is_live() && t.same_key(&c.triple))
            .map(|(i, _)| i)
            .collect();
        let exact: Vec<usize> = named
            .iter()
            .copied()
            .filter(|&i| object_key(&self.thoughts[i].object) == key)
            .collect();
        let targets = if exact.is_empty() && is_functional(&c.triple.relation) {
            named
        } else {
            exact
        };
        let how = match c.triple.polarity {
            Polarity::ForgetThat => "asked to forget",
            _ => "negated",
        };
        targets
            .into_iter()
            .map(|i| {
                let reason = format!("{how} in item {}", c.item);
                let mut e = self.event(ThoughtOp::Forget, &self.thoughts[i], Some(c.item), reason);
                e.time_ms = c.time_ms;
                if c.triple.polarity == Polarity::Negate {
                    // the negating item states what holds now
                    e.sources = vec![c.item];
                }
                e
            })
            .collect()
    }

    fn assert(&mut self, c: Candidate, merge_cosine: f32) -> Vec<ThoughtRow> {
        let key = c.triple.object_key();
        let same = self
            .thoughts
            .iter()
            .position(|t| t.is_live() && t.same_key(&c.triple) && object_key(&t.object) == key);
        if let Some(i) = same {
            return vec![self.merge_event(
                i,
                &c,
                "restated (same subject, relation and object)".into(),
            )];
        }
        let mut events = Vec::new();
        let new_id = self.next_id();
        let mut born_forgotten: Option<u64> = None;
        if is_functional(&c.triple.relation) {
            let rivals: Vec<usize> = (0..self.thoughts.len())
                .filter(|&i| self.thoughts[i].is_live() && self.thoughts[i].same_key(&c.triple))
                .collect();
            for i in rivals {
                let old = &self.thoughts[i];
                if old.time_ms <= c.time_ms {
                    let reason = format!("contradicted by #{new_id} (item {})", c.item);
                    let mut e = self.event(ThoughtOp::Forget, old, Some(c.item), reason);
                    e.other = Some(new_id);
                    events.push(e);
                } else {
                    born_forgotten = Some(old.id);
                }
            }
        }
        if born_forgotten.is_none() {
            if let Some((i, cos)) = self.near_duplicate(&c, merge_cosine) {
                let reason = format!("near-duplicate (cosine {cos:.3})");
                events.push(self.merge_event(i, &c, reason));
                return events;
            }
        }
        let insert = ThoughtRow {
            tenant: self.tenant.clone(),
            op: ThoughtOp::Insert,
            thought: new_id,
            other: None,
            item: Some(c.item),
            subject: c.triple.subject.clone(),
            relation: c.triple.relation.clone(),
            object: c.triple.object.clone(),
            sentence: c.triple.sentence(),
            time_ms: c.time_ms,
            sources: vec![c.item],
            embedding: c.embedding,
            buckets: c.buckets,
            reason: format!("post-thinking of item {}", c.item),
        };
        // applied now (before the forgets that name it) so the state matches the log's order
        self.apply(&insert);
        let mut out = vec![insert];
        if let Some(newer) = born_forgotten {
            let t = &self.thoughts[self.thoughts.len() - 1];
            let reason = format!("stated before #{newer}, which contradicts it");
            let mut e = self.event(ThoughtOp::Forget, t, Some(c.item), reason);
            e.other = Some(newer);
            out.push(e);
        }
        out.extend(events);
        out
    }

    fn merge_event(&self, i: usize, c: &Candidate, reason: String) -> ThoughtRow {
        let mut e = self.event(ThoughtOp::Merge, &self.thoughts[i], Some(c.item), reason);
        e.sources = vec![c.item];
        e.time_ms = c.time_ms;
        e
    }

    /// The live thought of the same subject sharing a bucket with `c` whose cosine is the
    /// highest and at least `threshold`.
    fn near_duplicate(&self, c: &Candidate, threshold: f32) -> Option<(usize, f32)> {
        if c.embedding.is_empty() {
            return None;
        }
        let subject = c.triple.subject_key();
        let functional = is_functional(&c.triple.relation);
        let mut best: Option<(usize, f32)> = None;
        for (i, t) in self.thoughts.iter().enumerate() {
            let shares = t.buckets.iter().zip(&c.buckets).any(|(a, b)| a == b);
            // another value of a functional relation is a rival, never a duplicate
            let rival = functional && t.same_key(&c.triple);
            if !t.is_live() || !shares || rival || t.subject.to_lowercase() != subject {
                continue;
            }
            let cos = cosine(&t.embedding, &c.embedding);
            if cos >= threshold && best.is_none_or(|(_, b)| cos > b) {
                best = Some((i, cos));
            }
        }
        best
    }

    /// Events for thoughts whose sources are not all in `live` (a tenant's live item ids):
    /// retract the dead sources, or forget a thought left with none.
    pub fn drop_dead(&mut self, live: &HashSet<u64>) -> Vec<ThoughtRow> {
        let mut events = Vec::new();
        for t in self.thoughts.iter().filter(|t| t.is_live()) {
            let dead: Vec<u64> = t
                .sources
                .iter()
                .copied()
                .filter(|s| !live.contains(s))
                .collect();
            if dead.is_empty() {
                continue;
            }
            let (op, reason) = if dead.len() == t.sources.len() {
                (
                    ThoughtOp::Forget,
                    "its source items were deleted".to_string(),
                )
            } else {
                (ThoughtOp::Retract, format!("source items {dead:?} deleted"))
            };
            let mut e = self.event(op, t, None, reason);
            if op == ThoughtOp::Retract {
                e.sources = dead;
            }
            events.push(e);
        }
        for e in &events {
            self.apply(e);
        }
        events
    }
}

/// Cosine of two vectors (0 when either is zero).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (na, nb) = (dot(a, a).sqrt(), dot(b, b).sqrt());
    if na == 0.0 || nb == 0.0 || a.len() != b.len() {
        return 0.0;
    }
    dot(a, b) / (na * nb)
}
