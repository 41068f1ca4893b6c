//! The store's word table: one vector per BM25 term of the stored keys, from the store's own
//! model, for query expansion (memdex-rank's `expand` stage reaches evidence that shares no
//! word with a question through the terms whose vectors are nearest to the question's).
//!
//! A term's vector is the embedding of the first word seen with that term ("hiking" for
//! `hike`). Terms are tenant-independent (a vector depends on the model only), so each is
//! embedded once per store, whichever tenants use it. Files `segments/wrd-N.arrow` (columns
//! `term`, `word`, `embedding`), immutable and named by the manifest like segments; the
//! pipeline commits a batch's new terms just before the segment whose keys brought them, so
//! every committed row's terms have vectors (a crash between the two leaves vectors of terms
//! no row has yet, which is harmless). Stores built before the table have none for their
//! older keys: expansion simply finds fewer candidates there.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{FixedSizeListBuilder, Float32Builder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::Float32Type;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};

use arrow_buffer::Buffer;

use crate::contents::write_batch_file;
use crate::error::StoreError;
use crate::integrity::{Checks, FileCheck, Verdict};
use crate::ipc::map_batch;
use crate::meta::{segment_file, WordsMeta};
use crate::schema::embedding_item_field;

/// One mapped word file.
#[derive(Debug, Clone)]
struct WordFile {
    meta: WordsMeta,
    batch: RecordBatch,
    /// The whole mapping (what the checksum covers).
    file: Buffer,
    check: Arc<FileCheck>,
}

const TERM: usize = 0;
const WORD: usize = 1;
const EMBEDDING: usize = 2;

/// Every term's vector, over the mapped word files (a term in several files: the first).
#[derive(Debug, Clone, Default)]
pub struct WordTable {
    files: Vec<WordFile>,
    /// term → (file, row)
    index: HashMap<Box<str>, (u32, u32)>,
    dim: usize,
}

impl WordTable {
    /// Maps the files `metas` names in `seg_dir`, reusing those `prev` already maps; small
    /// files are hashed now (see `integrity`).
    pub(crate) fn open(
        seg_dir: &Path,
        metas: &[WordsMeta],
        dim: usize,
        prev: Option<&WordTable>,
        checks: &Checks,
    ) -> Result<WordTable, StoreError> {
        let mut table = match prev {
            Some(p) if metas.starts_with(&p.metas()) => p.clone(),
            _ => WordTable {
                dim,
                ..WordTable::default()
            },
        };
        for m in &metas[table.files.len()..] {
            let path = seg_dir.join(&m.file);
            let (file, batch) = map_batch(&path, m.bytes)?;
            check(&batch, m.rows, dim).map_err(|message| StoreError::Segment {
                path: path.clone(),
                message,
            })?;
            let check = checks.get(&segment_file(&m.file), m.checksum);
            crate::integrity::check_if_small(&check, file.as_slice());
            table.push(WordFile {
                meta: m.clone(),
                batch,
                file,
                check,
            });
        }
        Ok(table)
    }

    fn push(&mut self, file: WordFile) {
        let f = self.files.len() as u32;
        let terms = file.batch.column(TERM).as_string::<i32>();
        for row in 0..terms.len() {
            (self.index)
                .entry(terms.value(row).into())
                .or_insert((f, row as u32));
        }
        self.files.push(file);
    }

    fn metas(&self) -> Vec<WordsMeta> {
        self.files.iter().map(|f| f.meta.clone()).collect()
    }

    /// This table without the files whose bytes fail their checksum (each file hashed the
    /// first time): what query expansion reads. Itself when every file is sound.
    pub(crate) fn without_damaged(self: &Arc<Self>) -> Arc<WordTable> {
        let damaged =
            |f: &WordFile| matches!(f.check.verify(f.file.as_slice()), Verdict::Damaged(_));
        if !self.files.iter().any(damaged) {
            return self.clone();
        }
        let mut table = WordTable {
            dim: self.dim,
            ..WordTable::default()
        };
        for f in self.files.iter().filter(|f| !damaged(f)) {
            table.push(f.clone());
        }
        Arc::new(table)
    }

    /// The files' checks with their bytes (verification passes).
    pub(crate) fn checks(&self) -> impl Iterator<Item = (&Arc<FileCheck>, &[u8])> {
        self.files.iter().map(|f| (&f.check, f.file.as_slice()))
    }

    /// Terms with a vector.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    pub fn contains(&self, term: &str) -> bool {
        self.locate(term).is_some()
    }

    /// Where `term`'s vector is ([`Self::vector_at`]), if it has one in a file not known to
    /// be damaged (a file found damaged after this table was built is skipped here).
    pub fn locate(&self, term: &str) -> Option<(u32, u32)> {
        let at = self.index.get(term).copied()?;
        (!self.files[at.0 as usize].check.known_damaged()).then_some(at)
    }

    /// The vector at a location [`Self::locate`] gave.
    pub fn vector_at(&self, (file, row): (u32, u32)) -> &[f32] {
        let list = self.files[file as usize]
            .batch
            .column(EMBEDDING)
            .as_fixed_size_list();
        let values = list.values().as_primitive::<Float32Type>().values();
        let start = (list.offset() + row as usize) * self.dim;
        &values[start..start + self.dim]
    }

    /// `term`'s vector and the word it was embedded from.
    pub fn get(&self, term: &str) -> Option<(&str, &[f32])> {
        let at @ (file, row) = self.locate(term)?;
        let words = (self.files[file as usize].batch.column(WORD)).as_string::<i32>();
        Some((words.value(row as usize), self.vector_at(at)))
    }
}

/// A word file's shape: the manifest's row count, three columns, vectors of the store's
/// dimension, no nulls.
fn check(batch: &RecordBatch, rows: u64, dim: usize) -> Result<(), String> {
    crate::ipc::check_shape(batch, rows)?;
    let types = [
        DataType::Utf8,
        DataType::Utf8,
        DataType::FixedSizeList(embedding_item_field(), dim as i32),
    ];
    if batch.num_columns() != types.len()
        || (0..types.len()).any(|c| batch.column(c).data_type() != &types[c])
    {
        return Err(format!(
            "not a word file of dimension {dim} (columns {:?})",
            batch.schema().fields()
        ));
    }
    Ok(())
}

pub(crate) fn words_batch(words: &[(String, String)], vectors: &[f32], dim: usize) -> RecordBatch {
    let (mut terms, mut surface) = (StringBuilder::new(), StringBuilder::new());
    let mut embedding = FixedSizeListBuilder::new(Float32Builder::new(), dim as i32)
        .with_field(embedding_item_field());
    for ((term, word), v) in words.iter().zip(vectors.chunks_exact(dim)) {
        terms.append_value(term);
        surface.append_value(word);
        embedding.values().append_slice(v);
        embedding.append(true);
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(terms.finish()),
        Arc::new(surface.finish()),
        Arc::new(embedding.finish()),
    ];
    let schema = Schema::new(vec![
        Field::new("term", DataType::Utf8, false),
        Field::new("word", DataType::Utf8, false),
        Field::new(
            "embedding",
            DataType::FixedSizeList(embedding_item_field(), dim as i32),
            false,
        ),
    ]);
    RecordBatch::try_new(Arc::new(schema), columns).expect("the word file's columns line up")
}

/// What compacting the word table did: the new file list, the files it retires and those
/// it wrote (removed if the compaction does not commit).
pub(crate) struct WordsCompaction {
    pub metas: Vec<WordsMeta>,
    pub retired: Vec<String>,
    pub written: Vec<String>,
    /// Terms dropped.
    pub removed: u64,
}

/// Bytes of the word files [`compact_words`] rewrites given the `used` terms: all of them
/// when it rewrites (a term unused, or stored twice), else none.
pub(crate) fn rewrite_bytes(table: &WordTable, used: &HashSet<&str>) -> u64 {
    let kept = table.index.keys().filter(|t| used.contains(&***t)).count();
    let stored: u64 = table.files.iter().map(|f| f.meta.rows).sum();
    if kept as u64 == stored {
        return 0;
    }
    table.files.iter().map(|f| f.meta.bytes).sum()
}

/// Rewrites the word table into one file without the terms outside `used` (those the live
/// rows compaction keeps use), so a forgotten item's words leave the disk with it; None
/// when every term is still used.
pub(crate) fn compact_words(
    table: &WordTable,
    used: &HashSet<&str>,
    seg_dir: &Path,
    next_id: &mut u64,
) -> Result<Option<WordsCompaction>, StoreError> {
    if table.is_empty() {
        return Ok(None);
    }
    let mut kept: Vec<(&str, (u32, u32))> = (table.index.iter())
        .filter(|(t, _)| used.contains(&***t))
        .map(|(t, &at)| (&**t, at))
        .collect();
    let stored: u64 = table.files.iter().map(|f| f.meta.rows).sum();
    if kept.len() as u64 == stored {
        return Ok(None);
    }
    kept.sort_unstable_by_key(|&(_, at)| at);
    let words: Vec<(String, String)> = (kept.iter())
        .map(|&(t, at)| {
            let w = (table.files[at.0 as usize].batch.column(WORD)).as_string::<i32>();
            (t.to_string(), w.value(at.1 as usize).to_string())
        })
        .collect();
    let vectors: Vec<f32> = (kept.iter())
        .flat_map(|&(_, at)| table.vector_at(at).iter().copied())
        .collect();
    let retired = table.files.iter().map(|f| f.meta.file.clone()).collect();
    let mut metas = Vec::new();
    let mut written = Vec::new();
    if !words.is_empty() {
        let id = *next_id;
        *next_id += 1;
        let file = format!("wrd-{id:08}.arrow");
        let batch = words_batch(&words, &vectors, table.dim);
        let (bytes, checksum) = write_batch_file(seg_dir, &file, &batch)?;
        written.push(file.clone());
        metas.push(WordsMeta {
            id,
            file,
            rows: words.len() as u64,
            bytes,
            checksum: Some(checksum),
        });
    }
    Ok(Some(WordsCompaction {
        metas,
        retired,
        written,
        removed: (table.len() - words.len()) as u64,
    }))
}
