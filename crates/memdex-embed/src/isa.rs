//! The one run-time choice of instruction set for the fast CPU encoder's kernels.
//!
//! Detected once per process: the best the CPU has, unless `MEMDEX_CPU_ISA` (`avx512`,
//! `avx2`, `portable`; `auto` or empty = detect) forces a lower one, so that both x86 paths
//! can be measured side by side on one machine. Every kernel of `math`, `attention`,
//! `matmul` and `skinny` follows [`Isa::active`]:
//! - `Avx512`: AVX-512 register tiles in `skinny`; large batches in 16-bit integers on
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

/// Products of the fast CPU encoder's larger batches (bulk embedding): f32, or 16-bit
/// integers with exact i32 sums and per-row / per-column scales (vectors at cosine > 0.9999
/// to the f32 ones). The integer products run on AVX2 (`vpmaddwd`, ~1.6× FMA's multiply-adds
/// a cycle on Zen 3) and on AVX-512 with VNNI (`vpdpwssd`); elsewhere both settings are f32
/// ([`LargeBatchKernel::choose`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum LargeBatchGemm {
    F32,
    #[default]
    I16,
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
}

impl LargeBatchKernel {
    /// The kernels for `isa` and `gemm` on a CPU with (`vnni`) or without AVX-512 VNNI.
    pub fn choose(isa: Isa, gemm: LargeBatchGemm, vnni: bool) -> LargeBatchKernel {
        match (isa, gemm) {
            (Isa::Avx512, LargeBatchGemm::I16) if vnni => LargeBatchKernel::I16Vnni,
            (Isa::Avx512, _) => LargeBatchKernel::F32GemmCrate,
            (Isa::Avx2, LargeBatchGemm::I16) => LargeBatchKernel::I16Avx2,
            _ => LargeBatchKernel::F32Tile,
        }
    }

    /// The kernels for `isa` and `gemm` on the running CPU.
    pub fn detect(isa: Isa, gemm: LargeBatchGemm) -> LargeBatchKernel {
        LargeBatchKernel::choose(isa, gemm, has_avx512_vnni())
    }

    /// Products in 16-bit integers ([`crate::qmatmul`]).
    pub fn is_integer(self) -> bool {
        matches!(self, LargeBatchKernel::I16Avx2 | LargeBatchKernel::I16Vnni)
    }

    /// What runs and why, as `memdex bench embed` prints it (`gemm`: the setting asked for).
    pub fn describe(self, gemm: LargeBatchGemm) -> &'static str {
        match (self, gemm) {
            (LargeBatchKernel::I16Vnni, _) => "i16 large batches on vpdpwssd (CPUID: avx512_vnni)",
            (LargeBatchKernel::I16Avx2, _) => "i16 large batches on vpmaddwd",
            (LargeBatchKernel::F32GemmCrate, LargeBatchGemm::I16) => {
                "f32 large batches, gemm crate (CPUID: no avx512_vnni)"
            }
            (LargeBatchKernel::F32GemmCrate, LargeBatchGemm::F32) => {
                "f32 large batches, gemm crate"
            }
            (LargeBatchKernel::F32Tile, _) => "f32 large batches",
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
        use LargeBatchGemm::{F32, I16};
        use LargeBatchKernel as K;
        let choose = LargeBatchKernel::choose;
        assert_eq!(choose(Isa::Avx512, I16, true), K::I16Vnni);
        assert_eq!(choose(Isa::Avx512, I16, false), K::F32GemmCrate);
        assert_eq!(choose(Isa::Avx512, F32, true), K::F32GemmCrate);
        assert_eq!(choose(Isa::Avx2, I16, true), K::I16Avx2);
        assert_eq!(choose(Isa::Avx2, F32, false), K::F32Tile);
        assert_eq!(choose(Isa::Portable, I16, true), K::F32Tile);
        assert!(K::I16Vnni.describe(I16).contains("avx512_vnni"));
        assert!(K::F32GemmCrate.describe(I16).contains("no avx512_vnni"));
        assert!(K::I16Vnni.is_integer() && !K::F32GemmCrate.is_integer());
    }
}
