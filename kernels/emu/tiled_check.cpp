// The tiled scans of kernels/cuda (segmented_topk.cu, rank.cu's dense step) run under the SIMT
// emulator (simt.h) against a brute force in double: every instantiation (dim <= 512 and wider;
// tiles of 1, 4 and 16), bucket masks, parts merged by memdex_topk_merge, a tile cap below the
// longest run of a range, dims that leave lanes idle. Exit status 1 on any mismatch.
//
//   c++ -std=c++20 -O1 -pthread -DMEMDEX_EMULATED -I kernels/emu/include \
//       -o tiled_check kernels/emu/tiled_check.cpp && ./tiled_check
// (crates/memdex-kernels/tests/emulated.rs does this.)
#include "simt.h"

#include "../cuda/rank.cu"
#include "../cuda/segmented_topk.cu"
#include "../cuda/tensor_topk.cu"

#include <cstdio>
#include <random>
#include <utility>

namespace {

// A batch's queries grouped by range in tiles of at most `cap` (as crates/memdex-kernels/src/
// tiles.rs groups them: by range, batch order within one).
struct Tiles {
    std::vector<uint32_t> queries, offsets;
    uint32_t longest = 0;
};

Tiles make_tiles(const std::vector<uint32_t>& ranges, uint32_t cap) {
    const uint32_t n = ranges.size() / 2;
    auto key = [&](uint32_t q) { return std::make_pair(ranges[2 * q], ranges[2 * q + 1]); };
    Tiles t;
    for (uint32_t i = 0; i < n; ++i) t.queries.push_back(i);
    std::stable_sort(t.queries.begin(), t.queries.end(),
                     [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
    t.offsets.push_back(0);
    uint32_t run = 0;
    for (uint32_t i = 0; i < n; ++i) {
        const bool same = i > 0 && key(t.queries[i - 1]) == key(t.queries[i]);
        if (i > 0 && (!same || run == cap)) {
            t.offsets.push_back(i);
            run = 0;
        }
        t.longest = std::max(t.longest, ++run);
    }
    if (n) t.offsets.push_back(n);
    return t;
}

// Rows, queries, a bucket mask, and the cosines in double.
struct Inputs {
    uint32_t dim, rows;
    std::vector<uint32_t> ranges;
    std::vector<__half> emb;
    std::vector<float> embf, queries;
    uint32_t tables = 2, words = 1;
    std::vector<uint16_t> row_buckets;
    std::vector<uint32_t> query_masks;

    // near: every row a copy of one of 3 vectors plus noise 1e-3 of its size (cosines within
    // ~1e-3 of each other: the tensor-core scan's certificate fails, its exact rescan runs)
    Inputs(uint32_t dim, uint32_t rows, std::vector<uint32_t> ranges, uint32_t seed, bool near = false)
        : dim(dim), rows(rows), ranges(std::move(ranges)) {
        std::mt19937 rng(seed);
        std::normal_distribution<float> nd;
        std::vector<float> centers(3 * dim);
        for (float& c : centers) c = nd(rng) * 0.3f;
        for (uint32_t i = 0; i < rows * dim; ++i) {
            const float x = near ? centers[(i / dim) % 3 * dim + i % dim] * (1.f + 1e-3f * nd(rng))
                                 : nd(rng) * 0.3f;
            emb.push_back({memdex_emu_float_to_half(x)});
            embf.push_back(memdex_emu_half_to_float(emb.back().bits));
        }
        for (uint32_t i = 0; i < nq() * dim; ++i) queries.push_back(nd(rng));
        for (uint32_t i = 0; i < rows * tables; ++i) row_buckets.push_back(rng() % 16);
        for (uint32_t i = 0; i < nq() * tables * words; ++i) query_masks.push_back(rng() & rng() & 0xffff);
    }
    uint32_t nq() const { return ranges.size() / 2; }
    bool selects(uint32_t q, uint32_t r) const {
        for (uint32_t t = 0; t < tables; ++t) {
            const uint32_t b = row_buckets[r * tables + t];
            if ((query_masks[(q * tables + t) * words + b / 32] >> (b % 32)) & 1u) return true;
        }
        return false;
    }
    double cosine(uint32_t q, uint32_t r) const {
        double d = 0, qq = 0, rr = 0;
        for (uint32_t e = 0; e < dim; ++e) {
            d += (double)embf[r * dim + e] * queries[q * dim + e];
            qq += (double)queries[q * dim + e] * queries[q * dim + e];
            rr += (double)embf[r * dim + e] * embf[r * dim + e];
        }
        return d / std::max(std::sqrt(qq) * std::sqrt(rr), 1e-30);
    }
};

int failures = 0;

void report(const char* what, int bad, const Inputs& in, const Tiles& t, const char* more) {
    std::printf("%s %s: dim %u, %u queries in %zu tiles (longest %u)%s\n", bad ? "FAIL" : "ok  ",
                what, in.dim, in.nq(), t.offsets.size() - 1, t.longest, more);
    failures += bad != 0;
}

void merge_parts(uint32_t nq, uint32_t k, uint32_t splits, const std::vector<float>& part_s,
                 const std::vector<uint32_t>& part_r, std::vector<float>& out_s,
                 std::vector<uint32_t>& out_r);
int verify(const Inputs& in, uint32_t k, bool masked, const std::vector<float>& out_s,
           const std::vector<uint32_t>& out_r);

// segmented_topk (+ memdex_topk_merge when splits > 1) against the sorted brute force: scores
// within 1e-5, rows equal except between near ties, empty slots past the range's rows.
template <int C>
void check_scan(const char* what, void (*kernel)(SEG_PARAMS), const Inputs& in, uint32_t k,
                uint32_t cap, uint32_t splits, bool masked) {
    const Tiles t = make_tiles(in.ranges, cap);
    const uint32_t nq = in.nq(), longest = t.longest;
    const size_t smem = (C * 512 + 4 + 8 * MEMDEX_WARPS * k) * std::max(longest, 1u);
    std::vector<float> part_s(nq * splits * k), out_s(nq * k);
    std::vector<uint32_t> part_r(nq * splits * k), out_r(nq * k);
    memdex_emu_launch({(uint32_t)t.offsets.size() - 1, splits, 1}, 256, smem, [&] {
        kernel(in.emb.data(), in.dim, in.queries.data(), in.ranges.data(), t.queries.data(),
               t.offsets.data(), longest, masked ? in.row_buckets.data() : nullptr,
               masked ? in.query_masks.data() : nullptr, in.tables, in.words, k, splits,
               part_s.data(), part_r.data());
    });
    merge_parts(nq, k, splits, part_s, part_r, out_s, out_r);
    char more[96];
    std::snprintf(more, sizeof more, ", k %u, cap %u, %u splits%s", k, cap, splits,
                  masked ? ", masked" : "");
    report(what, verify(in, k, masked, out_s, out_r), in, t, more);
}

// The parts' lists reduced by memdex_topk_merge (or taken as they are: one part).
void merge_parts(uint32_t nq, uint32_t k, uint32_t splits, const std::vector<float>& part_s,
                 const std::vector<uint32_t>& part_r, std::vector<float>& out_s,
                 std::vector<uint32_t>& out_r) {
    if (splits > 1) {
        memdex_emu_launch({nq, 1, 1}, 32, 0, [&] {
            memdex_topk_merge(part_s.data(), part_r.data(), splits, k, out_s.data(), out_r.data());
        });
    } else {
        out_s = part_s;
        out_r = part_r;
    }
}

// Each query's k slots against the sorted brute force: scores within 1e-5, rows equal except
// between near ties, empty slots past the range's rows. Returns the mismatches.
int verify(const Inputs& in, uint32_t k, bool masked, const std::vector<float>& out_s,
           const std::vector<uint32_t>& out_r) {
    int bad = 0;
    for (uint32_t q = 0; q < in.nq(); ++q) {
        std::vector<std::pair<double, uint32_t>> want;
        for (uint32_t r = in.ranges[2 * q]; r < in.ranges[2 * q + 1]; ++r)
            if (!masked || in.selects(q, r)) want.push_back({in.cosine(q, r), r});
        std::sort(want.begin(), want.end(), [](auto a, auto b) {
            return a.first > b.first || (a.first == b.first && a.second < b.second);
        });
        for (uint32_t j = 0; j < k; ++j) {
            const float s = out_s[q * k + j];
            const uint32_t r = out_r[q * k + j];
            bool ok;
            if (j >= want.size()) {
                ok = r == MEMDEX_NO_ROW && s == -INFINITY;
            } else {
                ok = std::fabs(s - want[j].first) <= 1e-5;
                if (ok && r != want[j].second)  // only a near tie may swap
                    ok = std::any_of(want.begin(), want.end(), [&](auto w) {
                        return w.second == r && std::fabs(w.first - s) <= 1e-5;
                    });
            }
            if (!ok && bad++ < 3)
                std::printf("  query %u slot %u: got (%f, %u), want (%f, %u)\n", q, j, s, r,
                            j < want.size() ? want[j].first : -INFINITY,
                            j < want.size() ? want[j].second : MEMDEX_NO_ROW);
        }
    }
    return bad;
}

// tensor_topk (+ memdex_topk_merge) against the brute force, as segmented_topk: the rows copied
// to a 64-byte aligned buffer (wmma loads them in 32-byte aligned tiles), shared memory as
// crates/memdex-kernels/src/tiles.rs sizes it (tensor_tile).
// `rescans`: whether the certificate must fail somewhere (near-duplicate rows) or nowhere.
void check_tensor(const Inputs& in, uint32_t k, uint32_t cap, uint32_t splits, bool rescans = false) {
    const Tiles t = make_tiles(in.ranges, cap);
    const uint32_t nq = in.nq(), longest = std::max(t.longest, 1u), kk = k + MEMDEX_TC_EXTRA;
    const size_t smem = 32 * (in.dim + 8) + MEMDEX_WARPS * (256 + 16) * 4 + 64 +
                        MEMDEX_WARPS * kk * 8 * longest;
    std::vector<MemdexEmuLine> rows(in.emb.size() * 2 / 64 + 1);
    std::memcpy(rows.data(), in.emb.data(), in.emb.size() * 2);
    std::vector<float> part_s(nq * splits * k), out_s(nq * k);
    std::vector<uint32_t> part_r(nq * splits * k), out_r(nq * k);
    const uint64_t before = memdex_tc_rescans;
    memdex_emu_launch({(uint32_t)t.offsets.size() - 1, splits, 1}, 256, smem, [&] {
        memdex_tensor_topk(reinterpret_cast<const __half*>(rows.data()), in.dim, in.rows,
                           in.queries.data(), in.ranges.data(), t.queries.data(),
                           t.offsets.data(), longest, k, splits, part_s.data(), part_r.data());
    });
    const uint64_t rescanned = memdex_tc_rescans - before;
    merge_parts(nq, k, splits, part_s, part_r, out_s, out_r);
    char more[96];
    std::snprintf(more, sizeof more, ", k %u, cap %u, %u splits, %llu exact rescans", k, cap,
                  splits, (unsigned long long)rescanned);
    const int bad = verify(in, k, false, out_s, out_r) + ((rescanned > 0) != rescans);
    report("tensor_topk", bad, in, t, more);
}

// The fused ranking's dense step: every query's cosines in its scratch, within 1e-5; the
// scratch past its range and its other two thirds untouched.
template <int C>
void check_dense(const char* what, void (*kernel)(RK_DENSE_PARAMS), const Inputs& in,
                 uint32_t cap, uint32_t splits) {
    const Tiles t = make_tiles(in.ranges, cap);
    const uint32_t nq = in.nq(), longest = t.longest;
    uint32_t stride = 1;
    for (uint32_t q = 0; q < nq; ++q) stride = std::max(stride, in.ranges[2 * q + 1] - in.ranges[2 * q]);
    std::vector<float> scratch(nq * 3 * stride, 12345.f);
    memdex_emu_launch({(uint32_t)t.offsets.size() - 1, splits, 1}, 256, (C * 512 + 4) * longest, [&] {
        kernel(in.emb.data(), in.dim, in.queries.data(), in.ranges.data(), t.queries.data(),
               t.offsets.data(), longest, splits, scratch.data(), stride);
    });
    int bad = 0;
    for (uint32_t q = 0; q < nq; ++q) {
        const uint32_t a = in.ranges[2 * q], n = in.ranges[2 * q + 1] - a;
        for (uint32_t i = 0; i < 3 * stride; ++i) {
            const float got = scratch[q * 3 * stride + i];
            const bool ok = i < n ? std::fabs(got - in.cosine(q, a + i)) <= 1e-5 : got == 12345.f;
            if (!ok && bad++ < 3) std::printf("  query %u slot %u: %f\n", q, i, got);
        }
    }
    char more[64];
    std::snprintf(more, sizeof more, ", cap %u, %u splits", cap, splits);
    report(what, bad, in, t, more);
}

// Edge-case ranges over `rows`, then `again` (range, extra queries) round-robin after them.
std::vector<uint32_t> ranges_asked(uint32_t rows, std::vector<std::pair<int, int>> again) {
    const std::vector<uint32_t> base = {0, 0, 5, 9, 0, 60, 60, 200, 200, rows, 0, rows, 17, rows - 3};
    std::vector<uint32_t> out = base;
    int rounds = 0;
    for (auto a : again) rounds = std::max(rounds, a.second);
    for (int r = 0; r < rounds; ++r)
        for (auto a : again)
            if (r < a.second) {
                out.push_back(base[2 * a.first]);
                out.push_back(base[2 * a.first + 1]);
            }
    return out;
}

}  // namespace

int main() {
    const uint32_t rows = 300;
    const auto single = ranges_asked(rows, {});
    const auto few = ranges_asked(rows, {{4, 2}});                    // tiles of <= 3
    const auto many = ranges_asked(rows, {{1, 16}, {3, 9}, {4, 2}});  // 16 + 1, 10, 3
    const Inputs d384_1(384, rows, single, 1), d384_3(384, rows, few, 2), d384_16(384, rows, many, 3);
    const Inputs d40(40, rows, many, 4), d512(512, rows, many, 5), d640(640, rows, many, 6);
    const Inputs d1024(1024, rows, few, 7);
    for (const bool masked : {false, true}) {
        for (const uint32_t splits : {1u, 3u}) {
            check_scan<4>("segmented_topk_d512_t1", memdex_segmented_topk_d512_t1, d384_1, 10, 16, splits, masked);
            check_scan<4>("segmented_topk_d512_t4", memdex_segmented_topk_d512_t4, d384_3, 10, 16, splits, masked);
            check_scan<4>("segmented_topk_d512_t16", memdex_segmented_topk_d512_t16, d384_16, 10, 16, splits, masked);
            check_scan<4>("segmented_topk_d512_t16", memdex_segmented_topk_d512_t16, d40, 7, 16, splits, masked);
            check_scan<4>("segmented_topk_d512_t16", memdex_segmented_topk_d512_t16, d512, 64, 5, splits, masked);
            check_scan<8>("segmented_topk_t16", memdex_segmented_topk_t16, d640, 10, 11, splits, masked);
            check_scan<8>("segmented_topk_t4", memdex_segmented_topk_t4, d1024, 3, 4, splits, masked);
        }
    }
    // the tensor-core scan: dims a multiple of 16, a ragged end at the matrix's last rows (300
    // is not a multiple of 16), tiles of 1 to 16, near-duplicate rows (its exact rescan)
    const Inputs near(384, rows, many, 8, true);
    for (const uint32_t splits : {1u, 3u}) {
        check_tensor(d384_1, 10, 16, splits);
        check_tensor(d384_3, 10, 16, splits);
        check_tensor(d384_16, 10, 16, splits);
        check_tensor(d512, 64, 5, splits);
        check_tensor(d640, 10, 11, splits);
        check_tensor(d1024, 3, 4, splits);
        check_tensor(near, 10, 16, splits, true);
    }
    for (const uint32_t splits : {1u, 2u}) {
        check_dense<4>("rank_dense_d512_t1", memdex_rank_dense_d512_t1, d384_1, 16, splits);
        check_dense<4>("rank_dense_d512_t4", memdex_rank_dense_d512_t4, d384_3, 16, splits);
        check_dense<4>("rank_dense_d512_t16", memdex_rank_dense_d512_t16, d384_16, 16, splits);
        check_dense<4>("rank_dense_d512_t16", memdex_rank_dense_d512_t16, d40, 16, splits);
        check_dense<8>("rank_dense_t16", memdex_rank_dense_t16, d640, 11, splits);
        check_dense<8>("rank_dense_t1", memdex_rank_dense_t1, d1024, 1, splits);
    }
    std::printf("%d failing\n", failures);
    return failures != 0;
}
