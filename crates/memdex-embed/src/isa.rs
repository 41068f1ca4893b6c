//! The one run-time choice of instruction set for the fast CPU encoder's kernels.
//!
//! Detected once per process: the best the CPU has, unless `MEMDEX_CPU_ISA` (`avx512`,
//! `avx2`, `portable`; `auto` or empty = detect) forces a lower one, so that both x86 paths
//! can be measured side by side on one machine. Every kernel of `math`, `attention`,
//! `matmul` and `skinny` follows [`Isa::active`]:
//! - `Avx512`: AVX-512 register tiles in `skinny`; large batches in bf16 on AMX tiles
//!   ([`crate::bmatmul`]) where this process may use AMX, else in 16-bit integers on
//!   AVX-512 VNNI (`vpdpwssd`, [`crate::qmatmul`]) when CPUID reports it, else the `gemm`
//!   crate's AVX-512 f32 GEMM ([`LargeBatchKernel`]); AVX2 + FMA slice kernels;
//! - `Avx2`: AVX2 + FMA (+ F16C) everywhere, memdex's own GEMM ([`crate::matmul`]);
//! - `Portable`: plain Rust loops compiled for the baseline target (any architecture).

use std::sync::OnceLock;

/// The environment variable that overrides detection.
pub const ISA_ENV: &str = "MEMDEX_CPU_ISA";

/// An instruction-set level of the CPU kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Isa {
    Portable,
    Avx2,
    Avx512,
}

/// Why `MEMDEX_CPU_ISA` cannot be honoured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IsaError {
    #[error("{ISA_ENV}={0:?}: unknown instruction set (use avx512, avx2, portable or auto)")]
    Unknown(String),
    #[error("{ISA_ENV}={requested}: this CPU lacks it (best available: {best})")]
    Unsupported { requested: Isa, best: Isa },
    #[error("CPU instruction set {requested}: this CPU lacks it (best available: {best})")]
    Lacking { requested: Isa, best: Isa },
}

impl Isa {
    /// `avx512`, `avx2` or `portable`.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Portable => "portable",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
        }
    }

    /// The best level the running CPU supports: AVX-512 needs AVX-512F plus what AVX2 needs;
    /// AVX2 needs AVX2, FMA and F16C.
    pub fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            let avx2 = std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
                && std::arch::is_x86_feature_detected!("f16c");
            if avx2 && std::arch::is_x86_feature_detected!("avx512f") {
                return Isa::Avx512;
            }
            if avx2 {
                return Isa::Avx2;
            }
        }
        Isa::Portable
    }

    /// Parses an override (`None`/empty/`auto`: detect) against the CPU's best level.
    pub fn choose(value: Option<&str>, best: Isa) -> Result<Isa, IsaError> {
        let wanted = match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            None | Some("") | Some("auto") => return Ok(best),
            Some("avx512" | "avx-512" | "avx512f") => Isa::Avx512,
            Some("avx2") => Isa::Avx2,
            Some("portable" | "generic" | "scalar") => Isa::Portable,
            Some(_) => return Err(IsaError::Unknown(value.unwrap_or_default().to_string())),
        };
        if wanted > best {
            return Err(IsaError::Unsupported {
                requested: wanted,
                best,
            });
        }
        Ok(wanted)
    }

    /// The level in force: detected and `MEMDEX_CPU_ISA` read once per process. An invalid
    /// override is reported by [`Isa::selected`]; kernels reached anyway use the detected one.
    pub fn active() -> Isa {
        Isa::selected().unwrap_or_else(|_| Isa::detect())
    }

    /// The level in force, or why `MEMDEX_CPU_ISA` cannot be honoured (checked when the fast
    /// encoder loads).
    pub fn selected() -> Result<Isa, IsaError> {
        static SELECTED: OnceLock<Result<Isa, IsaError>> = OnceLock::new();
        SELECTED
            .get_or_init(|| {
                let env = std::env::var(ISA_ENV).ok();
                Isa::choose(env.as_deref(), Isa::detect())
            })
            .clone()
    }

    /// `self` if the running CPU supports it (an explicit choice, e.g. `EmbedOptions::cpu_isa`).
    pub fn supported(self) -> Result<Isa, IsaError> {
        let best = Isa::detect();
        if self > best {
            return Err(IsaError::Lacking {
                requested: self,
                best,
            });
        }
        Ok(self)
    }

    /// Every level the running CPU supports (tests run each kernel on all of them).
    pub fn available() -> Vec<Isa> {
        [Isa::Portable, Isa::Avx2, Isa::Avx512]
            .into_iter()
            .filter(|&i| i <= Isa::detect())
            .collect()
    }
}

impl std::fmt::Display for Isa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Products of the fast CPU encoder's larger batches (bulk embedding).
/// - `auto` (the default): 16-bit integers where the CPU has integer kernels, else f32 (AMX
///   is opt-in, `bf16`, until its speed is measured on an AMX machine);
/// - `i16`: 16-bit integers with exact i32 sums and per-row / per-column scales (vectors at
///   cosine > 0.9999 to the f32 ones) on AVX2 (`vpmaddwd`, ~1.6× FMA's multiply-adds a cycle on
///   Zen 3) and on AVX-512 with VNNI (`vpdpwssd`); elsewhere f32;
/// - `f32`: FMA;
/// - `bf16`: both operands rounded to bf16, f32 sums (vectors at cosine > 0.999 to the f32
///   ones): on AMX where this process may use it (AVX-512 CPUs with `amx_tile` + `amx_bf16`,
///   see [`crate::amx::status`]), else on the tile emulator, which runs the same arithmetic
///   slowly, to check its accuracy on any CPU ([`LargeBatchKernel::choose`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum LargeBatchGemm {
    #[default]
    Auto,
    F32,
    I16,
    Bf16,
}

/// The kernels that run the fast encoder's larger batches, from the instruction set, the
/// [`LargeBatchGemm`] setting and CPUID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LargeBatchKernel {
    /// memdex's f32 GEMM ([`crate::matmul`]): the AVX2 + FMA tile or the portable one.
    F32Tile,
    /// The `gemm` crate's AVX-512 f32 kernels (epilogues in passes of their own).
    F32GemmCrate,
    /// memdex's 16-bit integer GEMM on AVX2: `vpmaddwd` + `vpaddd`, 6 × 16 tile.
    I16Avx2,
    /// memdex's 16-bit integer GEMM on AVX-512 VNNI: `vpdpwssd`, 12 × 32 tile.
    I16Vnni,
    /// memdex's bf16 GEMM on AMX tiles ([`crate::bmatmul`]): `tdpbf16ps`, 32 × 32 per step.
    Bf16Amx,
    /// The same bf16 GEMM on the tile emulator ([`crate::tiles::Emulator`]): AMX's arithmetic
    /// on a CPU without it (slow; for checking accuracy).
    Bf16Emulated,
}

impl LargeBatchKernel {
    /// The kernels for `isa` and `gemm` on a CPU with or without AVX-512 VNNI (`vnni`) and
    /// usable AMX (`amx`: CPUID, OS state and permission, [`crate::amx::status`]).
    pub fn choose(isa: Isa, gemm: LargeBatchGemm, vnni: bool, amx: bool) -> LargeBatchKernel {
        use LargeBatchGemm::{Auto, Bf16, I16};
        match (isa, gemm) {
            // AMX only when asked for: its speed and accuracy on real tiles are not yet
            // measured (bench/results/amx-2026-11-28), so `auto` keeps the measured kernels
            (Isa::Avx512, Bf16) if amx => LargeBatchKernel::Bf16Amx,
            (_, Bf16) => LargeBatchKernel::Bf16Emulated,
            (Isa::Avx512, Auto | I16) if vnni => LargeBatchKernel::I16Vnni,
            (Isa::Avx512, _) => LargeBatchKernel::F32GemmCrate,
            (Isa::Avx2, Auto | I16) => LargeBatchKernel::I16Avx2,
            _ => LargeBatchKernel::F32Tile,
        }
    }

    /// The kernels for `isa` and `gemm` on the running CPU (AMX's status is checked only
    /// where it could be chosen).
    pub fn detect(isa: Isa, gemm: LargeBatchGemm) -> LargeBatchKernel {
        let amx_wanted = isa == Isa::Avx512 && gemm == LargeBatchGemm::Bf16;
        let amx = amx_wanted && crate::amx::status().is_ok();
        LargeBatchKernel::choose(isa, gemm, has_avx512_vnni(), amx)
    }

    /// Products in 16-bit integers ([`crate::qmatmul`]).
    pub fn is_integer(self) -> bool {
        matches!(self, LargeBatchKernel::I16Avx2 | LargeBatchKernel::I16Vnni)
    }

    /// Products of bf16 operands ([`crate::bmatmul`]).
    pub fn is_bf16(self) -> bool {
        matches!(
            self,
            LargeBatchKernel::Bf16Amx | LargeBatchKernel::Bf16Emulated
        )
    }

    /// What runs and why, as `memdex bench embed` prints it (`gemm`: the setting asked for).
    pub fn describe(self, gemm: LargeBatchGemm) -> String {
        // why AMX is not running, where `auto` or `bf16` would have taken it
        let no_amx = || match crate::amx::status() {
            Err(why) => format!("no AMX: {why}"),
            Ok(()) if gemm == LargeBatchGemm::Auto => {
                "AMX usable: bf16 on it is opt-in, --large-batch-gemm bf16".to_string()
            }
            Ok(()) => "AMX runs only on the avx512 instruction set".to_string(),
        };
        let auto = gemm == LargeBatchGemm::Auto;
        match self {
            LargeBatchKernel::Bf16Amx => "bf16 large batches on AMX tdpbf16ps (CPUID: amx_tile, \
                amx_bf16; XCR0 tile state; arch_prctl permission; self-check passed)"
                .to_string(),
            LargeBatchKernel::Bf16Emulated => format!(
                "bf16 large batches on the tile emulator (AMX's arithmetic, not its speed; {})",
                no_amx()
            ),
            LargeBatchKernel::I16Vnni if auto => format!(
                "i16 large batches on vpdpwssd (CPUID: avx512_vnni; {})",
                no_amx()
            ),
            LargeBatchKernel::I16Vnni => {
                "i16 large batches on vpdpwssd (CPUID: avx512_vnni)".into()
            }
            LargeBatchKernel::I16Avx2 => "i16 large batches on vpmaddwd".into(),
            LargeBatchKernel::F32GemmCrate if gemm == LargeBatchGemm::F32 => {
                "f32 large batches, gemm crate".into()
            }
            LargeBatchKernel::F32GemmCrate if auto => format!(
                "f32 large batches, gemm crate (CPUID: no avx512_vnni; {})",
                no_amx()
            ),
            LargeBatchKernel::F32GemmCrate => {
                "f32 large batches, gemm crate (CPUID: no avx512_vnni)".into()
            }
            LargeBatchKernel::F32Tile => "f32 large batches".into(),
        }
    }
}

/// Whether the CPU runs AVX-512 VNNI on 512-bit registers (`avx512vnni` and `avx512bw`
/// besides AVX-512F): `vpdpwssd`, i16 pairs multiplied and summed into i32 lanes.
pub fn has_avx512_vnni() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The instruction set the fast CPU encoder's kernels use in this process.
pub fn cpu_isa() -> Result<Isa, IsaError> {
    Isa::selected()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_overrides_and_refuses_what_the_cpu_lacks() {
        assert_eq!(Isa::choose(None, Isa::Avx2), Ok(Isa::Avx2));
        assert_eq!(Isa::choose(Some("auto"), Isa::Avx512), Ok(Isa::Avx512));
        assert_eq!(Isa::choose(Some(" AVX2 "), Isa::Avx512), Ok(Isa::Avx2));
        assert_eq!(Isa::choose(Some("portable"), Isa::Avx2), Ok(Isa::Portable));
        assert_eq!(
            Isa::choose(Some("avx512"), Isa::Avx2),
            Err(IsaError::Unsupported {
                requested: Isa::Avx512,
                best: Isa::Avx2
            })
        );
        let err = Isa::choose(Some("sse9"), Isa::Avx2).unwrap_err();
        assert!(err.to_string().contains("MEMDEX_CPU_ISA=\"sse9\""), "{err}");
        assert!(Isa::available().contains(&Isa::Portable));
        assert!(Isa::available().contains(&Isa::detect()));
    }

    #[test]
    fn large_batch_kernels_follow_the_isa_the_setting_and_cpuid() {
        use LargeBatchGemm::{Auto, Bf16, F32, I16};
        use LargeBatchKernel as K;
        let choose = LargeBatchKernel::choose;
        // (isa, setting, vnni, amx)
        let cases = [
            (Isa::Avx512, Auto, true, true, K::I16Vnni),
            (Isa::Avx512, Bf16, false, true, K::Bf16Amx),
            (Isa::Avx512, Auto, true, false, K::I16Vnni),
            (Isa::Avx512, I16, true, true, K::I16Vnni),
            (Isa::Avx512, I16, false, false, K::F32GemmCrate),
            (Isa::Avx512, Auto, false, false, K::F32GemmCrate),
            (Isa::Avx512, F32, true, true, K::F32GemmCrate),
            (Isa::Avx512, Bf16, true, false, K::Bf16Emulated),
            (Isa::Avx2, Auto, true, true, K::I16Avx2),
            (Isa::Avx2, I16, true, false, K::I16Avx2),
            (Isa::Avx2, Bf16, true, true, K::Bf16Emulated),
            (Isa::Avx2, F32, false, false, K::F32Tile),
            (Isa::Portable, I16, true, true, K::F32Tile),
            (Isa::Portable, Auto, true, true, K::F32Tile),
            (Isa::Portable, Bf16, false, false, K::Bf16Emulated),
        ];
        for (isa, gemm, vnni, amx, want) in cases {
            assert_eq!(
                choose(isa, gemm, vnni, amx),
                want,
                "{isa} {gemm:?} {vnni} {amx}"
            );
        }
        assert!(K::I16Vnni.describe(I16).contains("avx512_vnni"));
        assert!(K::F32GemmCrate.describe(I16).contains("no avx512_vnni"));
        assert!(K::Bf16Amx.describe(Auto).contains("tdpbf16ps"));
        // where AMX was not taken, `auto` says why
        if crate::amx::status().is_err() {
            assert!(
                K::I16Vnni.describe(Auto).contains("no AMX"),
                "{}",
                K::I16Vnni.describe(Auto)
            );
            assert!(K::Bf16Emulated.describe(Bf16).contains("no AMX"));
        }
        assert!(K::I16Vnni.is_integer() && !K::F32GemmCrate.is_integer());
        assert!(K::Bf16Emulated.is_bf16() && !K::Bf16Emulated.is_integer());
    }
}
