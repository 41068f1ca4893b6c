// TiM LSH bucket ids for a batch of vectors, all tables at once: F_t(x) = argmax([x R_t ; -x R_t]).
//
// x: n × dim f32 (row-major); proj: tables × half × dim f32 (memdex_score::lsh layout: one
// projection vector per half-bucket); out: n × tables u32. One block per vector (grid = n):
// the vector sits in shared memory, each warp computes dot products for columns warp, warp+8, ...
// (the GEMM row), then one thread per table takes the arg-max over [v ; -v], first maximum wins
// (the CPU reference's order). Dynamic shared memory: (dim + tables * half) floats.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256)
memdex_lsh_project(const float* __restrict__ x, uint32_t dim, const float* __restrict__ proj,
                   uint32_t tables, uint32_t half, uint32_t* __restrict__ out) {
    float* sh = reinterpret_cast<float*>(memdex_dynamic_smem());
    float* xs = sh;
    float* dots = sh + dim;
    const uint32_t row = blockIdx.x, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const uint32_t warps = blockDim.x / 32, cols = tables * half;
    for (uint32_t i = threadIdx.x; i < dim; i += blockDim.x) xs[i] = x[(uint64_t)row * dim + i];
    __syncthreads();
    for (uint32_t c = warp; c < cols; c += warps) {
        const float* p = proj + (uint64_t)c * dim;
        float acc = 0.f;
        for (uint32_t i = lane; i < dim; i += 32) acc = fmaf(xs[i], __ldg(p + i), acc);
        acc = memdex_warp_sum(acc);
        if (lane == 0) dots[c] = acc;
    }
    __syncthreads();
    for (uint32_t t = threadIdx.x; t < tables; t += blockDim.x) {
        const float* v = dots + t * half;
        uint32_t best = 0;
        float best_v = v[0];
        for (uint32_t j = 1; j < 2 * half; ++j) {
            const float s = j < half ? v[j] : -v[j - half];
            if (s > best_v) {
                best_v = s;
                best = j;
            }
        }
        out[(uint64_t)row * tables + t] = best;
    }
}
