use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, TimeUnit};

use crate::manifest::Layout;

/// Column names of a segment, in order.
pub mod columns {
    pub const ITEM_ID: &str = "item_id";
    pub const TENANT: &str = "tenant";
    pub const SESSION_ID: &str = "session_id";
    pub const TURN: &str = "turn";
    pub const POSITION: &str = "position";
    pub const TIMESTAMP: &str = "timestamp";
    pub const ROLE: &str = "role";
    pub const VALUE: &str = "value";
    pub const KEY: &str = "key";
    pub const EMBEDDING: &str = "embedding";
    pub const CONTENT_HASH: &str = "content_hash";
    /// xxh3 of the key text: embedding reuse across tenants and runs.
    pub const KEY_HASH: &str = "key_hash";
    /// Analysed key terms (segmented, lower-cased, stop words out, stemmed) for BM25.
    pub const TERMS: &str = "terms";
    /// Event dates mentioned in the value, resolved against the session date: flattened
    /// `[start_ms, end_ms]` pairs (inclusive, UTC days). Empty when none or not extracted.
    pub const EVENTS: &str = "events";
    /// Facts extracted from the value and prepended to the key before embedding (empty when
    /// none or not extracted).
    pub const FACTS: &str = "facts";
    /// FragRel's semantic relation: tenant positions of the item's top-m most similar items
    /// at index time (earlier items and items of the same append), empty when not computed.
    pub const NEIGHBORS: &str = "neighbors";
    /// `max(0, cosine)` of each neighbour, parallel to `neighbors`.
    pub const NEIGHBOR_WEIGHTS: &str = "neighbor_weights";
    /// Shared layout: the row's content in the content files, `content_ref(key, value)`.
    pub const CONTENT_REF: &str = "content_ref";
}

/// The shared layout's reference from a row to its content: xxh3 over the stored key (length
/// first) and value. Not `content_hash`, which hashes the item as read, before facts expand
/// its key (the same turn on another date may get another key and vector).
pub fn content_ref(key: &str, value: &str) -> u64 {
    let mut buf = Vec::with_capacity(key.len() + value.len() + 8);
    buf.extend_from_slice(&(key.len() as u64).to_le_bytes());
    buf.extend_from_slice(key.as_bytes());
    buf.extend_from_slice(value.as_bytes());
    memdex_core::content_hash(&buf)
}

pub(crate) const COL_ITEM_ID: usize = 0;
pub(crate) const COL_TENANT: usize = 1;
pub(crate) const COL_SESSION_ID: usize = 2;
pub(crate) const COL_TURN: usize = 3;
pub(crate) const COL_POSITION: usize = 4;
pub(crate) const COL_TIMESTAMP: usize = 5;
pub(crate) const COL_ROLE: usize = 6;
pub(crate) const COL_VALUE: usize = 7;
pub(crate) const COL_KEY: usize = 8;
pub(crate) const COL_EMBEDDING: usize = 9;
pub(crate) const COL_CONTENT_HASH: usize = 10;
pub(crate) const COL_KEY_HASH: usize = 11;
pub(crate) const COL_TERMS: usize = 12;
pub(crate) const COL_EVENTS: usize = 13;
pub(crate) const COL_FACTS: usize = 14;
pub(crate) const COL_NEIGHBORS: usize = 15;
pub(crate) const COL_NEIGHBOR_WEIGHTS: usize = 16;
/// Only in shared-layout segments (after every inline column).
pub(crate) const COL_CONTENT_REF: usize = 17;

pub(crate) fn neighbor_item_field() -> Arc<Field> {
    Arc::new(Field::new("item", DataType::UInt64, false))
}

pub(crate) fn weight_item_field() -> Arc<Field> {
    Arc::new(Field::new("item", DataType::Float32, false))
}

pub(crate) fn event_item_field() -> Arc<Field> {
    Arc::new(Field::new("item", DataType::Int64, false))
}

pub(crate) fn term_item_field() -> Arc<Field> {
    Arc::new(Field::new("item", DataType::Utf8, false))
}

pub(crate) fn embedding_item_field() -> Arc<Field> {
    Arc::new(Field::new("item", DataType::Float32, false))
}

/// Columns a shared-layout segment leaves to its content files.
pub(crate) const CONTENT_COLUMNS: [usize; 4] = [COL_VALUE, COL_KEY, COL_EMBEDDING, COL_TERMS];

/// The segment schema of `layout` for embeddings of dimension `dim`; `metadata` lands in the
/// file footer. A shared segment is the inline schema without [`CONTENT_COLUMNS`].
pub(crate) fn segment_schema(
    dim: usize,
    layout: Layout,
    metadata: HashMap<String, String>,
) -> Schema {
    let full = inline_schema(dim);
    let mut fields: Vec<Arc<Field>> = (full.fields().iter().enumerate())
        .filter(|(i, _)| layout == Layout::Inline || !CONTENT_COLUMNS.contains(i))
        .map(|(_, f)| f.clone())
        .collect();
    if layout == Layout::Shared {
        fields.push(Arc::new(Field::new(
            columns::CONTENT_REF,
            DataType::UInt64,
            false,
        )));
    }
    Schema::new(fields).with_metadata(metadata)
}

/// Column indices of a segment of `layout`, indexed by the `COL_*` constants (a column the
/// layout lacks maps to `usize::MAX`).
pub(crate) fn column_map(layout: Layout) -> [usize; COLUMNS] {
    let mut map = [usize::MAX; COLUMNS];
    let mut next = 0;
    for (col, slot) in map.iter_mut().enumerate() {
        let has = match layout {
            Layout::Inline => col != COL_CONTENT_REF,
            Layout::Shared => !CONTENT_COLUMNS.contains(&col),
        };
        if has {
            *slot = next;
            next += 1;
        }
    }
    map
}

/// `COL_*` constants (without the optional LSH column).
pub(crate) const COLUMNS: usize = 18;

/// Column indices of a content file.
pub(crate) const CNT_CONTENT_REF: usize = 0;
pub(crate) const CNT_KEY_HASH: usize = 1;
pub(crate) const CNT_KEY: usize = 2;
pub(crate) const CNT_VALUE: usize = 3;
pub(crate) const CNT_TERMS: usize = 4;
pub(crate) const CNT_EMBEDDING: usize = 5;

/// The content file schema: each distinct (key, value) once with what is derived from its key
/// alone.
pub(crate) fn content_schema(dim: usize, metadata: HashMap<String, String>) -> Schema {
    use columns::*;
    Schema::new(vec![
        Field::new(CONTENT_REF, DataType::UInt64, false),
        Field::new(KEY_HASH, DataType::UInt64, false),
        Field::new(KEY, DataType::LargeUtf8, false),
        Field::new(VALUE, DataType::LargeUtf8, false),
        Field::new(TERMS, DataType::List(term_item_field()), false),
        Field::new(
            EMBEDDING,
            DataType::FixedSizeList(embedding_item_field(), dim as i32),
            false,
        ),
    ])
    .with_metadata(metadata)
}

fn inline_schema(dim: usize) -> Schema {
    use columns::*;
    Schema::new(vec![
        Field::new(ITEM_ID, DataType::UInt64, false),
        Field::new(TENANT, DataType::Utf8, false),
        Field::new(SESSION_ID, DataType::Utf8, false),
        Field::new(TURN, DataType::UInt32, false),
        Field::new(POSITION, DataType::UInt64, false),
        Field::new(
            TIMESTAMP,
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            false,
        ),
        Field::new(ROLE, DataType::Utf8, false),
        Field::new(VALUE, DataType::LargeUtf8, false),
        Field::new(KEY, DataType::LargeUtf8, false),
        Field::new(
            EMBEDDING,
            DataType::FixedSizeList(embedding_item_field(), dim as i32),
            false,
        ),
        Field::new(CONTENT_HASH, DataType::UInt64, false),
        Field::new(KEY_HASH, DataType::UInt64, false),
        Field::new(TERMS, DataType::List(term_item_field()), false),
        Field::new(EVENTS, DataType::List(event_item_field()), false),
        Field::new(FACTS, DataType::LargeUtf8, false),
        Field::new(NEIGHBORS, DataType::List(neighbor_item_field()), false),
        Field::new(NEIGHBOR_WEIGHTS, DataType::List(weight_item_field()), false),
    ])
}
