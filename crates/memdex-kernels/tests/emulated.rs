//! memdex's CUDA sources, run on the CPU: `kernels/emu/simt.h` compiles `kernels/cuda/*.cu` as
//! C++ and runs each CUDA thread as a fiber (warp collectives at barriers). The device's own checks
//! (`tests/kernels.rs` with `MEMDEX_REQUIRE_CUDA=1`) need a GPU; these run the same kernel code
//! wherever a C++20 compiler is, so a wrong lane mapping, shared-memory layout or pipeline step
//! fails here first.
//!
//! - The kernel checks of [`memdex_kernels::checks`] on an emulated device ([`emu::Emu`]: the
//!   launches `src/gpu.rs` makes, run by `kernels/emu/launch.cpp`), at the sanitizer's input
//!   sizes (every kernel variant stays). The two checks of invalid inputs test the CUDA
//!   backend's host validation, which the emulated device does not mirror: they are not run.
//! - `kernels/emu/tiled_check.cpp`: every tiled instantiation of `segmented_topk` and
//!   `rank_dense`, and the tensor-core scan `tensor_topk` (wmma under `emu/include/mma.h`),
//!   against a brute force, with edge cases of its own (idle lanes at dim 40, a tile cap below
//!   a range's run, a ragged end at the matrix's last rows, near-duplicate rows that fail the
//!   tensor scan's certificate and take its exact rescan — counted: none elsewhere).

mod emu;

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use memdex_kernels::checks;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
}

/// The emulated device, compiled once per test binary (None without a C++ compiler).
fn device() -> Option<&'static emu::Emu> {
    static EMU: OnceLock<Option<emu::Emu>> = OnceLock::new();
    EMU.get_or_init(|| emu::Emu::new(&dir())).as_ref()
}

macro_rules! emulated {
    ($($check:ident),* $(,)?) => {$(
        #[test]
        fn $check() {
            let Some(emu) = device() else { return };
            checks::set_sanitizer_size(true);
            checks::$check(emu);
        }
    )*};
}

emulated!(
    selection_is_exact_with_ties,
    masked_selection_is_exact,
    scores_within_tolerance,
    tensor_scan_matches_the_scan,
    fragrel_matches_reference,
    fragrel_without_environment_is_the_plain_top_k,
    lsh_buckets_agree_and_keep_recall,
    rank_matches_reference,
    rank_parts_match_one_matrix,
    rank_text_matches_host_inputs,
);

/// Every check but the two of invalid inputs runs above.
#[test]
fn every_kernel_check_runs_emulated() {
    let skipped = [
        "invalid_inputs_are_errors",
        "rank_invalid_inputs_are_errors",
    ];
    let names: Vec<&str> = checks::ALL.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names.len(),
        10 + skipped.len(),
        "a new check: add it to emulated!(...)"
    );
    assert!(skipped.iter().all(|s| names.contains(s)));
}

#[test]
fn tiled_kernels_match_brute_force_under_the_simt_emulator() {
    let Some(exe) = emu::compile("tiled_check", &dir()) else {
        return;
    };
    let run = Command::new(&exe).output().expect("run tiled_check");
    let report = String::from_utf8_lossy(&run.stdout);
    eprintln!("{report}");
    assert!(run.status.success(), "emulated kernels disagree:\n{report}");
    assert!(report.contains("0 failing"), "{report}");
    assert!(report.lines().filter(|l| l.starts_with("ok ")).count() >= 54);
    assert_eq!(
        report.lines().filter(|l| l.contains("tensor_topk")).count(),
        14,
        "{report}"
    );
}
