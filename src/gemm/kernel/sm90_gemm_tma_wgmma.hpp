// Variants 1 and 2: one warpgroup (128 threads) does everything, no warp specialization.
//
//   roles:     thread 0 issues the TMA loads; all 128 threads issue WGMMA and the epilogue
//   registers: no setmaxnreg (128x128 fp32 accumulators = 128 per thread)
//   pipeline:  TmaPipeline<kStages>; producer thread 0, consumers the 128 threads
//              full[s]: 1 arrival + kTxBytes; empty[s]: 128 arrivals
//   barriers:  no named barriers
//
// Variant 1 (kStages = 1) is the tutorial's first step: load a k-tile, wait, multiply, wait for
// the WGMMAs, release the slot, load the next. Variant 2 (kStages > 1) keeps kStages - 1 loads
// in flight and one WGMMA batch outstanding: k-tile t's slot is released once the WGMMAs of
// t + 1 are issued (warpgroup_wait<1>), and thread 0 then refills it with k-tile t + kStages.
//
// Timeline (variant 2, S stages):
//   thread 0:  load 0..S-1 | [wait full t, mma t, wait<1>, release t-1, load t-1+S] x k_tiles | epilogue
//   others:                  [wait full t, mma t, wait<1>, release t-1]              x k_tiles | epilogue
// One output tile per CTA; CTAs walk M fastest so neighbours share B's k-tiles in L2.
#pragma once

#include <cute/tensor.hpp>

#include "gemm/collective/sm90_gemm_epilogue_direct.hpp"
#include "gemm/collective/sm90_gemm_mainloop_tma_wgmma.hpp"
#include "gemm/collective/sm90_gemm_pipeline.hpp"

namespace hopattn::gemm {

template <class Mainloop>
struct Sm90GemmTmaWgmma {
  static constexpr TileConfig kCfg = Mainloop::kCfg;
  static constexpr int kStages = kCfg.kStages;
  static constexpr int kThreads = 128;
  // With one slot the batch must retire before the slot can be refilled.
  static constexpr int kMmaInFlight = kStages > 1 ? 1 : 0;
  static_assert(kCfg.kConsumerWarpgroups == 1 && !kCfg.kProducerWarpgroup, "one warpgroup, no producer");

  struct Params {
    typename Mainloop::Params mainloop;
    DirectEpilogueParams epilogue;
    int tiles_m = 0, tiles_n = 0;
  };

  struct SharedStorage {
    typename Mainloop::TensorStorage tensors;
    PipelineStorage<kStages> pipeline;
  };

  static Params to_params(const GemmProblem& p) {
    Params params{Mainloop::to_params(p), make_direct_epilogue_params(p), 0, 0};
    params.tiles_m = (p.m + kCfg.kBlockM - 1) / kCfg.kBlockM;
    params.tiles_n = (p.n + kCfg.kBlockN - 1) / kCfg.kBlockN;
    return params;
  }
  static dim3 grid(const Params& p) { return dim3(unsigned(p.tiles_m) * unsigned(p.tiles_n), 1, 1); }

  CUTE_DEVICE void operator()(const Params& p, char* smem) {
    auto& s = *reinterpret_cast<SharedStorage*>(smem);
    const int thread = int(threadIdx.x);
    if (thread == 0) {
      Mainloop::prefetch_descriptors(p.mainloop);
      TmaPipeline<kStages>::init(s.pipeline, kThreads);
    }
    __syncthreads();  // barrier init visible to every thread before the first wait

    const int m_blk = int(blockIdx.x) % p.tiles_m;
    const int n_blk = int(blockIdx.x) / p.tiles_m;
    auto acc = Mainloop::make_accumulators();  // (MMA, MMA_M, MMA_N) fp32
    cute::clear(acc);
    mainloop(p, s, acc, thread, m_blk, n_blk);
    store_direct<typename Mainloop::TiledMma, kCfg.kBlockM, kCfg.kBlockN>(p.epilogue, acc, thread, m_blk, n_blk);
  }

  template <class Accum>
  CUTE_DEVICE void mainloop(const Params& p, SharedStorage& s, Accum& acc, int thread, int m_blk, int n_blk) {
    TmaPipeline<kStages> pipe{s.pipeline};
    const int k_tiles = Mainloop::k_tiles(p.mainloop);
    const bool producer = thread == 0;
    auto load = Mainloop::tile_loader(p.mainloop, s.tensors, m_blk, n_blk);
    auto operands = Mainloop::mma_operands(s.tensors, thread);

    PipelineState<kStages> write, read, release;
    if (producer) {  // fill every slot (first trip: all free)
      for (int t = 0; t < k_tiles && t < kStages; ++t, ++write)
        load(t, write.index, pipe.producer_arm(write, Mainloop::kTxBytes));
    }
    __syncwarp();  // warp 0 reconverges before the .aligned WGMMA instructions
    for (int t = 0; t < k_tiles; ++t, ++read) {
      pipe.consumer_wait(read);
      Mainloop::mma_stage(cute::get<0>(operands), cute::get<1>(operands), acc, read.index);
      cute::warpgroup_wait<kMmaInFlight>();
      const int retired = t - kMmaInFlight;  // the k-tile whose WGMMAs are now complete
      if (retired < 0) continue;
      pipe.consumer_release(release);
      ++release;
      if (producer && retired + kStages < k_tiles) {
        load(retired + kStages, write.index, pipe.producer_acquire(write, Mainloop::kTxBytes));
        ++write;
      }
      __syncwarp();
    }
    cute::warpgroup_wait<0>();
  }
};

}  // namespace hopattn::gemm
