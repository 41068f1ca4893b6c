// Shared device code of memdex's kernels: the top-k order, per-warp sorted candidate lists in
// shared memory, and the cosine of one f16 row against a query held in registers.
//
// Order (the same as the CPU references in crates/memdex-kernels/src/cpu.rs): score descending, then row index
// ascending; NaN scores count as -inf. Empty slots hold (-inf, MEMDEX_NO_ROW), which every real
// candidate beats, so "top-k of the union = top-k of the per-part top-ks" holds exactly.
#pragma once
#include <cuda_fp16.h>
#include <stdint.h>

#define MEMDEX_MAX_K 128
#define MEMDEX_NO_ROW 0xffffffffu
#define MEMDEX_WARPS 8          // warps per block of the scanning kernels (256 threads)
// Kernels come in two widths: C = 16-byte chunks per lane (32 lanes × C × 8 halves):
// C = 2 for dim <= 512 (40 registers on sm_90a: 6 blocks per SM), C = 4 for dim <= 1024.

// The launch's dynamic shared memory, 16-byte aligned (under kernels/emu's CPU emulator, which
// defines it: the emulator's).
#ifndef MEMDEX_EMULATED
__device__ __forceinline__ float4* memdex_dynamic_smem() {
    extern __shared__ float4 memdex_smem[];
    return memdex_smem;
}
#endif

__device__ __forceinline__ bool memdex_better(float sa, uint32_t ra, float sb, uint32_t rb) {
    return sa > sb || (sa == sb && ra < rb);
}

__device__ __forceinline__ float memdex_sanitize(float s) { return isnan(s) ? -INFINITY : s; }

__device__ __forceinline__ float memdex_warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Inserts (s, r) into a sorted (best first) list of k entries if it beats the last one.
__device__ __forceinline__ void memdex_list_insert(float* ls, uint32_t* lr, uint32_t k, float s,
                                                   uint32_t r) {
    if (!memdex_better(s, r, ls[k - 1], lr[k - 1])) return;
    int i = (int)k - 1;
    while (i > 0 && memdex_better(s, r, ls[i - 1], lr[i - 1])) {
        ls[i] = ls[i - 1];
        lr[i] = lr[i - 1];
        --i;
    }
    ls[i] = s;
    lr[i] = r;
}

__device__ __forceinline__ void memdex_lists_init(float (*ls)[MEMDEX_MAX_K],
                                                  uint32_t (*lr)[MEMDEX_MAX_K]) {
    for (uint32_t i = threadIdx.x; i < MEMDEX_WARPS * MEMDEX_MAX_K; i += blockDim.x) {
        (&ls[0][0])[i] = -INFINITY;
        (&lr[0][0])[i] = MEMDEX_NO_ROW;
    }
}

// k-way merge of MEMDEX_WARPS sorted lists of k (list w at ls + w·wstride) into out. One thread.
__device__ __forceinline__ void memdex_lists_merge_strided(const float* ls, const uint32_t* lr,
                                                           uint32_t wstride, uint32_t k,
                                                           float* out_s, uint32_t* out_r) {
    uint32_t head[MEMDEX_WARPS];
#pragma unroll
    for (int w = 0; w < MEMDEX_WARPS; ++w) head[w] = 0;
    for (uint32_t j = 0; j < k; ++j) {
        int best = -1;  // MEMDEX_WARPS * k >= k entries: some list always has one left
        uint32_t bi = 0;
        for (int w = 0; w < MEMDEX_WARPS; ++w) {
            if (head[w] >= k) continue;
            const uint32_t i = w * wstride + head[w];
            if (best < 0 || memdex_better(ls[i], lr[i], ls[bi], lr[bi])) {
                best = w;
                bi = i;
            }
        }
        out_s[j] = ls[bi];
        out_r[j] = lr[bi];
        ++head[best];
    }
}

// The block's MEMDEX_WARPS lists (ls[w], k entries each) merged into out. One thread.
__device__ __forceinline__ void memdex_lists_merge(const float (*ls)[MEMDEX_MAX_K],
                                                   const uint32_t (*lr)[MEMDEX_MAX_K], uint32_t k,
                                                   float* out_s, uint32_t* out_r) {
    memdex_lists_merge_strided(&ls[0][0], &lr[0][0], MEMDEX_MAX_K, k, out_s, out_r);
}

// The query's elements this lane multiplies: chunks lane, lane+32, ... of 8 floats.
template <int C>
struct MemdexQuery {
    float v[C][8];
    float norm;
};

template <int C>
__device__ __forceinline__ void memdex_load_query(const float* __restrict__ q, uint32_t dim,
                                                  MemdexQuery<C>& out) {
    const uint32_t lane = threadIdx.x % 32, chunks = dim / 8;
    float nn = 0.f;
#pragma unroll
    for (int c = 0; c < C; ++c) {
        const uint32_t v = lane + 32 * c;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const float x = v < chunks ? q[v * 8 + j] : 0.f;
            out.v[c][j] = x;
            nn += x * x;
        }
    }
    out.norm = sqrtf(memdex_warp_sum(nn));
}

// Cosine of row `row` (f16, dim % 8 == 0, 16-byte aligned rows) with the query; the whole warp
// calls it and every lane gets the result. Row bytes are streamed once (no reuse: __ldcs).
template <int C>
__device__ __forceinline__ float memdex_row_cosine(const __half* __restrict__ emb, uint32_t dim,
                                                   uint64_t row, const MemdexQuery<C>& q) {
    const uint32_t lane = threadIdx.x % 32, chunks = dim / 8;
    const uint4* p = reinterpret_cast<const uint4*>(emb + row * dim);
    uint4 u[C];
#pragma unroll
    for (int c = 0; c < C; ++c)
        if (lane + 32 * c < chunks) u[c] = __ldcs(p + lane + 32 * c);
    float dot = 0.f, nn = 0.f;
#pragma unroll
    for (int c = 0; c < C; ++c) {
        if (lane + 32 * c < chunks) {
            const __half2* h = reinterpret_cast<const __half2*>(&u[c]);
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const float2 f = __half22float2(h[j]);
                dot = fmaf(f.x, q.v[c][2 * j], dot);
                dot = fmaf(f.y, q.v[c][2 * j + 1], dot);
                nn = fmaf(f.x, f.x, nn);
                nn = fmaf(f.y, f.y, nn);
            }
        }
    }
    dot = memdex_warp_sum(dot);
    nn = memdex_warp_sum(nn);
    return dot / fmaxf(q.norm * sqrtf(nn), 1e-30f);
}

// Whether row passes the query's bucket mask: any table whose bucket bit is set. No mask: all.
__device__ __forceinline__ bool memdex_row_selected(const uint16_t* __restrict__ row_buckets,
                                                    const uint32_t* __restrict__ qmask,
                                                    uint32_t tables, uint32_t words, uint64_t row) {
    if (qmask == nullptr) return true;
    for (uint32_t t = 0; t < tables; ++t) {
        const uint32_t b = row_buckets[row * tables + t];
        if ((qmask[t * words + b / 32] >> (b % 32)) & 1u) return true;
    }
    return false;
}
