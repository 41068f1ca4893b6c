//! Decoding a segment's Arrow IPC file from its mapping, trusting none of it: arrow-ipc's
//! reader slices the body by the offsets the file states (a negative or oversized one panics
//! there), so the block and every buffer it lists are checked against the file first. Also
//! the other way (one batch as IPC file bytes) and the shape checks every file gets.

use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use arrow_ipc::convert::try_fb_to_schema;
use arrow_ipc::reader::{read_footer_length, FileDecoder};
use arrow_ipc::writer::{FileWriter, IpcWriteOptions};
use arrow_ipc::{root_as_footer, root_as_message, Block, MetadataVersion};

use crate::error::StoreError;
use crate::mmap::map_file;

/// What precedes an encapsulated message's length since format 0.15 (arrow-ipc keeps its own
/// constant private).
const CONTINUATION_MARKER: [u8; 4] = [0xff; 4];

/// Decodes the one record batch of an IPC file held in `buffer`, without copying its data.
pub(crate) fn decode_single_batch(buffer: &Buffer) -> Result<RecordBatch, String> {
    let len = buffer.len();
    if len < 16 || &buffer[..6] != b"ARROW1" || &buffer[len - 6..] != b"ARROW1" {
        return Err("not an Arrow IPC file (missing ARROW1 magic at start or end)".into());
    }
    let trailer: [u8; 10] = buffer[len - 10..]
        .try_into()
        .map_err(|_| "short trailer".to_string())?;
    let footer_len = read_footer_length(trailer).map_err(|e| e.to_string())?;
    if footer_len + 10 > len {
        return Err(format!("footer length {footer_len} exceeds the file"));
    }
    let footer = root_as_footer(&buffer[len - 10 - footer_len..len - 10])
        .map_err(|e| format!("bad footer: {e}"))?;
    let schema = try_fb_to_schema(footer.schema().ok_or("footer has no schema")?)
        .map_err(|e| format!("bad schema: {e}"))?;
    let decoder = FileDecoder::new(Arc::new(schema), footer.version()).with_require_alignment(true);
    let blocks = footer
        .recordBatches()
        .ok_or("footer lists no record batches")?;
    if blocks.len() != 1 {
        return Err(format!("expected 1 record batch, found {}", blocks.len()));
    }
    let block = blocks.get(0);
    let (start, block_len) = check_block(block, buffer)?;
    let data = buffer.slice_with_length(start, block_len);
    decoder
        .read_record_batch(block, &data)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| "empty record batch block".to_string())
}

/// The block's offset and length when it lies in the file, its message is a record batch,
/// and every buffer that message lists lies in the block's body.
fn check_block(block: &Block, buffer: &Buffer) -> Result<(usize, usize), String> {
    let start = usize::try_from(block.offset()).map_err(|_| "negative block offset")?;
    let meta = usize::try_from(block.metaDataLength())
        .ok()
        .filter(|&m| m >= 8)
        .ok_or_else(|| format!("metadata length {} of the block", block.metaDataLength()))?;
    let body = u64::try_from(block.bodyLength())
        .map_err(|_| format!("body length {} of the block", block.bodyLength()))?;
    let block_len = usize::try_from(body)
        .ok()
        .and_then(|b| b.checked_add(meta))
        .filter(|&l| start.checked_add(l).is_some_and(|end| end <= buffer.len()))
        .ok_or("record batch block lies outside the file")?;
    // the encapsulated message: [continuation marker] length, flatbuffer
    let message = &buffer[start..start + meta];
    let fb = match message[..4] == CONTINUATION_MARKER {
        true => &message[8..],
        false => &message[4..],
    };
    let message = root_as_message(fb).map_err(|e| format!("bad block message: {e}"))?;
    let batch = message
        .header_as_record_batch()
        .ok_or("the block's message is not a record batch")?;
    for (i, b) in batch.buffers().iter().flatten().enumerate() {
        let end = u64::try_from(b.offset())
            .ok()
            .zip(u64::try_from(b.length()).ok())
            .and_then(|(o, l)| o.checked_add(l));
        if end.is_none_or(|end| end > body) {
            return Err(format!(
                "buffer {i} (offset {}, length {}) lies outside the block's {body}-byte body",
                b.offset(),
                b.length()
            ));
        }
    }
    Ok((start, block_len))
}

/// One record batch as Arrow IPC file bytes, every buffer 64-byte aligned (SIMD-aligned and
/// read in place from the mapping).
pub(crate) fn encode_batch(batch: &RecordBatch) -> Result<Vec<u8>, arrow_schema::ArrowError> {
    let opts = IpcWriteOptions::try_new(64, false, MetadataVersion::V5)?;
    let mut bytes = Vec::new();
    let mut w = FileWriter::try_new_with_options(&mut bytes, &batch.schema(), opts)?;
    w.write(batch)?;
    w.finish()?;
    drop(w);
    Ok(bytes)
}

/// Maps the committed file at `path`, checks its size against the manifest's `bytes` and
/// decodes its one record batch; errors name the file. Returns the whole mapping (what its
/// checksum covers) and the batch.
pub(crate) fn map_batch(path: &Path, bytes: u64) -> Result<(Buffer, RecordBatch), StoreError> {
    let bad = |message: String| StoreError::Segment {
        path: path.to_path_buf(),
        message,
    };
    let buffer = map_file(path)?;
    if buffer.len() as u64 != bytes {
        let len = buffer.len();
        return Err(bad(format!("file is {len} bytes, manifest says {bytes}")));
    }
    let batch = decode_single_batch(&buffer).map_err(bad)?;
    Ok((buffer, batch))
}

/// The row count the manifest says (at most `u32::MAX`: rows are located by u32) and no nulls.
pub(crate) fn check_shape(batch: &RecordBatch, rows: u64) -> Result<(), String> {
    let n = batch.num_rows();
    if n as u64 != rows || n > u32::MAX as usize {
        return Err(format!("{n} rows, manifest says {rows}"));
    }
    if batch.columns().iter().any(|c| c.null_count() > 0) {
        return Err("unexpected nulls".into());
    }
    Ok(())
}
