//! Rows of the structure segments and their Arrow columns: thought events and tree node
//! versions. Optional ids are stored as `u64::MAX`; embeddings are variable-length lists
//! (empty where an event carries none), so no column has nulls.

use serde::{Deserialize, Serialize};
use std::sync::Arc;

use arrow_array::builder::{
    Float32Builder, ListBuilder, StringBuilder, UInt16Builder, UInt64Builder,
};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Int64Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Int64Array, ListArray, RecordBatch, StringArray, UInt32Array,
    UInt64Array, UInt8Array,
};
use arrow_ipc::writer::{FileWriter, IpcWriteOptions};
use arrow_ipc::MetadataVersion;
use arrow_schema::{ArrowError, DataType, Field, Schema};

/// Which structure a segment holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuxKind {
    /// TiM thought events (insert, merge, forget, retract): the audit log is these rows.
    Thoughts,
    /// MemTree node versions (the newest version of a node wins; removals end it).
    Tree,
}

/// The rows of one tenant inside a structure segment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuxTenantRange {
    pub tenant: String,
    pub start: u64,
    pub rows: u64,
}

const NONE: u64 = u64::MAX;

/// What a thought event does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ThoughtOp {
    /// A new thought (with its embedding and buckets).
    Insert,
    /// A restated or near-duplicate thought folded into `thought` (new sources, newer time).
    Merge,
    /// The thought leaves memory (contradicted, negated, "forget that…", sources deleted).
    Forget,
    /// Some of the thought's sources were deleted; it lives on with the others.
    Retract,
}

impl ThoughtOp {
    pub fn as_str(self) -> &'static str {
        match self {
            ThoughtOp::Insert => "insert",
            ThoughtOp::Merge => "merge",
            ThoughtOp::Forget => "forget",
            ThoughtOp::Retract => "retract",
        }
    }

    fn code(self) -> u8 {
        self as u8
    }

    fn from_code(c: u8) -> ThoughtOp {
        match c {
            0 => ThoughtOp::Insert,
            1 => ThoughtOp::Merge,
            2 => ThoughtOp::Forget,
            _ => ThoughtOp::Retract,
        }
    }
}

/// One thought event of a tenant (the audit log's line).
#[derive(Debug, Clone, PartialEq)]
pub struct ThoughtRow {
    pub tenant: String,
    pub op: ThoughtOp,
    /// The thought concerned (tenant-scoped id).
    pub thought: u64,
    /// The other thought involved: the one merged into, or the newer one that contradicts.
    pub other: Option<u64>,
    /// The item whose post-thinking (or deletion) caused the event.
    pub item: Option<u64>,
    pub subject: String,
    pub relation: String,
    pub object: String,
    pub sentence: String,
    /// When it was stated (ms since the epoch; for a merge, the restatement's time).
    pub time_ms: i64,
    /// Source item ids: all of them for an insert, the added ones for a merge, the removed
    /// ones for a retract.
    pub sources: Vec<u64>,
    /// The sentence's embedding (inserts only).
    pub embedding: Vec<f32>,
    /// Bucket per LSH table (inserts only).
    pub buckets: Vec<u16>,
    /// Why, in words.
    pub reason: String,
}

/// One version of a tree node (the newest version of a node is the node).
#[derive(Debug, Clone, PartialEq)]
pub struct TreeRow {
    pub tenant: String,
    /// Tenant-scoped node id (0 is the root, which is never stored).
    pub node: u64,
    /// The node is gone (its leaf's item was deleted, or it lost every child).
    pub removed: bool,
    pub parent: u64,
    pub depth: u32,
    /// The item a leaf holds (None: an aggregate node).
    pub item: Option<u64>,
    pub content: String,
    pub embedding: Vec<f32>,
}

fn list(item: DataType) -> DataType {
    DataType::List(Arc::new(Field::new("item", item, false)))
}

fn thought_schema() -> Schema {
    Schema::new(vec![
        Field::new("tenant", DataType::Utf8, false),
        Field::new("op", DataType::UInt8, false),
        Field::new("thought", DataType::UInt64, false),
        Field::new("other", DataType::UInt64, false),
        Field::new("item", DataType::UInt64, false),
        Field::new("subject", DataType::Utf8, false),
        Field::new("relation", DataType::Utf8, false),
        Field::new("object", DataType::Utf8, false),
        Field::new("sentence", DataType::Utf8, false),
        Field::new("time_ms", DataType::Int64, false),
        Field::new("sources", list(DataType::UInt64), false),
        Field::new("embedding", list(DataType::Float32), false),
        Field::new("buckets", list(DataType::UInt16), false),
        Field::new("reason", DataType::Utf8, false),
    ])
}

fn tree_schema() -> Schema {
    Schema::new(vec![
        Field::new("tenant", DataType::Utf8, false),
        Field::new("node", DataType::UInt64, false),
        Field::new("removed", DataType::Boolean, false),
        Field::new("parent", DataType::UInt64, false),
        Field::new("depth", DataType::UInt32, false),
        Field::new("item", DataType::UInt64, false),
        Field::new("content", DataType::Utf8, false),
        Field::new("embedding", list(DataType::Float32), false),
    ])
}

/// Rows stably grouped by tenant (each tenant's rows keep their order) and the ranges.
fn grouped<R>(rows: &[R], tenant: impl Fn(&R) -> &str) -> (Vec<&R>, Vec<AuxTenantRange>) {
    let mut sorted: Vec<&R> = rows.iter().collect();
    sorted.sort_by(|a, b| tenant(a).cmp(tenant(b)));
    let mut ranges: Vec<AuxTenantRange> = Vec::new();
    for (i, r) in sorted.iter().enumerate() {
        match ranges.last_mut() {
            Some(t) if t.tenant == tenant(r) => t.rows += 1,
            _ => ranges.push(AuxTenantRange {
                tenant: tenant(r).to_string(),
                start: i as u64,
                rows: 1,
            }),
        }
    }
    (sorted, ranges)
}

type Batch = Option<(RecordBatch, Vec<AuxTenantRange>)>;

/// Every row's embedding is empty or `dim` finite values; `name` says which row failed.
fn check_embeddings<R>(
    rows: &[R],
    dim: usize,
    embedding: impl Fn(&R) -> &[f32],
    name: impl Fn(&R) -> String,
) -> Result<(), ArrowError> {
    for (i, r) in rows.iter().enumerate() {
        let n = embedding(r).len();
        if n != 0 && n != dim {
            return Err(ArrowError::InvalidArgumentError(format!(
                "row {i}: embedding of {n} values; the store holds dimension {dim}"
            )));
        }
    }
    if let Some(r) = rows
        .iter()
        .find(|r| embedding(r).iter().any(|x| !x.is_finite()))
    {
        return Err(ArrowError::InvalidArgumentError(format!(
            "{}: embedding not finite",
            name(r)
        )));
    }
    Ok(())
}

fn u64_list<'a>(rows: impl Iterator<Item = &'a [u64]>) -> ListArray {
    let mut b = ListBuilder::new(UInt64Builder::new()).with_field(Arc::new(Field::new(
        "item",
        DataType::UInt64,
        false,
    )));
    for r in rows {
        b.values().append_slice(r);
        b.append(true);
    }
    b.finish()
}

fn f32_list<'a>(rows: impl Iterator<Item = &'a [f32]>) -> ListArray {
    let mut b = ListBuilder::new(Float32Builder::new()).with_field(Arc::new(Field::new(
        "item",
        DataType::Float32,
        false,
    )));
    for r in rows {
        b.values().append_slice(r);
        b.append(true);
    }
    b.finish()
}

fn strings<'a>(rows: impl Iterator<Item = &'a str>) -> StringArray {
    let mut b = StringBuilder::new();
    for r in rows {
        b.append_value(r);
    }
    b.finish()
}

/// The thought events as one record batch (None: no rows).
pub(crate) fn thoughts_batch(rows: &[ThoughtRow], dim: usize) -> Result<Batch, ArrowError> {
    if rows.is_empty() {
        return Ok(None);
    }
    check_embeddings(
        rows,
        dim,
        |r| &r.embedding,
        |r| format!("thought {} of {:?}", r.thought, r.tenant),
    )?;
    let (rows, ranges) = grouped(rows, |r| r.tenant.as_str());
    let mut buckets = ListBuilder::new(UInt16Builder::new()).with_field(Arc::new(Field::new(
        "item",
        DataType::UInt16,
        false,
    )));
    for r in &rows {
        buckets.values().append_slice(&r.buckets);
        buckets.append(true);
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(strings(rows.iter().map(|r| r.tenant.as_str()))),
        Arc::new(UInt8Array::from_iter_values(
            rows.iter().map(|r| r.op.code()),
        )),
        Arc::new(UInt64Array::from_iter_values(
            rows.iter().map(|r| r.thought),
        )),
        Arc::new(UInt64Array::from_iter_values(
            rows.iter().map(|r| r.other.unwrap_or(NONE)),
        )),
        Arc::new(UInt64Array::from_iter_values(
            rows.iter().map(|r| r.item.unwrap_or(NONE)),
        )),
        Arc::new(strings(rows.iter().map(|r| r.subject.as_str()))),
        Arc::new(strings(rows.iter().map(|r| r.relation.as_str()))),
        Arc::new(strings(rows.iter().map(|r| r.object.as_str()))),
        Arc::new(strings(rows.iter().map(|r| r.sentence.as_str()))),
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.time_ms))),
        Arc::new(u64_list(rows.iter().map(|r| r.sources.as_slice()))),
        Arc::new(f32_list(rows.iter().map(|r| r.embedding.as_slice()))),
        Arc::new(buckets.finish()),
        Arc::new(strings(rows.iter().map(|r| r.reason.as_str()))),
    ];
    let batch = RecordBatch::try_new(Arc::new(thought_schema()), columns)?;
    Ok(Some((batch, ranges)))
}

/// The tree node versions as one record batch (None: no rows).
pub(crate) fn tree_batch(rows: &[TreeRow], dim: usize) -> Result<Batch, ArrowError> {
    if rows.is_empty() {
        return Ok(None);
    }
    check_embeddings(
        rows,
        dim,
        |r| &r.embedding,
        |r| format!("node {} of {:?}", r.node, r.tenant),
    )?;
    let (rows, ranges) = grouped(rows, |r| r.tenant.as_str());
    let columns: Vec<ArrayRef> = vec![
        Arc::new(strings(rows.iter().map(|r| r.tenant.as_str()))),
        Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.node))),
        Arc::new(BooleanArray::from(
            rows.iter().map(|r| r.removed).collect::<Vec<_>>(),
        )),
        Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.parent))),
        Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.depth))),
        Arc::new(UInt64Array::from_iter_values(
            rows.iter().map(|r| r.item.unwrap_or(NONE)),
        )),
        Arc::new(strings(rows.iter().map(|r| r.content.as_str()))),
        Arc::new(f32_list(rows.iter().map(|r| r.embedding.as_slice()))),
    ];
    let batch = RecordBatch::try_new(Arc::new(tree_schema()), columns)?;
    Ok(Some((batch, ranges)))
}

/// The batch as an Arrow IPC file (64-byte aligned, like item segments).
pub(crate) fn ipc_bytes(batch: &RecordBatch) -> Result<Vec<u8>, ArrowError> {
    let opts = IpcWriteOptions::try_new(64, false, MetadataVersion::V5)?;
    let mut bytes = Vec::new();
    {
        let mut w = FileWriter::try_new_with_options(&mut bytes, &batch.schema(), opts)?;
        w.write(batch)?;
        w.finish()?;
    }
    Ok(bytes)
}

/// A decoded structure segment must have its kind's columns, the manifest's row count and
/// no nulls.
pub(crate) fn check(batch: &RecordBatch, kind: AuxKind, rows: u64) -> Result<(), String> {
    let schema = match kind {
        AuxKind::Thoughts => thought_schema(),
        AuxKind::Tree => tree_schema(),
    };
    if batch.schema().fields() != schema.fields() {
        return Err(format!("columns do not match a {kind:?} segment"));
    }
    if batch.num_rows() as u64 != rows {
        return Err(format!("{} rows, manifest says {rows}", batch.num_rows()));
    }
    if batch.columns().iter().any(|c| c.null_count() > 0) {
        return Err("unexpected nulls".into());
    }
    Ok(())
}

fn opt(v: u64) -> Option<u64> {
    (v != NONE).then_some(v)
}

fn list_values<T: arrow_array::ArrowPrimitiveType>(
    batch: &RecordBatch,
    col: usize,
    row: usize,
) -> Vec<T::Native> {
    let l = batch.column(col).as_list::<i32>();
    let o = l.value_offsets();
    l.values().as_primitive::<T>().values()[o[row] as usize..o[row + 1] as usize].to_vec()
}

/// Rows `start..start + n` of a thoughts segment.
pub(crate) fn read_thoughts(batch: &RecordBatch, start: usize, n: usize) -> Vec<ThoughtRow> {
    let s = |c: usize, r: usize| batch.column(c).as_string::<i32>().value(r).to_string();
    let u = |c: usize, r: usize| batch.column(c).as_primitive::<UInt64Type>().value(r);
    (start..start + n)
        .map(|r| ThoughtRow {
            tenant: s(0, r),
            op: ThoughtOp::from_code(batch.column(1).as_primitive::<UInt8Type>().value(r)),
            thought: u(2, r),
            other: opt(u(3, r)),
            item: opt(u(4, r)),
            subject: s(5, r),
            relation: s(6, r),
            object: s(7, r),
            sentence: s(8, r),
            time_ms: batch.column(9).as_primitive::<Int64Type>().value(r),
            sources: list_values::<UInt64Type>(batch, 10, r),
            embedding: list_values::<Float32Type>(batch, 11, r),
            buckets: list_values::<UInt16Type>(batch, 12, r),
            reason: s(13, r),
        })
        .collect()
}

/// Rows `start..start + n` of a tree segment.
pub(crate) fn read_tree(batch: &RecordBatch, start: usize, n: usize) -> Vec<TreeRow> {
    let s = |c: usize, r: usize| batch.column(c).as_string::<i32>().value(r).to_string();
    let u = |c: usize, r: usize| batch.column(c).as_primitive::<UInt64Type>().value(r);
    (start..start + n)
        .map(|r| TreeRow {
            tenant: s(0, r),
            node: u(1, r),
            removed: batch.column(2).as_boolean().value(r),
            parent: u(3, r),
            depth: batch.column(4).as_primitive::<UInt32Type>().value(r),
            item: opt(u(5, r)),
            content: s(6, r),
            embedding: list_values::<Float32Type>(batch, 7, r),
        })
        .collect()
}
