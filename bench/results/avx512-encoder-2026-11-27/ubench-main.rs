use std::arch::x86_64::*;
//! Register-only throughput of one core: 12 independent accumulators per instruction, operands
//! loaded (so nothing folds). The "(3 ops)" rows add an xor feeding the multiply (to keep it in
//! the loop): their instructions/s count the multiply only.
use std::time::Instant;
const N: usize = 200_000_000 / 12;
static DATA: [i32; 16 * 16] = [3; 256];

macro_rules! bench_int {
    ($name:ident, $feat:literal, $op:ident) => {
        #[target_feature(enable = $feat)]
        unsafe fn $name() -> i32 {
            let p = std::hint::black_box(DATA.as_ptr());
            let mut acc = [_mm512_set1_epi32(1); 12];
            for it in 0..N {
                let a = _mm512_loadu_si512(p.add((it & 7) * 16) as *const _);
                let b = _mm512_loadu_si512(p.add(((it + 3) & 7) * 16) as *const _);
                for x in acc.iter_mut() { *x = $op(*x, a, b); }
            }
            let mut s = _mm512_setzero_si512(); for x in acc { s = _mm512_add_epi32(s, x); } _mm512_reduce_add_epi32(s)
        }
    };
}
bench_int!(dpwssd, "avx512f,avx512bw,avx512vnni", _mm512_dpwssd_epi32);
bench_int!(dpbusd, "avx512f,avx512bw,avx512vnni", _mm512_dpbusd_epi32);
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn maddadd512(x: __m512i, a: __m512i, b: __m512i) -> __m512i { _mm512_add_epi32(x, _mm512_madd_epi16(_mm512_xor_si512(a, x), b)) }
bench_int!(madd512, "avx512f,avx512bw", maddadd512);

#[target_feature(enable = "avx512f")]
unsafe fn fma() -> f32 {
    let p = std::hint::black_box(DATA.as_ptr()) as *const f32;
    let mut acc = [_mm512_set1_ps(1.0); 12];
    for it in 0..N {
        let a = _mm512_loadu_ps(p.add((it & 7) * 16));
        let b = _mm512_loadu_ps(p.add(((it + 3) & 7) * 16));
        for x in acc.iter_mut() { *x = _mm512_fmadd_ps(a, b, *x); }
    }
    let mut s = _mm512_setzero_ps(); for x in acc { s = _mm512_add_ps(s, x); } _mm512_reduce_add_ps(s)
}
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn dpbf16() -> f32 {
    let p = std::hint::black_box(DATA.as_ptr());
    let mut acc = [_mm512_set1_ps(1.0); 12];
    for it in 0..N {
        let a: __m512bh = std::mem::transmute(_mm512_loadu_si512(p.add((it & 7) * 16) as *const _));
        let b: __m512bh = std::mem::transmute(_mm512_loadu_si512(p.add(((it + 3) & 7) * 16) as *const _));
        for x in acc.iter_mut() { *x = _mm512_dpbf16_ps(*x, a, b); }
    }
    let mut s = _mm512_setzero_ps(); for x in acc { s = _mm512_add_ps(s, x); } _mm512_reduce_add_ps(s)
}
#[target_feature(enable = "avx2,fma")]
unsafe fn madd_add() -> i32 {
    let p = std::hint::black_box(DATA.as_ptr());
    let mut acc = [_mm256_set1_epi32(1); 12];
    for it in 0..N {
        let a = _mm256_loadu_si256(p.add((it & 7) * 16) as *const _);
        let b = _mm256_loadu_si256(p.add(((it + 3) & 7) * 16) as *const _);
        for x in acc.iter_mut() { *x = _mm256_add_epi32(*x, _mm256_madd_epi16(_mm256_xor_si256(a, *x), b)); }
    }
    let mut s = [0i32; 8]; let mut t = _mm256_setzero_si256(); for x in acc { t = _mm256_add_epi32(t, x); } _mm256_storeu_si256(s.as_mut_ptr() as *mut _, t); s.iter().sum()
}
#[target_feature(enable = "avx2,fma")]
unsafe fn fma256() -> f32 {
    let p = std::hint::black_box(DATA.as_ptr()) as *const f32;
    let mut acc = [_mm256_set1_ps(1.0); 12];
    for it in 0..N {
        let a = _mm256_loadu_ps(p.add((it & 7) * 16));
        let b = _mm256_loadu_ps(p.add(((it + 3) & 7) * 16));
        for x in acc.iter_mut() { *x = _mm256_fmadd_ps(a, b, *x); }
    }
    let mut s = [0f32; 8]; let mut t = _mm256_setzero_ps(); for x in acc { t = _mm256_add_ps(t, x); } _mm256_storeu_ps(s.as_mut_ptr(), t); s.iter().sum()
}
fn main() {
    let ops = (N * 12) as f64;
    macro_rules! t { ($name:expr, $f:expr, $macs:expr) => {{
        let t = Instant::now(); let r = unsafe { $f }; let s = t.elapsed().as_secs_f64();
        println!("{:22} {:6.2} G instr/s  {:7.1} GMAC/s  ({:?})", $name, ops / s / 1e9, ops * $macs / s / 1e9, r);
    }}}
    for _ in 0..2 {
    t!("fma zmm", fma(), 16.0);
    t!("fma ymm", fma256(), 8.0);
    t!("dpwssd", dpwssd(), 32.0);
    t!("dpbusd", dpbusd(), 64.0);
    t!("dpbf16", dpbf16(), 32.0);
    t!("madd+add zmm (3 ops)", madd512(), 32.0);
    t!("madd+add ymm (3 ops)", madd_add(), 16.0);
    }
}
