//! Intel AMX: whether this process may use it, and the tile instructions themselves.
//!
//! AMX is usable when, checked once per process ([`status`]):
//! 1. CPUID leaf 7 reports `amx_tile` (EDX bit 24) and `amx_bf16` (EDX bit 22);
//! 2. the OS saves the tile state: CPUID reports OSXSAVE and XCR0 has bits 17 (XTILECFG) and 18
//!    (XTILEDATA);
//! 3. palette 1 (CPUID leaf 0x1D) and the TMUL unit (leaf 0x1E) have the shapes the kernel
//!    configures: 8 tiles of 16 rows × 64 bytes, K ≤ 16 pairs, N ≤ 64 bytes;
//! 4. Linux grants the permission: `arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`
//!    (Linux ≥ 5.16; without it the first tile instruction is a fatal `SIGILL`);
//! 5. a self-check: one tile product on the hardware equals the [`Emulator`]'s.
//!
//! A CPU with the CPUID bits whose later steps fail is logged once (`tracing::warn!`) and
//! runs the AVX-512 kernels; [`status`] says why. Other operating systems are not supported
//! yet (no permission step is implemented for them), and neither are other architectures.
//!
//! [`AmxTiles`] issues the instructions through `asm!` (Rust's AMX intrinsics are unstable):
//! one instruction per block, every tile register declared clobbered; the compiler never uses
//! tile registers itself, so the tiles keep their contents between blocks, as C code with the
//! intrinsics relies on too.

use std::sync::OnceLock;

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
use crate::tiles::{Emulator, TileConfig, TileUnit, Tmm};

/// Why this process runs without AMX.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AmxUnavailable {
    /// Not an x86-64 Linux build.
    Platform,
    /// CPUID lacks the named feature (`amx_tile`, `amx_bf16`).
    Cpuid(&'static str),
    /// The OS does not save the tile state (XCR0 bits 17 and 18, or OSXSAVE).
    Os,
    /// Palette 1 or the TMUL unit is smaller than the kernel's tiles.
    Palette(String),
    /// `arch_prctl(ARCH_REQ_XCOMP_PERM)` failed with this errno.
    Permission(i64),
    /// The hardware's tile product differed from the emulator's.
    SelfCheck(String),
}

impl std::fmt::Display for AmxUnavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AmxUnavailable::Platform => f.write_str("no AMX support on this platform"),
            AmxUnavailable::Cpuid(what) => write!(f, "CPUID: no {what}"),
            AmxUnavailable::Os => f.write_str("the OS does not enable the tile state (XCR0)"),
            AmxUnavailable::Palette(why) => write!(f, "AMX palette: {why}"),
            AmxUnavailable::Permission(errno) => {
                write!(f, "arch_prctl(ARCH_REQ_XCOMP_PERM) failed: errno {errno}")
            }
            AmxUnavailable::SelfCheck(why) => write!(f, "AMX self-check failed: {why}"),
        }
    }
}

/// Whether the CPU reports `amx_tile` and `amx_bf16` (CPUID alone; [`status`] checks the rest).
pub fn has_amx_cpuid() -> bool {
    cpuid_check().is_ok()
}

/// Whether this process may use AMX, checked (and the permission requested) once.
pub fn status() -> &'static Result<(), AmxUnavailable> {
    static STATUS: OnceLock<Result<(), AmxUnavailable>> = OnceLock::new();
    STATUS.get_or_init(|| {
        let s = detect();
        if let Err(why) = &s {
            if has_amx_cpuid() {
                tracing::warn!("AMX reported by CPUID but not used: {why}");
            }
        }
        s
    })
}

/// A proof that AMX is usable in this process.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(
    not(all(target_arch = "x86_64", target_os = "linux")),
    allow(dead_code)
)]
pub(crate) struct Amx {
    _checked: (),
}

#[cfg_attr(
    not(all(target_arch = "x86_64", target_os = "linux")),
    allow(dead_code)
)]
impl Amx {
    /// The token, where [`status`] is fine.
    pub(crate) fn get() -> Option<Amx> {
        status().is_ok().then_some(Amx { _checked: () })
    }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn cpuid_check() -> Result<(), AmxUnavailable> {
    use std::arch::x86_64::__cpuid_count;
    if __cpuid_count(0, 0).eax < 0x1e {
        return Err(AmxUnavailable::Cpuid("amx_tile"));
    }
    let edx = __cpuid_count(7, 0).edx;
    if edx & (1 << 24) == 0 {
        return Err(AmxUnavailable::Cpuid("amx_tile"));
    }
    if edx & (1 << 22) == 0 {
        return Err(AmxUnavailable::Cpuid("amx_bf16"));
    }
    Ok(())
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn cpuid_check() -> Result<(), AmxUnavailable> {
    Err(AmxUnavailable::Platform)
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn detect() -> Result<(), AmxUnavailable> {
    use std::arch::x86_64::__cpuid_count;
    cpuid_check()?;
    if __cpuid_count(1, 0).ecx & (1 << 27) == 0 {
        return Err(AmxUnavailable::Os);
    }
    // SAFETY: CPUID reports OSXSAVE, so XGETBV is enabled.
    #[allow(unsafe_code)]
    let xcr0 = unsafe { x86::xcr0() };
    if xcr0 & (0b11 << 17) != 0b11 << 17 {
        return Err(AmxUnavailable::Os);
    }
    palette_check(__cpuid_count(0x1d, 1), __cpuid_count(0x1e, 0))?;
    x86::request_permission()?;
    self_check(Amx { _checked: () })
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn detect() -> Result<(), AmxUnavailable> {
    Err(AmxUnavailable::Platform)
}

/// Palette 1 (leaf 0x1D subleaf 1) and TMUL (leaf 0x1E) hold the kernel's tiles.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn palette_check(
    p1: std::arch::x86_64::CpuidResult,
    tmul: std::arch::x86_64::CpuidResult,
) -> Result<(), AmxUnavailable> {
    let bytes_per_row = p1.ebx & 0xffff;
    let names = p1.ebx >> 16;
    let max_rows = p1.ecx & 0xffff;
    let (max_k, max_n) = (tmul.ebx & 0xff, (tmul.ebx >> 8) & 0xffff);
    if bytes_per_row < 64 || names < 8 || max_rows < 16 || max_k < 16 || max_n < 64 {
        return Err(AmxUnavailable::Palette(format!(
            "{names} tiles of {max_rows} × {bytes_per_row} bytes, TMUL K {max_k} N {max_n}"
        )));
    }
    Ok(())
}

/// One 16 × 16 × 32 product on the hardware and on the emulator: they must agree.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn self_check(amx: Amx) -> Result<(), AmxUnavailable> {
    use crate::tiles::{bf16_bits, pair};
    let cfg = TileConfig::palette1([(16, 64); crate::tiles::TILES]);
    let v = |i: usize| bf16_bits(((i * 37 % 29) as f32 - 14.0) * 0.125);
    let a: Vec<u32> = (0..256).map(|i| pair(v(2 * i), v(2 * i + 1))).collect();
    let b: Vec<u32> = (0..256).map(|i| pair(v(3 * i + 5), v(7 * i + 1))).collect();
    let run = |t: &mut dyn TileUnit| {
        let mut c = vec![0f32; 256];
        t.zero(Tmm(0));
        t.load(Tmm(4), &a, 16);
        t.load(Tmm(6), &b, 16);
        t.dot_bf16(Tmm(0), Tmm(4), Tmm(6));
        t.store(Tmm(0), &mut c, 16);
        c
    };
    let want = run(&mut Emulator::configured(&cfg));
    let got = run(&mut AmxTiles::configured(amx, &cfg));
    // small multiples of 1/64: every sum is exact, whatever the hardware's order
    match got.iter().zip(&want).position(|(g, w)| g != w) {
        None => Ok(()),
        Some(i) => Err(AmxUnavailable::SelfCheck(format!(
            "element {i}: {} vs {}",
            got[i], want[i]
        ))),
    }
}

/// The tile unit of the CPU: a configuration loaded (`ldtilecfg`) until it is dropped
/// (`tilerelease`).
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[derive(Debug)]
pub(crate) struct AmxTiles {
    shapes: [(usize, usize); crate::tiles::TILES],
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
impl AmxTiles {
    /// Loads `cfg` into the tile unit. Panics on a configuration `ldtilecfg` would refuse.
    pub(crate) fn configured(_amx: Amx, cfg: &TileConfig) -> AmxTiles {
        if let Some(why) = cfg.invalid() {
            panic!("ldtilecfg: {why}");
        }
        // SAFETY: `_amx` proves AMX is enabled for this process; the configuration is valid
        // (checked above), 64 bytes, and only read.
        #[allow(unsafe_code)]
        unsafe {
            x86::ldtilecfg(cfg)
        };
        AmxTiles {
            shapes: cfg.shapes(),
        }
    }

    /// `(rows, bytes per row)` of `t`, which must be configured.
    #[inline(always)]
    fn shape(&self, t: Tmm) -> (usize, usize) {
        crate::tiles::configured_shape(&self.shapes, t)
    }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
impl Drop for AmxTiles {
    fn drop(&mut self) {
        // SAFETY: the tile unit was configured by `configured`, so AMX is enabled.
        #[allow(unsafe_code)]
        unsafe {
            x86::tilerelease()
        }
    }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
impl TileUnit for AmxTiles {
    #[inline(always)]
    fn zero(&mut self, t: Tmm) {
        self.shape(t);
        // SAFETY: `t` is a configured tile of this unit (checked).
        #[allow(unsafe_code)]
        unsafe {
            x86::tilezero(t.0)
        }
    }

    #[inline(always)]
    fn load(&mut self, t: Tmm, src: &[u32], stride: usize) {
        let (rows, colsb) = self.shape(t);
        assert!(
            src.len() >= crate::tiles::span(rows, colsb, stride),
            "tileloadd past the slice"
        );
        // SAFETY: the tile reads `rows` rows of `colsb` bytes at `stride` words: inside `src`
        // (checked); the tile is configured.
        #[allow(unsafe_code)]
        unsafe {
            x86::tileloadd(t.0, src.as_ptr(), 4 * stride)
        }
    }

    #[inline(always)]
    fn dot_bf16(&mut self, c: Tmm, a: Tmm, b: Tmm) {
        let shapes = (self.shape(c), self.shape(a), self.shape(b));
        if let Err(why) = crate::tiles::dot_shapes_ok((c, a, b), shapes.0, shapes.1, shapes.2) {
            panic!("tdpbf16ps: {why}");
        }
        // SAFETY: the three tiles are configured with shapes TDPBF16PS accepts (checked).
        #[allow(unsafe_code)]
        unsafe {
            x86::tdpbf16ps(c.0, a.0, b.0)
        }
    }

    #[inline(always)]
    fn store(&mut self, t: Tmm, dst: &mut [f32], stride: usize) {
        let (rows, colsb) = self.shape(t);
        assert!(
            dst.len() >= crate::tiles::span(rows, colsb, stride),
            "tilestored past the slice"
        );
        // SAFETY: the tile writes `rows` rows of `colsb` bytes at `stride` words: inside `dst`
        // (checked); the tile is configured.
        #[allow(unsafe_code)]
        unsafe {
            x86::tilestored(t.0, dst.as_mut_ptr(), 4 * stride)
        }
    }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[allow(unsafe_code)]
mod x86 {
    //! The instructions, one `asm!` block each. Tile registers are immediates in the
    //! encoding, so each instruction is written out per register it is used with.
    use std::arch::asm;

    use super::AmxUnavailable;
    use crate::tiles::TileConfig;

    /// `arch_prctl` (x86-64 syscall 158) codes from `asm/prctl.h`, and the tile data's
    /// XSAVE feature number.
    const SYS_ARCH_PRCTL: i64 = 158;
    const ARCH_REQ_XCOMP_PERM: i64 = 0x1023;
    const XFEATURE_XTILEDATA: i64 = 18;

    /// XCR0.
    ///
    /// # Safety
    /// CPUID must report OSXSAVE.
    #[target_feature(enable = "xsave")]
    pub(super) unsafe fn xcr0() -> u64 {
        std::arch::x86_64::_xgetbv(0)
    }

    /// Asks Linux for the tile data state for this process (all its threads).
    pub(super) fn request_permission() -> Result<(), AmxUnavailable> {
        let ret: i64;
        // SAFETY: arch_prctl(ARCH_REQ_XCOMP_PERM, n) reads no memory and changes only the
        // process's permitted XSAVE features; the syscall clobbers rcx and r11 (declared).
        unsafe {
            asm!(
                "syscall",
                inlateout("rax") SYS_ARCH_PRCTL => ret,
                in("rdi") ARCH_REQ_XCOMP_PERM,
                in("rsi") XFEATURE_XTILEDATA,
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack),
            );
        }
        if ret < 0 {
            return Err(AmxUnavailable::Permission(-ret));
        }
        Ok(())
    }

    /// # Safety
    /// AMX is enabled for this process; `cfg` is valid for palette 1.
    pub(super) unsafe fn ldtilecfg(cfg: &TileConfig) {
        asm!(
            "ldtilecfg [{}]",
            in(reg) cfg.bytes().as_ptr(),
            out("tmm0") _, out("tmm1") _, out("tmm2") _, out("tmm3") _,
            out("tmm4") _, out("tmm5") _, out("tmm6") _, out("tmm7") _,
            options(nostack, readonly, preserves_flags),
        );
    }

    /// # Safety
    /// The tile unit is configured.
    pub(super) unsafe fn tilerelease() {
        asm!(
            "tilerelease",
            out("tmm0") _, out("tmm1") _, out("tmm2") _, out("tmm3") _,
            out("tmm4") _, out("tmm5") _, out("tmm6") _, out("tmm7") _,
            options(nostack, nomem, preserves_flags),
        );
    }

    /// One instruction with tile register `$t` (0..8) between `$head` and `$tail`, every
    /// tile register declared clobbered.
    macro_rules! per_tile {
        ($t:expr, $head:literal, $tail:literal, $opts:tt $(, ($($arg:tt)*))*) => {
            match $t {
                0 => per_tile!(@one "0", $head, $tail, $opts $(, ($($arg)*))*),
                1 => per_tile!(@one "1", $head, $tail, $opts $(, ($($arg)*))*),
                2 => per_tile!(@one "2", $head, $tail, $opts $(, ($($arg)*))*),
                3 => per_tile!(@one "3", $head, $tail, $opts $(, ($($arg)*))*),
                4 => per_tile!(@one "4", $head, $tail, $opts $(, ($($arg)*))*),
                5 => per_tile!(@one "5", $head, $tail, $opts $(, ($($arg)*))*),
                6 => per_tile!(@one "6", $head, $tail, $opts $(, ($($arg)*))*),
                7 => per_tile!(@one "7", $head, $tail, $opts $(, ($($arg)*))*),
                _ => unreachable!("tmm{} does not exist", $t),
            }
        };
        (@one $n:literal, $head:literal, $tail:literal, ($($opt:ident),*) $(, ($($arg:tt)*))*) => {
            asm!(
                concat!($head, $n, $tail),
                $($($arg)*,)*
                out("tmm0") _, out("tmm1") _, out("tmm2") _, out("tmm3") _,
                out("tmm4") _, out("tmm5") _, out("tmm6") _, out("tmm7") _,
                options($($opt),*),
            )
        };
    }

    /// # Safety
    /// Tile `t` is configured.
    #[inline(always)]
    pub(super) unsafe fn tilezero(t: u8) {
        per_tile!(t, "tilezero tmm", "", (nostack, nomem, preserves_flags))
    }

    /// # Safety
    /// Tile `t` is configured, and its rows at `src + r·stride` bytes are readable.
    #[inline(always)]
    pub(super) unsafe fn tileloadd(t: u8, src: *const u32, stride: usize) {
        per_tile!(
            t,
            "tileloadd tmm",
            ", [{src} + {stride}*1]",
            (nostack, readonly, preserves_flags),
            (src = in(reg) src),
            (stride = in(reg) stride)
        )
    }

    /// # Safety
    /// Tile `t` is configured, and its rows at `dst + r·stride` bytes are writable.
    #[inline(always)]
    pub(super) unsafe fn tilestored(t: u8, dst: *mut f32, stride: usize) {
        per_tile!(
            t,
            "tilestored [{dst} + {stride}*1], tmm",
            "",
            (nostack, preserves_flags),
            (dst = in(reg) dst),
            (stride = in(reg) stride)
        )
    }

    /// `tdpbf16ps tmm$c, tmm$a, tmm$b`.
    macro_rules! dp {
        ($c:literal, $a:literal, $b:literal) => {
            asm!(
                concat!("tdpbf16ps tmm", $c, ", tmm", $a, ", tmm", $b),
                out("tmm0") _, out("tmm1") _, out("tmm2") _, out("tmm3") _,
                out("tmm4") _, out("tmm5") _, out("tmm6") _, out("tmm7") _,
                options(nostack, nomem, preserves_flags),
            )
        };
    }

    /// # Safety
    /// Tiles `c`, `a`, `b` are configured with shapes `tdpbf16ps` accepts. Only the register
    /// triples of [`crate::bmatmul`]'s tile plan (C in 0..4, A in 4..6, B in 6..8,
    /// `c = 2·(a − 4) + (b − 6)`) are encoded.
    #[inline(always)]
    pub(super) unsafe fn tdpbf16ps(c: u8, a: u8, b: u8) {
        match (c, a, b) {
            (0, 4, 6) => dp!("0", "4", "6"),
            (1, 4, 7) => dp!("1", "4", "7"),
            (2, 5, 6) => dp!("2", "5", "6"),
            (3, 5, 7) => dp!("3", "5", "7"),
            _ => unreachable!("tdpbf16ps tmm{c}, tmm{a}, tmm{b}: not in the tile plan"),
        }
    }
}

#[cfg(all(test, target_arch = "x86_64", target_os = "linux"))]
mod tests {
    use super::*;
    use std::arch::x86_64::CpuidResult;

    fn leaf(eax: u32, ebx: u32, ecx: u32) -> CpuidResult {
        CpuidResult {
            eax,
            ebx,
            ecx,
            edx: 0,
        }
    }

    #[test]
    fn palette_and_tmul_limits_are_read_from_cpuid() {
        // Sapphire Rapids: 8 KB of tiles, 1 KB each, 64 bytes a row, 8 names, 16 rows;
        // TMUL K 16, N 64 bytes
        let spr = leaf(0x0400_2000, 0x0008_0040, 0x10);
        assert_eq!(palette_check(spr, leaf(0, 0x4010, 0)), Ok(()));
        let half_rows = leaf(0x0400_2000, 0x0008_0040, 0x8);
        assert!(palette_check(half_rows, leaf(0, 0x4010, 0)).is_err());
        assert!(
            palette_check(spr, leaf(0, 0x2010, 0)).is_err(),
            "N 32 bytes"
        );
    }

    /// The syscall reaches the kernel: Linux grants the tile data only where the OS enabled it
    /// (XCR0), and otherwise refuses with EOPNOTSUPP (or EINVAL before Linux 5.16).
    #[test]
    fn the_permission_request_is_answered_by_the_kernel() {
        let os_tiles = std::arch::x86_64::__cpuid_count(1, 0).ecx & (1 << 27) != 0 && {
            // SAFETY: CPUID reports OSXSAVE (checked first).
            #[allow(unsafe_code)]
            let xcr0 = unsafe { x86::xcr0() };
            xcr0 & (0b11 << 17) == 0b11 << 17
        };
        match x86::request_permission() {
            Ok(()) => assert!(os_tiles, "granted without the tile state in XCR0"),
            Err(AmxUnavailable::Permission(errno)) => {
                assert!(errno == 95 || errno == 22, "errno {errno}");
            }
            Err(other) => panic!("{other}"),
        }
    }

    #[test]
    fn status_names_why_amx_is_not_used() {
        match status() {
            Ok(()) => assert!(has_amx_cpuid() && Amx::get().is_some()),
            Err(why) => {
                assert!(Amx::get().is_none());
                if !has_amx_cpuid() {
                    assert!(matches!(why, AmxUnavailable::Cpuid(_)), "{why}");
                    assert!(why.to_string().starts_with("CPUID: no amx_"), "{why}");
                }
            }
        }
    }
}
