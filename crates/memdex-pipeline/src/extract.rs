//! Index-time extraction (LongMemEval §5.3–5.4): event dates into the `events` column and
//! facts prepended to the key, as a store's manifest records them (fixed per store).

use std::sync::Arc;

use memdex_core::{Granularity, MemoryItem};
use memdex_extract::time::ms_day;
use memdex_extract::{
    events_and_invalid_dates, expand_key, invalid_dates, FactExtractor, HeuristicFacts,
};
use memdex_store::{Derived, Extraction};

use rayon::prelude::*;

use crate::PipelineError;

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
    /// Turn stores: how many messages right before a turn its key also carries (those whose
    /// role makes keys; 1 by default, the message a reply answers); see
    /// [`memdex_ingest::ItemizeOptions::context`].
    pub key_context: usize,
}

impl Default for ExtractOptions {
    /// Events and facts on: the time stage needs events, and key expansion raised every
    /// LoCoMo dev metric; one message of key context raised turn recall by 0.05
    /// (docs/evaluation.md).
    fn default() -> Self {
        Self {
            events: true,
            facts: true,
            neighbors: 0,
            key_context: 1,
        }
    }
}

impl ExtractOptions {
    /// These options for a store of `granularity`: key context applies to turns only (rounds
    /// and sessions already hold the exchange), so other stores record 0.
    pub fn for_granularity(mut self, granularity: Granularity) -> Self {
        if granularity != Granularity::Turn {
            self.key_context = 0;
        }
        self
    }

    /// The manifest record of these settings with the built-in extractor.
    pub fn extraction(&self) -> Extraction {
        self.extraction_with(&HeuristicFacts::default())
    }

    /// The manifest record of these settings with `facts` as the fact extractor.
    pub fn extraction_with(&self, facts: &dyn FactExtractor) -> Extraction {
        Extraction {
            events: self.events,
            facts: self.facts.then(|| facts.name().to_string()),
            neighbors: self.neighbors,
            key_context: self.key_context,
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
    pub fn for_store(x: &Extraction) -> Result<Extractors, PipelineError> {
        Self::for_store_with(x, None)
    }

    /// [`Self::for_store`] where the caller also has `model` (a model-based fact extractor,
    /// built outside the engine): used when the store records its name. A store recording
    /// an extractor neither is is refused by name.
    pub fn for_store_with(
        x: &Extraction,
        model: Option<Arc<dyn FactExtractor>>,
    ) -> Result<Extractors, PipelineError> {
        let facts: Option<Arc<dyn FactExtractor>> = match &x.facts {
            None => None,
            Some(name) => match model {
                Some(m) if m.name() == name => Some(m),
                _ if name == HeuristicFacts::default().name() => {
                    Some(Arc::new(HeuristicFacts::default()))
                }
                _ => return Err(PipelineError::UnknownExtractor { name: name.clone() }),
            },
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

    /// The fact extractor wants whole batches (a model), not one item at a time.
    pub fn batched(&self) -> bool {
        self.facts.as_deref().is_some_and(|f| f.batched())
    }

    /// [`Self::derive`] over `items`, over the thread pool when `parallel`; a batched fact
    /// extractor (a model) gets all the items in one call on this thread first. With the
    /// derived columns, the date-shaped words naming no calendar day (counted with events on;
    /// 0 otherwise).
    pub fn derive_all(&self, items: &mut [MemoryItem], parallel: bool) -> (Vec<Derived>, u64) {
        let (events, facts) = (self.events, self.facts.as_deref());
        let one = |it: &mut MemoryItem| derive_counted(it, events, facts);
        let Some(f) = facts.filter(|f| f.batched()) else {
            let pairs: Vec<(Derived, usize)> = if parallel {
                items.par_iter_mut().map(one).collect()
            } else {
                items.iter_mut().map(one).collect()
            };
            let bad = pairs.iter().map(|p| p.1 as u64).sum();
            return (pairs.into_iter().map(|p| p.0).collect(), bad);
        };
        let inputs: Vec<(&str, _)> = items
            .iter()
            .map(|it| (it.value.as_str(), ms_day(it.timestamp_ms)))
            .collect();
        let facts = f.extract_batch(&inputs);
        let mut found = facts.into_iter();
        let mut bad = 0;
        let derived = items
            .iter_mut()
            .map(|it| {
                let (mut d, n) = derive_counted(it, events, None);
                bad += n as u64;
                expand(it, &mut d, found.next().unwrap_or_default());
                d
            })
            .collect();
        (derived, bad)
    }
}

/// Prepends `found` to `item`'s key and keeps it in `d`.
fn expand(item: &mut MemoryItem, d: &mut Derived, found: Vec<String>) {
    if !found.is_empty() {
        item.key = expand_key(&found, &item.key);
        d.facts = found.join("\n");
    }
}

/// Extracts events and facts from `item` (expanding its key when `facts` is given).
pub fn derive_item(
    item: &mut MemoryItem,
    events: bool,
    facts: Option<&dyn FactExtractor>,
) -> Derived {
    derive_counted(item, events, facts).0
}

/// [`derive_item`], with the date-shaped words of the value naming no calendar day (counted
/// with events on; one tokenization serves both).
fn derive_counted(
    item: &mut MemoryItem,
    events: bool,
    facts: Option<&dyn FactExtractor>,
) -> (Derived, usize) {
    let anchor = ms_day(item.timestamp_ms);
    let mut d = Derived::default();
    let bad = match (events, anchor) {
        (true, Some(a)) => {
            let (found, bad) = events_and_invalid_dates(&item.value, a);
            for e in found {
                let (start, end) = e.range.to_ms();
                d.events.extend([start, end]);
            }
            bad
        }
        (true, None) => invalid_dates(&item.value),
        (false, _) => 0,
    };
    if let Some(f) = facts {
        let found = f.extract(&item.value, anchor);
        expand(item, &mut d, found);
    }
    (d, bad)
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

    /// A batched extractor that counts its batch calls and returns each text's first word.
    #[derive(Debug, Default)]
    struct FirstWord {
        batches: std::sync::atomic::AtomicUsize,
    }

    impl FactExtractor for FirstWord {
        fn name(&self) -> &str {
            "first-word"
        }
        fn extract(&self, text: &str, _: Option<chrono::NaiveDate>) -> Vec<String> {
            text.split_whitespace().take(1).map(String::from).collect()
        }
        fn batched(&self) -> bool {
            true
        }
        fn extract_batch(&self, items: &[(&str, Option<chrono::NaiveDate>)]) -> Vec<Vec<String>> {
            self.batches
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            items.iter().map(|&(t, a)| self.extract(t, a)).collect()
        }
    }

    #[test]
    fn a_caller_model_is_used_when_the_store_names_it_and_gets_one_batch() {
        let model = Arc::new(FirstWord::default());
        let x = ExtractOptions::default().extraction_with(model.as_ref());
        assert_eq!(x.facts.as_deref(), Some("first-word"));
        assert!(Extractors::for_store(&x).is_err(), "not without the model");
        let ex = Extractors::for_store_with(&x, Some(model.clone())).unwrap();
        let mut items = vec![
            item("Caroline: I went to a support group yesterday."),
            item(""),
            item("Mel: hi"),
        ];
        for parallel in [true, false] {
            let mut its = items.clone();
            let (d, _) = ex.derive_all(&mut its, parallel);
            assert_eq!(d[0].facts, "Caroline:");
            assert!(its[0].key.starts_with("Caroline:\n"), "{}", its[0].key);
            assert_eq!(d[0].events.len(), 2, "events still extracted");
            assert_eq!((d[1].facts.as_str(), its[1].key.as_str()), ("", ""));
            assert_eq!(d[2].facts, "Mel:");
        }
        assert_eq!(model.batches.load(std::sync::atomic::Ordering::Relaxed), 2);
        // the rules still resolve when the caller's model is another one
        let rules = ExtractOptions::default().extraction();
        let ex = Extractors::for_store_with(&rules, Some(model)).unwrap();
        let (d, _) = ex.derive_all(&mut items, true);
        assert!(d[0].facts.starts_with("Caroline went"), "{}", d[0].facts);
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
