//! Wall time per stage of the fast CPU encoder, when `MEMDEX_PROFILE` is set (read once).
//!
//! Each stage is a parallel step of the forward pass, timed around it on the calling thread,
//! so the times add up to the pass (stages with fused epilogues include them). Off by default:
//! then [`time`] is one relaxed load and a branch.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// The environment variable that turns the stage timers on.
pub const PROFILE_ENV: &str = "MEMDEX_PROFILE";

/// A timed step of the forward pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    Embeddings,
    Qkv,
    Attention,
    AttnOut,
    FfnIn,
    FfnOut,
    /// FfnIn and FfnOut fused per block of rows.
    Ffn,
}

const STAGES: [(Stage, &str); 7] = [
    (Stage::Embeddings, "embeddings + LayerNorm"),
    (Stage::Qkv, "QKV GEMM + bias"),
    (Stage::Attention, "attention (QK^T, softmax, PV)"),
    (
        Stage::AttnOut,
        "attention-out GEMM + bias + residual + LayerNorm",
    ),
    (Stage::FfnIn, "FFN-in GEMM + bias + GELU"),
    (Stage::FfnOut, "FFN-out GEMM + bias + residual + LayerNorm"),
    (
        Stage::Ffn,
        "FFN fused: in GEMM + GELU, out GEMM + residual + LN",
    ),
];

static NANOS: [AtomicU64; 7] = [const { AtomicU64::new(0) }; 7];

fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os(PROFILE_ENV).is_some_and(|v| !v.is_empty() && v != "0"))
}

/// Runs `f`, adding its wall time to `stage` when profiling is on.
#[inline]
pub(crate) fn time<R>(stage: Stage, f: impl FnOnce() -> R) -> R {
    if !enabled() {
        return f();
    }
    let t = Instant::now();
    let r = f();
    let i = STAGES.iter().position(|(s, _)| *s == stage).unwrap_or(0);
    NANOS[i].fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
    r
}

/// Seconds per stage since the last call (and resets them); `None` unless `MEMDEX_PROFILE` is
/// set.
pub fn take_stage_profile() -> Option<Vec<(&'static str, f64)>> {
    enabled().then(|| {
        STAGES
            .iter()
            .zip(&NANOS)
            .map(|((_, name), n)| (*name, n.swap(0, Ordering::Relaxed) as f64 * 1e-9))
            .filter(|(_, s)| *s > 0.0)
            .collect()
    })
}
