// A SIMT emulator for memdex's CUDA sources on the CPU: kernels/cuda/*.cu compile as C++
// (g++ -std=c++20 -DMEMDEX_EMULATED -I kernels/emu/include) and a launch runs every block of its
// grid, one block at a time, on one std::thread per CUDA thread. Warp collectives (__shfl_*,
// __ballot_sync, __syncwarp) meet at a per-warp barrier, __syncthreads at the block's, so a
// kernel's indexing, lane mapping, reductions and shared-memory layout run as written.
//
// What it does not model: memory ordering between threads beyond the barriers (races are
// compute-sanitizer's job on a device), timing, occupancy, and a warp whose lanes diverge
// across a collective (that deadlocks here; on a device it is undefined). It checks logic,
// not performance: see crates/memdex-kernels/tests/emulated.rs.
#pragma once
#include <math.h>
#include <stdint.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

using std::isnan;
using std::max;
using std::min;

struct dim3 {
    uint32_t x = 1, y = 1, z = 1;
};
inline thread_local dim3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;

#define __device__
#define __global__
#define __forceinline__ inline
#define __restrict__
#define __launch_bounds__(x)
#define __shared__ static  // one block at a time: a static is that block's shared memory

struct __half {
    uint16_t bits;
};
struct __half2 {
    __half x, y;
};
struct float2 {
    float x, y;
};
struct float4 {
    float x, y, z, w;
};
struct uint4 {
    uint32_t x, y, z, w;
};
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
inline uint4 make_uint4(uint32_t a, uint32_t b, uint32_t c, uint32_t d) { return {a, b, c, d}; }

inline float memdex_emu_half_to_float(uint16_t h) {
    const uint32_t s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    float v;
    if (e == 0) v = std::ldexp((float)m, -24);
    else if (e == 31) v = m ? NAN : INFINITY;
    else v = std::ldexp((float)(m | 1024), (int)e - 25);
    return s ? -v : v;
}
// Round to nearest, for test data (finite values below 65,504 in magnitude).
inline uint16_t memdex_emu_float_to_half(float f) {
    if (f == 0.f) return 0;
    const uint16_t s = f < 0 ? 0x8000 : 0;
    int e;
    const float m = std::frexp(std::fabs(f), &e);  // |f| = m · 2^e, m in [0.5, 1)
    int biased = e - 1 + 15;
    if (biased <= 0)  // subnormal: multiples of 2^-24 (2^-14 itself rounds up to the normal)
        return s | (uint16_t)std::lround(std::fabs(f) * 16777216.f);
    uint32_t mant = (uint32_t)std::lround((m * 2 - 1) * 1024);
    if (mant == 1024) {
        mant = 0;
        ++biased;
    }
    return s | (uint16_t)(biased << 10) | (uint16_t)mant;
}
inline float2 __half22float2(__half2 h) {
    return {memdex_emu_half_to_float(h.x.bits), memdex_emu_half_to_float(h.y.bits)};
}
inline uint4 __ldcs(const uint4* p) { return *p; }

struct MemdexEmuWarp {
    std::barrier<> bar{32};
    uint32_t buf[32];
};
struct MemdexEmuBlock {
    explicit MemdexEmuBlock(uint32_t threads) : bar((std::ptrdiff_t)threads), flags(threads) {
        for (uint32_t i = 0; i < (threads + 31) / 32; ++i) warps.emplace_back(new MemdexEmuWarp);
    }
    std::barrier<> bar;
    std::vector<std::unique_ptr<MemdexEmuWarp>> warps;
    std::vector<int> flags;
    std::vector<float4> dynamic;
};
inline MemdexEmuBlock* memdex_emu_block;

inline float4* memdex_dynamic_smem() { return memdex_emu_block->dynamic.data(); }

inline MemdexEmuWarp& memdex_emu_warp() { return *memdex_emu_block->warps[threadIdx.x / 32]; }

// Every lane of the warp publishes v and reads lane src's.
template <class T>
inline T memdex_emu_exchange(T v, uint32_t src) {
    static_assert(sizeof(T) == 4, "32-bit shuffles only");
    MemdexEmuWarp& w = memdex_emu_warp();
    std::memcpy(&w.buf[threadIdx.x % 32], &v, 4);
    w.bar.arrive_and_wait();
    T r;
    std::memcpy(&r, &w.buf[src % 32], 4);
    w.bar.arrive_and_wait();
    return r;
}
template <class T>
inline T __shfl_xor_sync(unsigned, T v, int o) {
    return memdex_emu_exchange(v, (threadIdx.x % 32) ^ (uint32_t)o);
}
template <class T>
inline T __shfl_sync(unsigned, T v, int src) {
    return memdex_emu_exchange(v, (uint32_t)src);
}
inline unsigned __ballot_sync(unsigned, int p) {
    MemdexEmuWarp& w = memdex_emu_warp();
    w.buf[threadIdx.x % 32] = p ? 1u : 0u;
    w.bar.arrive_and_wait();
    unsigned r = 0;
    for (uint32_t i = 0; i < 32; ++i) r |= w.buf[i] << i;
    w.bar.arrive_and_wait();
    return r;
}
inline void __syncwarp(unsigned = 0xffffffffu) { memdex_emu_warp().bar.arrive_and_wait(); }
inline void __syncthreads() { memdex_emu_block->bar.arrive_and_wait(); }
inline int __syncthreads_or(int p) {
    memdex_emu_block->flags[threadIdx.x] = p;
    __syncthreads();
    int r = 0;
    for (int f : memdex_emu_block->flags) r |= f;
    __syncthreads();
    return r;
}

// Runs `kernel` for every block of `grid` with `threads` threads (a multiple of 32) and `smem`
// bytes of dynamic shared memory, filled with NaN before each block as a device leaves
// garbage there. The threads persist across the blocks (a barrier between blocks).
inline void memdex_emu_launch(dim3 grid, uint32_t threads, size_t smem,
                              const std::function<void()>& kernel) {
    gridDim = grid;
    blockDim = {threads, 1, 1};
    MemdexEmuBlock block(threads);
    memdex_emu_block = &block;
    std::barrier<> between((std::ptrdiff_t)threads);
    std::vector<std::thread> pool;
    for (uint32_t t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            threadIdx = {t, 0, 0};
            for (uint32_t by = 0; by < grid.y; ++by) {
                for (uint32_t bx = 0; bx < grid.x; ++bx) {
                    if (t == 0) block.dynamic.assign(smem / 16 + 1, {NAN, NAN, NAN, NAN});
                    between.arrive_and_wait();
                    blockIdx = {bx, by, 0};
                    kernel();
                    between.arrive_and_wait();
                }
            }
        });
    }
    for (auto& th : pool) th.join();
}
