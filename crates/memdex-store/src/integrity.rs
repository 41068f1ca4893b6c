//! What a process knows about the soundness of a store's files, and when it learns it.
//!
//! Every committed file has a [`FileCheck`]: the checksum its manifest entry records and the
//! verdict once the file's bytes were hashed. Opening a store hashes only the small files
//! (at most [`SMALL_FILE_BYTES`]); a larger file is hashed the first time a reader needs its
//! rows (`Store::tenant_slices`, key reuse, compaction), or earlier by a verification pass
//! (`Store::verify_files`: `memdex serve`'s background pass or `--verify-on-start`). A file
//! is hashed once per process: the checks are shared by every view of the store the process
//! holds (a [`Checks`] registry, keyed by file name, which is never reused), and a file this
//! process wrote starts out intact.
//!
//! A damaged file (its bytes no longer give the checksum recorded) is quarantined: its rows
//! are left out of every search from then on, and compaction refuses to run.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use crate::checksum::Checksum;

/// Files up to this size are hashed when a store opens (a manifest, most word files and
/// small segments); larger ones when first read or by a verification pass. 1 MiB hashes in
/// well under a millisecond from the page cache.
pub const SMALL_FILE_BYTES: u64 = 1 << 20;

/// What hashing a file found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The bytes give the checksum the manifest records.
    Intact,
    /// The manifest records no checksum for it (written before checksums; the next
    /// compaction records one): only its size and structure are checked.
    Unrecorded,
    /// The bytes do not give the recorded checksum (or could not be read).
    Damaged(String),
}

const UNKNOWN: u8 = 0;
const INTACT: u8 = 1;
const UNRECORDED: u8 = 2;
const DAMAGED: u8 = 3;

/// Hashes `bytes` (a file just opened) now when the file is small.
pub(crate) fn check_if_small(check: &FileCheck, bytes: &[u8]) {
    if bytes.len() as u64 <= SMALL_FILE_BYTES {
        check.verify(bytes);
    }
}

/// One committed file's expected checksum and, once hashed, its verdict.
#[derive(Debug)]
pub(crate) struct FileCheck {
    /// Path inside the store directory (`segments/cnt-00000004.arrow`).
    name: String,
    expected: Option<Checksum>,
    state: AtomicU8,
    /// The checksum the bytes gave, once hashed.
    computed: Mutex<Option<Checksum>>,
    problem: Mutex<Option<String>>,
    /// Held while hashing, so two readers needing the file hash it once.
    hashing: Mutex<()>,
    any_damage: Arc<AtomicBool>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl FileCheck {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The verdict, hashing `bytes` (the file's whole content) the first time.
    pub fn verify(&self, bytes: &[u8]) -> Verdict {
        if let Some(v) = self.known() {
            return v;
        }
        let _hashing = lock(&self.hashing);
        if let Some(v) = self.known() {
            return v;
        }
        let got = Checksum::of(bytes);
        *lock(&self.computed) = Some(got);
        match self.expected {
            None => self.state.store(UNRECORDED, Ordering::Release),
            Some(want) if want == got => self.state.store(INTACT, Ordering::Release),
            Some(want) => {
                self.mark_damaged(format!(
                    "checksum mismatch: the manifest records {want}, the bytes give {got} \
                     (the file changed after it was written)"
                ));
            }
        }
        self.known().unwrap_or(Verdict::Unrecorded)
    }

    /// The verdict if the file was hashed (or found damaged otherwise) already.
    pub fn known(&self) -> Option<Verdict> {
        match self.state.load(Ordering::Acquire) {
            INTACT => Some(Verdict::Intact),
            UNRECORDED => Some(Verdict::Unrecorded),
            DAMAGED => Some(Verdict::Damaged(
                lock(&self.problem).clone().unwrap_or_default(),
            )),
            _ => None,
        }
    }

    /// Whether the file is known to be damaged (no hashing).
    pub fn known_damaged(&self) -> bool {
        self.state.load(Ordering::Acquire) == DAMAGED
    }

    /// Quarantines the file (a verification pass or a reader found it damaged); true when
    /// it was not known to be damaged before.
    pub fn mark_damaged(&self, problem: String) -> bool {
        let first = self.state.swap(DAMAGED, Ordering::AcqRel) != DAMAGED;
        if first {
            tracing::error!(
                "{}: damaged: {problem}; its rows are left out of searches until it is \
                 restored (memdex verify, docs/serving.md)",
                self.name
            );
            *lock(&self.problem) = Some(problem);
        }
        self.any_damage.store(true, Ordering::Release);
        first
    }

    /// What the file's bytes gave when hashed (None: not hashed yet).
    pub fn computed(&self) -> Option<Checksum> {
        *lock(&self.computed)
    }

    #[cfg(test)]
    pub fn expected(&self) -> Option<Checksum> {
        self.expected
    }
}

/// The checks of every file a process has opened from one store, shared by its views.
#[derive(Debug, Default)]
pub struct Checks {
    files: Mutex<HashMap<String, Arc<FileCheck>>>,
    any_damage: Arc<AtomicBool>,
}

impl Checks {
    /// The check of file `name` (a path inside the store directory) whose manifest entry
    /// records `expected`: the one already known when it records the same, else a new one.
    pub(crate) fn get(&self, name: &str, expected: Option<Checksum>) -> Arc<FileCheck> {
        let mut files = lock(&self.files);
        if let Some(c) = files.get(name).filter(|c| c.expected == expected) {
            return c.clone();
        }
        let c = Arc::new(FileCheck {
            name: name.to_string(),
            expected,
            state: AtomicU8::new(UNKNOWN),
            computed: Mutex::new(None),
            problem: Mutex::new(None),
            hashing: Mutex::new(()),
            any_damage: self.any_damage.clone(),
        });
        files.insert(name.to_string(), c.clone());
        c
    }

    /// A file this process has just written with `checksum`: intact without hashing it again.
    pub(crate) fn written(&self, name: &str, checksum: Checksum) {
        let c = self.get(name, Some(checksum));
        *lock(&c.computed) = Some(checksum);
        let _ = c
            .state
            .compare_exchange(UNKNOWN, INTACT, Ordering::AcqRel, Ordering::Acquire);
    }

    /// What the bytes of `name` gave when hashed, for an entry recording no checksum (None:
    /// not hashed yet).
    pub(crate) fn computed_unrecorded(&self, name: &str) -> Option<Checksum> {
        let files = lock(&self.files);
        (files.get(name))
            .filter(|c| c.expected.is_none())?
            .computed()
    }

    /// Whether any file was found damaged (the readers' fast path skips row checks when not).
    pub fn any_damage(&self) -> bool {
        self.any_damage.load(Ordering::Acquire)
    }

    /// Forgets the files no longer named (`keep`: paths inside the store directory).
    pub(crate) fn retain(&self, keep: &HashSet<String>) {
        let mut files = lock(&self.files);
        files.retain(|name, _| keep.contains(name));
        let damaged = files.values().any(|c| c.known_damaged());
        self.any_damage.store(damaged, Ordering::Release);
    }

    /// Quarantines `name` if this process knows the file (a verification report found it
    /// damaged); true when it was not known to be damaged before.
    pub fn mark_damaged(&self, name: &str, problem: &str) -> bool {
        let c = lock(&self.files).get(name).cloned();
        c.is_some_and(|c| c.mark_damaged(problem.to_string()))
    }

    /// Files known to be damaged, with what was found, sorted by name.
    pub fn damaged(&self) -> Vec<(String, String)> {
        let files = lock(&self.files);
        let mut out: Vec<(String, String)> = (files.values())
            .filter_map(|c| match c.known() {
                Some(Verdict::Damaged(p)) => Some((c.name.clone(), p)),
                _ => None,
            })
            .collect();
        out.sort();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_hashed_once_and_damage_is_remembered() {
        let checks = Checks::default();
        let good = checks.get("segments/a", Some(Checksum::of(b"abc")));
        assert_eq!(good.known(), None);
        assert_eq!(good.verify(b"abc"), Verdict::Intact);
        // hashed once: other bytes later do not change what was found
        assert_eq!(good.verify(b"abd"), Verdict::Intact);
        assert!(!checks.any_damage());
        let bad = checks.get("segments/b", Some(Checksum::of(b"abc")));
        assert!(matches!(bad.verify(b"abd"), Verdict::Damaged(m) if m.contains("mismatch")));
        assert!(checks.any_damage() && bad.known_damaged());
        assert_eq!(checks.damaged().len(), 1);
        let old = checks.get("segments/c", None);
        assert_eq!(old.verify(b"x"), Verdict::Unrecorded);
        assert_eq!(old.computed(), Some(Checksum::of(b"x")));
        // the same name and checksum is the same check; another checksum a new one
        assert!(Arc::ptr_eq(
            &good,
            &checks.get("segments/a", good.expected())
        ));
        assert!(!Arc::ptr_eq(&good, &checks.get("segments/a", None)));
        checks.retain(&HashSet::from(["segments/a".to_string()]));
        assert!(!checks.any_damage(), "the damaged file is no longer named");
        checks.written("segments/d", Checksum::of(b"d"));
        let d = checks.get("segments/d", Some(Checksum::of(b"d")));
        assert_eq!(d.known(), Some(Verdict::Intact));
    }
}
