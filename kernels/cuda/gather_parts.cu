// A batch's rows assembled from resident parts in one launch (instead of four device-to-device
// copies per part): part p's embeddings, positions, groups and importance go to rows
// start[p] .. start[p] + rows[p] of the batch's columns. grid = (parts, blocks per part),
// 256 threads; every block strides over its part's values.
//
// src: per part, 4 device pointers: embeddings (f16, rows x dim), positions (u32), groups
// (u32), importance (u8). Copies 16-bit values; the outputs hold every part's rows.
#include <stdint.h>

extern "C" __global__ void __launch_bounds__(256) memdex_gather_parts(
    const uint64_t* __restrict__ src, const uint32_t* __restrict__ start,
    const uint32_t* __restrict__ rows, uint32_t dim, uint16_t* __restrict__ emb,
    uint32_t* __restrict__ positions, uint32_t* __restrict__ groups,
    uint8_t* __restrict__ importance) {
    const uint32_t p = blockIdx.x;
    const uint64_t n = rows[p], s = start[p];
    const uint16_t* e = (const uint16_t*)src[4 * (uint64_t)p];
    const uint32_t* pos = (const uint32_t*)src[4 * (uint64_t)p + 1];
    const uint32_t* grp = (const uint32_t*)src[4 * (uint64_t)p + 2];
    const uint8_t* imp = (const uint8_t*)src[4 * (uint64_t)p + 3];
    const uint64_t stride = (uint64_t)gridDim.y * blockDim.x;
    const uint64_t first = (uint64_t)blockIdx.y * blockDim.x + threadIdx.x;
    uint16_t* out = emb + s * dim;
    for (uint64_t i = first; i < n * dim; i += stride) out[i] = e[i];
    for (uint64_t i = first; i < n; i += stride) {
        positions[s + i] = pos[i];
        groups[s + i] = grp[i];
        importance[s + i] = imp[i];
    }
}
