//! Index-time extraction (LongMemEval §5.3–5.4): event dates into the `events` column and
//! facts prepended to the key, as a store's manifest records them (fixed per store).

use std::sync::Arc;

use memdex_core::MemoryItem;
use memdex_extract::time::ms_day;
use memdex_extract::{expand_key, extract_events, FactExtractor, HeuristicFacts};
use memdex_store::{Derived, Extraction};

use crate::EngineError;

/// What is extracted from each item at index time, as a user chooses it for a new store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtractOptions {
    /// Event dates in the value, resolved against the session date, into the `events` column
    /// (the ranking's time stage reads them).
    pub events: bool,
    /// Key expansion: facts from the value are prepended to the key before embedding and
    /// BM25, and kept in the `facts` column.
    pub facts: bool,
    /// FragRel's semantic relation: each new item's `m` most similar items of its tenant
    /// (cosine over the stored vectors, weight `max(0, cos)`) into the `neighbors` columns
    /// (0: off).
    pub neighbors: usize,
}

impl Default for ExtractOptions {
    /// Events and facts on: the time stage needs events, and key expansion raised every
    /// LoCoMo dev metric (docs/evaluation.md).
    fn default() -> Self {
        Self {
            events: true,
            facts: true,
            neighbors: 0,
        }
    }
}

impl ExtractOptions {
    /// The manifest record of these settings with the built-in extractor.
    pub fn extraction(&self) -> Extraction {
        Extraction {
            events: self.events,
            facts: self
                .facts
                .then(|| HeuristicFacts::default().name().to_string()),
            neighbors: self.neighbors,
        }
    }
}

/// The extractors a store's manifest asks for, resolved to code.
#[derive(Debug, Clone)]
pub struct Extractors {
    pub events: bool,
    pub facts: Option<Arc<dyn FactExtractor>>,
}

impl Extractors {
    /// The built-in extractors named by `x` (a store's `extraction` record).
    pub fn for_store(x: &Extraction) -> Result<Extractors, EngineError> {
        let facts: Option<Arc<dyn FactExtractor>> = match &x.facts {
            None => None,
            Some(name) => {
                let heuristic = HeuristicFacts::default();
                if name != heuristic.name() {
                    return Err(EngineError::UnknownExtractor { name: name.clone() });
                }
                Some(Arc::new(heuristic))
            }
        };
        Ok(Extractors {
            events: x.events,
            facts,
        })
    }

    /// Extracts events and facts from `item` (expanding its key when facts are on).
    pub fn derive(&self, item: &mut MemoryItem) -> Derived {
        derive_item(item, self.events, self.facts.as_deref())
    }
}

/// Extracts events and facts from `item` (expanding its key when `facts` is given).
pub fn derive_item(
    item: &mut MemoryItem,
    events: bool,
    facts: Option<&dyn FactExtractor>,
) -> Derived {
    let anchor = ms_day(item.timestamp_ms);
    let mut d = Derived::default();
    if let (true, Some(a)) = (events, anchor) {
        for e in extract_events(&item.value, a) {
            let (start, end) = e.range.to_ms();
            d.events.extend([start, end]);
        }
    }
    if let Some(f) = facts {
        let found = f.extract(&item.value, anchor);
        if !found.is_empty() {
            item.key = expand_key(&found, &item.key);
            d.facts = found.join("\n");
        }
    }
    d
}

#[cfg(test)]
pub(crate) mod tests {
    use memdex_core::Role;

    use super::*;

    pub(crate) fn item(text: &str) -> MemoryItem {
        MemoryItem {
            tenant: "t".into(),
            session_id: "s".into(),
            turn: 0,
            // 2023-05-08 10:00 UTC
            timestamp_ms: 1_683_540_000_000,
            role: Role::User,
            value: text.into(),
            key: text.into(),
            content_hash: 0,
        }
    }

    #[test]
    fn events_are_resolved_against_the_session_date() {
        let mut it = item("Caroline: I went to a support group yesterday.");
        let d = derive_item(&mut it, true, None);
        // 7 May 2023, the whole UTC day
        assert_eq!(d.events, [1_683_417_600_000, 1_683_503_999_999]);
        assert!(d.facts.is_empty());
        assert_eq!(it.key, it.value, "no facts: key unchanged");
        assert!(derive_item(&mut item("hello there"), true, None)
            .events
            .is_empty());
        assert!(derive_item(&mut it, false, None).events.is_empty());
    }

    #[test]
    fn facts_are_prepended_to_the_key_and_kept() {
        let x = Extractors::for_store(&ExtractOptions::default().extraction()).unwrap();
        let mut it = item("Caroline: I went to a support group yesterday.");
        let d = x.derive(&mut it);
        assert!(d.facts.starts_with("Caroline went"), "{}", d.facts);
        assert!(it.key.starts_with("Caroline went"), "{}", it.key);
        assert_eq!(
            d.events.len(),
            2,
            "the resolved date is in the events column"
        );
        assert!(it.key.ends_with(&it.value), "value kept after the facts");
        assert_eq!(it.value, "Caroline: I went to a support group yesterday.");
    }

    #[test]
    fn an_unknown_extractor_is_refused_by_name() {
        let x = Extraction {
            facts: Some("gpt-facts".into()),
            ..Extraction::default()
        };
        let e = Extractors::for_store(&x).unwrap_err().to_string();
        assert!(e.contains("gpt-facts"), "{e}");
    }
}
