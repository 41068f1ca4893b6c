//! Test fixtures shared by every crate's tests (a dev-dependency only): the committed tiny
//! BERT and its embedder, model identities, items, a deterministic test-double [`Encoder`]
//! (engine and server tests run without a model on disk), spy kernels, the seeded RNG, a runner for the
//! `memdex` binary and a minimal HTTP/1.1 client.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod kernels;

pub use kernels::SpyKernels;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use memdex_core::{DeviceChoice, MemoryItem, ModelInfo, Pooling, Role, Session, TextKind, Turn};
use memdex_embed::{load_encoder, EmbedError, EmbedOptions, Embedder, Embeddings, Encoder};

pub use memdex_core::rng::SplitMix64;

/// The committed tiny random BERT (`scripts/gen-tiny-bert.py`).
pub fn tiny_model() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../memdex-embed/tests/fixtures/tiny-bert")
}

/// The tiny BERT on the CPU.
pub fn tiny_embedder() -> Embedder {
    load_encoder(
        tiny_model().to_str().unwrap(),
        DeviceChoice::Cpu,
        &EmbedOptions::default(),
    )
    .unwrap()
}

/// A model identity of dimension `dim` (mean pooling, normalised, no prefixes).
pub fn model(dim: usize, fingerprint: &str) -> ModelInfo {
    ModelInfo {
        name: "test-model".into(),
        fingerprint: fingerprint.into(),
        dim,
        pooling: Pooling::Mean,
        normalize: true,
        max_length: 16,
        query_prefix: String::new(),
        passage_prefix: String::new(),
    }
}

/// A user turn of `tenant`'s `session` with key `text` (value `user: text`).
pub fn item(tenant: &str, session: &str, turn: u32, text: &str) -> MemoryItem {
    let value = format!("user: {text}");
    MemoryItem {
        tenant: tenant.into(),
        session_id: session.into(),
        turn,
        timestamp_ms: 1_700_000_000_000 + i64::from(turn),
        role: Role::User,
        content_hash: MemoryItem::compute_hash(Role::User, text, &value),
        value,
        key: text.into(),
    }
}

/// When [`user_session`]'s day 0 starts: 2023-05-08, in ms since the epoch.
pub const SESSION_T0: i64 = 1_683_540_000_000;

/// A day in milliseconds.
pub const DAY_MS: i64 = 86_400_000;

/// `tenant`'s session `id` of user turns `texts`, `day` days after [`SESSION_T0`].
pub fn user_session(tenant: &str, id: &str, day: i64, texts: &[&str]) -> Session {
    user_session_at(tenant, id, SESSION_T0 + day * DAY_MS, texts)
}

/// [`user_session`] starting at `timestamp_ms`.
pub fn user_session_at(tenant: &str, id: &str, timestamp_ms: i64, texts: &[&str]) -> Session {
    Session {
        tenant: tenant.into(),
        session_id: id.into(),
        timestamp_ms,
        turns: texts
            .iter()
            .map(|t| Turn {
                role: Role::User,
                content: t.to_string(),
            })
            .collect(),
    }
}

/// Flips one byte of the file at `path` (XOR with a nonzero byte), at an offset drawn from
/// `rng`, in place: a bit rot of a store file. Returns the offset.
pub fn flip_byte(path: &Path, rng: &mut SplitMix64) -> usize {
    let mut bytes = std::fs::read(path).unwrap();
    let at = rng.below(bytes.len());
    bytes[at] ^= 1 + (rng.next_u64() % 255) as u8;
    std::fs::write(path, &bytes).unwrap();
    at
}

/// `n` seeded values in `[-0.5, 0.5)`.
pub fn vectors(n: usize, seed: u64) -> Vec<f32> {
    let mut r = SplitMix64::new(seed);
    (0..n).map(|_| r.centered_f32()).collect()
}

/// A [`HashEncoder`] that runs `hook` on the texts of every call before embedding them: a
/// test's probe (count, fail, block, panic) without re-implementing the encoder. `hook`'s
/// error is the call's error; `max_batch_tokens` is the budget the pipeline batches by;
/// `replicas` what [`Encoder::replica`] answers (an engine's further model workers).
#[derive(Clone)]
pub struct HookedEncoder<F> {
    pub inner: HashEncoder,
    pub backend: &'static str,
    pub max_batch_tokens: usize,
    pub hook: F,
    pub replicas: Replicas,
}

/// What a [`HookedEncoder`]'s [`Encoder::replica`] answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Replicas {
    /// None: it cannot be replicated (an engine runs it as its only model worker).
    #[default]
    None,
    /// A clone, sharing the hook (and what the hook captured).
    Clones,
    /// A copy that fails to load (as a device out of memory would).
    Fail,
}

impl<F> HookedEncoder<F>
where
    F: Fn(&[&str], TextKind) -> Result<(), EmbedError> + Send,
{
    pub fn new(dim: usize, backend: &'static str, hook: F) -> Self {
        HookedEncoder {
            inner: HashEncoder::new(dim),
            backend,
            max_batch_tokens: 1024,
            hook,
            replicas: Replicas::None,
        }
    }
}

impl<F> std::fmt::Debug for HookedEncoder<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookedEncoder")
            .field("backend", &self.backend)
            .field("dim", &self.inner.info.dim)
            .finish()
    }
}

impl<F> Encoder for HookedEncoder<F>
where
    F: Fn(&[&str], TextKind) -> Result<(), EmbedError> + Send + Clone + 'static,
{
    fn info(&self) -> &ModelInfo {
        self.inner.info()
    }
    fn device(&self) -> String {
        "cpu".into()
    }
    fn backend(&self) -> &'static str {
        self.backend
    }
    fn max_batch_tokens(&self) -> usize {
        self.max_batch_tokens
    }
    fn embed_with_progress(
        &self,
        texts: &[&str],
        kind: TextKind,
        progress: &mut dyn FnMut(usize),
    ) -> Result<Embeddings, EmbedError> {
        (self.hook)(texts, kind)?;
        self.inner.embed_with_progress(texts, kind, progress)
    }
    fn replica(&self) -> Option<Result<Box<dyn Encoder>, EmbedError>> {
        match self.replicas {
            Replicas::None => None,
            Replicas::Clones => Some(Ok(Box::new(self.clone()))),
            Replicas::Fail => Some(Err(EmbedError::Setting {
                name: "replica",
                message: "no room for another copy".into(),
            })),
        }
    }
}

/// A deterministic bag-of-words encoder: each lower-cased word adds ±1 to a hashed
/// coordinate, then the vector is L2-normalised. Texts sharing words get close vectors, so
/// rankings are meaningful, and no model file is needed.
#[derive(Debug, Clone)]
pub struct HashEncoder {
    info: ModelInfo,
}

impl HashEncoder {
    pub fn new(dim: usize) -> Self {
        HashEncoder {
            info: ModelInfo {
                name: "hash-encoder".into(),
                ..model(dim, "hash-v1")
            },
        }
    }

    fn vector(&self, text: &str) -> Vec<f32> {
        let dim = self.info.dim;
        let mut v = vec![0f32; dim];
        for w in text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            let h = memdex_core::content_hash(w.to_lowercase().as_bytes());
            let sign = if h >> 63 == 0 { 1.0 } else { -1.0 };
            v[(h % dim as u64) as usize] += sign;
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        }
        v
    }
}

impl Encoder for HashEncoder {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn device(&self) -> String {
        "cpu".into()
    }

    fn backend(&self) -> &'static str {
        "hash"
    }

    fn max_batch_tokens(&self) -> usize {
        8192
    }

    fn embed_with_progress(
        &self,
        texts: &[&str],
        _kind: TextKind,
        progress: &mut dyn FnMut(usize),
    ) -> Result<Embeddings, EmbedError> {
        let mut data = Vec::with_capacity(texts.len() * self.info.dim);
        for t in texts {
            data.extend(self.vector(t));
        }
        progress(texts.len());
        Ok(Embeddings {
            dim: self.info.dim,
            data,
            tokens: texts
                .iter()
                .map(|t| t.split_whitespace().count() + 2)
                .collect(),
        })
    }

    /// A copy (it holds no weights): engines run it on several model workers.
    fn replica(&self) -> Option<Result<Box<dyn Encoder>, EmbedError>> {
        Some(Ok(Box::new(self.clone())))
    }
}

/// Runs the `memdex` binary `bin` (a test's `env!("CARGO_BIN_EXE_memdex")`) with the tiny
/// model and no store from the environment.
pub fn memdex(bin: &str, args: &[&str]) -> Output {
    Command::new(bin)
        .args(args)
        .env("MEMDEX_MODEL", tiny_model())
        .env_remove("MEMDEX_STORE")
        .output()
        .unwrap()
}

/// The stdout of a successful run (or a failure showing both streams).
pub fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// The stderr of a failed run.
pub fn fails(out: &Output) -> String {
    assert!(
        !out.status.success(),
        "expected failure, got success: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stderr.clone()).unwrap()
}

/// One HTTP/1.1 request on its own connection: (status, body).
pub fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: &[u8],
) -> (u16, String) {
    try_http(addr, method, path, key, body).unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

/// [`http`] that reports a failed connection instead of panicking (a server being killed).
pub fn try_http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: &[u8],
) -> Result<(u16, String), String> {
    try_http_headers(addr, method, path, key, body).map(|(status, _, body)| (status, body))
}

/// [`http`] with the response's header lines, lower-cased: (status, headers, body).
pub fn http_headers(
    addr: SocketAddr,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: &[u8],
) -> (u16, String, String) {
    try_http_headers(addr, method, path, key, body)
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

fn try_http_headers(
    addr: SocketAddr,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: &[u8],
) -> Result<(u16, String, String), String> {
    let mut s = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(60)))
        .map_err(|e| e.to_string())?;
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(k) = key {
        head.push_str(&format!("Authorization: Bearer {k}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).map_err(|e| e.to_string())?;
    // a server may answer (413) before reading a huge body: ignore write errors then
    let _ = s.write_all(body);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).to_string();
    let status: u16 = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("no status line in {text:?}"))?;
    let (headers, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let chunked = headers
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    Ok((status, headers.to_ascii_lowercase(), body))
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// Every byte of a store's segment files.
pub fn segment_bytes(store: &Path) -> Vec<u8> {
    let mut all = Vec::new();
    for e in std::fs::read_dir(store.join("segments")).unwrap() {
        all.extend(std::fs::read(e.unwrap().path()).unwrap());
    }
    all
}

/// Whether `hay` holds the bytes of `needle`.
pub fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// The real all-MiniLM-L6-v2 (`MEMDEX_TEST_MODEL` or `models/all-MiniLM-L6-v2`, fetched by
/// `scripts/fetch-model.sh`), or None with a visible skip; under `MEMDEX_REQUIRE_MODEL` a
/// missing model fails the test instead.
pub fn minilm(test: &str) -> Option<PathBuf> {
    let dir = std::env::var("MEMDEX_TEST_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/all-MiniLM-L6-v2")
        });
    if dir.join("model.safetensors").is_file() {
        return Some(dir);
    }
    assert!(
        std::env::var("MEMDEX_REQUIRE_MODEL").is_err(),
        "MEMDEX_REQUIRE_MODEL is set but no model at {} (run scripts/fetch-model.sh)",
        dir.display()
    );
    // std::io::stderr directly, past the harness's capture: the skip shows in CI's output
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: no model at {}",
        dir.display()
    );
    None
}

/// The public knowledge-update set (`fixtures/knowledge-updates.json`): 48 scenarios, each a
/// tenant whose older statement is changed by a newer one, with a present-tense question
/// (answered by `new_session`) and a past one (answered by `old_session`).
pub fn knowledge_updates() -> serde_json::Value {
    fixture("knowledge-updates.json")
}

/// The public control set of the update stage (`fixtures/update-controls.json`): scenarios
/// where a later session mentions something related that supersedes nothing, so the older
/// `answer_session` must stay above `related_session` for `question`; tier `stage` where the
/// answer ranks first with the stage off, `retrieval-hard` where the first stage already
/// prefers the related session.
pub fn update_controls() -> serde_json::Value {
    fixture("update-controls.json")
}

/// The everyday knowledge-update set (`fixtures/updates-everyday.json`): 35 scenarios in the
/// public set's shape, written before the update stage's cue list was read, many with no
/// change cue at all (the same kind of statement with a new value) or with verbs of change the
/// public set lacks (`fixtures/README.md`).
pub fn updates_everyday() -> serde_json::Value {
    fixture("updates-everyday.json")
}

/// The everyday control set (`fixtures/controls-everyday.json`): 40 scenarios in the public
/// control set's shape where someone else in the user's life changes the same kind of thing
/// (directly, through a possessive chain or a pronoun), the user changes what is asked about a
/// relative, a plan or wish is not a change, a fact is repeated, or a number is about
/// something else; tiers from the stage-off ranking (`fixtures/README.md`).
pub fn controls_everyday() -> serde_json::Value {
    fixture("controls-everyday.json")
}

/// The fresh knowledge-update set (`fixtures/updates-fresh.json`): 30 scenarios written by a
/// helper session that read no rule, benchmark or fixture of the update stage, after its
/// clause and value rules were written: held out from every rule (`fixtures/README.md`).
pub fn updates_fresh() -> serde_json::Value {
    fixture("updates-fresh.json")
}

/// The fresh control set (`fixtures/controls-fresh.json`): 30 controls written with
/// [`updates_fresh`]; tiers from the stage-off ranking.
pub fn controls_fresh() -> serde_json::Value {
    fixture("controls-fresh.json")
}

/// The second fresh knowledge-update set (`fixtures/updates-fresh2.json`): 32 scenarios written
/// like [`updates_fresh`] by a helper session that read no code, rule, benchmark or fixture,
/// after the update stage's phase-3 rules, with idioms and role changes among them: held out
/// from every rule written before it (`fixtures/README.md`).
pub fn updates_fresh2() -> serde_json::Value {
    fixture("updates-fresh2.json")
}

/// The second fresh control set (`fixtures/controls-fresh2.json`): 32 controls written with
/// [`updates_fresh2`]; tiers from the stage-off ranking.
pub fn controls_fresh2() -> serde_json::Value {
    fixture("controls-fresh2.json")
}

/// The third fresh knowledge-update set (`fixtures/updates-fresh3.json`): 32 scenarios written
/// like [`updates_fresh2`], after every rule up to the update stage's phase 4, by a helper
/// session that opened no file of the project; with changes stated inside questions
/// (`fixtures/README.md`).
pub fn updates_fresh3() -> serde_json::Value {
    fixture("updates-fresh3.json")
}

/// The third fresh control set (`fixtures/controls-fresh3.json`): 33 controls written with
/// [`updates_fresh3`], among them changes only asked about ("should I switch to Monzo?");
/// tiers from the stage-off ranking.
pub fn controls_fresh3() -> serde_json::Value {
    fixture("controls-fresh3.json")
}

/// The fourth fresh knowledge-update set (`fixtures/updates-fresh4.json`): 32 scenarios written
/// like [`updates_fresh3`], after every rule of the update stage's phase 4, by a helper session
/// that opened no file of the project; in several registers, some all lower-case
/// (`fixtures/README.md`).
pub fn updates_fresh4() -> serde_json::Value {
    fixture("updates-fresh4.json")
}

/// The fourth fresh control set (`fixtures/controls-fresh4.json`): 33 controls written with
/// [`updates_fresh4`]; tiers from the stage-off ranking.
pub fn controls_fresh4() -> serde_json::Value {
    fixture("controls-fresh4.json")
}

/// The fifth fresh knowledge-update set (`fixtures/updates-fresh5.json`): 32 scenarios written
/// like [`updates_fresh4`], after the update stage's phase 4, by a helper session that opened
/// no file of the project; attributes and idioms the earlier sets lack, some in dialect
/// (`fixtures/README.md`).
pub fn updates_fresh5() -> serde_json::Value {
    fixture("updates-fresh5.json")
}

/// The fifth fresh control set (`fixtures/controls-fresh5.json`): 32 controls written with
/// [`updates_fresh5`]; tiers from the stage-off ranking.
pub fn controls_fresh5() -> serde_json::Value {
    fixture("controls-fresh5.json")
}

/// The sixth fresh knowledge-update set (`fixtures/updates-fresh6.json`): 32 scenarios
/// written like [`updates_fresh5`], after most rules of the update stage's phase 5, by a
/// helper session that opened no file of the project (`fixtures/README.md`).
pub fn updates_fresh6() -> serde_json::Value {
    fixture("updates-fresh6.json")
}

/// The sixth fresh control set (`fixtures/controls-fresh6.json`): 32 controls written with
/// [`updates_fresh6`]; tiers from the stage-off ranking.
pub fn controls_fresh6() -> serde_json::Value {
    fixture("controls-fresh6.json")
}

/// The seventh fresh knowledge-update set (`fixtures/updates-fresh7.json`): 24 scenarios
/// written after every rule of the update stage's phase 5 by a helper session that opened no
/// file of the project, half of its questions asked as an assistant would
/// (`fixtures/README.md`).
pub fn updates_fresh7() -> serde_json::Value {
    fixture("updates-fresh7.json")
}

/// The seventh fresh control set (`fixtures/controls-fresh7.json`): 24 controls written with
/// [`updates_fresh7`]; tiers from the stage-off ranking.
pub fn controls_fresh7() -> serde_json::Value {
    fixture("controls-fresh7.json")
}

/// The eighth fresh knowledge-update set (`fixtures/updates-fresh8.json`): 32 scenarios
/// written by a helper session that opened no file of the project while the update stage's
/// phase-6 rules R14–R16 were written, and held out from them (`fixtures/README.md`).
pub fn updates_fresh8() -> serde_json::Value {
    fixture("updates-fresh8.json")
}

/// The eighth fresh control set (`fixtures/controls-fresh8.json`): 32 controls written with
/// [`updates_fresh8`]; tiers from the stage-off ranking.
pub fn controls_fresh8() -> serde_json::Value {
    fixture("controls-fresh8.json")
}

/// The ninth fresh knowledge-update set (`fixtures/updates-fresh9.json`): 32 scenarios
/// written the same way, held out from every rule up to phase 6's R18, many of their values
/// common nouns (`fixtures/README.md`).
pub fn updates_fresh9() -> serde_json::Value {
    fixture("updates-fresh9.json")
}

/// The ninth fresh control set (`fixtures/controls-fresh9.json`): 32 controls written with
/// [`updates_fresh9`]; tiers from the stage-off ranking.
pub fn controls_fresh9() -> serde_json::Value {
    fixture("controls-fresh9.json")
}

/// The tenth fresh knowledge-update set (`fixtures/updates-fresh10.json`): 32 scenarios
/// written the same way after every rule of phase 6 but R19, and held out from all of them
/// (`fixtures/README.md`).
pub fn updates_fresh10() -> serde_json::Value {
    fixture("updates-fresh10.json")
}

/// The tenth fresh control set (`fixtures/controls-fresh10.json`): 32 controls written with
/// [`updates_fresh10`]; tiers from the stage-off ranking.
pub fn controls_fresh10() -> serde_json::Value {
    fixture("controls-fresh10.json")
}

/// The eleventh fresh knowledge-update set (`fixtures/updates-fresh11.json`): 32 scenarios
/// written the same way after every rule of phase 6, and held out from phase 7's
/// (`fixtures/README.md`).
pub fn updates_fresh11() -> serde_json::Value {
    fixture("updates-fresh11.json")
}

/// The eleventh fresh control set (`fixtures/controls-fresh11.json`): 32 controls written
/// with [`updates_fresh11`]; tiers from the stage-off ranking.
pub fn controls_fresh11() -> serde_json::Value {
    fixture("controls-fresh11.json")
}

/// The twelfth fresh knowledge-update set (`fixtures/updates-fresh12.json`): 32 scenarios
/// written the same way after every rule of phase 7, held out from all of them
/// (`fixtures/README.md`).
pub fn updates_fresh12() -> serde_json::Value {
    fixture("updates-fresh12.json")
}

/// The twelfth fresh control set (`fixtures/controls-fresh12.json`): 32 controls written
/// with [`updates_fresh12`]; tiers from the stage-off ranking.
pub fn controls_fresh12() -> serde_json::Value {
    fixture("controls-fresh12.json")
}

fn fixture(name: &str) -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The half of the scenario sets a scenario belongs to: rules are developed on the tuning
/// half and judged on the checking half.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Half {
    Tuning,
    Checking,
}

impl Half {
    pub fn name(self) -> &'static str {
        match self {
            Half::Tuning => "tuning",
            Half::Checking => "checking",
        }
    }
}

/// The half of scenario `id`, from the 64-bit FNV-1a hash of its bytes: even → tuning, odd →
/// checking. It depends on the id alone, so adding scenarios never moves an old one.
pub fn split_half(id: &str) -> Half {
    if fnv1a64(id.as_bytes()).is_multiple_of(2) {
        Half::Tuning
    } else {
        Half::Checking
    }
}

/// 64-bit FNV-1a (offset basis 0xcbf29ce484222325, prime 0x100000001b3).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_encoder_is_deterministic_and_normalised() {
        let e = HashEncoder::new(32);
        let a = e
            .embed(&["My dog Rex", "my DOG rex!", "a cat"], TextKind::Passage)
            .unwrap();
        assert_eq!(a.row(0), a.row(1), "case and punctuation do not matter");
        let n: f32 = a.row(2).iter().map(|x| x * x).sum();
        assert!((n - 1.0).abs() < 1e-5);
    }

    #[test]
    fn fnv1a64_matches_the_reference_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    /// Every scenario of the six update-stage sets: a unique id, its named sessions present,
    /// dates in order, the fields its kind needs; and both halves of every set non-empty.
    #[test]
    fn the_update_stage_sets_are_well_formed_and_split() {
        let sets = [
            ("updates", knowledge_updates()),
            ("controls", update_controls()),
            ("updates", updates_everyday()),
            ("controls", controls_everyday()),
            ("updates", updates_fresh()),
            ("controls", controls_fresh()),
        ];
        let mut ids = std::collections::HashSet::new();
        for (kind, set) in &sets {
            let mut halves = [0usize; 2];
            for sc in set["scenarios"].as_array().unwrap() {
                let id = sc["id"].as_str().unwrap();
                assert!(ids.insert(id.to_string()), "duplicate id {id}");
                halves[split_half(id) as usize] += 1;
                let sessions = sc["sessions"].as_array().unwrap();
                let dates: Vec<&str> = sessions
                    .iter()
                    .map(|s| s["date"].as_str().unwrap())
                    .collect();
                assert!(
                    dates.windows(2).all(|w| w[0] < w[1]),
                    "{id}: dates out of order"
                );
                let has = |f: &str| {
                    let s = sc[f].as_str().unwrap();
                    assert!(
                        sessions.iter().any(|x| x["session_id"] == s),
                        "{id}: no {f} {s}"
                    );
                };
                let (keys, text): (&[&str], &[&str]) = if *kind == "updates" {
                    (
                        &["old_session", "new_session"],
                        &["present", "past", "relation"],
                    )
                } else {
                    (
                        &["answer_session", "related_session"],
                        &["question", "kind", "tier"],
                    )
                };
                keys.iter().for_each(|f| has(f));
                text.iter()
                    .for_each(|f| assert!(sc[*f].is_string(), "{id}: no {f}"));
            }
            assert!(
                halves.iter().all(|&n| n > 0),
                "{kind}: a half is empty: {halves:?}"
            );
        }
    }
}
