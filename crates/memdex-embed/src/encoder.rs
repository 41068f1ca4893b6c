//! The encoder seam (TEI's `Backend`): what the model thread of an engine, a searcher or an
//! index run owns. memdex's BERT-family [`Embedder`] is the implementation; tests use a small
//! double, so code above this crate never needs candle types or a model on disk.

use memdex_core::{DeviceChoice, ModelInfo, TextKind};
use memdex_score::DenseScorer;

use crate::{
    device_name, select_device, EmbedError, EmbedOptions, Embedder, Embeddings, TextTokenizer,
};

/// A sentence encoder owned by one thread.
pub trait Encoder: Send + std::fmt::Debug {
    /// The model's identity (name, fingerprint, dimension, pooling, prefixes).
    fn info(&self) -> &ModelInfo;

    /// Where it runs, in words (`cpu`, `cuda:0`).
    fn device(&self) -> String;

    /// Whether it runs on an accelerator (then searches are best scored there, batched).
    fn is_accelerator(&self) -> bool {
        false
    }

    /// Which implementation (`fast-cpu`, `candle`, …), for logs and reports.
    fn backend(&self) -> &'static str;

    /// Its kernels and why they were chosen (the fast CPU encoder: instruction set and
    /// large-batch products, as `memdex bench embed` prints them), for reports.
    fn kernels(&self) -> String {
        self.backend().to_string()
    }

    /// Tokens one forward pass takes at most (the queue's batching budget).
    fn max_batch_tokens(&self) -> usize;

    /// Embeds `texts` (prefix for `kind` applied); `progress` gets the number of texts done
    /// after each forward pass. Rows come back in input order.
    fn embed_with_progress(
        &self,
        texts: &[&str],
        kind: TextKind,
        progress: &mut dyn FnMut(usize),
    ) -> Result<Embeddings, EmbedError>;

    fn embed(&self, texts: &[&str], kind: TextKind) -> Result<Embeddings, EmbedError> {
        self.embed_with_progress(texts, kind, &mut |_| {})
    }

    /// Its tokenizer, for callers that tokenize on their own threads and hand
    /// [`Self::embed_ids`] the ids (None: it takes texts only).
    fn tokenizer(&self) -> Option<TextTokenizer> {
        None
    }

    /// Embeds texts its [`Self::tokenizer`] turned into ids; rows in input order. Only an
    /// encoder with a tokenizer is asked.
    fn embed_ids(&self, ids: &[Vec<u32>]) -> Result<Embeddings, EmbedError> {
        let _ = ids;
        Err(EmbedError::Setting {
            name: "tokenizer",
            message: format!("the {} encoder takes texts, not token ids", self.backend()),
        })
    }

    /// Runs one tiny input: fails when the model or its device no longer works.
    fn health(&self) -> Result<(), EmbedError> {
        self.embed(&["ok"], TextKind::Query).map(|_| ())
    }

    /// A dense scorer on this encoder's device, to be called from the thread that owns the
    /// encoder (None: searches are scored on the CPU where they are ranked).
    fn device_scorer(&self) -> Option<Box<dyn DenseScorer>> {
        None
    }

    /// Another instance of this encoder, for another thread (a serving engine's model workers
    /// beyond the first): the same model, the same vectors, on the same device (on CUDA each
    /// instance issues on its thread's default stream). None: it cannot be replicated (then
    /// an engine runs one model worker only); an error: loading it failed.
    fn replica(&self) -> Option<Result<Box<dyn Encoder>, EmbedError>> {
        None
    }
}

impl Encoder for Embedder {
    fn info(&self) -> &ModelInfo {
        Embedder::info(self)
    }

    fn device(&self) -> String {
        device_name(Embedder::device(self))
    }

    fn is_accelerator(&self) -> bool {
        !Embedder::device(self).is_cpu()
    }

    fn backend(&self) -> &'static str {
        self.backend_name()
    }

    fn kernels(&self) -> String {
        Embedder::kernels(self)
    }

    fn max_batch_tokens(&self) -> usize {
        self.batch_policy().0
    }

    fn embed_with_progress(
        &self,
        texts: &[&str],
        kind: TextKind,
        progress: &mut dyn FnMut(usize),
    ) -> Result<Embeddings, EmbedError> {
        Embedder::embed_with_progress(self, texts, kind, progress)
    }

    fn tokenizer(&self) -> Option<TextTokenizer> {
        Some(self.text_tokenizer())
    }

    fn embed_ids(&self, ids: &[Vec<u32>]) -> Result<Embeddings, EmbedError> {
        Embedder::embed_ids(self, ids, &mut |_| {})
    }

    fn device_scorer(&self) -> Option<Box<dyn DenseScorer>> {
        Some(Box::new(crate::scorer::CandleScorer::new(
            Embedder::device(self).clone(),
        )))
    }

    fn replica(&self) -> Option<Result<Box<dyn Encoder>, EmbedError>> {
        let r = Embedder::replica(self)?;
        Some(r.map(|e| Box::new(e) as Box<dyn Encoder>))
    }
}

/// Loads the model named by `spec` (directory or a repo in the local HF cache) on the device
/// `choice` names (`auto`'s fallback to the CPU is logged by [`select_device`]).
pub fn load_encoder(
    spec: &str,
    choice: DeviceChoice,
    opts: &EmbedOptions,
) -> Result<Embedder, EmbedError> {
    Embedder::load(spec, select_device(choice)?, opts)
}
