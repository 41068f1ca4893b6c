// Segmented cosine top-k on tensor cores: the tiled scan of segmented_topk.cu (a block reads
// each row of a range once for the tile of up to 16 queries that share it; tiles: tile.cuh)
// with the products on wmma m16n16k16 (f16 inputs, f32 accumulate) instead of CUDA cores,
// then an exact f32 re-score of the kept candidates, so the answer is segmented_topk's.
//
// Per block (grid = tiles × splits, 256 threads; rows [lo, hi) of the tile's range):
//  1. The tile's queries, each divided by its norm, as f16 columns of B (dim × 16, zeros for
//     the columns past the tile), and their f32 norms.
//  2. Each warp takes 16 rows at a time: A = the rows (row-major, straight from global memory;
//     staged with zeros through shared memory at the matrix's end), acc = A·B over dim in steps
//     of 16. Approximate cosine = acc / |row| (|row| in f32 from the row's f16). Lane t keeps
//     query t's best kk = k + MEMDEX_TC_EXTRA by approximate cosine (one sorted list per warp
//     and query).
//  3. Per query (one warp each): the warps' lists merged into the block's best kk by
//     approximate cosine, each re-scored exactly (f32, the formula of tile.cuh's scan), the top
//     k of those kept. Certificate: the f16 rounding of the unit query moves a cosine by at most
//     2^-11 (|dot(r, q̂ - f16(q̂))| <= |r|·|q̂ - f16(q̂)| <= 2^-11 |r|), plus f32 accumulation:
//     MEMDEX_TC_EPS = 1e-3 bounds it twice over. A row outside the candidates has an
//     approximate cosine <= m (the kk-th candidate's), so an exact one <= m + EPS: when the
//     k-th exact score beats m + EPS (or the part has fewer than kk rows), the top k is exact.
//     Otherwise (near-duplicate rows) the warp scans the part again, exactly, for that query.
// Output as segmented_topk: k candidates per (query, part) at out[(q * splits + part) * k];
// memdex_topk_merge (segmented_topk.cu) reduces the parts.
//
// Shared memory (dynamic; MEMDEX_TC_SMEM below): B (16 × (dim + 8) halves), per warp a 16 × 16
// f32 staging tile and 16 row norms, 16 query norms, then per warp and query of the tile
// (cap = the longest tile) a list of kk (score, row). Needs dim % 16 == 0, dim <= 1024,
// k + MEMDEX_TC_EXTRA <= MEMDEX_MAX_K, rows 32-byte aligned (the host checks: tiles.rs).
#include <mma.h>

#include "tile.cuh"

#define MEMDEX_TC_EXTRA 16
#define MEMDEX_TC_EPS 1e-3f

#ifdef MEMDEX_EMULATED
inline uint64_t memdex_tc_rescans = 0;  // exact rescans run (the emulator's tests count them)
#endif

#define TC_PARAMS                                                                             \
    const __half *__restrict__ emb, uint32_t dim, uint32_t rows,                              \
        const float *__restrict__ queries, const uint32_t *__restrict__ ranges,               \
        const uint32_t *__restrict__ tile_q, const uint32_t *__restrict__ tile_off,           \
        uint32_t cap, uint32_t k, uint32_t splits, float *__restrict__ out_s,                 \
        uint32_t *__restrict__ out_r

// The block's shared memory, carved as the header says.
struct MemdexTcSmem {
    __half* qh;     // 16 × ldq, column t = query t / |query t|
    float* stage;   // MEMDEX_WARPS × 256: a warp's accumulator tile (or its staged rows)
    float* rn;      // MEMDEX_WARPS × 16 row norms
    float* qn;      // 16 query norms
    float* ls;      // [warp][query][kk]
    uint32_t* lr;
    uint32_t ldq, kk, cap;
};

__device__ __forceinline__ MemdexTcSmem memdex_tc_smem(uint32_t dim, uint32_t k, uint32_t cap) {
    MemdexTcSmem s;
    s.ldq = dim + 8;
    s.kk = k + MEMDEX_TC_EXTRA;
    s.cap = cap;
    char* p = reinterpret_cast<char*>(memdex_dynamic_smem());
    s.qh = reinterpret_cast<__half*>(p);
    p += 32 * s.ldq;  // 16 columns × ldq halves: a multiple of 32 bytes
    s.stage = reinterpret_cast<float*>(p);
    s.rn = s.stage + MEMDEX_WARPS * 256;
    s.qn = s.rn + MEMDEX_WARPS * 16;
    s.ls = s.qn + 16;
    s.lr = reinterpret_cast<uint32_t*>(s.ls + MEMDEX_WARPS * cap * s.kk);
    return s;
}

// Exact cosine of `row` with query q (f32, norm qn) as tile.cuh's scan computes it (f32 dot
// of the widened f16 row, f32 squared norm); the whole warp calls it, every lane gets it.
__device__ __forceinline__ float memdex_tc_exact(const __half* __restrict__ emb, uint32_t dim,
                                                 uint32_t row, const float* __restrict__ q,
                                                 float qn) {
    const uint32_t lane = threadIdx.x % 32;
    const __half* r = emb + (uint64_t)row * dim;
    float d = 0.f, n2 = 0.f;
    for (uint32_t e = lane; e < dim; e += 32) {
        const float x = __half2float(r[e]);
        d = fmaf(x, q[e], d);
        n2 = fmaf(x, x, n2);
    }
    d = memdex_warp_sum(d);
    n2 = memdex_warp_sum(n2);
    return d / fmaxf(qn * sqrtf(n2), 1e-30f);
}

// Step 1: the tile's unit queries as f16 columns, their norms, the lists emptied.
__device__ __forceinline__ void memdex_tc_load(const float* __restrict__ queries, uint32_t dim,
                                               const uint32_t* tq, uint32_t nt,
                                               const MemdexTcSmem& s) {
    const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (uint32_t t = warp; t < 16; t += MEMDEX_WARPS) {
        float nn = 0.f;
        if (t < nt)
            for (uint32_t e = lane; e < dim; e += 32) {
                const float x = queries[(uint64_t)tq[t] * dim + e];
                nn = fmaf(x, x, nn);
            }
        nn = memdex_warp_sum(nn);
        const float norm = sqrtf(nn), inv = norm > 0.f ? 1.f / norm : 0.f;
        if (lane == 0) s.qn[t] = norm;
        for (uint32_t e = lane; e < s.ldq; e += 32) {
            const float x = t < nt && e < dim ? queries[(uint64_t)tq[t] * dim + e] * inv : 0.f;
            s.qh[t * s.ldq + e] = __float2half(x);
        }
    }
    for (uint32_t i = threadIdx.x; i < MEMDEX_WARPS * s.cap * s.kk; i += blockDim.x) {
        s.ls[i] = -INFINITY;
        s.lr[i] = MEMDEX_NO_ROW;
    }
}

// acc = rows [base, base + 16) × the tile's unit queries, on the tensor cores, into the warp's
// staging tile (row-major 16 × 16: [row][query]). Rows past the matrix's end count as zeros.
__device__ __forceinline__ void memdex_tc_block(const __half* __restrict__ emb, uint32_t dim,
                                                uint32_t rows, uint32_t base,
                                                const MemdexTcSmem& s, float* stage) {
    using namespace nvcuda;
    const uint32_t lane = threadIdx.x % 32;
    const bool direct = base + 16 <= rows;  // warp-uniform
    __half* staged = reinterpret_cast<__half*>(stage);
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.f);
    for (uint32_t k0 = 0; k0 < dim; k0 += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b;
        if (direct) {
            wmma::load_matrix_sync(a, emb + (uint64_t)base * dim + k0, dim);
        } else {
            for (uint32_t i = lane; i < 256; i += 32) {
                const uint32_t r = base + i / 16;
                staged[i] = r < rows ? emb[(uint64_t)r * dim + k0 + i % 16] : __float2half(0.f);
            }
            __syncwarp();
            wmma::load_matrix_sync(a, staged, 16);
            __syncwarp();
        }
        wmma::load_matrix_sync(b, s.qh + k0, s.ldq);
        wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(stage, acc, 16, wmma::mem_row_major);
}

// Step 2: this warp's rows of [lo, hi), 16 at a time, into its lists by approximate cosine.
__device__ __forceinline__ void memdex_tc_scan(const __half* __restrict__ emb, uint32_t dim,
                                               uint32_t rows, uint32_t lo, uint32_t hi,
                                               uint32_t nt, const MemdexTcSmem& s) {
    const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    float* stage = s.stage + warp * 256;
    float* rn = s.rn + warp * 16;
    for (uint32_t base = lo + 16 * warp; base < hi; base += 16 * MEMDEX_WARPS) {
        memdex_tc_block(emb, dim, rows, base, s, stage);
        // row norms: two lanes per row, 16-byte loads (dim % 16 == 0)
        const uint32_t r = base + lane / 2;
        float n2 = 0.f;
        if (r < hi) {
            const uint4* p = reinterpret_cast<const uint4*>(emb + (uint64_t)r * dim);
            for (uint32_t c = lane % 2; c < dim / 8; c += 2) {
                const uint4 u = p[c];
                const __half2* h = reinterpret_cast<const __half2*>(&u);
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const float2 x = __half22float2(h[e]);
                    n2 = fmaf(x.x, x.x, n2);
                    n2 = fmaf(x.y, x.y, n2);
                }
            }
        }
        n2 += __shfl_xor_sync(0xffffffffu, n2, 1);
        if (lane % 2 == 0) rn[lane / 2] = sqrtf(n2);
        __syncwarp();
        if (lane < nt) {
            const uint32_t o = (warp * s.cap + lane) * s.kk;
            for (uint32_t i = 0; i < 16 && base + i < hi; ++i) {
                const float a = stage[i * 16 + lane] / fmaxf(rn[i], 1e-30f);
                memdex_list_insert(s.ls + o, s.lr + o, s.kk, memdex_sanitize(a), base + i);
            }
        }
        __syncwarp();
    }
}

// Step 3 for query t of the tile (one warp): the block's candidates re-scored exactly, the top
// k written to out (k slots), and the part scanned again exactly when the certificate fails.
__device__ __forceinline__ void memdex_tc_finish(const __half* __restrict__ emb, uint32_t dim,
                                                 const float* __restrict__ q, uint32_t t,
                                                 uint32_t lo, uint32_t hi, uint32_t k,
                                                 const MemdexTcSmem& s, float* out_s,
                                                 uint32_t* out_r) {
    const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    float* cs = s.stage + warp * 256;  // kk <= 128 scores, then kk rows
    uint32_t* cr = reinterpret_cast<uint32_t*>(cs + 128);
    if (lane == 0) memdex_lists_merge_strided(s.ls + t * s.kk, s.lr + t * s.kk, s.cap * s.kk, s.kk, cs, cr);
    for (uint32_t j = lane; j < k; j += 32) {
        out_s[j] = -INFINITY;
        out_r[j] = MEMDEX_NO_ROW;
    }
    __syncwarp();
    const float m = cs[s.kk - 1];
    const bool all = cr[s.kk - 1] == MEMDEX_NO_ROW;  // fewer than kk rows: every row is here
    for (uint32_t j = 0; j < s.kk && cr[j] != MEMDEX_NO_ROW; ++j) {
        const float e = memdex_sanitize(memdex_tc_exact(emb, dim, cr[j], q, s.qn[t]));
        if (lane == 0) memdex_list_insert(out_s, out_r, k, e, cr[j]);
        __syncwarp();
    }
    __syncwarp();
    const bool sure = all || out_s[k - 1] > m + MEMDEX_TC_EPS;  // warp-uniform
    if (sure) return;
#ifdef MEMDEX_EMULATED
    if (lane == 0) ++memdex_tc_rescans;
#endif
    for (uint32_t j = lane; j < k; j += 32) {
        out_s[j] = -INFINITY;
        out_r[j] = MEMDEX_NO_ROW;
    }
    __syncwarp();
    for (uint32_t r = lo; r < hi; ++r) {
        const float e = memdex_sanitize(memdex_tc_exact(emb, dim, r, q, s.qn[t]));
        if (lane == 0) memdex_list_insert(out_s, out_r, k, e, r);
        __syncwarp();
    }
}

extern "C" __global__ void __launch_bounds__(MEMDEX_WARPS * 32) memdex_tensor_topk(TC_PARAMS) {
    const uint32_t part = blockIdx.y, warp = threadIdx.x / 32;
    const uint32_t t0 = tile_off[blockIdx.x], nt = tile_off[blockIdx.x + 1] - t0;
    const uint32_t* tq = tile_q + t0;
    const MemdexTcSmem s = memdex_tc_smem(dim, k, cap);
    memdex_tc_load(queries, dim, tq, nt, s);
    __syncthreads();
    uint32_t lo, hi;
    memdex_split(ranges[2 * tq[0]], ranges[2 * tq[0] + 1], part, splits, lo, hi);
    memdex_tc_scan(emb, dim, rows, lo, hi, nt, s);
    __syncthreads();
    for (uint32_t t = warp; t < nt; t += MEMDEX_WARPS) {
        const uint64_t o = ((uint64_t)tq[t] * splits + part) * k;
        memdex_tc_finish(emb, dim, queries + (uint64_t)tq[t] * dim, t, lo, hi, k, s, out_s + o,
                         out_r + o);
        __syncwarp();
    }
}
