//! The shared layout's content files: each distinct item content once.
//!
//! A content is a stored (key, value) pair plus what is derived from the key alone (BM25
//! terms, the vector). Rows of shared-layout segments keep only their own columns (tenant,
//! session, role, position, date, events, facts, neighbours…) and reference their content by
//! `content_ref` (see `schema::content_ref`); a reader resolves every row to a [`Loc`] once,
//! at open. Content
//! files are immutable like segments; compaction rewrites the ones holding content no row
//! references any more (`compact`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, UInt64Type};
use arrow_array::{Array, UInt64Array};
use arrow_array::{ArrayRef, FixedSizeListArray, Float32Array, LargeStringArray, RecordBatch};

use arrow_buffer::Buffer;

use crate::checksum::Checksum;
use crate::error::StoreError;
use crate::integrity::{Checks, FileCheck, Verdict};
use crate::ipc::{check_shape, encode_batch, map_batch};
use crate::meta::{segment_file, ContentMeta};
use crate::schema::*;

/// Where a content lives: file index in [`Contents`] and row in that file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Loc {
    pub file: u32,
    pub row: u32,
}

/// One content to write.
pub(crate) struct NewContent<'a> {
    pub hash: u64,
    pub key: &'a str,
    pub value: &'a str,
    pub terms: &'a [String],
    pub embedding: &'a [f32],
}

/// An open, memory-mapped content file.
#[derive(Debug, Clone)]
pub struct ContentFile {
    meta: ContentMeta,
    path: PathBuf,
    /// The whole mapping (what the checksum covers).
    file: Buffer,
    check: Arc<FileCheck>,
    batch: RecordBatch,
    dim: usize,
}

impl ContentFile {
    pub(crate) fn open(
        dir: &Path,
        meta: &ContentMeta,
        dim: usize,
        checks: &Checks,
    ) -> Result<ContentFile, StoreError> {
        let path = dir.join(&meta.file);
        let bad = |message: String| StoreError::Segment {
            path: path.clone(),
            message,
        };
        let (file, batch) = map_batch(&path, meta.bytes)?;
        let check = checks.get(&segment_file(&meta.file), meta.checksum);
        crate::integrity::check_if_small(&check, file.as_slice());
        if batch.schema().fields() != content_schema(dim, HashMap::new()).fields() {
            return Err(bad(format!(
                "columns do not match the content schema for dimension {dim}"
            )));
        }
        check_shape(&batch, meta.rows).map_err(bad)?;
        Ok(ContentFile {
            meta: meta.clone(),
            path,
            file,
            check,
            batch,
            dim,
        })
    }

    pub fn meta(&self) -> &ContentMeta {
        &self.meta
    }

    /// This file's verdict, hashing it the first time (see `integrity`).
    pub(crate) fn verify(&self) -> Verdict {
        self.check.verify(self.file.as_slice())
    }

    pub(crate) fn check(&self) -> &Arc<FileCheck> {
        &self.check
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn rows(&self) -> usize {
        self.batch.num_rows()
    }

    pub fn batch(&self) -> &RecordBatch {
        &self.batch
    }

    /// `content_ref` of each row.
    pub fn hashes(&self) -> &[u64] {
        self.batch
            .column(CNT_CONTENT_REF)
            .as_primitive::<UInt64Type>()
            .values()
    }

    pub fn key(&self, row: usize) -> &str {
        self.batch.column(CNT_KEY).as_string::<i64>().value(row)
    }

    pub fn value(&self, row: usize) -> &str {
        self.batch.column(CNT_VALUE).as_string::<i64>().value(row)
    }

    pub fn terms(&self, row: usize) -> impl Iterator<Item = &str> + '_ {
        let list = self.batch.column(CNT_TERMS).as_list::<i32>();
        let offsets = list.value_offsets();
        let values = list.values().as_string::<i32>();
        (offsets[row] as usize..offsets[row + 1] as usize).map(move |i| values.value(i))
    }

    /// All vectors, row-major `rows × dim`, borrowed from the mapping.
    pub fn embeddings(&self) -> &[f32] {
        let list = self.batch.column(CNT_EMBEDDING).as_fixed_size_list();
        let values = list.values().as_primitive::<Float32Type>().values();
        &values[list.offset() * self.dim..(list.offset() + list.len()) * self.dim]
    }
}

/// The content files of one manifest version and the hash → location index over them.
#[derive(Debug, Clone, Default)]
pub struct Contents {
    files: Vec<ContentFile>,
    index: HashMap<u64, Loc>,
}

impl Contents {
    /// Maps every content file `metas` names (in `dir`, the segments directory).
    pub(crate) fn open(
        dir: &Path,
        metas: &[ContentMeta],
        dim: usize,
        checks: &Checks,
    ) -> Result<Contents, StoreError> {
        let mut out = Contents::default();
        for m in metas {
            out.push(ContentFile::open(dir, m, dim, checks)?)?;
        }
        Ok(out)
    }

    /// The contents of another version: files this one has are kept as mapped (committed
    /// files never change), the others are mapped.
    pub(crate) fn reopen(
        &self,
        dir: &Path,
        metas: &[ContentMeta],
        dim: usize,
        checks: &Checks,
    ) -> Result<Contents, StoreError> {
        let appended = metas.len() >= self.files.len()
            && (self.files.iter().zip(metas)).all(|(f, m)| f.meta == *m);
        if appended {
            // the usual case (appends only add files): index only the new ones
            let mut out = self.clone();
            for m in &metas[self.files.len()..] {
                out.push(ContentFile::open(dir, m, dim, checks)?)?;
            }
            return Ok(out);
        }
        let mut out = Contents::default();
        for m in metas {
            let kept = self.files.iter().find(|f| f.meta.id == m.id);
            out.push(match kept {
                Some(f) => f.clone(),
                None => ContentFile::open(dir, m, dim, checks)?,
            })?;
        }
        Ok(out)
    }

    /// Adds a file; a content it repeats is refused (the writer stores each hash once), and
    /// then nothing is added.
    pub(crate) fn push(&mut self, file: ContentFile) -> Result<(), StoreError> {
        let mut mine = std::collections::HashSet::with_capacity(file.rows());
        let repeated =
            (file.hashes().iter()).find(|&&h| self.index.contains_key(&h) || !mine.insert(h));
        if let Some(h) = repeated {
            return Err(StoreError::Segment {
                path: file.path.clone(),
                message: format!("content {h:016x} is stored twice"),
            });
        }
        let at = self.files.len() as u32;
        for (row, &h) in file.hashes().iter().enumerate() {
            let row = row as u32;
            self.index.insert(h, Loc { file: at, row });
        }
        self.files.push(file);
        Ok(())
    }

    /// Opens and adds the content file just written.
    pub(crate) fn push_new(
        &mut self,
        dir: &Path,
        meta: &ContentMeta,
        dim: usize,
        checks: &Checks,
    ) -> Result<(), StoreError> {
        self.push(ContentFile::open(dir, meta, dim, checks)?)
    }

    pub(crate) fn get(&self, hash: u64) -> Option<Loc> {
        self.index.get(&hash).copied()
    }

    pub(crate) fn file(&self, loc: Loc) -> &ContentFile {
        &self.files[loc.file as usize]
    }

    /// Every mapped content file.
    pub fn files(&self) -> &[ContentFile] {
        &self.files
    }

    /// Distinct contents stored.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }
}

/// Shared handle to a version's contents (segments keep the one they were resolved against).
pub(crate) type SharedContents = Arc<Contents>;

/// Writes `new` as content file `id` in `dir` (temp, fsync, rename).
pub(crate) fn write_contents(
    dir: &Path,
    id: u64,
    dim: usize,
    new: &[NewContent<'_>],
    metadata: HashMap<String, String>,
) -> Result<ContentMeta, StoreError> {
    let file = format!("cnt-{id:08}.arrow");
    let path = dir.join(&file);
    let arrow_err = |source| StoreError::Arrow {
        path: path.clone(),
        source,
    };
    let mut terms = ListBuilder::new(StringBuilder::new()).with_field(term_item_field());
    for c in new {
        for t in c.terms {
            terms.values().append_value(t);
        }
        terms.append(true);
    }
    let emb: Vec<f32> = new
        .iter()
        .flat_map(|c| c.embedding.iter().copied())
        .collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from_iter_values(new.iter().map(|c| c.hash))),
        Arc::new(UInt64Array::from_iter_values(
            new.iter()
                .map(|c| memdex_core::content_hash(c.key.as_bytes())),
        )),
        Arc::new(LargeStringArray::from_iter_values(
            new.iter().map(|c| c.key),
        )),
        Arc::new(LargeStringArray::from_iter_values(
            new.iter().map(|c| c.value),
        )),
        Arc::new(terms.finish()),
        Arc::new(
            FixedSizeListArray::try_new(
                embedding_item_field(),
                dim as i32,
                Arc::new(Float32Array::from(emb)),
                None,
            )
            .map_err(arrow_err)?,
        ),
    ];
    let schema = Arc::new(content_schema(dim, metadata));
    let batch = RecordBatch::try_new(schema, columns).map_err(arrow_err)?;
    let (bytes, checksum) = write_batch_file(dir, &file, &batch)?;
    Ok(ContentMeta {
        id,
        file,
        rows: new.len() as u64,
        bytes,
        checksum: Some(checksum),
    })
}

/// Writes one record batch as `dir/file` durably; returns its size and checksum.
pub(crate) fn write_batch_file(
    dir: &Path,
    file: &str,
    batch: &RecordBatch,
) -> Result<(u64, Checksum), StoreError> {
    let path = dir.join(file);
    let bytes = encode_batch(batch).map_err(|source| StoreError::Arrow {
        path: path.clone(),
        source,
    })?;
    crate::manifest::write_durably(&dir.join(format!("{file}.tmp")), &path, &bytes)?;
    Ok((bytes.len() as u64, Checksum::of(&bytes)))
}

/// Checks that a stored content equals the one about to be referenced under its hash (a
/// 64-bit collision would silently swap texts otherwise).
pub(crate) fn same_content(file: &ContentFile, row: usize, key: &str, value: &str) -> bool {
    file.key(row) == key && file.value(row) == value
}

impl ContentFile {
    /// Hash of each row's key (embedding reuse by key).
    pub fn key_hashes(&self) -> &[u64] {
        self.batch
            .column(CNT_KEY_HASH)
            .as_primitive::<UInt64Type>()
            .values()
    }
}
