// The fused ranking (kernels/cuda/rank.cu: memdex_rank_dense_*, then memdex_rank_topk) under the
// SIMT emulator, on a batch written by crates/memdex-kernels/tests/emulated.rs: the buffers a
// device launch receives (the tiles and the dense kernel's name come from the Rust host code).
// Writes the top-k launch's 2k slots per query and every row's score (the out_all launch);
// the Rust test compares them with the CPU reference.
//
//   rank_check IN OUT
//
// IN, little-endian: a header of 8 u32 (dim, rows, nq, total, k, cap, splits, tiles) and the
// weights (f32 w_dense, w_sparse; u32 sparse_fused, fragrel; f32 alpha, w; u32 importance;
// f32 w_importance), the dense kernel's name (u32 length, bytes), then emb (u16 × rows·dim),
// queries (f32 × nq·dim), ranges (u32 × 2nq), positions, groups (u32 × rows), importance
// (u8 × rows), sparse (f32 × total), flags (u8 × total), offsets, time_mode (u32 × nq),
// time_factor (f32 × nq), tile_q (u32 × nq), tile_off (u32 × tiles + 1).
// OUT: out_s (f32 × nq·2k), out_r (u32 × nq·2k), out_all (f32 × total).
#include "simt.h"

#include "../cuda/rank.cu"

#include <cstdio>
#include <map>
#include <string>

namespace {

struct Reader {
    FILE* f;
    template <class T>
    T one() {
        T v{};
        if (std::fread(&v, sizeof v, 1, f) != 1) throw std::runtime_error("short input");
        return v;
    }
    template <class T>
    std::vector<T> many(size_t n) {
        std::vector<T> v(n + 1);  // one more: a device buffer is never empty
        if (n && std::fread(v.data(), sizeof(T), n, f) != n) throw std::runtime_error("short input");
        return v;
    }
};

using Dense = void (*)(RK_DENSE_PARAMS);

const std::map<std::string, Dense> kDense = {
    {"memdex_rank_dense_t1", memdex_rank_dense_t1},
    {"memdex_rank_dense_t4", memdex_rank_dense_t4},
    {"memdex_rank_dense_t16", memdex_rank_dense_t16},
    {"memdex_rank_dense_d512_t1", memdex_rank_dense_d512_t1},
    {"memdex_rank_dense_d512_t4", memdex_rank_dense_d512_t4},
    {"memdex_rank_dense_d512_t16", memdex_rank_dense_d512_t16},
};

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: rank_check IN OUT\n");
        return 2;
    }
    Reader in{std::fopen(argv[1], "rb")};
    if (!in.f) return 2;
    const uint32_t dim = in.one<uint32_t>(), rows = in.one<uint32_t>(), nq = in.one<uint32_t>();
    const uint32_t total = in.one<uint32_t>(), k = in.one<uint32_t>(), cap = in.one<uint32_t>();
    const uint32_t splits = in.one<uint32_t>(), tiles = in.one<uint32_t>();
    const float w_dense = in.one<float>(), w_sparse = in.one<float>();
    const uint32_t sparse_fused = in.one<uint32_t>(), fragrel = in.one<uint32_t>();
    const float alpha = in.one<float>(), w = in.one<float>();
    const uint32_t use_importance = in.one<uint32_t>();
    const float w_importance = in.one<float>();
    const auto name_bytes = in.many<char>(in.one<uint32_t>());
    const std::string name(name_bytes.data(), name_bytes.size() - 1);
    const auto emb = in.many<__half>((size_t)rows * dim);
    const auto queries = in.many<float>((size_t)nq * dim);
    const auto ranges = in.many<uint32_t>(2 * nq);
    const auto positions = in.many<uint32_t>(rows), groups = in.many<uint32_t>(rows);
    const auto importance = in.many<uint8_t>(rows);
    const auto sparse = in.many<float>(total);
    const auto flags = in.many<uint8_t>(total);
    const auto offsets = in.many<uint32_t>(nq), time_mode = in.many<uint32_t>(nq);
    const auto time_factor = in.many<float>(nq);
    const auto tile_q = in.many<uint32_t>(nq), tile_off = in.many<uint32_t>(tiles + 1);
    std::fclose(in.f);
    const auto dense = kDense.find(name);
    if (dense == kDense.end()) {
        std::fprintf(stderr, "no dense kernel %s\n", name.c_str());
        return 2;
    }

    uint32_t stride = 1;
    for (uint32_t q = 0; q < nq; ++q) stride = std::max(stride, ranges[2 * q + 1] - ranges[2 * q]);
    const size_t per_query = (dim <= 512 ? 4 : 8) * 512 + 4;
    std::vector<float> out_s(nq * 2 * k + 1), out_all(total + 1);
    std::vector<uint32_t> out_r(nq * 2 * k + 1);
    for (const bool all : {false, true}) {
        std::vector<float> scratch((size_t)nq * 3 * stride, NAN);  // garbage, as on a device
        memdex_emu_launch({tiles, splits, 1}, 256, per_query * cap, [&] {
            dense->second(emb.data(), dim, queries.data(), ranges.data(), tile_q.data(),
                          tile_off.data(), cap, splits, scratch.data(), stride);
        });
        memdex_emu_launch({nq, 1, 1}, 256, 0, [&] {
            memdex_rank_topk(ranges.data(), positions.data(), groups.data(), importance.data(),
                             sparse.data(), flags.data(), offsets.data(), time_mode.data(),
                             time_factor.data(), w_dense, w_sparse, sparse_fused, fragrel, alpha,
                             w, use_importance, w_importance, k, scratch.data(), stride,
                             out_s.data(), out_r.data(), all ? out_all.data() : nullptr);
        });
    }
    FILE* out = std::fopen(argv[2], "wb");
    if (!out) return 2;
    std::fwrite(out_s.data(), 4, nq * 2 * k, out);
    std::fwrite(out_r.data(), 4, nq * 2 * k, out);
    std::fwrite(out_all.data(), 4, total, out);
    std::fclose(out);
    return 0;
}
