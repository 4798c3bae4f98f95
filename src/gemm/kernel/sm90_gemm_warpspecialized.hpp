// Variants 3 and 4a: a producer warpgroup feeds kMmaWarpgroups consumer warpgroups that share
// one output tile (3: one consumer on 128x128; 4a "cooperative": two consumers split 128x256
// along M, 64 rows each).
//
//   roles:     warpgroup 0 = producer: one elected thread of warp 0 issues every TMA load;
//                            the other 127 threads only give their registers back
//              warpgroups 1..W = consumers: WGMMA, then the epilogue of their rows
//   registers: setmaxnreg: producer 40, consumers 232 (kernel entry cap 65536 / threads)
//   pipeline:  TmaPipeline<kStages>; producer 1 thread, consumers 128·W threads
//              full[s]: 1 arrival + kTxBytes; empty[s]: 128·W arrivals
//   barriers:  no named barriers (one tile per CTA; the pipeline orders everything)
//
// Timeline:
//   producer:   [acquire slot, arm, TMA A+B] x k_tiles, exit
//   consumers:  [wait full t, mma t, wait<1>, release t-1] x k_tiles, wait<0>, epilogue
// The loads run up to kStages k-tiles ahead of the WGMMAs, and no consumer thread ever waits
// on a slot being freed, unlike variant 2 where thread 0 did both jobs.
#pragma once

#include <cute/tensor.hpp>
#include <cutlass/arch/reg_reconfig.h>

#include "common/register_budget.hpp"
#include "gemm/collective/sm90_gemm_epilogue_direct.hpp"
#include "gemm/collective/sm90_gemm_mainloop_tma_wgmma.hpp"
#include "gemm/collective/sm90_gemm_pipeline.hpp"

namespace hopattn::gemm {

template <class Mainloop>
struct Sm90GemmWarpSpecialized {
  static constexpr TileConfig kCfg = Mainloop::kCfg;
  static constexpr int kStages = kCfg.kStages;
  static constexpr int kThreads = threads_of(kCfg);
  static constexpr int kConsumerThreads = 128 * kCfg.kMmaWarpgroups;
  static_assert(kCfg.kProducerWarpgroup && kCfg.kConsumerWarpgroups == kCfg.kMmaWarpgroups,
                "one producer warpgroup, consumers sharing one tile");
  static_assert(kCfg.kProducerRegisters * 128 + kCfg.kConsumerRegisters * kConsumerThreads <=
                    launch_pool_registers(kThreads),
                "setmaxnreg budgets exceed the CTA's launch pool (a setmaxnreg.inc would wait forever)");

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
    const int warpgroup = cutlass::canonical_warp_group_idx();
    if (threadIdx.x == 0) {
      Mainloop::prefetch_descriptors(p.mainloop);
      TmaPipeline<kStages>::init(s.pipeline, kConsumerThreads);
    }
    __syncthreads();

    const int m_blk = int(blockIdx.x) % p.tiles_m;
    const int n_blk = int(blockIdx.x) / p.tiles_m;
    if (warpgroup == 0) {
      cutlass::arch::warpgroup_reg_dealloc<kCfg.kProducerRegisters>();
      if (cutlass::canonical_warp_idx_sync() == 0 && cute::elect_one_sync()) produce(p, s, m_blk, n_blk);
    } else {
      cutlass::arch::warpgroup_reg_alloc<kCfg.kConsumerRegisters>();
      consume(p, s, int(threadIdx.x) - 128, m_blk, n_blk);
    }
  }

  CUTE_DEVICE void produce(const Params& p, SharedStorage& s, int m_blk, int n_blk) {
    TmaPipeline<kStages> pipe{s.pipeline};
    auto load = Mainloop::tile_loader(p.mainloop, s.tensors, m_blk, n_blk);
    PipelineState<kStages> write;
    const int k_tiles = Mainloop::k_tiles(p.mainloop);
    for (int t = 0; t < k_tiles; ++t, ++write) load(t, write.index, pipe.producer_acquire(write, Mainloop::kTxBytes));
  }

  // thread: index among the consumer threads, 0 .. 128·W - 1.
  CUTE_DEVICE void consume(const Params& p, SharedStorage& s, int thread, int m_blk, int n_blk) {
    TmaPipeline<kStages> pipe{s.pipeline};
    auto operands = Mainloop::mma_operands(s.tensors, thread);
    auto acc = Mainloop::make_accumulators();  // (MMA, MMA_M, MMA_N) fp32
    cute::clear(acc);
    PipelineState<kStages> read, release;
    const int k_tiles = Mainloop::k_tiles(p.mainloop);
    for (int t = 0; t < k_tiles; ++t, ++read) {
      pipe.consumer_wait(read);
      Mainloop::mma_stage(cute::get<0>(operands), cute::get<1>(operands), acc, read.index);
      cute::warpgroup_wait<1>();  // k-tile t-1's WGMMAs are done: its slot can be refilled
      if (t > 0) {
        pipe.consumer_release(release);
        ++release;
      }
    }
    cute::warpgroup_wait<0>();
    store_direct<typename Mainloop::TiledMma, kCfg.kBlockM, kCfg.kBlockN>(p.epilogue, acc, thread, m_blk, n_blk);
  }
};

}  // namespace hopattn::gemm
