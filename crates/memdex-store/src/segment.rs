use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_buffer::Buffer;

use arrow_array::builder::{
    Float32Builder, Int64Builder, ListBuilder, StringBuilder, UInt64Builder,
};
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Int64Type, TimestampMillisecondType, UInt32Type, UInt64Type,
};
use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, Float32Array, LargeStringArray, ListArray, RecordBatch,
    StringArray, TimestampMillisecondArray, UInt32Array, UInt64Array,
};
use memdex_core::{MemoryItem, Role};

use crate::checksum::Checksum;
use crate::contents::{ContentFile, Loc, SharedContents};
use crate::error::StoreError;
use crate::integrity::{Checks, FileCheck, Verdict};
use crate::ipc::{check_shape, encode_batch, map_batch};
use crate::manifest::{write_durably, Layout};
use crate::meta::{segment_file, SegmentMeta, TenantRange};
use crate::schema::*;

/// A row to be written: the item plus what the writer assigns.
pub(crate) struct Row<'a> {
    pub item_id: u64,
    pub position: u64,
    pub item: &'a MemoryItem,
    pub embedding: &'a [f32],
    pub derived: &'a Derived,
    /// Bucket id per LSH table (empty when the store does not hash).
    pub lsh: &'a [u16],
}

/// What the engine derives from an item at index time, stored beside it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Derived {
    /// Analysed key terms for BM25.
    pub terms: Vec<String>,
    /// Event dates as flattened `[start_ms, end_ms]` pairs.
    pub events: Vec<i64>,
    /// Extracted facts (already part of the key when key expansion is on).
    pub facts: String,
    /// FragRel semantic neighbours: (tenant position, weight).
    pub neighbors: Vec<(u64, f32)>,
    /// TiM LSH bucket id per table (empty when the store does not hash).
    pub lsh: Vec<u16>,
}

/// Writes `rows` (already in final order: tenant-grouped, position-ascending) as a segment
/// file. Returns its metadata. The file appears under its final name only when complete.
pub(crate) fn write_segment(
    dir: &Path,
    id: u64,
    dim: usize,
    layout: Layout,
    rows: &[Row<'_>],
    metadata: HashMap<String, String>,
) -> Result<SegmentMeta, StoreError> {
    let file = format!("seg-{id:08}.arrow");
    let path = dir.join(&file);
    let arrow_err = |source| StoreError::Arrow {
        path: path.clone(),
        source,
    };
    let lsh_tables = rows.first().map_or(0, |r| r.lsh.len());
    let schema = match lsh_tables {
        0 => segment_schema(dim, layout, metadata),
        t => crate::lsh_column::with_column(segment_schema(dim, layout, metadata), t),
    };
    let schema = Arc::new(schema);
    // the rows whose content this file holds (a shared segment's columns for them are dropped)
    let own: &[Row<'_>] = if layout == Layout::Inline { rows } else { &[] };
    let mut emb = Vec::new();
    if layout == Layout::Inline {
        emb.reserve(rows.len() * dim);
        for r in rows {
            emb.extend_from_slice(r.embedding);
        }
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from_iter_values(
            rows.iter().map(|r| r.item_id),
        )),
        Arc::new(StringArray::from_iter_values(
            rows.iter().map(|r| r.item.tenant.as_str()),
        )),
        Arc::new(StringArray::from_iter_values(
            rows.iter().map(|r| r.item.session_id.as_str()),
        )),
        Arc::new(UInt32Array::from_iter_values(
            rows.iter().map(|r| r.item.turn),
        )),
        Arc::new(UInt64Array::from_iter_values(
            rows.iter().map(|r| r.position),
        )),
        Arc::new(
            TimestampMillisecondArray::from_iter_values(rows.iter().map(|r| r.item.timestamp_ms))
                .with_timezone("UTC"),
        ),
        Arc::new(StringArray::from_iter_values(
            rows.iter().map(|r| r.item.role.as_str()),
        )),
        Arc::new(LargeStringArray::from_iter_values(
            own.iter().map(|r| r.item.value.as_str()),
        )),
        Arc::new(LargeStringArray::from_iter_values(
            own.iter().map(|r| r.item.key.as_str()),
        )),
        Arc::new(if layout == Layout::Inline {
            FixedSizeListArray::try_new(
                embedding_item_field(),
                dim as i32,
                Arc::new(Float32Array::from(emb)),
                None,
            )
            .map_err(arrow_err)?
        } else {
            FixedSizeListArray::new_null(embedding_item_field(), dim as i32, 0)
        }),
        Arc::new(UInt64Array::from_iter_values(
            rows.iter().map(|r| r.item.content_hash),
        )),
        Arc::new(UInt64Array::from_iter_values(
            rows.iter()
                .map(|r| memdex_core::content_hash(r.item.key.as_bytes())),
        )),
        Arc::new(terms_array(own)),
        Arc::new(events_array(rows)),
        Arc::new(LargeStringArray::from_iter_values(
            rows.iter().map(|r| r.derived.facts.as_str()),
        )),
        Arc::new(neighbors_array(rows)),
        Arc::new(neighbor_weights_array(rows)),
    ];
    // a shared segment leaves its content columns to the content files and references them
    let mut columns: Vec<ArrayRef> = (columns.into_iter().enumerate())
        .filter(|(i, _)| layout == Layout::Inline || !CONTENT_COLUMNS.contains(i))
        .map(|(_, c)| c)
        .collect();
    if layout == Layout::Shared {
        columns.push(Arc::new(UInt64Array::from_iter_values(
            rows.iter().map(|r| content_ref(&r.item.key, &r.item.value)),
        )));
    }
    if lsh_tables > 0 {
        let ids: Vec<u16> = rows.iter().flat_map(|r| r.lsh.iter().copied()).collect();
        columns.push(Arc::new(
            crate::lsh_column::array(ids, lsh_tables).map_err(arrow_err)?,
        ));
    }
    let batch = RecordBatch::try_new(schema.clone(), columns).map_err(arrow_err)?;
    let bytes = encode_batch(&batch).map_err(arrow_err)?;
    write_durably(&dir.join(format!("{file}.tmp")), &path, &bytes)?;
    let checksum = Some(Checksum::of(&bytes));

    let mut tenants: Vec<TenantRange> = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        match tenants.last_mut() {
            Some(t) if t.tenant == r.item.tenant => {
                t.rows += 1;
                t.max_position = t.max_position.max(r.position);
            }
            _ => tenants.push(TenantRange {
                tenant: r.item.tenant.clone(),
                start: i as u64,
                rows: 1,
                max_position: r.position,
            }),
        }
    }
    Ok(SegmentMeta {
        id,
        file,
        rows: rows.len() as u64,
        bytes: bytes.len() as u64,
        checksum,
        min_item_id: rows.iter().map(|r| r.item_id).min().unwrap_or(0),
        max_item_id: rows.iter().map(|r| r.item_id).max().unwrap_or(0),
        tenants,
    })
}

fn terms_array(rows: &[Row<'_>]) -> ListArray {
    let mut b = ListBuilder::new(StringBuilder::new()).with_field(term_item_field());
    for r in rows {
        for t in &r.derived.terms {
            b.values().append_value(t);
        }
        b.append(true);
    }
    b.finish()
}

fn events_array(rows: &[Row<'_>]) -> ListArray {
    let mut b = ListBuilder::new(Int64Builder::new()).with_field(event_item_field());
    for r in rows {
        b.values().append_slice(&r.derived.events);
        b.append(true);
    }
    b.finish()
}

fn neighbors_array(rows: &[Row<'_>]) -> ListArray {
    let mut b = ListBuilder::new(UInt64Builder::new()).with_field(neighbor_item_field());
    for r in rows {
        for &(p, _) in &r.derived.neighbors {
            b.values().append_value(p);
        }
        b.append(true);
    }
    b.finish()
}

fn neighbor_weights_array(rows: &[Row<'_>]) -> ListArray {
    let mut b = ListBuilder::new(Float32Builder::new()).with_field(weight_item_field());
    for r in rows {
        for &(_, w) in &r.derived.neighbors {
            b.values().append_value(w);
        }
        b.append(true);
    }
    b.finish()
}

/// An open, memory-mapped segment. Column accessors borrow straight from the mapping; a
/// shared-layout segment's content accessors borrow from the content files it references.
#[derive(Debug, Clone)]
pub struct Segment {
    meta: SegmentMeta,
    path: PathBuf,
    /// The whole mapping (what the checksum covers).
    file: Buffer,
    check: Arc<FileCheck>,
    batch: RecordBatch,
    dim: usize,
    /// The optional LSH bucket column: (column index, tables).
    lsh: Option<(usize, usize)>,
    /// Column index of each `COL_*` in this file (`usize::MAX`: not in this layout).
    cols: [usize; COLUMNS],
    body: Body,
}

/// Where a segment's rows keep their content.
#[derive(Debug, Clone)]
enum Body {
    Inline,
    /// Each row's content, resolved through `content_ref` at open.
    Shared {
        contents: SharedContents,
        locs: Arc<[Loc]>,
        /// The content files (indices in `contents`) each tenant range's rows reference.
        range_files: Arc<[Box<[u32]>]>,
    },
}

/// A matrix of stored vectors, row-major: a segment's own column (inline layout) or a
/// content file's (shared layout). Ids are unique across both and never reused.
#[derive(Debug, Clone, Copy)]
pub struct VectorBlock<'a> {
    pub id: u64,
    pub data: &'a [f32],
}

/// Consecutive rows of one [`VectorBlock`].
#[derive(Debug, Clone, Copy)]
pub struct VectorRun<'a> {
    pub block: VectorBlock<'a>,
    pub start: usize,
    pub rows: usize,
}

impl<'a> VectorRun<'a> {
    /// This run's vectors, `rows × dim`.
    pub fn data(&self, dim: usize) -> &'a [f32] {
        &self.block.data[self.start * dim..(self.start + self.rows) * dim]
    }
}

/// One stored item, borrowed from a segment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ItemRef<'a> {
    pub item_id: u64,
    pub tenant: &'a str,
    pub session_id: &'a str,
    pub turn: u32,
    pub position: u64,
    pub timestamp_ms: i64,
    pub role: Role,
    pub value: &'a str,
    pub key: &'a str,
    pub content_hash: u64,
    pub embedding: &'a [f32],
}

impl Segment {
    /// Maps and validates a committed segment against its manifest entry; a small file is
    /// hashed now (see `integrity`).
    pub(crate) fn open(
        dir: &Path,
        meta: &SegmentMeta,
        dim: usize,
        layout: Layout,
        contents: &SharedContents,
        checks: &Checks,
    ) -> Result<Segment, StoreError> {
        let seg = Self::open_unresolved(dir, meta, dim, layout, checks)?;
        match layout {
            Layout::Inline => Ok(seg),
            Layout::Shared => seg.resolved(contents),
        }
    }

    /// [`Self::open`] without locating a shared segment's contents (verification reads only
    /// its own columns).
    pub(crate) fn open_unresolved(
        dir: &Path,
        meta: &SegmentMeta,
        dim: usize,
        layout: Layout,
        checks: &Checks,
    ) -> Result<Segment, StoreError> {
        let path = dir.join(&meta.file);
        let bad = |message: String| StoreError::Segment {
            path: path.clone(),
            message,
        };
        let (file, batch) = map_batch(&path, meta.bytes)?;
        let check = checks.get(&segment_file(&meta.file), meta.checksum);
        crate::integrity::check_if_small(&check, file.as_slice());
        let expected = segment_schema(dim, layout, HashMap::new());
        let lsh = crate::lsh_column::find(&batch);
        let expected = match lsh {
            Some((_, tables)) => crate::lsh_column::with_column(expected, tables),
            None => expected,
        };
        if batch.schema().fields() != expected.fields() {
            return Err(bad(format!(
                "columns do not match the store schema for dimension {dim}"
            )));
        }
        check_shape(&batch, meta.rows).map_err(bad)?;
        let seg = Segment {
            meta: meta.clone(),
            path,
            file,
            check,
            batch,
            dim,
            lsh,
            cols: column_map(layout),
            body: Body::Inline,
        };
        match seg.check_against_manifest() {
            Ok(()) => Ok(seg),
            Err(message) => Err(StoreError::Segment {
                path: seg.path,
                message,
            }),
        }
    }

    /// A shared segment's `content_ref` of each row (None: inline).
    pub(crate) fn content_refs(&self) -> Option<&[u64]> {
        let col = self
            .batch
            .column_by_name(crate::schema::columns::CONTENT_REF)?;
        Some(col.as_primitive::<UInt64Type>().values())
    }

    /// This shared segment with every row's content located in `contents`; a row whose
    /// content no file holds is an error naming the row.
    pub(crate) fn resolved(mut self, contents: &SharedContents) -> Result<Segment, StoreError> {
        let hashes = self.u64_column(COL_CONTENT_REF);
        let mut locs: Vec<Loc> = Vec::with_capacity(hashes.len());
        for (row, &h) in hashes.iter().enumerate() {
            match contents.get(h) {
                Some(loc) => locs.push(loc),
                None => {
                    return Err(StoreError::Segment {
                        path: self.path,
                        message: format!(
                            "row {row} references content {h:016x}, which no content file \
                             holds{}",
                            damaged_contents(contents)
                        ),
                    })
                }
            }
        }
        let range_files = (self.meta.tenants.iter())
            .map(|t| {
                let rows = &locs[t.start as usize..(t.start + t.rows) as usize];
                let mut files: Vec<u32> = rows.iter().map(|l| l.file).collect();
                files.sort_unstable();
                files.dedup();
                files.into_boxed_slice()
            })
            .collect();
        self.body = Body::Shared {
            contents: contents.clone(),
            locs: locs.into(),
            range_files,
        };
        Ok(self)
    }

    /// This file's verdict, hashing it the first time (see `integrity`).
    pub(crate) fn verify(&self) -> Verdict {
        self.check.verify(self.file.as_slice())
    }

    pub(crate) fn check(&self) -> &Arc<FileCheck> {
        &self.check
    }

    /// The content files the rows of tenant range `range` reference (none when inline).
    pub(crate) fn range_files(&self, range: usize) -> &[u32] {
        match &self.body {
            Body::Inline => &[],
            Body::Shared { range_files, .. } => &range_files[range],
        }
    }

    /// Content file `f` of the contents this segment was resolved against (shared layout).
    pub(crate) fn content_file(&self, f: u32) -> Option<&ContentFile> {
        match &self.body {
            Body::Inline => None,
            Body::Shared { contents, .. } => contents.files().get(f as usize),
        }
    }

    /// Where `row`'s content lives (shared layout).
    pub(crate) fn loc(&self, row: usize) -> Option<Loc> {
        match &self.body {
            Body::Inline => None,
            Body::Shared { locs, .. } => Some(locs[row]),
        }
    }

    /// The content file and row holding `row`'s content (shared layout).
    fn content(&self, row: usize) -> Option<(&ContentFile, usize)> {
        match &self.body {
            Body::Inline => None,
            Body::Shared { contents, locs, .. } => {
                let loc = locs[row];
                Some((contents.file(loc), loc.row as usize))
            }
        }
    }

    pub fn layout(&self) -> Layout {
        match self.body {
            Body::Inline => Layout::Inline,
            Body::Shared { .. } => Layout::Shared,
        }
    }

    /// The manifest entry must describe this file: each tenant range holds exactly that
    /// tenant's rows, position-ascending up to its `max_position`, and the item ids lie in the
    /// entry's bounds. (The manifest's own shape — ranges tiling the rows — is checked when it
    /// is loaded.)
    fn check_against_manifest(&self) -> Result<(), String> {
        let tenants = self.col(COL_TENANT).as_string::<i32>();
        let positions = self.positions();
        for t in &self.meta.tenants {
            let (start, end) = (t.start as usize, (t.start + t.rows) as usize);
            if end > self.rows() {
                return Err(format!(
                    "tenant {:?} range ends past the file's rows",
                    t.tenant
                ));
            }
            if let Some(r) = (start..end).find(|&r| tenants.value(r) != t.tenant) {
                return Err(format!(
                    "row {r} belongs to tenant {:?}, the manifest says {:?}",
                    tenants.value(r),
                    t.tenant
                ));
            }
            let p = &positions[start..end];
            if p.windows(2).any(|w| w[0] >= w[1]) || p.last() != Some(&t.max_position) {
                return Err(format!(
                    "tenant {:?}: positions are not ascending up to {}",
                    t.tenant, t.max_position
                ));
            }
        }
        let ids = self.item_ids();
        let (lo, hi) = (ids.iter().min(), ids.iter().max());
        if ids.is_empty()
            || lo != Some(&self.meta.min_item_id)
            || hi != Some(&self.meta.max_item_id)
        {
            return Err(format!(
                "item ids span {lo:?}..={hi:?}, the manifest says {}..={}",
                self.meta.min_item_id, self.meta.max_item_id
            ));
        }
        Ok(())
    }

    pub fn meta(&self) -> &SegmentMeta {
        &self.meta
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn rows(&self) -> usize {
        self.batch.num_rows()
    }

    /// The whole record batch (every column, whatever the schema holds).
    pub fn batch(&self) -> &RecordBatch {
        &self.batch
    }

    /// The vector of `row`, borrowed from the mapping.
    pub fn embedding(&self, row: usize) -> &[f32] {
        let dim = self.dim;
        match self.content(row) {
            None => &self.inline_embeddings()[row * dim..(row + 1) * dim],
            Some((f, r)) => &f.embeddings()[r * dim..(r + 1) * dim],
        }
    }

    /// The vectors of rows `start..start + rows` as runs of consecutive block rows, in row
    /// order: one run for an inline segment; for a shared one, a run per stretch of rows
    /// whose contents lie consecutively in one content file (a session's turns, typically).
    pub fn vector_runs(&self, start: usize, rows: usize) -> Vec<VectorRun<'_>> {
        let (contents, locs) = match &self.body {
            Body::Inline => {
                let block = VectorBlock {
                    id: self.meta.id,
                    data: self.inline_embeddings(),
                };
                return vec![VectorRun { block, start, rows }];
            }
            Body::Shared { contents, locs, .. } => (contents, &locs[start..start + rows]),
        };
        let mut out: Vec<VectorRun<'_>> = Vec::new();
        let mut prev: Option<Loc> = None;
        for &loc in locs {
            let extends = prev.is_some_and(|p| p.file == loc.file && p.row + 1 == loc.row);
            match out.last_mut() {
                Some(run) if extends => run.rows += 1,
                _ => {
                    let f = contents.file(loc);
                    out.push(VectorRun {
                        block: VectorBlock {
                            id: f.meta().id,
                            data: f.embeddings(),
                        },
                        start: loc.row as usize,
                        rows: 1,
                    });
                }
            }
            prev = Some(loc);
        }
        out
    }

    fn inline_embeddings(&self) -> &[f32] {
        let list = self.col(COL_EMBEDDING).as_fixed_size_list();
        let values = list.values().as_primitive::<Float32Type>().values();
        &values[list.offset() * self.dim..(list.offset() + list.len()) * self.dim]
    }

    /// LSH bucket ids, `rows × tables` (with the table count), when this segment has them.
    pub fn lsh_buckets(&self) -> Option<(&[u16], usize)> {
        self.lsh
            .map(|(col, tables)| (crate::lsh_column::values(&self.batch, col), tables))
    }

    /// xxh3 of each row's key text.
    pub fn key_hashes(&self) -> &[u64] {
        self.u64_column(COL_KEY_HASH)
    }

    /// The analysed key terms of `row` (empty for items stored without terms).
    pub fn terms(&self, row: usize) -> impl Iterator<Item = &str> + '_ {
        let (list, row) = match self.content(row) {
            None => (self.col(COL_TERMS).as_list::<i32>(), row),
            Some((f, r)) => (f.batch().column(CNT_TERMS).as_list::<i32>(), r),
        };
        let offsets = list.value_offsets();
        let values = list.values().as_string::<i32>();
        (offsets[row] as usize..offsets[row + 1] as usize).map(move |i| values.value(i))
    }

    /// Event dates of `row` as `(start_ms, end_ms)` pairs.
    pub fn events(&self, row: usize) -> impl Iterator<Item = (i64, i64)> + '_ {
        let list = self.col(COL_EVENTS).as_list::<i32>();
        let offsets = list.value_offsets();
        let values = list.values().as_primitive::<Int64Type>().values();
        values[offsets[row] as usize..offsets[row + 1] as usize]
            .chunks_exact(2)
            .map(|p| (p[0], p[1]))
    }

    /// FragRel semantic neighbours of `row`: (tenant position, weight).
    pub fn neighbors(&self, row: usize) -> impl Iterator<Item = (u64, f32)> + '_ {
        let pos = self.col(COL_NEIGHBORS).as_list::<i32>();
        let w = self.col(COL_NEIGHBOR_WEIGHTS).as_list::<i32>();
        let (po, wo) = (pos.value_offsets(), w.value_offsets());
        let pv = &pos.values().as_primitive::<UInt64Type>().values()
            [po[row] as usize..po[row + 1] as usize];
        let wv = &w.values().as_primitive::<Float32Type>().values()
            [wo[row] as usize..wo[row + 1] as usize];
        pv.iter().copied().zip(wv.iter().copied())
    }

    /// Facts extracted for `row` (empty when none).
    pub fn facts(&self, row: usize) -> &str {
        self.col(COL_FACTS).as_string::<i64>().value(row)
    }

    pub fn item_ids(&self) -> &[u64] {
        self.u64_column(COL_ITEM_ID)
    }

    /// Position of each row in its tenant's history.
    pub fn positions(&self) -> &[u64] {
        self.u64_column(COL_POSITION)
    }

    /// Session start of each row, ms since the epoch.
    pub fn timestamps(&self) -> &[i64] {
        self.col(COL_TIMESTAMP)
            .as_primitive::<TimestampMillisecondType>()
            .values()
    }

    /// The tenant of `row`.
    pub(crate) fn tenant(&self, row: usize) -> &str {
        self.col(COL_TENANT).as_string::<i32>().value(row)
    }

    pub fn session_id(&self, row: usize) -> &str {
        self.col(COL_SESSION_ID).as_string::<i32>().value(row)
    }

    pub fn key(&self, row: usize) -> &str {
        match self.content(row) {
            None => self.col(COL_KEY).as_string::<i64>().value(row),
            Some((f, r)) => f.key(r),
        }
    }

    /// The returned text of `row`.
    pub fn value(&self, row: usize) -> &str {
        match self.content(row) {
            None => self.col(COL_VALUE).as_string::<i64>().value(row),
            Some((f, r)) => f.value(r),
        }
    }

    /// The column at inline index `col` (`COL_*`), wherever this file's layout puts it.
    fn col(&self, col: usize) -> &ArrayRef {
        self.batch.column(self.cols[col])
    }

    fn u64_column(&self, col: usize) -> &[u64] {
        self.col(col).as_primitive::<UInt64Type>().values()
    }

    /// The stored item at `row` (every column; ranking loops use the column accessors).
    pub fn item(&self, row: usize) -> ItemRef<'_> {
        let role = self.col(COL_ROLE).as_string::<i32>().value(row);
        ItemRef {
            item_id: self.item_ids()[row],
            tenant: self.col(COL_TENANT).as_string::<i32>().value(row),
            session_id: self.session_id(row),
            turn: self.col(COL_TURN).as_primitive::<UInt32Type>().value(row),
            position: self.positions()[row],
            timestamp_ms: self.timestamps()[row],
            role: role.parse().unwrap_or(Role::Mixed),
            value: self.value(row),
            key: self.key(row),
            content_hash: self.u64_column(COL_CONTENT_HASH)[row],
            embedding: self.embedding(row),
        }
    }
}

/// "; content file F is damaged: …" for each of `contents`' files whose bytes fail their
/// checksum (each hashed now): why a reference may resolve nowhere.
fn damaged_contents(contents: &SharedContents) -> String {
    let mut out = String::new();
    for f in contents.files() {
        if let Verdict::Damaged(problem) = f.verify() {
            out.push_str(&format!("; {} is damaged: {problem}", f.check().name()));
        }
    }
    out
}
