//! Every check at the sanitizer's input sizes (`memdex-kernels-check --small`, what
//! compute-sanitizer runs on the GPU box) still holds on the CPU reference: the smaller inputs
//! keep the checks' own assertions true (ranges past one block, the time stage moving rows).
//! Its own test binary: the size is a process-wide setting.

use memdex_kernels::checks::{run, set_sanitizer_size, ALL};
use memdex_kernels::cpu::Cpu;

#[test]
fn every_check_passes_at_the_sanitizers_sizes() {
    set_sanitizer_size(true);
    let failed: Vec<String> = ALL
        .iter()
        .filter_map(|(name, check)| {
            let r = run(*check, &Cpu);
            (!r.ok).then(|| format!("{name}: {}", r.error.unwrap_or_default()))
        })
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
}
