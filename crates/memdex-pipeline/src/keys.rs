//! Key reuse: each distinct key text is embedded once per store. A shared session (LongMemEval
//! haystacks draw from one pool), a re-indexed session or a server append of a known text
//! copies the stored vector and terms instead of running the model.

use std::collections::HashMap;

use memdex_store::Store;

use crate::PipelineError;

/// Where each distinct key's vector lives in a store view: (segment id, row) by key hash,
/// confirmed by comparing the key text. Live rows only.
#[derive(Debug)]
pub struct KeyCache {
    store: Store,
    rows: HashMap<u64, (u64, u32)>,
    /// Segment id → index in the view.
    index: HashMap<u64, usize>,
    /// A refresh after a commit failed: the view is behind the store until the next one.
    stale: bool,
}

impl KeyCache {
    pub fn new(store: Store) -> KeyCache {
        let mut cache = KeyCache {
            store,
            rows: HashMap::new(),
            index: HashMap::new(),
            stale: false,
        };
        cache.add_segments(0);
        cache
    }

    /// The store view the cache reads (refreshed with it).
    pub fn store(&self) -> &Store {
        &self.store
    }

    fn add_segments(&mut self, from: usize) {
        for (si, seg) in self.store.segments().iter().enumerate().skip(from) {
            let id = seg.meta().id;
            self.index.insert(id, si);
            for (row, &h) in seg.key_hashes().iter().enumerate() {
                if self.store.is_alive(si, row) {
                    self.rows.entry(h).or_insert((id, row as u32));
                }
            }
        }
    }

    /// The stored vector and terms of `key`, if a live row holds it.
    pub fn get(&self, key: &str) -> Option<(&[f32], Vec<String>)> {
        let &(id, row) = self.rows.get(&memdex_core::content_hash(key.as_bytes()))?;
        let index = *self.index.get(&id)?;
        let row = row as usize;
        // a vector is copied only from files whose bytes check out (hashed the first time)
        if !self.store.verified_row(index, row) {
            return None;
        }
        let seg = &self.store.segments()[index];
        (seg.key(row) == key).then(|| {
            let terms = seg.terms(row).map(str::to_string).collect();
            (seg.embedding(row), terms)
        })
    }

    /// Moves to the latest committed version. Appends only add segments, so their keys are
    /// added; after a compaction (segments retired, rows moved) or a delete the map is rebuilt.
    pub fn refresh(&mut self) -> Result<(), PipelineError> {
        self.stale = true;
        let (seen, version) = (self.store.segments().len(), self.store.manifest().version);
        let deleted_before = self.store.manifest().deleted.len();
        self.store.refresh()?;
        self.stale = false;
        if self.store.manifest().version == version {
            return Ok(());
        }
        let extends = self.store.segments().len() >= seen
            && self.store.manifest().deleted.len() == deleted_before
            && self.store.segments()[..seen]
                .iter()
                .all(|s| self.index.contains_key(&s.meta().id));
        if extends {
            self.add_segments(seen);
        } else {
            self.rows.clear();
            self.index.clear();
            self.add_segments(0);
        }
        Ok(())
    }

    /// [`Self::refresh`] after a commit: a failure is logged and remembered (the commit
    /// stands; the next commit's planning retries).
    pub fn refresh_or_mark_stale(&mut self) {
        if let Err(e) = self.refresh() {
            tracing::warn!("committed; re-reading the store failed (retried later): {e}");
        }
    }

    /// Whether the view missed a commit.
    pub fn stale(&self) -> bool {
        self.stale
    }
}
