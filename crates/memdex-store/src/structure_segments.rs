//! Derived memory structures kept beside the items (TiM thoughts, MemTree): their settings,
//! their own immutable segments ("aux" segments, one kind per file) and the watermark of items
//! they have seen, all recorded in the manifest's optional `structures` field and versioned
//! with it like items.
//!
//! ```text
//! DIR/structures/aux-NNNNNNNN.arrow   immutable Arrow IPC files, one record batch each,
//!                                      rows grouped by tenant, in event order within a tenant
//! ```
//!
//! The store knows only rows and files; what the rows mean (a thought's insert, merge or
//! forget; a tree node's new version) is `memdex-structures`' business. A tenant's state is
//! the replay of its rows over every segment of a kind, oldest first. Item segments are not
//! touched: stores without structures read and write exactly as before.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use crate::aux_rows::{self, AuxKind, ThoughtRow, TreeRow};
use crate::checksum::Checksum;
use crate::error::{io, StoreError};
use crate::integrity::{Checks, Verdict};
use crate::manifest::{sync_dir, write_durably};
use crate::meta::{
    aux_file, aux_file_name, AuxSegmentMeta, StructuresMeta, ThoughtsConfig, TreeConfig,
    STRUCTURES_DIR,
};
use crate::store::Store;
use crate::writer::StoreWriter;

/// The structure segments of one store version, memory-mapped.
#[derive(Debug, Clone)]
pub struct Structures {
    meta: StructuresMeta,
    segments: Vec<(AuxSegmentMeta, arrow_array::RecordBatch)>,
}

impl Structures {
    /// Maps the structure segments `store`'s manifest names (None: the store has none).
    /// Every file is read whole (each state is a replay of all its rows), so each is checked
    /// against its checksum here; a damaged one is an error naming it.
    pub fn open(store: &Store) -> Result<Option<Structures>, StoreError> {
        let Some(meta) = store.manifest().structures.clone() else {
            return Ok(None);
        };
        let dir = store.dir().join(STRUCTURES_DIR);
        let segments = meta
            .segments
            .iter()
            .map(|m| open_segment(&dir, m, store.checks()).map(|b| (m.clone(), b)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(Structures { meta, segments }))
    }

    pub fn meta(&self) -> &StructuresMeta {
        &self.meta
    }

    /// Tenants with rows of `kind`, sorted.
    pub fn tenants(&self, kind: AuxKind) -> Vec<String> {
        let mut out: Vec<String> = self
            .segments
            .iter()
            .filter(|(m, _)| m.kind == kind)
            .flat_map(|(m, _)| m.tenants.iter().map(|t| t.tenant.clone()))
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The tenant's thought events, oldest first.
    pub fn thought_rows(&self, tenant: &str) -> Vec<ThoughtRow> {
        self.rows(AuxKind::Thoughts, tenant, aux_rows::read_thoughts)
    }

    /// The tenant's tree node versions, oldest first.
    pub fn tree_rows(&self, tenant: &str) -> Vec<TreeRow> {
        self.rows(AuxKind::Tree, tenant, aux_rows::read_tree)
    }

    fn rows<R>(
        &self,
        kind: AuxKind,
        tenant: &str,
        read: fn(&arrow_array::RecordBatch, usize, usize) -> Vec<R>,
    ) -> Vec<R> {
        let mut out = Vec::new();
        for (m, batch) in self.segments.iter().filter(|(m, _)| m.kind == kind) {
            for t in m.tenants.iter().filter(|t| t.tenant == tenant) {
                out.extend(read(batch, t.start as usize, t.rows as usize));
            }
        }
        out
    }
}

fn open_segment(
    dir: &Path,
    m: &AuxSegmentMeta,
    checks: &Checks,
) -> Result<arrow_array::RecordBatch, StoreError> {
    let path = dir.join(&m.file);
    let bad = |message: String| StoreError::Segment {
        path: path.clone(),
        message,
    };
    let (buffer, batch) = crate::ipc::map_batch(&path, m.bytes)?;
    aux_rows::check(&batch, m.kind, m.rows).map_err(bad)?;
    let check = checks.get(&aux_file(&m.file), m.checksum);
    if let Verdict::Damaged(problem) = check.verify(buffer.as_slice()) {
        return Err(StoreError::Damaged {
            path,
            message: problem,
        });
    }
    Ok(batch)
}

impl StoreWriter {
    /// Turns the structures on for this store. Allowed once, before any item went through
    /// them (then every existing item is processed on the next sync); the same settings again
    /// are a no-op; other settings are refused (one store holds one kind of structure, like
    /// one kind of key).
    pub fn enable_structures(
        &mut self,
        thoughts: Option<ThoughtsConfig>,
        tree: Option<TreeConfig>,
    ) -> Result<(), StoreError> {
        if thoughts.is_none() && tree.is_none() {
            return Ok(());
        }
        if let Some(t) = &thoughts {
            let b = t.buckets;
            if t.tables == 0 || b < 2 || b % 2 != 0 || b > 1 << 16 {
                return Err(invalid(format!(
                    "thought LSH {b} buckets × {} tables",
                    t.tables
                )));
            }
        }
        if let Some(t) = &tree {
            let ok = t.theta0.is_finite() && t.lambda.is_finite() && t.content_chars > 0;
            if !ok {
                return Err(invalid(format!("tree settings {t:?}")));
            }
        }
        match &self.manifest.structures {
            Some(s) if s.thoughts == thoughts && s.tree == tree => return Ok(()),
            Some(s) if s.processed_to > 0 || !s.segments.is_empty() => {
                return Err(invalid(format!(
                    "{} already keeps structures (thoughts {:?}, tree {:?}); they are fixed \
                     once built (index into a new store to change them)",
                    self.dir.display(),
                    s.thoughts,
                    s.tree
                )))
            }
            _ => {}
        }
        let mut next = self.manifest.clone();
        next.version += 1;
        next.structures = Some(StructuresMeta {
            thoughts,
            tree,
            processed_to: 0,
            segments: Vec::new(),
        });
        next.save(&self.dir)?;
        self.manifest = next;
        Ok(())
    }

    /// Commits what one structure sync produced: a thoughts segment and a tree segment (each
    /// only when it has rows; rows of one tenant keep their order) and the new watermark, as
    /// one new manifest version. Returns that version.
    pub fn commit_structures(
        &mut self,
        thoughts: &[ThoughtRow],
        tree: &[TreeRow],
        processed_to: u64,
    ) -> Result<u64, StoreError> {
        let Some(meta) = self.manifest.structures.clone() else {
            return Err(invalid("the store keeps no structures".into()));
        };
        let dir = self.dir.join(STRUCTURES_DIR);
        fs::create_dir_all(&dir).map_err(io(&dir))?;
        remove_orphans(&dir, &meta)?;
        let mut next_meta = meta;
        let mut written: Vec<PathBuf> = Vec::new();
        let result = (|| {
            let mut id = next_meta.next_id();
            let dim = self.manifest.model.dim;
            for (kind, batch) in [
                (AuxKind::Thoughts, aux_rows::thoughts_batch(thoughts, dim)),
                (AuxKind::Tree, aux_rows::tree_batch(tree, dim)),
            ] {
                let Some((batch, tenants)) = batch.map_err(|e| arrow(&dir, e))? else {
                    continue;
                };
                let file = aux_file_name(id);
                let bytes = aux_rows::ipc_bytes(&batch).map_err(|e| arrow(&dir, e))?;
                let path = dir.join(&file);
                write_durably(&dir.join(format!("{file}.tmp")), &path, &bytes)?;
                written.push(path);
                let checksum = Checksum::of(&bytes);
                self.checks.written(&aux_file(&file), checksum);
                next_meta.segments.push(AuxSegmentMeta {
                    id,
                    kind,
                    file,
                    rows: batch.num_rows() as u64,
                    bytes: bytes.len() as u64,
                    checksum: Some(checksum),
                    tenants,
                });
                id += 1;
            }
            next_meta.processed_to = next_meta.processed_to.max(processed_to);
            let mut next = self.manifest.clone();
            next.version += 1;
            next.structures = Some(next_meta.clone());
            next.save(&self.dir)?;
            Ok(next)
        })();
        match result {
            Ok(next) => {
                self.manifest = next;
                Ok(self.manifest.version)
            }
            Err(e) => {
                for p in written {
                    let _ = fs::remove_file(p);
                }
                Err(e)
            }
        }
    }
}

fn invalid(message: String) -> StoreError {
    StoreError::InvalidAppend { message }
}

fn arrow(dir: &Path, source: arrow_schema::ArrowError) -> StoreError {
    StoreError::Arrow {
        path: dir.to_path_buf(),
        source,
    }
}

/// Deletes structure files no manifest names (a crash before commit left them).
fn remove_orphans(dir: &Path, meta: &StructuresMeta) -> Result<(), StoreError> {
    let named: HashSet<&str> = meta.segments.iter().map(|s| s.file.as_str()).collect();
    let mut removed = false;
    for entry in fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let name = entry.file_name();
        if !named.contains(name.to_string_lossy().as_ref()) {
            tracing::warn!(
                "removing uncommitted structure file {}",
                entry.path().display()
            );
            fs::remove_file(entry.path()).map_err(io(entry.path()))?;
            removed = true;
        }
    }
    if removed {
        sync_dir(dir)?;
    }
    Ok(())
}
