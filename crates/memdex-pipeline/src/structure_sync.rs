//! The structures' seat in the append path: after each commit (and after a delete) the
//! pipeline's [`StructureSync`] brings the store's TiM thoughts and MemTree up to date
//! (`memdex_structures::Maintainer`), embedding their texts through the same function as the
//! items' keys (the encoder, or the model thread's queue).

use std::sync::Arc;

use memdex_store::{Store, StoreWriter};
use memdex_structures::{Maintainer, SyncReport, ThoughtExtractor};

use crate::batch::EmbedFn;
use crate::PipelineError;

/// Keeps a store's structures (when it has any) in step with its items.
#[derive(Debug)]
pub(crate) struct StructureSync {
    maintainer: Maintainer,
}

impl StructureSync {
    /// The sync of `store`'s structures with the built-in extractor (None: it keeps none).
    /// A store built with another thought extractor is logged and left alone (its watermark
    /// stays, so a build with that extractor catches up).
    pub(crate) fn for_store(store: &Store) -> Option<StructureSync> {
        match Maintainer::for_store(store) {
            Ok(m) => m.map(|maintainer| StructureSync { maintainer }),
            Err(e) => {
                tracing::error!("{}: structures not maintained: {e}", store.dir().display());
                None
            }
        }
    }

    /// The sync with the caller's thought extractor.
    pub(crate) fn with_extractor(
        store: &Store,
        x: Arc<dyn ThoughtExtractor>,
    ) -> Result<Option<StructureSync>, PipelineError> {
        Ok(Maintainer::with_extractor(store, x)?.map(|maintainer| StructureSync { maintainer }))
    }

    /// Syncs against `store` (the writer's committed view).
    pub(crate) fn sync(
        &mut self,
        store: &Store,
        writer: &mut StoreWriter,
        embed: &mut EmbedFn<'_>,
        deleted_in: &[&str],
    ) -> Result<SyncReport, PipelineError> {
        let mut texts = |t: &[&str]| -> Result<Vec<f32>, String> {
            embed(t).map(|e| e.data).map_err(|e| e.to_string())
        };
        Ok(self
            .maintainer
            .sync(store, writer, &mut texts, deleted_in)?)
    }
}
