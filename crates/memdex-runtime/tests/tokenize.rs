//! The model thread runs only the model: with an encoder that shares its tokenizer, appends,
//! embeddings and searches reach it as token ids (tokenized in the callers' threads), the
//! vectors are the encoder's own, and every answered search's seconds per stage are counted.

#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use memdex_core::{ModelInfo, TextKind};
use memdex_embed::{EmbedError, Embedder, Embeddings, Encoder, TextTokenizer};
use memdex_rank::{RankOptions, TopK};
use memdex_runtime::{Engine, EngineOptions, SearchAsk, SearchJob, SEARCH_STAGES};
use memdex_testkit::{tiny_embedder, user_session};

/// The tiny BERT, counting which entry the model thread calls and on which thread.
#[derive(Debug)]
struct Watched {
    inner: Embedder,
    texts: Arc<AtomicUsize>,
    ids: Arc<AtomicUsize>,
}

impl Encoder for Watched {
    fn info(&self) -> &ModelInfo {
        self.inner.info()
    }
    fn device(&self) -> String {
        "cpu".into()
    }
    fn backend(&self) -> &'static str {
        "watched"
    }
    fn max_batch_tokens(&self) -> usize {
        4096
    }
    fn embed_with_progress(
        &self,
        texts: &[&str],
        kind: TextKind,
        progress: &mut dyn FnMut(usize),
    ) -> Result<Embeddings, EmbedError> {
        self.texts.fetch_add(texts.len(), Ordering::SeqCst);
        self.inner.embed_with_progress(texts, kind, progress)
    }
    fn tokenizer(&self) -> Option<TextTokenizer> {
        Some(self.inner.text_tokenizer())
    }
    fn embed_ids(&self, ids: &[Vec<u32>]) -> Result<Embeddings, EmbedError> {
        assert_eq!(
            std::thread::current().name(),
            Some("memdex-model-0"),
            "only the (one) model worker embeds"
        );
        self.ids.fetch_add(ids.len(), Ordering::SeqCst);
        self.inner.embed_ids(ids, &mut |_| {})
    }
}

fn search(e: &Engine, text: &str) -> SearchJob {
    SearchJob {
        snapshot: e.view(),
        tenant: "ann".into(),
        text: text.into(),
        ask: SearchAsk {
            date_ms: None,
            top: TopK {
                k: 3,
                explain: false,
            },
            opts: RankOptions::default(),
        },
    }
}

#[test]
fn callers_tokenize_and_the_model_thread_embeds_ids() {
    let tmp = tempfile::tempdir().unwrap();
    let (texts, ids) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let encoder = Watched {
        inner: tiny_embedder(),
        texts: texts.clone(),
        ids: ids.clone(),
    };
    let opts = EngineOptions {
        compact_every: None,
        ..EngineOptions::default()
    };
    let e = Engine::start(tmp.path(), Box::new(encoder), cpu(), opts).unwrap();
    let sessions = vec![
        user_session("ann", "s1", 0, &["I adopted a beagle called Luna."]),
        user_session("ann", "s2", 30, &["My sister moved to Porto."]),
    ];
    e.append("ann", sessions)
        .unwrap()
        .blocking_recv()
        .unwrap()
        .unwrap();
    assert!(ids.load(Ordering::SeqCst) > 0, "passages came as ids");

    let asked = ["what is my dog's name?", "where does my sister live?"];
    let got = e
        .embed(
            asked.iter().map(|s| s.to_string()).collect(),
            TextKind::Query,
        )
        .unwrap()
        .blocking_recv()
        .unwrap()
        .unwrap();
    let direct = tiny_embedder().embed(&asked, TextKind::Query).unwrap();
    assert_eq!(got.tokens, direct.tokens, "same token counts");
    let diff = (got.data.iter().zip(&direct.data))
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(diff < 1e-5, "the encoder's own vectors (max diff {diff})");

    let t = std::time::Instant::now();
    let searched = e
        .search(search(&e, asked[0]))
        .unwrap()
        .blocking_recv()
        .unwrap()
        .unwrap();
    let wall = t.elapsed().as_secs_f64();
    let hits = searched.hits;
    assert!(!hits.is_empty());
    assert_eq!(
        texts.load(Ordering::SeqCst),
        0,
        "no texts reached the model"
    );

    let st = e.stats();
    assert_eq!(st.searches_answered.load(Ordering::SeqCst), 1);
    let secs: Vec<f64> = (st.search_stage_micros.iter())
        .map(|m| m.load(Ordering::SeqCst) as f64 / 1e6)
        .collect();
    let at = |name: &str| secs[SEARCH_STAGES.iter().position(|s| *s == name).unwrap()];
    assert!(at("tokenize") > 0.0, "tokenizing is counted: {secs:?}");
    assert!(at("embed") > 0.0, "embedding is counted: {secs:?}");
    // the answer carries the very figures /metrics sums (one search answered)
    let micros: Vec<u64> = (st.search_stage_micros.iter())
        .map(|m| m.load(Ordering::SeqCst))
        .collect();
    assert_eq!(searched.timings.micros().to_vec(), micros);
    let names: Vec<&str> = searched.timings.stages().map(|(n, _)| n).collect();
    assert_eq!(names, SEARCH_STAGES);
    let total: f64 = secs.iter().sum();
    assert!(
        total <= wall + 1e-3,
        "a search's stages fit in its wall time ({total} s of {wall} s)"
    );
    e.shutdown();
}

/// The CPU ranker, which ranks these engines' searches.
fn cpu() -> memdex_rank::SharedRanker {
    std::sync::Arc::new(memdex_rank::CpuRanker::default())
}
