//! Optional TiM LSH bucket ids, one `FixedSizeList<UInt16, L>` column (`lsh_buckets`) after the
//! regular columns: the bucket of every row in each of the store's `L` tables, computed at index
//! time from the projection recorded in the manifest ([`LshMeta`]). Segments written before
//! hashing was enabled have no such column: readers scan those rows exactly.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt16Type;
use arrow_array::{FixedSizeListArray, RecordBatch, UInt16Array};
use arrow_schema::{ArrowError, DataType, Field, Schema};
use serde::{Deserialize, Serialize};

/// Column name of the bucket ids.
pub const LSH_BUCKETS: &str = "lsh_buckets";

/// The hashing a store applies at index time (recorded in the manifest): `tables` seeded
/// Gaussian projections `R ∈ R^{dim × buckets/2}` (`memdex_score::lsh::Lsh::new(dim, …)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LshMeta {
    pub seed: u64,
    pub buckets: u32,
    pub tables: u32,
    pub dim: u32,
}

fn item_field() -> Arc<Field> {
    Arc::new(Field::new("item", DataType::UInt16, false))
}

pub(crate) fn field(tables: usize) -> Field {
    Field::new(
        LSH_BUCKETS,
        DataType::FixedSizeList(item_field(), tables as i32),
        false,
    )
}

/// Appends the bucket column's field to `schema`.
pub(crate) fn with_column(schema: Schema, tables: usize) -> Schema {
    let metadata = schema.metadata().clone();
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(field(tables));
    Schema::new(fields).with_metadata(metadata)
}

/// `rows × tables` ids, row-major, as the column.
pub(crate) fn array(ids: Vec<u16>, tables: usize) -> Result<FixedSizeListArray, ArrowError> {
    FixedSizeListArray::try_new(
        item_field(),
        tables as i32,
        Arc::new(UInt16Array::from(ids)),
        None,
    )
}

/// Index of the bucket column in a decoded segment and its table count, if present and well
/// formed.
pub(crate) fn find(batch: &RecordBatch) -> Option<(usize, usize)> {
    let i = batch.schema().index_of(LSH_BUCKETS).ok()?;
    match batch.schema().field(i).data_type() {
        DataType::FixedSizeList(f, n) if f.data_type() == &DataType::UInt16 => {
            Some((i, *n as usize))
        }
        _ => None,
    }
}

/// The column's values, `rows × tables`, borrowed from the mapping.
pub(crate) fn values(batch: &RecordBatch, col: usize) -> &[u16] {
    batch
        .column(col)
        .as_fixed_size_list()
        .values()
        .as_primitive::<UInt16Type>()
        .values()
}
