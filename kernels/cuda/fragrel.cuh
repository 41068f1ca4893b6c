// FragRel's environment along a range's timeline, shared by fragrel_env.cu and rank.cu:
//   fn[i] = s[i] + alpha * sum_{j != i, same group} w^|p_i - p_j| s_j / sum_{j != i, same group} w^|p_i - p_j|
// (0 environment for an item alone in its group). Along the timeline both sums are exponential
// scans, forward F_i = d_i (F_{i-1} + s_{i-1}) and backward B_i = d_{i+1} (B_{i+1} + s_{i+1})
// with d_i = w^(p_i - p_{i-1}) inside a group and 0 across a group boundary (the same with s = 1
// for the denominators): see memdex_score::fragrel. Each thread owns a contiguous chunk, composes
// its chunk's affine map (x -> a x + b), thread 0 scans the chunk maps, each thread re-walks its
// chunk with the right carry.
//
// Rows whose alive bit is clear (`alive` not null) take no part: they pass the decay on and add
// neither score nor weight, so a live row's environment is the one over live rows only.
#pragma once
#include <stdint.h>

__device__ __forceinline__ bool memdex_live(const uint32_t* __restrict__ alive, uint32_t row) {
    return alive == nullptr || ((alive[row / 32] >> (row % 32)) & 1u);
}

// Thread 0 turns the chunk maps in (ca, cn, cz) into the carries entering each chunk, scanning
// the chunks ascending (forward) or descending.
template <uint32_t THREADS>
__device__ __forceinline__ void memdex_chunk_carries(float* ca, float* cn, float* cz, bool forward) {
    if (threadIdx.x == 0) {
        float xn = 0.f, xz = 0.f;
        for (uint32_t k = 0; k < THREADS; ++k) {
            const uint32_t t = forward ? k : THREADS - 1 - k;
            const float a = ca[t], bn = cn[t], bz = cz[t];
            cn[t] = xn; cz[t] = xz;
            xn = a * xn + bn;
            xz = a * xz + bz;
        }
    }
    __syncthreads();
}

// The whole block computes fn[i] for i < n from s (rows start.. of positions / groups / alive);
// fz is scratch of n floats; ca, cn, cz: THREADS floats of shared memory. Ends synchronised.
template <uint32_t THREADS>
__device__ __forceinline__ void memdex_fragrel_env(const float* s, float* fn, float* fz, uint32_t n,
                                                   uint32_t start,
                                                   const uint32_t* __restrict__ positions,
                                                   const uint32_t* __restrict__ groups,
                                                   const uint32_t* __restrict__ alive,
                                                   float alpha, float w, float* ca, float* cn,
                                                   float* cz) {
    const uint32_t tid = threadIdx.x;
    const uint32_t per = (n + THREADS - 1) / THREADS;
    const uint32_t lo = min(n, tid * per), hi = min(n, (tid + 1) * per);
    // decay of the step between timeline items i-1 and i (0 across groups and before item 0)
    auto decay = [&](uint32_t i) -> float {
        if (i == 0 || i >= n) return 0.f;
        const uint32_t a = start + i - 1, b = start + i;
        if (groups[a] != groups[b]) return 0.f;
        const uint32_t d = positions[b] > positions[a] ? positions[b] - positions[a] : 0;
        return powf(w, (float)d);
    };
    // contribution of row j to its neighbours' sums: (score, weight), zero when dead or absent
    auto val = [&](uint32_t j) -> float { return j < n && memdex_live(alive, start + j) ? s[j] : 0.f; };
    auto one = [&](uint32_t j) -> float { return j < n && memdex_live(alive, start + j) ? 1.f : 0.f; };

    {  // forward chunk map F_{lo-1} -> F_{hi-1}
        float a = 1.f, bn = 0.f, bz = 0.f;
        for (uint32_t i = lo; i < hi; ++i) {
            const float d = decay(i);
            a *= d;
            bn = d * (bn + (i > 0 ? val(i - 1) : 0.f));
            bz = d * (bz + (i > 0 ? one(i - 1) : 0.f));
        }
        ca[tid] = a; cn[tid] = bn; cz[tid] = bz;
    }
    __syncthreads();
    memdex_chunk_carries<THREADS>(ca, cn, cz, true);
    {
        float xn = cn[tid], xz = cz[tid];
        for (uint32_t i = lo; i < hi; ++i) {
            const float d = decay(i);
            xn = d * (xn + (i > 0 ? val(i - 1) : 0.f));
            xz = d * (xz + (i > 0 ? one(i - 1) : 0.f));
            fn[i] = xn;
            fz[i] = xz;
        }
    }
    __syncthreads();
    {  // backward chunk map B_{hi} -> B_{lo}
        float a = 1.f, bn = 0.f, bz = 0.f;
        for (uint32_t i = hi; i-- > lo;) {
            const float d = decay(i + 1);
            a *= d;
            bn = d * (bn + val(i + 1));
            bz = d * (bz + one(i + 1));
        }
        ca[tid] = a; cn[tid] = bn; cz[tid] = bz;
    }
    __syncthreads();
    memdex_chunk_carries<THREADS>(ca, cn, cz, false);
    {
        float xn = cn[tid], xz = cz[tid];
        for (uint32_t i = hi; i-- > lo;) {
            const float d = decay(i + 1);
            xn = d * (xn + val(i + 1));
            xz = d * (xz + one(i + 1));
            const float num = fn[i] + xn, den = fz[i] + xz;
            fn[i] = s[i] + alpha * (den > 0.f ? num / den : 0.f);
        }
    }
    __syncthreads();
}
