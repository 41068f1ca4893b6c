// The fused ranking before (one kernel, dense cosines inside: OLD, the sources at b9473b4) and
// after the tiled dense step (memdex_rank_dense + memdex_rank_topk), under kernels/emu's SIMT
// emulator, on the same inputs: 25 queries over 600 rows (ranges asked by 1, 4 and 17 queries),
// FragRel, importance, the three time rules; writes the top-k lists and every row's score.
#include "simt.h"
#ifdef OLD
#include "old/rank.cu"
#else
#include "../../../kernels/cuda/rank.cu"
#endif
#include <cstdio>
#include <random>

struct Tiles { std::vector<uint32_t> q, off; uint32_t longest = 0; };
Tiles make_tiles(const std::vector<uint32_t>& ranges, uint32_t cap) {
    uint32_t n = ranges.size() / 2;
    std::vector<uint32_t> order(n);
    for (uint32_t i = 0; i < n; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
        return std::make_pair(ranges[2*a], ranges[2*a+1]) < std::make_pair(ranges[2*b], ranges[2*b+1]); });
    Tiles t; t.off.push_back(0); uint32_t run = 0;
    for (uint32_t i = 0; i < n; ++i) {
        bool same = i > 0 && ranges[2*order[i-1]] == ranges[2*order[i]] && ranges[2*order[i-1]+1] == ranges[2*order[i]+1];
        if (i > 0 && (!same || run == cap)) { t.off.push_back(i); run = 0; }
        run++; t.longest = std::max(t.longest, run);
    }
    if (n) t.off.push_back(n);
    t.q = order; return t;
}

int main(int argc, char** argv) {
    uint32_t dim = atoi(argv[1]), rows = 600, k = 10, splits = atoi(argv[2]);
    const char* out = argv[3];
    std::mt19937 rng(7);
    std::normal_distribution<float> nd;
    std::vector<__half> emb(rows * dim);
    for (auto& x : emb) x.bits = memdex_emu_float_to_half(nd(rng) * 0.3f);
    std::vector<uint32_t> base = {0,0, 5,9, 0,100, 100,350, 350,rows, 0,rows};
    std::vector<uint32_t> ranges = base;
    for (int r = 0; r < 16; ++r) { ranges.push_back(100); ranges.push_back(350); if (r < 3) { ranges.push_back(350); ranges.push_back(rows);} }
    uint32_t nq = ranges.size() / 2;
    std::vector<float> qv(nq * dim); for (auto& x : qv) x = nd(rng);
    std::vector<uint32_t> positions(rows), groups(rows); std::vector<uint8_t> imp(rows);
    uint32_t pos = 0, g = 0;
    for (uint32_t i = 0; i < rows; ++i) { if (rng() % 9 == 0) g++; pos += 1 + rng() % 3; positions[i] = pos; groups[i] = g; imp[i] = 1 + rng() % 10; }
    std::vector<uint32_t> offsets(nq); uint32_t total = 0, stride = 1;
    for (uint32_t q = 0; q < nq; ++q) { offsets[q] = total; uint32_t n = ranges[2*q+1] - ranges[2*q]; total += n; stride = std::max(stride, n); }
    std::vector<float> sparse(total + 1); std::vector<uint8_t> flags(total + 1);
    for (uint32_t i = 0; i < total; ++i) { sparse[i] = (rng() % 4 == 0) ? (rng() % 1000) / 100.f : 0.f; flags[i] = rng() % 7 == 0; }
    std::vector<uint32_t> tmode(nq); std::vector<float> tfac(nq);
    for (uint32_t q = 0; q < nq; ++q) { tmode[q] = q % 3; tfac[q] = 0.2f; }
    std::vector<float> scratch(nq * 3 * stride, NAN), os(nq * 2 * k), all(total + 1);
    std::vector<uint32_t> orr(nq * 2 * k);
    FILE* f = fopen(out, "wb");
    for (int pass = 0; pass < 2; ++pass) {
        float* out_all = pass == 1 ? all.data() : nullptr;
#ifndef OLD
        Tiles t = make_tiles(ranges, 16);
        size_t C = dim <= 512 ? 4 : 8;
        size_t smem = (C * 512 + 4) * t.longest;
        auto kern = dim <= 512 ? memdex_rank_dense_d512_t16 : memdex_rank_dense_t16;
        uint32_t capl = t.longest;
        memdex_emu_launch({(uint32_t)t.off.size() - 1, splits, 1}, 256, smem, [&] {
            kern(emb.data(), dim, qv.data(), ranges.data(), t.q.data(), t.off.data(), capl, splits, scratch.data(), stride);
        });
#endif
        memdex_emu_launch({nq, 1, 1}, 256, 0, [&] {
#ifdef OLD
            auto kk = dim <= 512 ? memdex_rank_topk_d512 : memdex_rank_topk;
            kk(emb.data(), dim, qv.data(),
#else
            memdex_rank_topk(
#endif
               ranges.data(), positions.data(), groups.data(), imp.data(), sparse.data(), flags.data(), offsets.data(),
               tmode.data(), tfac.data(), 0.8f, 0.2f, 0u, 1u, 0.5f, 0.8f, 1u, 0.3f, k, scratch.data(), stride,
               os.data(), orr.data(), out_all);
        });
        if (pass == 0) { fwrite(os.data(), 4, os.size(), f); fwrite(orr.data(), 4, orr.size(), f); }
        else fwrite(all.data(), 4, total, f);
    }
    fclose(f);
    printf("nq %u total %u\n", nq, total);
}
