// Under the emulator, <mma.h> (included by kernels/cuda/tensor_topk.cu): nvcuda::wmma's
// m16n16k16 fragments with f16 inputs and f32 accumulators, as warp-collective operations.
// Each lane's fragment holds the whole 16 × 16 tile (a device spreads it over the lanes in an
// unspecified layout: a kernel that only loads, multiplies, fills and stores fragments sees
// the same), element (i, j) at x[16 i + j]. Every operation is collective: the lanes meet at
// the warp's barrier and must pass the same pointer, stride and layout (else the emulator
// aborts: on a device that is undefined), pointers 32-byte aligned and strides multiples of
// 16 bytes as the CUDA programming guide requires. mma_sync multiplies the f16 values exactly
// and accumulates in f32 (fmaf, k ascending); values stored into an f16 fragment are rounded
// to nearest even. Lane 0 computes a product for the warp; the others copy it.
#pragma once
#include "../simt.h"

namespace nvcuda {
namespace wmma {

struct row_major {};
struct col_major {};
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
enum layout_t { mem_row_major, mem_col_major };

template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
    static_assert(M == 16 && N == 16 && K == 16, "the emulator has m16n16k16 only");
    static constexpr int num_elements = 256;
    T x[256];
};

// The lanes of the warp agree on (p, ldm, layout), or the emulator stops.
inline void memdex_emu_wmma_uniform(const void* p, unsigned ldm, int layout, size_t elem) {
    const uint64_t a = (uint64_t)p;
    if (a % 32 != 0 || (ldm * elem) % 16 != 0) {
        std::fprintf(stderr, "emulator: wmma pointer %p / ldm %u misaligned\n", p, ldm);
        std::abort();
    }
    const uint32_t h = (uint32_t)(a ^ (a >> 32)) * 2654435761u ^ ldm * 40503u ^ (uint32_t)layout;
    if (__shfl_sync(0xffffffffu, h, 0) != h) {
        std::fprintf(stderr, "emulator: wmma operation diverges across the warp's lanes\n");
        std::abort();
    }
}

inline float memdex_emu_wmma_f(float v) { return v; }
inline float memdex_emu_wmma_f(__half v) { return __half2float(v); }
inline void memdex_emu_wmma_set(float& d, float v) { d = v; }
inline void memdex_emu_wmma_set(__half& d, float v) { d = __float2half(v); }

template <class Use, class T, class L>
inline void load_matrix_sync(fragment<Use, 16, 16, 16, T, L>& f, const T* p, unsigned ldm) {
    constexpr bool row = std::is_same_v<L, row_major>;
    static_assert(row || std::is_same_v<L, col_major>, "a or b fragment with a layout");
    memdex_emu_wmma_uniform(p, ldm, row, sizeof(T));
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 16; ++j) f.x[16 * i + j] = row ? p[i * ldm + j] : p[i + j * ldm];
    __syncwarp();
}

template <class T>
inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, T>& f, const T* p, unsigned ldm,
                             layout_t l) {
    memdex_emu_wmma_uniform(p, ldm, l, sizeof(T));
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 16; ++j)
            f.x[16 * i + j] = l == mem_row_major ? p[i * ldm + j] : p[i + j * ldm];
    __syncwarp();
}

template <class T>
inline void store_matrix_sync(T* p, const fragment<accumulator, 16, 16, 16, T>& f, unsigned ldm,
                              layout_t l) {
    memdex_emu_wmma_uniform(p, ldm, l, sizeof(T));
    if (threadIdx.x % 32 == 0)
        for (int i = 0; i < 16; ++i)
            for (int j = 0; j < 16; ++j)
                (l == mem_row_major ? p[i * ldm + j] : p[i + j * ldm]) = f.x[16 * i + j];
    __syncwarp();
}

template <class Use, class T, class L>
inline void fill_fragment(fragment<Use, 16, 16, 16, T, L>& f, float v) {
    memdex_emu_wmma_uniform(nullptr, 0, 0, 1);
    for (auto& x : f.x) memdex_emu_wmma_set(x, v);
}

// d = a·b + c: f16 products exact in f32, summed in f32 over k ascending.
template <class TA, class TB, class LA, class LB, class T>
inline void mma_sync(fragment<accumulator, 16, 16, 16, T>& d,
                     const fragment<matrix_a, 16, 16, 16, TA, LA>& a,
                     const fragment<matrix_b, 16, 16, 16, TB, LB>& b,
                     const fragment<accumulator, 16, 16, 16, T>& c) {
    memdex_emu_wmma_uniform(nullptr, 0, 1, 1);
    float* shared = memdex_emu_warp().mma;
    if (threadIdx.x % 32 == 0)
        for (int i = 0; i < 16; ++i)
            for (int j = 0; j < 16; ++j) {
                float s = memdex_emu_wmma_f(c.x[16 * i + j]);
                for (int k = 0; k < 16; ++k)
                    s = fmaf(memdex_emu_wmma_f(a.x[16 * i + k]), memdex_emu_wmma_f(b.x[16 * k + j]), s);
                shared[16 * i + j] = s;
            }
    __syncwarp();
    for (int i = 0; i < 256; ++i) memdex_emu_wmma_set(d.x[i], shared[i]);
    __syncwarp();
}

}  // namespace wmma
}  // namespace nvcuda
