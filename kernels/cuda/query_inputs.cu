// A batch's BM25 scores and time-stage flags, computed on the device from each tenant's text
// columns (resident like its rows) and each query's term ids and time window, for the fused
// ranking (rank.cu reads them as it reads host-computed ones). One block per query (grid = nq,
// 256 threads). The CPU reference is crates/memdex-kernels/src/text.rs (text_inputs_reference).
//
// tables: per part, 7 device pointers: term_offsets (u32, terms + 1), term_rows (u32),
// term_weights (f32), timestamps (i64, one per row), event_offsets (u32, rows + 1), event_lo,
// event_hi (i64). Rows are part-local; part_start[p] is the part's first row in the batch.
// sparse (zeroed by the caller) and flags: one entry per row of each range, ranges
// concatenated, query q's at offsets[q]. win_kind: 0 none, 1 range [win_lo, win_hi], 2 dated.
//
// BM25: the query's terms one after another (a __syncthreads between two), each term's postings
// strided over the block; a term's postings hold a row at most once, so no two threads add to
// the same entry at once, and every entry sums its terms in the query's order, as on the CPU.
#include <stdint.h>

extern "C" __global__ void __launch_bounds__(256) memdex_query_inputs(
    const uint64_t* __restrict__ tables, const uint32_t* __restrict__ query_part,
    const uint32_t* __restrict__ term_offsets, const uint32_t* __restrict__ terms,
    const uint32_t* __restrict__ win_kind, const long long* __restrict__ win_lo,
    const long long* __restrict__ win_hi, const uint32_t* __restrict__ ranges,
    const uint32_t* __restrict__ part_start, const uint32_t* __restrict__ offsets,
    float* __restrict__ sparse, uint8_t* __restrict__ flags) {
    const uint32_t q = blockIdx.x, tid = threadIdx.x;
    const uint32_t start = ranges[2 * q], end = ranges[2 * q + 1];
    if (end <= start) return;
    const uint32_t n = end - start, p = query_part[q];
    const uint64_t* t = tables + 7 * (uint64_t)p;
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
