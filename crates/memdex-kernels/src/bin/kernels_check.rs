//! `memdex-kernels-check`: runs every kernel check (`memdex_kernels::checks`) on the CPU
//! reference and on `cuda:0`, catching each failure, and prints one JSON line per (check,
//! device) plus a summary with the counts of each device apart; exits 1 if any failed or if no CUDA device answers. What
//! `scripts/gpu-check.sh` runs on the GPU box (no Rust there, so no `cargo test`).
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use memdex_kernels::checks::ALL;
use memdex_kernels::cpu::Cpu;
use memdex_kernels::gpu::Gpu;
use memdex_kernels::Kernels;

fn main() {
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
    let mut devices: Vec<&dyn Kernels> = vec![&Cpu];
    if let Some(g) = &gpu {
        devices.push(g);
    }
    let filter: Vec<String> = std::env::args().skip(1).collect();
    let (mut passed, mut failed) = (0, 0);
    // per device: [passed, failed] (the CPU reference and cuda:0 are counted apart)
    let mut by_device: std::collections::BTreeMap<String, [u32; 2]> = Default::default();
    for (name, check) in ALL {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        for &k in &devices {
            let t = Instant::now();
            let r = catch_unwind(AssertUnwindSafe(|| check(k)));
            let ok = r.is_ok();
            let error = r.err().map(|e| {
                e.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "panic".into())
            });
            let tally = by_device.entry(k.device()).or_default();
            if ok {
                passed += 1;
                tally[0] += 1;
            } else {
                failed += 1;
                tally[1] += 1;
            }
            println!(
                "{}",
                serde_json::json!({"check": name, "device": k.device(), "ok": ok,
                    "seconds": t.elapsed().as_secs_f64(), "error": error})
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
