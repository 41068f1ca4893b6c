//! `memdex-kernels-check [--cuda] [--small] [FILTER...]`: runs the kernel checks
//! (`memdex_kernels::checks`, those whose name contains a FILTER; all without one) on the CPU
//! reference and on `cuda:0` (`--cuda`: on `cuda:0` only, as under compute-sanitizer, where the
//! CPU half gains nothing), at the sanitizer's input sizes with `--small`
//! (`checks::set_sanitizer_size`). Prints one JSON line with the checks planned
//! (`{"plan": [...]}`), one per (check, device) — a check fails when it panics or when the
//! device reported a new fault during it (`checks::run`) — and a summary with the counts of
//! each device apart; exits 1 if any failed or if no CUDA device answers. What
//! `scripts/gpu-check.sh` runs on the GPU box (no Rust there, so no `cargo test`).
use memdex_kernels::checks::{run, set_sanitizer_size, ALL};
use memdex_kernels::cpu::Cpu;
use memdex_kernels::gpu::Gpu;
use memdex_kernels::Kernels;

fn main() {
    let mut cuda_only = false;
    let mut filter: Vec<String> = Vec::new();
    for a in std::env::args().skip(1) {
        match a.as_str() {
            "--cuda" => cuda_only = true,
            "--small" => set_sanitizer_size(true),
            "-h" | "--help" => {
                println!("usage: memdex-kernels-check [--cuda] [--small] [FILTER...]");
                return;
            }
            f if f.starts_with("--") => {
                eprintln!("unknown option {f} (usage: memdex-kernels-check [--cuda] [--small] [FILTER...])");
                std::process::exit(2);
            }
            f => filter.push(f.to_string()),
        }
    }
    let gpu = match Gpu::new(0) {
        Ok(g) => Some(g),
        Err(e) => {
            println!(
                "{}",
                serde_json::json!({"device": "cuda:0", "error": e.to_string()})
            );
            None
        }
    };
    let mut devices: Vec<&dyn Kernels> = if cuda_only { vec![] } else { vec![&Cpu] };
    if let Some(g) = &gpu {
        devices.push(g);
    }
    let planned: Vec<_> = ALL
        .iter()
        .filter(|(name, _)| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str())))
        .collect();
    let names: Vec<&str> = planned.iter().map(|(name, _)| *name).collect();
    println!(
        "{}",
        serde_json::json!({"plan": names, "cuda_only": cuda_only})
    );
    let (mut passed, mut failed) = (0, 0);
    // per device: [passed, failed] (the CPU reference and cuda:0 are counted apart)
    let mut by_device: std::collections::BTreeMap<String, [u32; 2]> = Default::default();
    for (name, check) in planned {
        for &k in &devices {
            let r = run(*check, k);
            let tally = by_device.entry(k.device()).or_default();
            if r.ok {
                passed += 1;
                tally[0] += 1;
            } else {
                failed += 1;
                tally[1] += 1;
            }
            println!(
                "{}",
                serde_json::json!({"check": name, "device": k.device(), "ok": r.ok,
                    "seconds": r.seconds, "error": r.error})
            );
        }
    }
    let by_device: serde_json::Map<String, serde_json::Value> = by_device
        .into_iter()
        .map(|(d, [p, f])| (d, serde_json::json!({"passed": p, "failed": f})))
        .collect();
    println!(
        "{}",
        serde_json::json!({"passed": passed, "failed": failed, "cuda": gpu.is_some(),
            "by_device": by_device})
    );
    if failed > 0 || gpu.is_none() {
        std::process::exit(1);
    }
}
