//! [`Builder`]: the door's offline write half. One store opened for a batch build with the
//! model it is built with: the store's spec, its hashing and structures set once at open, then
//! session sources indexed through memdex-pipeline's overlapped build (read → itemize → embed
//! → commit), and at the end a [`Reader`] over what was built. `memdex index` and `memdex eval`
//! build through it; online appends go through [`crate::Memory`].

use std::path::Path;
use std::sync::Arc;

use memdex_core::{Granularity, OnError, Session};
use memdex_embed::Encoder;
use memdex_extract::FactExtractor;
use memdex_ingest::{Format, SessionList, SessionSource};
use memdex_pipeline::{
    index_sessions_with, ExtractOptions, Extractors, IndexOptions, IndexProgress, IndexReport,
    DEFAULT_FLUSH_ITEMS,
};
use memdex_rank::BatchRanker;
use memdex_store::{
    LshMeta, Manifest, Store, StoreError, StoreSpec, StoreWriter, ThoughtsConfig, TreeConfig,
};

use crate::request::StageNames;
use crate::{MemoryError, OpenOptions, Reader};

/// What a batch build opens a store with.
pub struct BuildSpec {
    /// A new store's granularity, model source, extraction and layout (an existing store
    /// must agree).
    pub store: StoreSpec,
    /// TiM's bucket ids, kept beside every row (None: the store's own setting).
    pub lsh: Option<LshMeta>,
    /// TiM's thoughts (None: not kept).
    pub thoughts: Option<ThoughtsConfig>,
    /// MemTree's tree (None: not kept).
    pub tree: Option<TreeConfig>,
    /// The fact extractor model the store's extraction names (None: the rules).
    pub facts: Option<Arc<dyn FactExtractor>>,
}

impl std::fmt::Debug for BuildSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuildSpec")
            .field("store", &self.store)
            .field("lsh", &self.lsh)
            .field("thoughts", &self.thoughts)
            .field("tree", &self.tree)
            .field("facts", &self.facts.as_ref().map(|f| f.name().to_string()))
            .finish()
    }
}

impl BuildSpec {
    /// A store as `store` says, without hashing, structures or an extractor model.
    pub fn new(store: StoreSpec) -> BuildSpec {
        BuildSpec {
            store,
            lsh: None,
            thoughts: None,
            tree: None,
            facts: None,
        }
    }
}

/// A store open for a batch build, with its model.
pub struct Builder {
    writer: StoreWriter,
    encoder: Box<dyn Encoder>,
    facts: Option<Arc<dyn FactExtractor>>,
}

impl std::fmt::Debug for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("dir", &self.writer.dir())
            .field("model", &self.encoder.info().name)
            .finish()
    }
}

impl Builder {
    /// Opens the store in `dir` for writing (creating it as `spec.store` says when it does
    /// not exist), takes its writer lock and sets its hashing and structures.
    pub fn open(
        dir: &Path,
        encoder: Box<dyn Encoder>,
        spec: BuildSpec,
    ) -> Result<Builder, MemoryError> {
        let mut writer = StoreWriter::open_or_create_spec(dir, encoder.info(), &spec.store)?;
        if let Some(lsh) = spec.lsh {
            writer.enable_lsh(lsh)?;
        }
        writer.enable_structures(spec.thoughts, spec.tree)?;
        Ok(Builder {
            writer,
            encoder,
            facts: spec.facts,
        })
    }

    /// Opens the store in `dir` for a batch build with the model a [`crate::Memory`] would
    /// load (`opts.model`, else the store's recorded one, else the default): an existing
    /// store as it is, a new one as `memdex index` makes it by default (`granularity` items,
    /// event dates and facts, one message of key context on turn stores). Python's
    /// `memdex.build` builds this way.
    pub fn open_default(
        dir: &Path,
        opts: &OpenOptions,
        granularity: Granularity,
    ) -> Result<Builder, MemoryError> {
        let (encoder, spec) = crate::memory::open_model(dir, opts)?;
        let model_source = Some(crate::model::source_of(&encoder, &spec));
        let (granularity, extraction) = match Manifest::load(dir) {
            Ok(m) => (m.granularity, m.extraction),
            Err(StoreError::NotAStore { .. }) => {
                let x = ExtractOptions::default().for_granularity(granularity);
                (granularity, x.extraction())
            }
            Err(e) => return Err(e.into()),
        };
        let store = StoreSpec {
            granularity,
            model_source,
            extraction,
            layout: None,
        };
        Builder::open(dir, Box::new(encoder), BuildSpec::new(store))
    }

    /// Indexes sessions held in memory, cut and keyed as `format` does by default (the first
    /// bad session stops the build; those before it stay committed).
    pub fn index_sessions(
        &mut self,
        sessions: Vec<Session>,
        format: &Format,
    ) -> Result<IndexReport, MemoryError> {
        let opts = IndexOptions {
            itemize: (format.itemize)(self.manifest().granularity),
            on_error: OnError::Abort,
            flush_items: DEFAULT_FLUSH_ITEMS,
            accel: None,
        };
        self.index(SessionList::new(sessions), &opts, &())
    }

    pub fn dir(&self) -> &Path {
        self.writer.dir()
    }

    /// The store's manifest as committed so far.
    pub fn manifest(&self) -> &Manifest {
        self.writer.manifest()
    }

    pub fn encoder(&self) -> &dyn Encoder {
        self.encoder.as_ref()
    }

    /// The store as committed so far (the view opened with the build, moved forward).
    pub fn view(&mut self) -> Result<&Store, MemoryError> {
        Ok(self.writer.view()?)
    }

    /// Indexes `source`'s sessions (those stored unchanged are skipped) with the extraction the
    /// store's manifest records, committing a segment every `opts.flush_items` items. On an
    /// error, what was committed before it stays and a re-run skips it.
    pub fn index<S: SessionSource + Send>(
        &mut self,
        source: S,
        opts: &IndexOptions,
        progress: &dyn IndexProgress,
    ) -> Result<IndexReport, MemoryError> {
        let extract =
            Extractors::for_store_with(&self.writer.manifest().extraction, self.facts.clone())?;
        let encoder = self.encoder.as_ref();
        Ok(index_sessions_with(
            source,
            &mut self.writer,
            encoder,
            opts,
            extract,
            progress,
        )?)
    }

    /// Ends the build (the writer lock is released) and opens what was built for reading with
    /// the same model, ranked by `ranker`.
    pub fn into_reader(
        mut self,
        ranker: Arc<dyn BatchRanker>,
        names: StageNames,
    ) -> Result<Reader, MemoryError> {
        let store = self.writer.view()?.clone();
        drop(self.writer);
        Reader::with_ranker(store, self.encoder, ranker, names)
    }
}
