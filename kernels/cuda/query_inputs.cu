// A batch's BM25 scores and time-stage flags, computed on the device from each tenant's text
// columns (resident like its rows) and each query's term ids and time window, for the fused
// ranking (rank.cu reads them as it reads host-computed ones). One block per query (grid = nq,
// 256 threads). The CPU reference is crates/memdex-kernels/src/text.rs (text_inputs_reference)
// and, for query expansion, crates/memdex-kernels/src/expand.rs.
//
// tables: per part, 9 device pointers: term_offsets (u32, terms + 1), term_rows (u32),
// term_weights (f32), timestamps (i64, one per row), event_offsets (u32, rows + 1), event_lo,
// event_hi (i64), vocab_terms (u32, the expansion candidates' term ids), vocab_vectors (f16,
// candidates x dim), and the candidates' count is vocab_len[p]. Rows are part-local;
// part_start[p] is the part's first row in the batch.
//
// Query expansion (n_expand > 0; rank.cu then runs with sparse_fused): each warp scores every
// 8th candidate (dot of its f16 vector with the query's, skipped when it is one of the query's
// own terms or not positive) into its sorted list; one thread merges the lists into the
// n_expand nearest (ties: the earlier candidate); their postings, each times its cosine, fill
// the query's `expansion` column (zeroed by the caller), term after term; then sparse becomes
// the keyword share w_sparse * minmax(bm25) + x_weight * minmax(expansion) (without a picked
// term, w_sparse * minmax(bm25)), min-max over the query's range, a constant column giving 0.
// sparse (zeroed by the caller) and flags: one entry per row of each range, ranges
// concatenated, query q's at offsets[q]. win_kind: 0 none, 1 range [win_lo, win_hi], 2 dated.
//
// BM25: the query's terms one after another (a __syncthreads between two), each term's postings
// strided over the block; a term's postings hold a row at most once, so no two threads add to
// the same entry at once, and every entry sums its terms in the query's order, as on the CPU.
#include <stdint.h>

#include "common.cuh"

#define QI_MAX_DIM 1024
#define QI_TABLE 9

// The block's min and max of v[0..n) (every thread gets them; red: 2 x MEMDEX_WARPS floats).
__device__ __forceinline__ void qi_min_max(const float* v, uint32_t n, float* red, float* lo,
                                           float* hi) {
    const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    float a = INFINITY, b = -INFINITY;
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) {
        a = fminf(a, v[i]);
        b = fmaxf(b, v[i]);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        a = fminf(a, __shfl_xor_sync(0xffffffffu, a, o));
        b = fmaxf(b, __shfl_xor_sync(0xffffffffu, b, o));
    }
    if (lane == 0) {
        red[warp] = a;
        red[MEMDEX_WARPS + warp] = b;
    }
    __syncthreads();
    a = red[0];
    b = red[MEMDEX_WARPS];
    for (int w = 1; w < MEMDEX_WARPS; ++w) {
        a = fminf(a, red[w]);
        b = fmaxf(b, red[MEMDEX_WARPS + w]);
    }
    *lo = a;
    *hi = b;
    __syncthreads();  // red is reused
}

__device__ __forceinline__ float qi_min_max_of(float x, float lo, float hi) {
    const float span = hi - lo;
    return span > 0.f ? (x - lo) / span : 0.f;
}

// Picks the query's expansion terms into sel_s (cosines) / sel_r (candidate indices), best
// first; returns how many (all threads).
__device__ uint32_t qi_pick(const uint32_t* own, uint32_t n_own, const uint32_t* vterms,
                            const __half* vvec, uint32_t vlen, const float* qv, uint32_t dim,
                            uint32_t n_expand, float (*ls)[MEMDEX_MAX_K],
                            uint32_t (*lr)[MEMDEX_MAX_K], float* sel_s, uint32_t* sel_r) {
    const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (uint32_t i = warp; i < vlen; i += MEMDEX_WARPS) {
        const uint32_t term = vterms[i];
        bool mine = false;
        for (uint32_t j = 0; j < n_own; ++j) mine |= own[j] == term;
        if (mine) continue;  // uniform across the warp
        const __half* row = vvec + (uint64_t)i * dim;
        float c = 0.f;
        for (uint32_t d = lane; d < dim; d += 32) c = fmaf(qv[d], __half2float(row[d]), c);
        c = memdex_warp_sum(c);
        if (lane == 0 && c > 0.f) memdex_list_insert(ls[warp], lr[warp], n_expand, c, i);
    }
    __syncthreads();
    if (threadIdx.x == 0) memdex_lists_merge(ls, lr, n_expand, sel_s, sel_r);
    __syncthreads();
    uint32_t m = 0;
    while (m < n_expand && sel_r[m] != MEMDEX_NO_ROW) ++m;
    return m;
}

extern "C" __global__ void __launch_bounds__(256) memdex_query_inputs(
    const uint64_t* __restrict__ tables, const uint32_t* __restrict__ vocab_len,
    const uint32_t* __restrict__ query_part, const uint32_t* __restrict__ term_offsets,
    const uint32_t* __restrict__ terms, const uint32_t* __restrict__ win_kind,
    const long long* __restrict__ win_lo, const long long* __restrict__ win_hi,
    const uint32_t* __restrict__ ranges, const uint32_t* __restrict__ part_start,
    const uint32_t* __restrict__ offsets, const float* __restrict__ vectors, uint32_t dim,
    uint32_t n_expand, float x_weight, float w_sparse, float* __restrict__ expansion,
    float* __restrict__ sparse, uint8_t* __restrict__ flags) {
    __shared__ float qv[QI_MAX_DIM];
    __shared__ float ls[MEMDEX_WARPS][MEMDEX_MAX_K];
    __shared__ uint32_t lr[MEMDEX_WARPS][MEMDEX_MAX_K];
    __shared__ float sel_s[MEMDEX_MAX_K];
    __shared__ uint32_t sel_r[MEMDEX_MAX_K];
    __shared__ float red[2 * MEMDEX_WARPS];
    const uint32_t q = blockIdx.x, tid = threadIdx.x;
    const uint32_t start = ranges[2 * q], end = ranges[2 * q + 1];
    if (end <= start) return;
    const uint32_t n = end - start, p = query_part[q];
    const uint64_t* t = tables + QI_TABLE * (uint64_t)p;
    const uint32_t* toff = (const uint32_t*)t[0];
    const uint32_t* trows = (const uint32_t*)t[1];
    const float* tw = (const float*)t[2];
    const long long* ts = (const long long*)t[3];
    const uint32_t* eoff = (const uint32_t*)t[4];
    const long long* elo = (const long long*)t[5];
    const long long* ehi = (const long long*)t[6];
    const uint32_t base = start - part_start[p];  // the range's first part-local row
    float* qs = sparse + offsets[q];
    uint8_t* qf = flags + offsets[q];

    for (uint32_t j = term_offsets[q]; j < term_offsets[q + 1]; ++j) {
        const uint32_t term = terms[j];
        const uint32_t a = toff[term], b = toff[term + 1];
        for (uint32_t i = a + tid; i < b; i += blockDim.x) {
            const uint32_t r = trows[i];
            if (r >= base && r - base < n) qs[r - base] += tw[i];
        }
        __syncthreads();
    }

    if (n_expand > 0) {
        const uint32_t* vterms = (const uint32_t*)t[7];
        const __half* vvec = (const __half*)t[8];
        for (uint32_t d = tid; d < dim; d += blockDim.x) qv[d] = vectors[(uint64_t)q * dim + d];
        memdex_lists_init(ls, lr);
        __syncthreads();
        const uint32_t* own = terms + term_offsets[q];
        const uint32_t m = qi_pick(own, term_offsets[q + 1] - term_offsets[q], vterms, vvec,
                                   vocab_len[p], qv, dim, n_expand, ls, lr, sel_s, sel_r);
        float* qx = expansion + offsets[q];
        for (uint32_t j = 0; j < m; ++j) {
            const uint32_t term = vterms[sel_r[j]];
            const float weight = sel_s[j];
            const uint32_t a = toff[term], b = toff[term + 1];
            for (uint32_t i = a + tid; i < b; i += blockDim.x) {
                const uint32_t r = trows[i];
                if (r >= base && r - base < n) qx[r - base] += weight * tw[i];
            }
            __syncthreads();
        }
        float blo, bhi, xlo = 0.f, xhi = 0.f;
        qi_min_max(qs, n, red, &blo, &bhi);
        if (m > 0) qi_min_max(qx, n, red, &xlo, &xhi);
        for (uint32_t i = tid; i < n; i += blockDim.x) {
            const float x = m > 0 ? x_weight * qi_min_max_of(qx[i], xlo, xhi) : 0.f;
            qs[i] = w_sparse * qi_min_max_of(qs[i], blo, bhi) + x;
        }
    }

    const uint32_t kind = win_kind[q];
    const long long lo = win_lo[q], hi = win_hi[q];
    for (uint32_t i = tid; i < n; i += blockDim.x) {
        const uint32_t r = base + i;
        uint8_t f = 0;
        if (kind == 1) {
            f = ts[r] >= lo && ts[r] <= hi;
            for (uint32_t e = eoff[r]; !f && e < eoff[r + 1]; ++e) f = elo[e] <= hi && ehi[e] >= lo;
        } else if (kind == 2) {
            f = eoff[r + 1] > eoff[r];
        }
        qf[i] = f;
    }
}
