// decode_int8_timeline: where the int8 decode kernel of kv8_mma_8w_1cta and kv8_mma_4w_3cta
// (registry ids 16 and 17; kernel/sm90_decode_int8_mma.hpp) spends a tile, warp by warp. A
// measurement tool, not part of the library: this translation unit compiles the kernel with
// HOPATTN_DECODE_STAMPS, so lane 0 of each warp records clock64 before and after waiting for its
// tile's V and after its last issue of the tile, and when it issues the tile's V. All stamps of a
// CTA come from one SM's clock.
//
//   decode_int8_timeline --heads 64:8 --cache 32:8192 [--variant 16|17] [--splits 1] [--tiles 64] --csv FILE
//
// Cache: random int8 values and positive scales (timing only; correctness is the gpu tests'),
// every sequence full, causal, q_len 1, hdim 128, query heads packed. One warm-up launch, then
// one launch whose stamps are written: one CSV row per (CTA, warp, tile) with the cycles relative
// to the CTA's first stamp, and a summary per role on stdout:
//   wait    cycles a warp waited for its stage (data not there yet),
//   compute cycles from the wait's end to the release,
//   latency cycles from the issue of a tile's V to its warp's wait ending (when it waited),
//   period  cycles from a warp's release of one tile to its release of the next.
// The wait and "issued" stamps are those of the tile's V (the wait for K before S took ~100
// cycles), so compute is P·V alone and latency is from V's issue (after the warp's previous S).
// Each warp refills its own slots at once, so there is no refill to measure.
#define HOPATTN_DECODE_STAMPS 1

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "attention/device/sm90_decode_launch.hpp"
#include "timeline_util.cuh"

namespace {

using namespace hopattn;
using namespace hopattn::attention;
using namespace hopattn::timeline;
using Element = cutlass::bfloat16_t;
constexpr int kHeadDim = 128;

struct Options {
  int hq = 64, hkv = 8, batch = 32, len = 8192, splits = 1, variant = 16, tiles = 64;
  std::string csv = "decode-int8-timeline.csv";
};

struct Mean {
  double sum = 0;
  int64_t n = 0;
  void add(double v) { sum += v, ++n; }
  double get() const { return n ? sum / n : 0.0; }
};

template <class Traits>
int run(const Options& o) {
  constexpr int kWarps = Traits::kWarps, kStages = Traits::kStages, kQuant = 128;
  const int64_t kv = int64_t(o.batch) * o.len * o.hkv * kHeadDim, q_elems = int64_t(o.batch) * o.hq * kHeadDim;
  const int64_t ks_n = int64_t(o.batch) * (o.len / kQuant) * o.hkv * kHeadDim, vs_n = int64_t(o.batch) * o.len * o.hkv;
  int8_t *k = nullptr, *v = nullptr;
  Element *q = nullptr, *out = nullptr;
  float *ks = nullptr, *vs = nullptr, *ws = nullptr;
  int32_t *lens = nullptr, *error = nullptr;
  CHECK_CUDA(cudaMalloc(&k, kv));
  CHECK_CUDA(cudaMalloc(&v, kv));
  CHECK_CUDA(cudaMalloc(&q, q_elems * sizeof(Element)));
  CHECK_CUDA(cudaMalloc(&out, q_elems * sizeof(Element)));
  CHECK_CUDA(cudaMalloc(&ks, ks_n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&vs, vs_n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&lens, o.batch * sizeof(int32_t)));
  CHECK_CUDA(cudaMalloc(&error, 3 * sizeof(int32_t)));
  CHECK_CUDA(cudaMemset(error, 0, 3 * sizeof(int32_t)));
  CHECK_CUDA(cudaMalloc(&ws, (q_elems + int64_t(o.batch) * o.hq) * o.splits * sizeof(float)));
  fill_int8<<<1024, 256>>>(k, kv, 1u);
  fill_int8<<<1024, 256>>>(v, kv, 2u);
  fill_uniform<<<64, 256>>>(q, q_elems, 3u);
  fill_float<<<256, 256>>>(ks, ks_n, 4u, 0.005f, 0.02f);
  fill_float<<<256, 256>>>(vs, vs_n, 5u, 0.005f, 0.02f);
  fill_int<<<1, 1024>>>(lens, o.batch, o.len);
  CHECK_CUDA(cudaDeviceSynchronize());

  DecodeParams dp{};
  dp.dtype = HOPATTN_DTYPE_BF16, dp.cache_dtype = HOPATTN_DTYPE_INT8;
  dp.hdim = kHeadDim;
  dp.q = q, dp.k = k, dp.v = v, dp.cache_seqlens = lens, dp.o = out, dp.lse = nullptr;
  dp.batch = o.batch, dp.seqlen_q = 1, dp.heads_q = o.hq, dp.heads_kv = o.hkv, dp.max_len = o.len;
  dp.q_batch_stride = dp.o_batch_stride = dp.q_seq_stride = dp.o_seq_stride = int64_t(o.hq) * kHeadDim;
  dp.q_head_stride = dp.o_head_stride = kHeadDim;
  dp.k_batch_stride = dp.v_batch_stride = int64_t(o.len) * o.hkv * kHeadDim;
  dp.k_seq_stride = dp.v_seq_stride = int64_t(o.hkv) * kHeadDim;
  dp.k_head_stride = dp.v_head_stride = kHeadDim;
  dp.k_scale = ks, dp.ks_batch_stride = int64_t(o.len / kQuant) * o.hkv * kHeadDim;
  dp.ks_block_stride = int64_t(o.hkv) * kHeadDim, dp.ks_head_stride = kHeadDim;
  dp.v_scale = vs, dp.vs_batch_stride = int64_t(o.len) * o.hkv, dp.vs_seq_stride = o.hkv, dp.vs_head_stride = 1;
  dp.quant_block = kQuant;
  dp.softmax_scale = 0.08838834764831845f;
  dp.causal = true;
  dp.pack_gqa = o.hq > o.hkv;
  dp.num_splits = o.splits;
  dp.workspace = ws;
  dp.variant = o.variant;
  dp.error = error;

  DecodeGrid g;
  if (Status s = decode_grid(dp, Traits::kTileRows, &g); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }
  const int ctas = int(g.grid.x * g.grid.y * g.grid.z);
  const int64_t per_cta = int8_mma_stamps_per_cta(kWarps, o.tiles);
  uint64_t* stamps = nullptr;
  CHECK_CUDA(cudaMalloc(&stamps, per_cta * ctas * sizeof(uint64_t)));
  CHECK_CUDA(cudaMemset(stamps, 0, per_cta * ctas * sizeof(uint64_t)));

  typename Traits::Params p{};
  const auto box = cute::take<0, 2>(typename Traits::SmemLayoutRaw{});
  p.tma_k = make_cache_tma<int8_t, kHeadDim>(dp, dp.k, dp.k_seq_stride, dp.k_head_stride, dp.k_batch_stride, box);
  p.tma_v = make_cache_tma<int8_t, kHeadDim>(dp, dp.v, dp.v_seq_stride, dp.v_head_stride, dp.v_batch_stride, box);
  fill_common_params<typename Traits::Params, Element>(p, dp, g, kHeadDim);
  p.k_scale = dp.k_scale, p.ks_batch_stride = dp.ks_batch_stride, p.ks_block_stride = dp.ks_block_stride;
  p.ks_head_stride = dp.ks_head_stride;
  p.v_scale = dp.v_scale, p.vs_batch_stride = dp.vs_batch_stride, p.vs_seq_stride = dp.vs_seq_stride;
  p.vs_head_stride = dp.vs_head_stride;
  p.quant_block = dp.quant_block;
  p.stamp_tiles = o.tiles;

  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  const auto kernel = &decode_int8_mma_warp_rings_kernel<Traits>;
  for (int rep = 0; rep < 2; ++rep) {  // warm-up, then the stamped launch
    p.stamps = rep == 1 ? stamps : nullptr;
    CHECK_CUDA(cudaEventRecord(e0));
    if (Status s = launch_decode_kernel<Traits>(kernel, p, g, nullptr); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.message().c_str());
      return 1;
    }
    CHECK_CUDA(cudaEventRecord(e1));
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
  int clock_khz = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));

  std::vector<uint64_t> h(per_cta * ctas);
  CHECK_CUDA(cudaMemcpy(h.data(), stamps, h.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
  FILE* f = std::fopen(o.csv.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "cannot write %s\n", o.csv.c_str());
    return 1;
  }
  std::fprintf(f, "# heads %d:%d batch %d len %d splits %d variant %d: %.3f us (stamped launch)\n", o.hq, o.hkv,
               o.batch, o.len, o.splits, o.variant, 1000.0 * ms);
  std::fprintf(f, "cta,smid,warp,k,tile,issued,wait_start,wait_end,released\n");
  Mean wait, compute, latency, waited, period;
  for (int c = 0; c < ctas; ++c) {
    const uint64_t* st = &h[int64_t(c) * per_cta];
    const uint64_t* issued = st + 1 + 3 * int64_t(kWarps) * o.tiles;
    uint64_t t0 = ~0ull;
    for (int64_t i = 1; i < per_cta; ++i)
      if (st[i] != 0) t0 = std::min(t0, st[i]);
    auto rel = [&](uint64_t x) { return x == 0 ? std::string() : std::to_string(int64_t(x - t0)); };
    for (int w = 0; w < kWarps; ++w)
      for (int k = 0; k < o.tiles; ++k) {
        const uint64_t* r = st + 1 + 3 * (int64_t(w) * o.tiles + k);
        if (r[0] == 0) continue;
        const int tile = k * kWarps + w;
        std::fprintf(f, "%d,%llu,%d,%d,%d,%s,%s,%s,%s\n", c, (unsigned long long)st[0], w, k, tile,
                     rel(issued[tile]).c_str(), rel(r[0]).c_str(), rel(r[1]).c_str(), rel(r[2]).c_str());
        if (k == 0) continue;  // the first tiles measure the pipeline fill
        period.add(double(r[2] - r[-1]));  // the warp's previous release: r - 3 + 2
        wait.add(double(r[1] - r[0]));
        compute.add(double(r[2] - r[1]));
        waited.add(r[1] - r[0] > 200 ? 1.0 : 0.0);
        if (issued[tile] != 0 && r[1] - r[0] > 200) latency.add(double(r[1] - issued[tile]));
      }
  }
  std::fclose(f);
  const double us = 1000.0 / clock_khz;  // per cycle at the nominal clock
  std::printf("heads %d:%d batch %d len %d splits %d variant %d (%d warps, %d slots): %d CTAs, %.3f us\n",
              o.hq, o.hkv, o.batch, o.len, o.splits, o.variant, kWarps, kStages, ctas, 1000.0 * ms);
  std::printf("per tile after each warp's first (cycles; us at the nominal %.2f GHz):\n", clock_khz / 1e6);
  std::printf("  wait    %9.0f (%.2f us), the warp waited > 200 cycles in %.0f %% of tiles\n", wait.get(),
              wait.get() * us, 100.0 * waited.get());
  std::printf("  compute %9.0f (%.2f us)\n", compute.get(), compute.get() * us);
  std::printf("  latency %9.0f (%.2f us) from issue to the wait's end, where the warp waited\n", latency.get(),
              latency.get() * us);
  std::printf("  period  %9.0f (%.2f us) from a warp's release of one tile to its next\n", period.get(), period.get() * us);
  std::printf("CSV: %s\n", o.csv.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    bool ok = v != nullptr;
    if (a == "--heads") ok = ok && parse_pair(v, &o.hq, &o.hkv);
    else if (a == "--cache") ok = ok && parse_pair(v, &o.batch, &o.len);
    else if (a == "--splits") o.splits = ok ? std::atoi(v) : 0;
    else if (a == "--variant") o.variant = ok ? std::atoi(v) : 0;
    else if (a == "--tiles") o.tiles = ok ? std::atoi(v) : 0;
    else if (a == "--csv") o.csv = ok ? v : "";
    else ok = false;
    if (!ok) {
      std::fprintf(stderr,
                   "usage: decode_int8_timeline --heads HQ:HKV --cache B:L [--variant 16|17] [--splits S] [--tiles N] "
                   "--csv FILE\n");
      return 2;
    }
    ++i;
  }
  if (o.hq % o.hkv != 0 || o.hq / o.hkv > 16 || o.splits < 1 || o.tiles < 1 || o.len % 128 != 0 ||
      (o.variant != 16 && o.variant != 17)) {
    std::fprintf(stderr,
                 "decode_int8_timeline: bad arguments (group <= 16, length a multiple of 128, variant 16 or 17)\n");
    return 2;
  }
  // The registry's kv8_mma_8w_1cta (16) and kv8_mma_4w_3cta (17); the other mma.sync variants were
  // retired (docs/decode.md, "Tried and retired").
  return o.variant == 16
             ? run<DecodeInt8MmaTraits<Element, kHeadDim, 8, Int8MmaMath::kFmaKFoldV>>(o)
             : run<DecodeInt8MmaTraits<Element, kHeadDim, 4, Int8MmaMath::kFmaKFoldV, 3>>(o);
}
