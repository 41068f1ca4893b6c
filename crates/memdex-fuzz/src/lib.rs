//! Fuzz harnesses for memdex's input parsers, on stable Rust (no libFuzzer, no nightly).
//!
//! Targets ([`targets::TARGETS`]): the JSONL reader, the LongMemEval streaming scanner (and
//! its truncation at every byte offset), the LoCoMo reader, session dates, event dates and
//! facts of chat text, TiM's rule thoughts and MemTree's aggregation of chat text, query time
//! parsing, and the server's request bodies. Each starts from
//! a seed corpus of valid inputs written in [`seeds`]; the [`driver`] mutates them
//! structure-aware ([`mutate`]: JSON as trees, text as words) from a seeded generator, keeps
//! inputs that behave in a new way, and reports panics.
//!
//! * `cargo test -p memdex-fuzz`: a short deterministic pass over every target, plus every
//!   input in `regressions/<target>/` (crashes found earlier, kept).
//! * `scripts/fuzz.sh [SECONDS]`: every target for SECONDS each (release build), crashes
//!   written (minimised) to `target/fuzz-crashes/<target>/`.

pub mod driver;
pub mod mutate;
pub mod rng;
pub mod seeds;
pub mod targets;

pub use driver::{fuzz, minimize, run_one, Budget, Crash, Outcome, Watch};
pub use targets::{target, Target, TARGETS};
