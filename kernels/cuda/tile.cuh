// Queries that share one range, scored together. A block loads a tile of up to MEMDEX_QTILE
// such queries (the host groups a batch's queries by range: crates/memdex-kernels/src/tiles.rs)
// into shared memory and reads each row of the range once for all of them, as a GEMM reads a
// tile of one operand once per tile of the other: a tenant's rows cross DRAM once per batch,
// not once per query.
//
// Tile inputs: tile_q (the batch's query indices, grouped), tile_off (tiles + 1 offsets into
// tile_q); tile `b`'s queries are tile_q[tile_off[b] .. tile_off[b + 1]], 1..=MEMDEX_QTILE of
// them, all with the same range.
//
// A warp scores two rows at a time, one per half-warp (16 lanes, C 16-byte chunks each: lane j
// of a half holds chunks j, j + 16, ...): the halves read the same query element at once, so
// a shared-memory load serves two rows (the queries' bytes cross shared memory once per row
// pair), and a tile of 16 queries reduces across a half-warp's 16 lanes in 15 shuffles.
//
// Shared memory of a tile (dynamic, `cap` = the longest tile of the launch): the queries,
// permuted so that lane j's elements of chunk c (8(j + 16c) .. +7) are the two float4 at
// [t·C·32 + c·32 + h·16 + j] (h = 0, 1): a half-warp's load reads 256 consecutive bytes (no
// bank conflicts; the other half reads the same ones), then their norms (cap floats).
#pragma once
#include "common.cuh"

#define MEMDEX_QTILE 16

// Every instantiation of a tiled kernel `K(name, C, S)`: C = 8 chunks per half-warp lane (dim
// <= 1024) or 4 (`_d512`, dim <= 512: fewer registers); tiles of at most 1, 4 or 16 queries
// (S = 0, 2, 4). The host picks by dim and the launch's longest tile (tiles.rs, Tiled::name).
#define MEMDEX_TILED_INSTANCES(K, name)                                                      \
    K(name##_t1, 8, 0)                                                                       \
    K(name##_t4, 8, 2)                                                                       \
    K(name##_t16, 8, 4)                                                                      \
    K(name##_d512_t1, 4, 0)                                                                  \
    K(name##_d512_t4, 4, 2)                                                                  \
    K(name##_d512_t16, 4, 4)

// float4s of one query in a tile's shared memory
#define MEMDEX_TILE_F4(C) ((C) * 32)

// Loads the tile's nt queries (indices tq) and their norms; the caller synchronises.
template <int C>
__device__ __forceinline__ void memdex_tile_load(const float* __restrict__ queries, uint32_t dim,
                                                 const uint32_t* __restrict__ tq, uint32_t nt,
                                                 float4* qs, float* qn) {
    const uint32_t chunks = dim / 8, per = MEMDEX_TILE_F4(C);
    for (uint32_t i = threadIdx.x; i < nt * per; i += blockDim.x) {
        const uint32_t t = i / per, j = i % per;
        const uint32_t chunk = j % 16 + 16 * (j / 32), h = (j / 16) % 2;
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        if (chunk < chunks) {
            const float* p = queries + (uint64_t)tq[t] * dim + chunk * 8 + 4 * h;
            v = make_float4(p[0], p[1], p[2], p[3]);
        }
        qs[i] = v;
    }
    const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (uint32_t t = warp; t < nt; t += MEMDEX_WARPS) {
        const float* q = queries + (uint64_t)tq[t] * dim;
        float nn = 0.f;
        for (uint32_t e = lane; e < dim; e += 32) nn = fmaf(q[e], q[e], nn);
        nn = memdex_warp_sum(nn);
        if (lane == 0) qn[t] = sqrtf(nn);
    }
}

// Dot products of this half-warp's row with the tile's queries (1 << S slots; slots >= nt are
// 0), reduced across the half so that its lane j ends with query (j >> (4 - S))'s dot: S
// halving steps, each lane sending the half of its slots it gives up and adding the half it
// keeps (2^S - 1 shuffles in all, not 4 per query), then plain butterfly steps over the
// remaining lanes. `nn`: the row's squared norm, in every lane of the half. `load`: whether
// the row is read at all (else it counts as zeros). The whole warp calls it.
template <int C, int S>
__device__ __forceinline__ float memdex_tile_row(const __half* __restrict__ emb, uint32_t dim,
                                                 uint64_t row, bool load, const float4* qs,
                                                 uint32_t nt, float& nn) {
    constexpr int T = 1 << S;
    const uint32_t j = threadIdx.x % 16, chunks = dim / 8;
    const uint4* p = reinterpret_cast<const uint4*>(emb + row * dim);
    float f[C][8];
    float n2 = 0.f;
#pragma unroll
    for (int c = 0; c < C; ++c) {
        uint4 u = make_uint4(0u, 0u, 0u, 0u);
        if (load && j + 16 * c < chunks) u = __ldcs(p + j + 16 * c);  // streamed once
        const __half2* h = reinterpret_cast<const __half2*>(&u);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const float2 x = __half22float2(h[e]);
            f[c][2 * e] = x.x;
            f[c][2 * e + 1] = x.y;
            n2 = fmaf(x.x, x.x, n2);
            n2 = fmaf(x.y, x.y, n2);
        }
    }
    float v[T];
#pragma unroll
    for (int t = 0; t < T; ++t) {
        float d = 0.f;
        if (t < (int)nt) {  // block-uniform
#pragma unroll
            for (int c = 0; c < C; ++c) {
                if (j + 16 * c >= chunks) continue;  // zeros: skip their shared-memory reads
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const float4 q = qs[t * MEMDEX_TILE_F4(C) + c * 32 + h * 16 + j];
                    d = fmaf(f[c][4 * h], q.x, d);
                    d = fmaf(f[c][4 * h + 1], q.y, d);
                    d = fmaf(f[c][4 * h + 2], q.z, d);
                    d = fmaf(f[c][4 * h + 3], q.w, d);
                }
            }
        }
        v[t] = d;
    }
#pragma unroll
    for (int s = 0; s < S; ++s) {
        const int o = 8 >> s, half = T >> (s + 1);
        const bool upper = (j & o) != 0;
#pragma unroll
        for (int i = 0; i < half; ++i) {
            const float send = upper ? v[i] : v[i + half];
            const float keep = upper ? v[i + half] : v[i];
            v[i] = keep + __shfl_xor_sync(0xffffffffu, send, o);
        }
    }
#pragma unroll
    for (int o = 8 >> S; o > 0; o >>= 1) v[0] += __shfl_xor_sync(0xffffffffu, v[0], o);
#pragma unroll
    for (int o = 8; o > 0; o >>= 1) n2 += __shfl_xor_sync(0xffffffffu, n2, o);
    nn = n2;
    return v[0];
}

// Scans rows [lo, hi) for the tile's nt <= 2^S queries, two rows per warp at a time (the host
// picks S by the launch's longest tile, so single queries keep few registers): for each row
// that some query selects (`sel(t, row)`, asked only when `masked`; rows nobody selects are
// not read), the lane owning query t calls sink(t, row, cosine) if t selects it. The two
// halves' calls come one after the other (sinks may share a list per warp and query).
template <int C, int S, typename Sel, typename Sink>
__device__ __forceinline__ void memdex_tile_scan(const __half* __restrict__ emb, uint32_t dim,
                                                 uint32_t lo, uint32_t hi, const float4* qs,
                                                 const float* qn, uint32_t nt, bool masked,
                                                 Sel sel, Sink sink) {
    const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const uint32_t half = lane / 16, j = lane % 16;
    const uint32_t t = j >> (4 - S);
    const bool owner = (j & ((16u >> S) - 1u)) == 0 && t < nt;
    const uint32_t all = (1u << nt) - 1u;  // nt <= 16
    for (uint32_t base = lo + 2 * warp; base < hi; base += 2 * MEMDEX_WARPS) {
        const uint32_t r = base + half;
        uint32_t selm = r < hi ? all : 0u;
        if (masked) {
            const uint32_t b = __ballot_sync(0xffffffffu, selm != 0 && j < nt && sel(j, r));
            if (b == 0) continue;  // warp-uniform
            selm = (b >> (16 * half)) & 0xffffu;
        }
        float nn;
        const float d = memdex_tile_row<C, S>(emb, dim, r, selm != 0, qs, nt, nn);
        const bool mine = owner && ((selm >> t) & 1u);
        if (half == 0 && mine) sink(t, r, d / fmaxf(qn[t] * sqrtf(nn), 1e-30f));
        __syncwarp();
        if (half == 1 && mine) sink(t, r, d / fmaxf(qn[t] * sqrtf(nn), 1e-30f));
        __syncwarp();
    }
}

// This block's share [lo, hi) of the range [start, end) cut into `splits` parts.
__device__ __forceinline__ void memdex_split(uint32_t start, uint32_t end, uint32_t part,
                                             uint32_t splits, uint32_t& lo, uint32_t& hi) {
    const uint32_t len = end > start ? end - start : 0;
    const uint32_t chunk = (len + splits - 1) / splits;
    lo = start + min(len, part * chunk);
    hi = start + min(len, (part + 1) * chunk);
}
