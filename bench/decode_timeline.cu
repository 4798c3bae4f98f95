// decode_timeline: where a decode step's time goes, CTA by CTA. A measurement tool, not part of
// the library: this translation unit compiles the 16-bit decode kernel and the combine kernel with
// HOPATTN_DECODE_STAMPS, so thread 0 of every CTA records %globaltimer at its phases (entry,
// first loads issued, Q gathered, first K tile landed, last tile done, stores issued) and its SM.
// A CUDA graph of --steps decode steps (split kernel + combine) is replayed once after a warm-up
// replay; one CSV row per CTA and step, times in ns from the first CTA's entry of step 0.
//
//   decode_timeline --heads 64:8 --cache 1:65536 --splits 16 [--variant 1|2] [--steps 4] --csv FILE
//
// Cache content: pseudo-random bf16 in [-1, 1) (timing only; correctness is the gpu tests'),
// every sequence full (cache_seqlens = length), causal, q_len 1, hdim 128, query heads packed.
#define HOPATTN_DECODE_STAMPS 1

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
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
  int hq = 64, hkv = 8, batch = 1, len = 65536, splits = 16, variant = 1, steps = 4;
  std::string csv = "decode-timeline.csv";
};

template <class Traits>
int run(const Options& o) {
  const int64_t kv_elems = int64_t(o.batch) * o.len * o.hkv * kHeadDim;
  const int64_t q_elems = int64_t(o.batch) * o.hq * kHeadDim;
  Element *k = nullptr, *v = nullptr, *q = nullptr, *out = nullptr;
  int32_t *lens = nullptr, *error = nullptr;
  float* ws = nullptr;
  CHECK_CUDA(cudaMalloc(&k, kv_elems * sizeof(Element)));
  CHECK_CUDA(cudaMalloc(&v, kv_elems * sizeof(Element)));
  CHECK_CUDA(cudaMalloc(&q, q_elems * sizeof(Element)));
  CHECK_CUDA(cudaMalloc(&out, q_elems * sizeof(Element)));
  CHECK_CUDA(cudaMalloc(&lens, o.batch * sizeof(int32_t)));
  CHECK_CUDA(cudaMalloc(&error, 3 * sizeof(int32_t)));
  CHECK_CUDA(cudaMemset(error, 0, 3 * sizeof(int32_t)));
  CHECK_CUDA(cudaMalloc(&ws, (q_elems + int64_t(o.batch) * o.hq) * o.splits * sizeof(float)));
  fill_uniform<<<1024, 256>>>(k, kv_elems, 1u);
  fill_uniform<<<1024, 256>>>(v, kv_elems, 2u);
  fill_uniform<<<64, 256>>>(q, q_elems, 3u);
  fill_int<<<1, 1024>>>(lens, o.batch, o.len);
  CHECK_CUDA(cudaDeviceSynchronize());

  DecodeParams dp{};
  dp.dtype = dp.cache_dtype = HOPATTN_DTYPE_BF16;
  dp.hdim = kHeadDim;
  dp.q = q, dp.k = k, dp.v = v, dp.cache_seqlens = lens, dp.o = out, dp.lse = nullptr;
  dp.batch = o.batch, dp.seqlen_q = 1, dp.heads_q = o.hq, dp.heads_kv = o.hkv, dp.max_len = o.len;
  dp.q_batch_stride = dp.o_batch_stride = int64_t(o.hq) * kHeadDim;
  dp.q_seq_stride = dp.o_seq_stride = int64_t(o.hq) * kHeadDim;
  dp.q_head_stride = dp.o_head_stride = kHeadDim;
  dp.k_batch_stride = dp.v_batch_stride = int64_t(o.len) * o.hkv * kHeadDim;
  dp.k_seq_stride = dp.v_seq_stride = int64_t(o.hkv) * kHeadDim;
  dp.k_head_stride = dp.v_head_stride = kHeadDim;
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
  const int64_t rows_total = int64_t(dp.batch) * dp.heads_q * dp.seqlen_q;
  const int combine_blocks = o.splits > 1 ? int((rows_total + kCombineWarps - 1) / kCombineWarps) : 0;
  const int64_t per_step = int64_t(ctas + combine_blocks) * kStampsPerCta;
  uint64_t* stamps = nullptr;
  CHECK_CUDA(cudaMalloc(&stamps, per_step * o.steps * sizeof(uint64_t)));
  CHECK_CUDA(cudaMemset(stamps, 0, per_step * o.steps * sizeof(uint64_t)));

  typename Traits::Params p{};
  const auto box = cute::take<0, 2>(typename Traits::SmemLayoutKV{});
  p.tma_k = make_cache_tma<Element, kHeadDim>(dp, dp.k, dp.k_seq_stride, dp.k_head_stride, dp.k_batch_stride, box);
  p.tma_v = make_cache_tma<Element, kHeadDim>(dp, dp.v, dp.v_seq_stride, dp.v_head_stride, dp.v_batch_stride, box);
  fill_common_params<typename Traits::Params, Element>(p, dp, g, kHeadDim);
  CombineParams<Element, kHeadDim> c{ws, ws + rows_total * kHeadDim * dp.num_splits, lens, out, dp.o_batch_stride,
                                     dp.o_seq_stride, dp.o_head_stride, nullptr, 0, 0, 0, dp.batch, dp.seqlen_q,
                                     dp.heads_q, dp.max_len, dp.num_splits, dp.causal, nullptr, nullptr};

  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  auto step = [&](uint64_t* st) {
    p.stamps = st;
    if (Status s = launch_decode_kernel<Traits>(&decode_kernel<Traits>, p, g, stream); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.message().c_str());
      std::exit(1);
    }
    if (combine_blocks > 0) {
      c.stamps = st != nullptr ? st + int64_t(ctas) * kStampsPerCta : nullptr;
      decode_combine_kernel<Element, kHeadDim><<<combine_blocks, 32 * kCombineWarps, 0, stream>>>(c);
      CHECK_CUDA(cudaGetLastError());
    }
  };
  step(nullptr);  // lazy set-up outside the capture
  CHECK_CUDA(cudaStreamSynchronize(stream));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < o.steps; ++i) step(stamps + i * per_step);
  CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  CHECK_CUDA(cudaGraphLaunch(exec, stream));  // warm-up
  CHECK_CUDA(cudaEventRecord(e0, stream));
  CHECK_CUDA(cudaGraphLaunch(exec, stream));
  CHECK_CUDA(cudaEventRecord(e1, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));

  std::vector<uint64_t> h(per_step * o.steps);
  CHECK_CUDA(cudaMemcpy(h.data(), stamps, h.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
  uint64_t t0 = ~0ull;
  for (int i = 0; i < ctas; ++i) t0 = std::min(t0, h[int64_t(i) * kStampsPerCta + 1]);
  FILE* f = std::fopen(o.csv.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "cannot write %s\n", o.csv.c_str());
    return 1;
  }
  std::fprintf(f, "# heads %d:%d batch %d len %d splits %d variant %d steps %d: graph %.3f us per step\n", o.hq,
               o.hkv, o.batch, o.len, o.splits, o.variant, o.steps, 1000.0 * ms / o.steps);
  std::fprintf(f, "step,kernel,cta,smid,entry,issued,q_ready,first_k,loop_done,stored\n");
  auto rel = [&](uint64_t v) { return v == 0 ? std::string() : std::to_string(int64_t(v - t0)); };
  for (int s = 0; s < o.steps; ++s)
    for (int i = 0; i < ctas + combine_blocks; ++i) {
      const uint64_t* r = &h[s * per_step + int64_t(i) * kStampsPerCta];
      const bool split = i < ctas;
      std::fprintf(f, "%d,%s,%d,%llu,%s,%s,%s,%s,%s,%s\n", s, split ? "split" : "combine", split ? i : i - ctas,
                   (unsigned long long)r[0], rel(r[1]).c_str(), rel(r[2]).c_str(), rel(r[3]).c_str(), rel(r[4]).c_str(),
                   rel(r[5]).c_str(), rel(r[6]).c_str());
    }
  std::fclose(f);
  std::printf("heads %d:%d batch %d len %d splits %d variant %d: %d CTAs + %d combine blocks, graph %.3f us per step, %s\n",
              o.hq, o.hkv, o.batch, o.len, o.splits, o.variant, ctas, combine_blocks, 1000.0 * ms / o.steps,
              o.csv.c_str());
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
    else if (a == "--steps") o.steps = ok ? std::atoi(v) : 0;
    else if (a == "--csv") o.csv = ok ? v : "";
    else ok = false;
    if (!ok) {
      std::fprintf(stderr, "usage: decode_timeline --heads HQ:HKV --cache B:L --splits S [--variant 1|2] [--steps N] --csv FILE\n");
      return 2;
    }
    ++i;
  }
  if (o.hq % o.hkv != 0 || o.splits < 1 || o.steps < 1 || (o.variant != 1 && o.variant != 2)) {
    std::fprintf(stderr, "decode_timeline: bad arguments\n");
    return 2;
  }
  return o.variant == 2 ? run<DecodeTraits<Element, kHeadDim, 2>>(o) : run<DecodeTraits<Element, kHeadDim, 1>>(o);
}
