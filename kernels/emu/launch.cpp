// Runs launches of memdex's kernels (kernels/cuda/*.cu) under the SIMT emulator (simt.h), as a
// device would: the emulated backend of crates/memdex-kernels/tests/emu/ writes the buffers and
// the launches its CUDA twin (src/gpu.rs) would make, this runs them in order on shared
// buffers and writes back the output buffers.
//
//   launch IN OUT
//
// IN, little-endian:
//   u32 buffers; per buffer: u8 kind (0: zeros, 1: its bytes follow, 2: NaN-filled f32 scratch,
//     3: zeros written back to OUT), u64 bytes, [bytes]
//   u32 launches; per launch: u32 name length, name, u32 grid x, grid y, threads, shared bytes,
//     u32 args; per arg: u8 kind (0: u32, 1: f32, 2: a buffer's address (u32 buffer),
//     3: null, 4: a table of buffer addresses (u32 buffer holding u64 slots, then u32 count
//     and that many buffer ids: the table is filled with their addresses)), value
// OUT: the kind-3 buffers' bytes, in order.
#include "simt.h"

#include "../cuda/fragrel_env.cu"
#include "../cuda/gather_parts.cu"
#include "../cuda/lsh_project.cu"
#include "../cuda/query_inputs.cu"
#include "../cuda/rank.cu"
#include "../cuda/segmented_topk.cu"
#include "../cuda/tensor_topk.cu"

#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>

namespace {

struct In {
    FILE* f;
    template <class T>
    T one() {
        T v{};
        if (std::fread(&v, sizeof v, 1, f) != 1) throw std::runtime_error("short input");
        return v;
    }
};

// One launch's arguments, by position.
struct Args {
    std::vector<uint64_t> raw;  // u32 / f32 bits, or an address
    uint32_t u(size_t i) const { return (uint32_t)raw.at(i); }
    float f(size_t i) const {
        const uint32_t b = (uint32_t)raw.at(i);
        float v;
        std::memcpy(&v, &b, 4);
        return v;
    }
    template <class T>
    T* p(size_t i) const {
        return reinterpret_cast<T*>(raw.at(i));
    }
};

using Kernel = std::function<void(const Args&)>;

#define SEG(name)                                                                               \
    {#name, [](const Args& a) {                                                                 \
         name(a.p<const __half>(0), a.u(1), a.p<const float>(2), a.p<const uint32_t>(3),        \
              a.p<const uint32_t>(4), a.p<const uint32_t>(5), a.u(6), a.p<const uint16_t>(7),   \
              a.p<const uint32_t>(8), a.u(9), a.u(10), a.u(11), a.u(12), a.p<float>(13),        \
              a.p<uint32_t>(14));                                                               \
     }}
#define DENSE(name)                                                                             \
    {#name, [](const Args& a) {                                                                 \
         name(a.p<const __half>(0), a.u(1), a.p<const float>(2), a.p<const uint32_t>(3),        \
              a.p<const uint32_t>(4), a.p<const uint32_t>(5), a.u(6), a.u(7), a.p<float>(8),    \
              a.u(9));                                                                          \
     }}
#define FRAGREL(name)                                                                           \
    {#name, [](const Args& a) {                                                                 \
         name(a.p<const __half>(0), a.u(1), a.p<const float>(2), a.p<const uint32_t>(3),        \
              a.p<const uint32_t>(4), a.p<const uint32_t>(5), a.f(6), a.f(7),                   \
              a.p<const uint16_t>(8), a.p<const uint32_t>(9), a.u(10), a.u(11), a.u(12),        \
              a.p<float>(13), a.u(14), a.p<float>(15), a.p<uint32_t>(16));                      \
     }}

const std::map<std::string, Kernel> kKernels = {
    {"memdex_lsh_project",
     [](const Args& a) {
         memdex_lsh_project(a.p<const float>(0), a.u(1), a.p<const float>(2), a.u(3), a.u(4),
                            a.p<uint32_t>(5));
     }},
    SEG(memdex_segmented_topk_t1),
    SEG(memdex_segmented_topk_t4),
    SEG(memdex_segmented_topk_t16),
    SEG(memdex_segmented_topk_d512_t1),
    SEG(memdex_segmented_topk_d512_t4),
    SEG(memdex_segmented_topk_d512_t16),
    {"memdex_tensor_topk",
     [](const Args& a) {
         memdex_tensor_topk(a.p<const __half>(0), a.u(1), a.u(2), a.p<const float>(3),
                            a.p<const uint32_t>(4), a.p<const uint32_t>(5),
                            a.p<const uint32_t>(6), a.u(7), a.u(8), a.u(9), a.p<float>(10),
                            a.p<uint32_t>(11));
     }},
    {"memdex_topk_merge",
     [](const Args& a) {
         memdex_topk_merge(a.p<const float>(0), a.p<const uint32_t>(1), a.u(2), a.u(3),
                           a.p<float>(4), a.p<uint32_t>(5));
     }},
    FRAGREL(memdex_fragrel_topk),
    FRAGREL(memdex_fragrel_topk_d512),
    DENSE(memdex_rank_dense_t1),
    DENSE(memdex_rank_dense_t4),
    DENSE(memdex_rank_dense_t16),
    DENSE(memdex_rank_dense_d512_t1),
    DENSE(memdex_rank_dense_d512_t4),
    DENSE(memdex_rank_dense_d512_t16),
    {"memdex_rank_topk",
     [](const Args& a) {
         memdex_rank_topk(a.p<const uint32_t>(0), a.p<const uint32_t>(1), a.p<const uint32_t>(2),
                          a.p<const uint8_t>(3), a.p<const float>(4), a.p<const uint8_t>(5),
                          a.p<const uint32_t>(6), a.p<const uint32_t>(7), a.p<const float>(8),
                          a.f(9), a.f(10), a.u(11), a.u(12), a.f(13), a.f(14), a.u(15), a.f(16),
                          a.u(17), a.p<float>(18), a.u(19), a.p<float>(20), a.p<uint32_t>(21),
                          a.p<float>(22));
     }},
    {"memdex_gather_parts",
     [](const Args& a) {
         memdex_gather_parts(a.p<const uint64_t>(0), a.p<const uint32_t>(1),
                             a.p<const uint32_t>(2), a.u(3), a.p<uint16_t>(4), a.p<uint32_t>(5),
                             a.p<uint32_t>(6), a.p<uint8_t>(7));
     }},
    {"memdex_query_inputs",
     [](const Args& a) {
         memdex_query_inputs(a.p<const uint64_t>(0), a.p<const uint32_t>(1),
                             a.p<const uint32_t>(2), a.p<const uint32_t>(3),
                             a.p<const uint32_t>(4), a.p<const uint32_t>(5),
                             a.p<const long long>(6), a.p<const long long>(7),
                             a.p<const uint32_t>(8), a.p<const uint32_t>(9),
                             a.p<const uint32_t>(10), a.p<const float>(11), a.u(12), a.u(13),
                             a.f(14), a.f(15), a.p<float>(16), a.p<float>(17), a.p<uint8_t>(18));
     }},
};

// A buffer, 64-byte aligned (rows are read 16 bytes at a time, wmma tiles need 32), one slot
// more than asked (a device buffer is never empty).
struct Buffer {
    std::vector<MemdexEmuLine> data;
    uint64_t bytes;
    bool out;
    char* ptr() { return reinterpret_cast<char*>(data.data()); }
};

int run(In& in, FILE* out) {
    std::vector<Buffer> bufs(in.one<uint32_t>());
    for (Buffer& b : bufs) {
        const uint8_t kind = in.one<uint8_t>();
        b.bytes = in.one<uint64_t>();
        b.out = kind == 3;
        b.data.assign(b.bytes / 64 + 1, MemdexEmuLine{});
        if (kind == 2)
            for (auto& l : b.data)
                for (auto& x : l.v) x = {NAN, NAN, NAN, NAN};
        if (kind == 1 && b.bytes && std::fread(b.ptr(), 1, b.bytes, in.f) != b.bytes)
            throw std::runtime_error("short buffer");
    }
    const uint32_t launches = in.one<uint32_t>();
    for (uint32_t l = 0; l < launches; ++l) {
        std::string name(in.one<uint32_t>(), '\0');
        if (std::fread(name.data(), 1, name.size(), in.f) != name.size()) throw std::runtime_error("name");
        const dim3 grid{in.one<uint32_t>(), in.one<uint32_t>(), 1};
        const uint32_t threads = in.one<uint32_t>(), smem = in.one<uint32_t>();
        Args args;
        for (uint32_t i = 0, n = in.one<uint32_t>(); i < n; ++i) {
            const uint8_t kind = in.one<uint8_t>();
            if (kind <= 1) {
                args.raw.push_back(in.one<uint32_t>());
            } else if (kind == 2) {
                args.raw.push_back((uint64_t)bufs.at(in.one<uint32_t>()).ptr());
            } else if (kind == 3) {
                args.raw.push_back(0);
            } else {
                Buffer& table = bufs.at(in.one<uint32_t>());
                const uint32_t count = in.one<uint32_t>();
                if (count * 8 > table.bytes) throw std::runtime_error("table too small");
                for (uint32_t j = 0; j < count; ++j) {
                    const uint64_t addr = (uint64_t)bufs.at(in.one<uint32_t>()).ptr();
                    std::memcpy(table.ptr() + 8 * j, &addr, 8);
                }
                args.raw.push_back((uint64_t)table.ptr());
            }
        }
        const auto k = kKernels.find(name);
        if (k == kKernels.end()) throw std::runtime_error("no kernel " + name);
        if (grid.x && grid.y) memdex_emu_launch(grid, threads, smem, [&] { k->second(args); });
    }
    for (Buffer& b : bufs)
        if (b.out) std::fwrite(b.ptr(), 1, b.bytes, out);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: launch IN OUT\n");
        return 2;
    }
    In in{std::fopen(argv[1], "rb")};
    FILE* out = std::fopen(argv[2], "wb");
    if (!in.f || !out) return 2;
    try {
        run(in, out);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "launch: %s\n", e.what());
        return 1;
    }
    std::fclose(out);
    return 0;
}
