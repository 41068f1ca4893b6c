// Runs a plan of the fused BERT encoder (crates/memdex-fused-bert/src/plan.rs) with
// kernels/cuda/encoder/bert.cu under the SIMT emulator (simt.h), as a device would: the launches
// by name, grid and arguments, and the matrix products with cuBLAS's column-major semantics
// (f16 operands, f32 accumulation in order of k, β = 0), done here on the CPU. The emulated
// twin of the CUDA executor (src/cuda.rs); crates/memdex-fused-bert/tests/emulated.rs writes
// the plan and compares what comes back with the Rust references.
//
//   bert_launch IN OUT
//
// IN, little-endian:
//   u32 buffers; per buffer: u8 kind (0: zeros, 1: its bytes follow, 2: NaN-filled), u64 bytes,
//     [bytes]
//   u32 ops; per op: u8 type
//     0 (launch): u32 name length, name, u32 grid, u32 threads, u32 shared bytes, u32 args;
//       per arg: u8 kind (0: u32, 1: f32, 2: a buffer's address), u32 value
//     1 (product): u8 ta, u8 tb, u32 m, n, k, f32 alpha, u32 a, u32 lda, u64 stride_a, u32 b,
//       u32 ldb, u64 stride_b, u32 c, u32 ldc, u64 stride_c, u32 batch, u8 c is f32
// OUT: every buffer's bytes, in order.
#include "simt.h"

#include <cstdint>
#include <cstring>

// f32 → f16, round to nearest even (what __float2half_rn does on a device).
inline uint16_t memdex_bert_emu_f2h(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t mant = x & 0x007fffffu;
    const int32_t exp = (int32_t)((x >> 23) & 0xffu);
    if (exp == 0xff) return sign | 0x7c00u | (mant ? 0x200u : 0u);
    const int32_t e = exp - 127 + 15;
    if (e >= 0x1f) return sign | 0x7c00u;
    if (e <= 0) {
        if (e < -10) return sign;
        mant |= 0x00800000u;
        const uint32_t shift = (uint32_t)(14 - e);
        uint32_t m = mant >> shift;
        const uint32_t rem = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (m & 1u))) ++m;
        return sign | (uint16_t)m;
    }
    const uint32_t m = mant >> 13, rem = mant & 0x1fffu;
    uint16_t h = sign | (uint16_t)(e << 10) | (uint16_t)m;
    if (rem > 0x1000u || (rem == 0x1000u && (m & 1u))) ++h;  // a carry into the exponent is right
    return h;
}
inline __half __float2half_rn(float f) { return __half{memdex_bert_emu_f2h(f)}; }

#include "../cuda/encoder/bert.cu"

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

struct Args {
    std::vector<uint64_t> raw;
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

using H = __half;
using Kernel = std::function<void(const Args&)>;

const std::map<std::string, Kernel> kKernels = {
    {"memdex_bert_embed",
     [](const Args& a) {
         memdex_bert_embed(a.p<const uint32_t>(0), a.u(1), a.p<const H>(2), a.p<const H>(3),
                           a.p<const H>(4), a.p<const H>(5), a.p<const H>(6), a.u(7), a.f(8),
                           a.p<H>(9));
     }},
    {"memdex_bert_residual_norm",
     [](const Args& a) {
         memdex_bert_residual_norm(a.p<const H>(0), a.p<const H>(1), a.p<H>(2), a.p<const H>(3),
                                   a.p<const H>(4), a.u(5), a.f(6));
     }},
    {"memdex_bert_bias_act",
     [](const Args& a) {
         memdex_bert_bias_act(a.p<H>(0), a.p<const H>(1), a.u(2), a.u(3), a.u(4));
     }},
    {"memdex_bert_attention",
     [](const Args& a) {
         memdex_bert_attention(a.p<const H>(0), a.p<const H>(1), a.p<const uint32_t>(2), a.u(3),
                               a.u(4), a.u(5), a.f(6), a.p<H>(7));
     }},
    {"memdex_bert_split_heads",
     [](const Args& a) {
         memdex_bert_split_heads(a.p<const H>(0), a.p<const H>(1), a.u(2), a.u(3), a.u(4), a.f(5),
                                 a.u(6), a.p<H>(7), a.p<H>(8), a.p<H>(9));
     }},
    {"memdex_bert_softmax",
     [](const Args& a) {
         memdex_bert_softmax(a.p<const float>(0), a.p<const uint32_t>(1), a.u(2), a.u(3), a.u(4),
                             a.p<H>(5));
     }},
    {"memdex_bert_merge_heads",
     [](const Args& a) {
         memdex_bert_merge_heads(a.p<const H>(0), a.u(1), a.u(2), a.u(3), a.u(4), a.p<H>(5));
     }},
    {"memdex_bert_pool",
     [](const Args& a) {
         memdex_bert_pool(a.p<const H>(0), a.p<const uint32_t>(1), a.u(2), a.u(3), a.u(4), a.u(5),
                          a.p<float>(6));
     }},
};

struct Buffer {
    std::vector<float4> data;  // 16-byte aligned, one slot more than asked
    uint64_t bytes;
    char* ptr() { return reinterpret_cast<char*>(data.data()); }
};

float half_at(const char* p, uint64_t i) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    return memdex_emu_half_to_float(h);
}

void gemm(In& in, std::vector<Buffer>& bufs) {
    const bool ta = in.one<uint8_t>(), tb = in.one<uint8_t>();
    const uint32_t m = in.one<uint32_t>(), n = in.one<uint32_t>(), k = in.one<uint32_t>();
    const float alpha = in.one<float>();
    Buffer& A = bufs.at(in.one<uint32_t>());
    const uint32_t lda = in.one<uint32_t>();
    const uint64_t sa = in.one<uint64_t>();
    Buffer& B = bufs.at(in.one<uint32_t>());
    const uint32_t ldb = in.one<uint32_t>();
    const uint64_t sb = in.one<uint64_t>();
    Buffer& C = bufs.at(in.one<uint32_t>());
    const uint32_t ldc = in.one<uint32_t>();
    const uint64_t sc = in.one<uint64_t>();
    const uint32_t batch = in.one<uint32_t>();
    const bool c_f32 = in.one<uint8_t>();
    for (uint32_t p = 0; p < batch; ++p)
        for (uint32_t j = 0; j < n; ++j)
            for (uint32_t i = 0; i < m; ++i) {
                float dot = 0.f;
                for (uint32_t q = 0; q < k; ++q) {
                    const uint64_t ai = p * sa + (ta ? q + (uint64_t)i * lda : i + (uint64_t)q * lda);
                    const uint64_t bi = p * sb + (tb ? j + (uint64_t)q * ldb : q + (uint64_t)j * ldb);
                    dot += half_at(A.ptr(), ai) * half_at(B.ptr(), bi);
                }
                const uint64_t ci = p * sc + i + (uint64_t)j * ldc;
                const float v = alpha * dot;
                if (ci * (c_f32 ? 4 : 2) >= C.bytes) throw std::runtime_error("product past C");
                if (c_f32) std::memcpy(C.ptr() + 4 * ci, &v, 4);
                else {
                    const uint16_t h = memdex_bert_emu_f2h(v);
                    std::memcpy(C.ptr() + 2 * ci, &h, 2);
                }
            }
}

void launch(In& in, std::vector<Buffer>& bufs) {
    std::string name(in.one<uint32_t>(), '\0');
    if (std::fread(name.data(), 1, name.size(), in.f) != name.size()) throw std::runtime_error("name");
    const dim3 grid{in.one<uint32_t>(), 1, 1};
    const uint32_t threads = in.one<uint32_t>(), smem = in.one<uint32_t>();
    Args args;
    for (uint32_t i = 0, n = in.one<uint32_t>(); i < n; ++i) {
        const uint8_t kind = in.one<uint8_t>();
        const uint32_t v = in.one<uint32_t>();
        args.raw.push_back(kind <= 1 ? (uint64_t)v : (uint64_t)bufs.at(v).ptr());
    }
    const auto k = kKernels.find(name);
    if (k == kKernels.end()) throw std::runtime_error("no kernel " + name);
    if (smem > 48 * 1024) throw std::runtime_error(name + ": shared memory past 48 KiB");
    if (grid.x) memdex_emu_launch(grid, threads, smem, [&] { k->second(args); });
}

int run(In& in, FILE* out) {
    std::vector<Buffer> bufs(in.one<uint32_t>());
    for (Buffer& b : bufs) {
        const uint8_t kind = in.one<uint8_t>();
        b.bytes = in.one<uint64_t>();
        b.data.assign(b.bytes / 16 + 1, {0.f, 0.f, 0.f, 0.f});
        if (kind == 2)
            for (auto& x : b.data) x = {NAN, NAN, NAN, NAN};
        if (kind == 1 && b.bytes && std::fread(b.ptr(), 1, b.bytes, in.f) != b.bytes)
            throw std::runtime_error("short buffer");
    }
    for (uint32_t o = 0, ops = in.one<uint32_t>(); o < ops; ++o) {
        if (in.one<uint8_t>() == 0) launch(in, bufs);
        else gemm(in, bufs);
    }
    for (Buffer& b : bufs) std::fwrite(b.ptr(), 1, b.bytes, out);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: bert_launch IN OUT\n");
        return 2;
    }
    In in{std::fopen(argv[1], "rb")};
    FILE* out = std::fopen(argv[2], "wb");
    if (!in.f || !out) return 2;
    try {
        run(in, out);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bert_launch: %s\n", e.what());
        return 1;
    }
    std::fclose(out);
    return 0;
}
