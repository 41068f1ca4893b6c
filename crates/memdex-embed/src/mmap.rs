//! The only `unsafe` in memdex-embed: memory-mapping safetensors weights through candle.
//!
//! # Safety
//!
//! `VarBuilder::from_mmaped_safetensors` maps the weight files read-only; the mapping is
//! undefined behaviour if another process modifies or truncates a file while it is mapped.
//! Model directories are treated as read-only inputs: memdex never writes into them, and
//! `scripts/fetch-model.sh` installs a model by renaming a complete directory into place, so a
//! concurrently loading memdex sees either the old or the new files, never a partial write.
#![allow(unsafe_code)]

use std::path::PathBuf;

use candle_core::{DType, Device};
use candle_nn::VarBuilder;

pub(crate) fn safetensors_var_builder(
    paths: &[PathBuf],
    dtype: DType,
    device: &Device,
) -> candle_core::Result<VarBuilder<'static>> {
    // SAFETY: see the module docs.
    unsafe { VarBuilder::from_mmaped_safetensors(paths, dtype, device) }
}
