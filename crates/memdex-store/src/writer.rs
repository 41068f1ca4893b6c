use std::collections::HashMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};

use memdex_core::{Granularity, MemoryItem, ModelInfo};

use crate::error::{io, StoreError};
use crate::lsh_column::LshMeta;
use crate::manifest::{Extraction, Manifest, SegmentMeta, FORMAT_VERSION, SEGMENTS_DIR};
use crate::segment::{write_segment, Derived, Row};
use crate::store::Store;

/// The single writer of a store. Holds `DIR/LOCK` for its lifetime.
///
/// Each [`append`](Self::append) writes one new immutable segment and commits a new manifest
/// version; previously committed segments are never rewritten.
#[derive(Debug)]
pub struct StoreWriter {
    pub(crate) dir: PathBuf,
    pub(crate) manifest: Manifest,
    pub(crate) next_positions: HashMap<String, u64>,
    _lock: File,
}

/// What one append committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendReport {
    pub segment: SegmentMeta,
    pub manifest_version: u64,
}

impl StoreWriter {
    /// Opens the store in `dir` for writing, creating it for `model` if it does not exist.
    /// An existing store built with another model or dimension is refused.
    pub fn open_or_create(
        dir: &Path,
        model: &ModelInfo,
        granularity: Granularity,
        model_source: Option<String>,
    ) -> Result<StoreWriter, StoreError> {
        Self::open_or_create_with(
            dir,
            model,
            granularity,
            model_source,
            &Extraction::default(),
        )
    }

    /// [`Self::open_or_create`] recording (on creation) or checking (on open) the store's
    /// index-time extraction settings: one store holds one kind of key.
    pub fn open_or_create_with(
        dir: &Path,
        model: &ModelInfo,
        granularity: Granularity,
        model_source: Option<String>,
        extraction: &Extraction,
    ) -> Result<StoreWriter, StoreError> {
        fs::create_dir_all(dir.join(SEGMENTS_DIR)).map_err(io(dir))?;
        let lock_path = dir.join("LOCK");
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io(&lock_path))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                return Err(StoreError::Locked {
                    dir: dir.to_path_buf(),
                    lock: lock_path,
                })
            }
            Err(fs::TryLockError::Error(e)) => return Err(io(&lock_path)(e)),
        }
        let manifest = match Manifest::load(dir) {
            Ok(m) => m,
            Err(StoreError::NotAStore { .. }) => {
                let m = Manifest {
                    format_version: FORMAT_VERSION,
                    version: 1,
                    model: model.clone(),
                    granularity,
                    model_source,
                    extraction: extraction.clone(),
                    segments: Vec::new(),
                    deleted: Vec::new(),
                    next_id_floor: 0,
                    next_segment_id: 0,
                    lsh: None,
                };
                m.save(dir)?;
                m
            }
            Err(e) => return Err(e),
        };
        let store = Store::open_manifest(dir, manifest)?;
        store.check_model(model)?;
        if store.manifest().granularity != granularity {
            return Err(StoreError::InvalidAppend {
                message: format!(
                    "{} holds {} items; cannot append {} items (use another store)",
                    dir.display(),
                    store.manifest().granularity,
                    granularity
                ),
            });
        }
        let have = &store.manifest().extraction;
        if have != extraction {
            return Err(StoreError::InvalidAppend {
                message: format!(
                    "{} was built with extraction {have:?}; cannot append with {extraction:?} \
                     (use the same --extract/--facts options, or another store)",
                    dir.display(),
                ),
            });
        }
        let mut writer = StoreWriter {
            dir: dir.to_path_buf(),
            next_positions: store.next_positions(),
            manifest: store.manifest().clone(),
            _lock: lock,
        };
        writer.remove_orphans()?;
        Ok(writer)
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The position each tenant's next item takes.
    pub fn next_positions(&self) -> &HashMap<String, u64> {
        &self.next_positions
    }

    /// Deletes segment files no manifest names: leftovers of a crash before commit.
    fn remove_orphans(&mut self) -> Result<(), StoreError> {
        let seg_dir = self.dir.join(SEGMENTS_DIR);
        let named: std::collections::HashSet<&str> = self
            .manifest
            .segments
            .iter()
            .map(|s| s.file.as_str())
            .collect();
        for entry in fs::read_dir(&seg_dir).map_err(io(&seg_dir))? {
            let entry = entry.map_err(io(&seg_dir))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if !named.contains(name.as_ref()) {
                tracing::warn!(
                    "removing uncommitted segment file {}",
                    entry.path().display()
                );
                fs::remove_file(entry.path()).map_err(io(entry.path()))?;
            }
        }
        Ok(())
    }

    /// Appends items with their embeddings (row-major, `items.len() × dim`) as one new segment
    /// and commits it. Items get consecutive ids in input order and the next positions of their
    /// tenants' histories. Stored without BM25 terms; see [`Self::append_with_terms`].
    pub fn append(
        &mut self,
        items: &[MemoryItem],
        embeddings: &[f32],
    ) -> Result<AppendReport, StoreError> {
        self.append_derived(items, embeddings, &vec![Derived::default(); items.len()])
    }

    /// Turns on TiM LSH for the segments appended from now on (recorded in a new manifest
    /// version); earlier segments keep no bucket column and are scanned exactly. Enabling the
    /// same hashing again is a no-op; different hashing is refused.
    pub fn enable_lsh(&mut self, lsh: LshMeta) -> Result<(), StoreError> {
        match self.manifest.lsh {
            Some(m) if m == lsh => return Ok(()),
            Some(m) => {
                return Err(StoreError::InvalidAppend {
                    message: format!("store already hashes with {m:?}; asked for {lsh:?}"),
                })
            }
            None => {}
        }
        if lsh.dim as usize != self.manifest.model.dim
            || lsh.tables == 0
            || lsh.buckets < 2
            || !lsh.buckets.is_multiple_of(2)
            || lsh.buckets > 1 << 16
        {
            return Err(StoreError::InvalidAppend {
                message: format!(
                    "LSH {lsh:?} does not fit a store of dimension {}",
                    self.manifest.model.dim
                ),
            });
        }
        let mut next = self.manifest.clone();
        next.version += 1;
        next.lsh = Some(lsh);
        next.save(&self.dir)?;
        self.manifest = next;
        Ok(())
    }

    /// [`Self::append`] with each item's analysed key terms (one list per item). A store with
    /// LSH enabled needs [`Self::append_with_lsh`].
    pub fn append_with_terms(
        &mut self,
        items: &[MemoryItem],
        embeddings: &[f32],
        terms: &[Vec<String>],
    ) -> Result<AppendReport, StoreError> {
        self.append_with_lsh(items, embeddings, terms, &[])
    }

    /// [`Self::append_with_terms`] plus each item's LSH bucket ids (`items × tables`, in item
    /// order; empty when the store does not hash).
    pub fn append_with_lsh(
        &mut self,
        items: &[MemoryItem],
        embeddings: &[f32],
        terms: &[Vec<String>],
        lsh: &[u16],
    ) -> Result<AppendReport, StoreError> {
        let tables = self.manifest.lsh.map_or(0, |m| m.tables as usize);
        if terms.len() != items.len() || lsh.len() != items.len() * tables {
            return Err(StoreError::InvalidAppend {
                message: format!(
                    "{} term lists and {} LSH bucket ids for {} items; the store hashes with {:?}",
                    terms.len(),
                    lsh.len(),
                    items.len(),
                    self.manifest.lsh
                ),
            });
        }
        let derived: Vec<Derived> = terms
            .iter()
            .enumerate()
            .map(|(i, t)| Derived {
                terms: t.clone(),
                lsh: lsh[i * tables..(i + 1) * tables].to_vec(),
                ..Derived::default()
            })
            .collect();
        self.append_derived(items, embeddings, &derived)
    }

    /// [`Self::append`] with what the engine derived from each item (terms, events, facts,
    /// neighbours, LSH bucket ids).
    pub fn append_derived(
        &mut self,
        items: &[MemoryItem],
        embeddings: &[f32],
        derived: &[Derived],
    ) -> Result<AppendReport, StoreError> {
        let tables = self.manifest.lsh.map_or(0, |m| m.tables as usize);
        let buckets = self.manifest.lsh.map_or(0, |m| m.buckets as usize);
        if let Some(i) = derived
            .iter()
            .position(|d| d.lsh.len() != tables || d.lsh.iter().any(|&b| b as usize >= buckets))
        {
            return Err(StoreError::InvalidAppend {
                message: format!(
                    "item {i}: {} LSH bucket ids; the store hashes with {:?}",
                    derived[i].lsh.len(),
                    self.manifest.lsh
                ),
            });
        }
        if derived.len() != items.len() {
            return Err(StoreError::InvalidAppend {
                message: format!("{} derived rows for {} items", derived.len(), items.len()),
            });
        }
        if let Some(i) = derived
            .iter()
            .position(|d| d.neighbors.iter().any(|n| !n.1.is_finite()))
        {
            return Err(StoreError::InvalidAppend {
                message: format!("neighbour weight of item {i} is not finite"),
            });
        }
        if let Some(i) = derived.iter().position(|d| d.events.len() % 2 != 0) {
            return Err(StoreError::InvalidAppend {
                message: format!("events of item {i} are not (start, end) pairs"),
            });
        }
        let dim = self.manifest.model.dim;
        if items.is_empty() {
            return Err(StoreError::InvalidAppend {
                message: "no items".into(),
            });
        }
        if embeddings.len() != items.len() * dim {
            return Err(StoreError::InvalidAppend {
                message: format!(
                    "{} embedding values for {} items of dimension {dim}",
                    embeddings.len(),
                    items.len()
                ),
            });
        }
        if let Some(i) = embeddings.iter().position(|x| !x.is_finite()) {
            return Err(StoreError::InvalidAppend {
                message: format!("embedding of item {} is not finite", i / dim),
            });
        }
        let first_id = self.manifest.next_item_id();
        let mut positions = self.next_positions.clone();
        let mut rows: Vec<Row<'_>> = items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let next = positions.entry(item.tenant.clone()).or_insert(0);
                let position = *next;
                *next += 1;
                Row {
                    item_id: first_id + i as u64,
                    position,
                    item,
                    embedding: &embeddings[i * dim..(i + 1) * dim],
                    derived: &derived[i],
                    lsh: &derived[i].lsh,
                }
            })
            .collect();
        // Tenant-contiguous layout; stable, so positions stay ascending within a tenant.
        rows.sort_by(|a, b| a.item.tenant.cmp(&b.item.tenant));

        let seg_id = self.manifest.next_segment_id();
        let metadata = HashMap::from([
            (
                "memdex.format_version".to_string(),
                FORMAT_VERSION.to_string(),
            ),
            (
                "memdex.model".to_string(),
                serde_json::to_string(&self.manifest.model).unwrap_or_default(),
            ),
        ]);
        let seg_dir = self.dir.join(SEGMENTS_DIR);
        let meta = write_segment(&seg_dir, seg_id, dim, &rows, metadata)?;

        let mut next = self.manifest.clone();
        next.version += 1;
        next.next_segment_id = seg_id + 1;
        next.segments.push(meta.clone());
        let saved = crate::failpoint::hit("before-manifest").and_then(|()| next.save(&self.dir));
        if let Err(e) = saved {
            // not committed: the segment no manifest names goes (the next writer would remove it)
            let _ = std::fs::remove_file(seg_dir.join(&meta.file));
            return Err(e);
        }
        self.manifest = next;
        self.next_positions = positions;
        Ok(AppendReport {
            segment: meta,
            manifest_version: self.manifest.version,
        })
    }
}
