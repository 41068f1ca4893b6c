//! Builds an emulator program, `kernels/emu/<name>.cpp` (CUDA sources compiled as C++ on the
//! SIMT emulator), for the emulated tests of memdex-kernels and memdex-fused-bert, which both
//! include this file (`#[path]`): one definition of how the emulator is compiled.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `kernels/emu/<name>.cpp` compiled into `dir`; None (skipped, said on stderr) without a C++
/// compiler, unless `MEMDEX_REQUIRE_CXX=1` (scripts/test.sh, CI).
pub fn compile(name: &str, dir: &Path) -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../kernels");
    let exe = dir.join(name);
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let built = Command::new(&cxx)
        .args(["-std=c++20", "-O1", "-pthread", "-DMEMDEX_EMULATED", "-I"])
        .arg(root.join("emu/include"))
        .arg("-o")
        .arg(&exe)
        .arg(root.join(format!("emu/{name}.cpp")))
        .output();
    let built = match built {
        Ok(out) => out,
        Err(e) => {
            let required = std::env::var("MEMDEX_REQUIRE_CXX").as_deref() == Ok("1");
            assert!(!required, "no C++ compiler `{cxx}`: {e}");
            eprintln!(
                "SKIPPED: no C++ compiler `{cxx}` ({e}); set CXX to run the emulated kernels"
            );
            return None;
        }
    };
    assert!(
        built.status.success(),
        "{cxx} failed on kernels/emu/{name}.cpp:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    Some(exe)
}
