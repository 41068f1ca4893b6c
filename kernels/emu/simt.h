// A SIMT emulator for memdex's CUDA sources on the CPU: kernels/cuda/*.cu compile as C++
// (g++ -std=c++20 -DMEMDEX_EMULATED -I kernels/emu/include) and a launch runs every block of its
// grid, one block at a time, each CUDA thread a fiber. Warp collectives (__shfl_*,
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

#include <setjmp.h>
#include <ucontext.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <type_traits>
#include <vector>

using std::isnan;
using std::max;
using std::min;

struct dim3 {
    uint32_t x = 1, y = 1, z = 1;
};
inline dim3 threadIdx, blockIdx;  // of the fiber running now
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
inline float __half2float(__half h) { return memdex_emu_half_to_float(h.bits); }
// Round to nearest even, as a device's __float2half (the compiler's _Float16 conversion).
inline __half __float2half(float f) {
    const _Float16 h = (_Float16)f;
    __half out;
    std::memcpy(&out.bits, &h, 2);
    return out;
}
inline uint4 __ldcs(const uint4* p) { return *p; }
template <class T>
inline T __ldg(const T* p) {
    return *p;
}

// The threads of a block are fibers on one OS thread, switched at barriers only (_setjmp /
// _longjmp; makecontext starts each on its own stack): a warp collective costs a few
// context switches per lane, not a futex wake-up, and runs are deterministic.
struct MemdexEmuFiber {
    ucontext_t start;
    jmp_buf at;
    std::vector<char> stack;
    uint32_t tid = 0;
    bool done = false, started = false;
};

struct MemdexEmuBarrier {
    uint32_t n = 0, arrived = 0;
    uint64_t generation = 0;
};

struct MemdexEmuWarp {
    MemdexEmuBarrier bar;
    uint32_t buf[32];
    float mma[256];  // a wmma product, computed once for the warp (include/mma.h)
};

// 64 bytes of memory, 64-byte aligned: buffers and shared memory are made of them, so that
// what a device aligns (allocations to 256 bytes, shared memory to 128) is at least as aligned
// here as wmma's 32-byte rule asks.
struct alignas(64) MemdexEmuLine {
    float4 v[4];
};

struct MemdexEmuBlock {
    std::vector<MemdexEmuFiber> fibers;
    std::vector<MemdexEmuWarp> warps;
    MemdexEmuBarrier bar;
    std::vector<int> flags;
    std::vector<MemdexEmuLine> dynamic;
    const std::function<void()>* kernel = nullptr;
    MemdexEmuFiber* current = nullptr;
    jmp_buf scheduler;
    uint64_t progress = 0;  // barriers released and fibers finished
};
inline MemdexEmuBlock* memdex_emu_block;

inline float4* memdex_dynamic_smem() { return memdex_emu_block->dynamic.data()->v; }

// Back to the scheduler; it resumes this fiber in its next round.
inline void memdex_emu_yield() {
    MemdexEmuBlock* b = memdex_emu_block;
    if (!_setjmp(b->current->at)) _longjmp(b->scheduler, 1);
}

inline void memdex_emu_wait(MemdexEmuBarrier& bar) {
    const uint64_t generation = bar.generation;
    if (++bar.arrived == bar.n) {
        bar.arrived = 0;
        ++bar.generation;
        ++memdex_emu_block->progress;
        return;
    }
    while (bar.generation == generation) memdex_emu_yield();
}

inline MemdexEmuWarp& memdex_emu_warp() { return memdex_emu_block->warps[threadIdx.x / 32]; }

// Every lane of the warp publishes v and reads lane src's.
template <class T>
inline T memdex_emu_exchange(T v, uint32_t src) {
    static_assert(sizeof(T) == 4, "32-bit shuffles only");
    MemdexEmuWarp& w = memdex_emu_warp();
    std::memcpy(&w.buf[threadIdx.x % 32], &v, 4);
    memdex_emu_wait(w.bar);
    T r;
    std::memcpy(&r, &w.buf[src % 32], 4);
    memdex_emu_wait(w.bar);
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
    memdex_emu_wait(w.bar);
    unsigned r = 0;
    for (uint32_t i = 0; i < 32; ++i) r |= w.buf[i] << i;
    memdex_emu_wait(w.bar);
    return r;
}
inline void __syncwarp(unsigned = 0xffffffffu) { memdex_emu_wait(memdex_emu_warp().bar); }
inline void __syncthreads() { memdex_emu_wait(memdex_emu_block->bar); }
inline int __syncthreads_or(int p) {
    memdex_emu_block->flags[threadIdx.x] = p;
    __syncthreads();
    int r = 0;
    for (int f : memdex_emu_block->flags) r |= f;
    __syncthreads();
    return r;
}

inline void memdex_emu_fiber_main() {
    MemdexEmuBlock* b = memdex_emu_block;
    (*b->kernel)();
    b->current->done = true;
    ++b->progress;
    _longjmp(b->scheduler, 1);
}

// Runs one block to completion: resumes its fibers round-robin until all have finished.
// A round in which no barrier opens and no fiber finishes is a deadlock (lanes of a warp
// diverging across a collective, or a barrier some threads never reach): it aborts.
inline void memdex_emu_run_block(MemdexEmuBlock& b) {
    for (;;) {
        const uint64_t before = b.progress;
        bool all_done = true;
        for (MemdexEmuFiber& f : b.fibers) {
            if (f.done) continue;
            all_done = false;
            b.current = &f;
            threadIdx = {f.tid, 0, 0};
            if (!_setjmp(b.scheduler)) {
                if (!f.started) {
                    f.started = true;
                    setcontext(&f.start);
                }
                _longjmp(f.at, 1);
            }
        }
        if (all_done) return;
        if (b.progress == before) {
            std::fprintf(stderr, "emulator: deadlock in block (%u, %u)\n", blockIdx.x, blockIdx.y);
            std::abort();
        }
    }
}

// Runs `kernel` for every block of `grid` with `threads` threads (a multiple of 32) and `smem`
// bytes of dynamic shared memory, filled with NaN before each block as a device leaves
// garbage there. Blocks run one after another.
inline void memdex_emu_launch(dim3 grid, uint32_t threads, size_t smem,
                              const std::function<void()>& kernel) {
    gridDim = grid;
    blockDim = {threads, 1, 1};
    MemdexEmuBlock block;
    memdex_emu_block = &block;
    block.kernel = &kernel;
    block.fibers.resize(threads);
    block.warps.resize((threads + 31) / 32);
    block.flags.assign(threads, 0);
    for (MemdexEmuWarp& w : block.warps) w.bar.n = 32;
    block.bar.n = threads;
    for (uint32_t t = 0; t < threads; ++t) block.fibers[t].stack.resize(256 * 1024);
    for (uint32_t by = 0; by < grid.y; ++by) {
        for (uint32_t bx = 0; bx < grid.x; ++bx) {
            blockIdx = {bx, by, 0};
            const float4 nan4 = {NAN, NAN, NAN, NAN};
            block.dynamic.assign(smem / 64 + 1, MemdexEmuLine{{nan4, nan4, nan4, nan4}});
            for (uint32_t t = 0; t < threads; ++t) {
                MemdexEmuFiber& f = block.fibers[t];
                f.tid = t;
                f.done = f.started = false;
                getcontext(&f.start);
                f.start.uc_stack.ss_sp = f.stack.data();
                f.start.uc_stack.ss_size = f.stack.size();
                f.start.uc_link = nullptr;
                makecontext(&f.start, memdex_emu_fiber_main, 0);
            }
            memdex_emu_run_block(block);
        }
    }
}
