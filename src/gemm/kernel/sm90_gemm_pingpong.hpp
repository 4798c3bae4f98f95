// Variant 4b, "ping-pong": a producer warpgroup and two consumer warpgroups, each consumer with
// its own 128x128 output tile; while one issues WGMMAs the other runs its epilogue.
//
//   roles:     warpgroup 0 = producer: one elected thread of warp 0 issues every TMA load
//              warpgroups 1, 2 = consumers: WGMMA on their own tile, then its epilogue
//   registers: setmaxnreg: producer 40, consumers 232 (128·40 + 256·232 ≤ 65536)
//   pipeline:  TmaPipeline<kStages>, shared by both consumers in turn; producer 1 thread,
//              consumers 128 threads per slot (only the warpgroup whose tile it holds)
//              full[s]: 1 arrival + kTxBytes; empty[s]: 128 arrivals
//   barriers:  kPingpongTurnWg1/2 (256 threads: 128 arrive, 128 sync): the math turns alternate
//              WG1, WG2, WG1, ... — a warpgroup issues its tile's WGMMAs only after the other
//              has issued all of its previous tile's
//
// Turns: the CTA's tiles in order, turn j = tile (j / 2)·2·grid + 2·blockIdx + j % 2, WG1 takes
// even turns and WG2 odd ones. The producer loads every turn's k-tiles in turn order, so a
// consumer starts reading the ring k_tiles·(its turn) slots in and skips the other's k_tiles
// after each tile. The grid is ceil(tiles / 2): one turn per consumer (the persistent variant
// will shrink the grid and loop).
//
// Timeline:
//   producer:  [k-tiles of turn 0][k-tiles of turn 1][turn 2] ...
//   WG1:       [mma turn 0] arrive(WG2) [epilogue 0] sync(WG1) [mma turn 2] ...
//   WG2:       sync(WG2)               [mma turn 1] arrive(WG1) [epilogue 1] ...
#pragma once

#include <cute/tensor.hpp>
#include <cutlass/arch/reg_reconfig.h>

#include "common/register_budget.hpp"
#include "gemm/collective/sm90_gemm_epilogue_direct.hpp"
#include "gemm/collective/sm90_gemm_mainloop_tma_wgmma.hpp"
#include "gemm/collective/sm90_gemm_pipeline.hpp"
#include "gemm/kernel/sm90_gemm_named_barriers.hpp"

namespace hopattn::gemm {

template <class Mainloop>
struct Sm90GemmPingpong {
  static constexpr TileConfig kCfg = Mainloop::kCfg;
  static constexpr int kStages = kCfg.kStages;
  static constexpr int kThreads = threads_of(kCfg);
  static_assert(kCfg.kProducerWarpgroup && kCfg.kConsumerWarpgroups == 2 && kCfg.kMmaWarpgroups == 1,
                "one producer, two consumers with a tile each");
  static_assert(kCfg.kProducerRegisters * 128 + kCfg.kConsumerRegisters * 256 <= launch_pool_registers(kThreads),
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
  static dim3 grid(const Params& p) { return dim3((unsigned(p.tiles_m) * unsigned(p.tiles_n) + 1) / 2, 1, 1); }

  // The output tile of turn j, or -1 past the CTA's last.
  CUTE_DEVICE static int turn_tile(const Params& p, int j) {
    const long long tile = (long long)(j / 2) * 2 * gridDim.x + 2LL * blockIdx.x + (j % 2);
    return tile < (long long)p.tiles_m * p.tiles_n ? int(tile) : -1;
  }

  CUTE_DEVICE void operator()(const Params& p, char* smem) {
    auto& s = *reinterpret_cast<SharedStorage*>(smem);
    const int warpgroup = cutlass::canonical_warp_group_idx();
    if (threadIdx.x == 0) {
      Mainloop::prefetch_descriptors(p.mainloop);
      TmaPipeline<kStages>::init(s.pipeline, 128);
    }
    __syncthreads();
    if (warpgroup == 0) {
      cutlass::arch::warpgroup_reg_dealloc<kCfg.kProducerRegisters>();
      if (cutlass::canonical_warp_idx_sync() == 0 && cute::elect_one_sync()) produce(p, s);
    } else {
      cutlass::arch::warpgroup_reg_alloc<kCfg.kConsumerRegisters>();
      consume(p, s, warpgroup - 1, int(threadIdx.x) % 128);
    }
  }

  CUTE_DEVICE void produce(const Params& p, SharedStorage& s) {
    TmaPipeline<kStages> pipe{s.pipeline};
    PipelineState<kStages> write;
    const int k_tiles = Mainloop::k_tiles(p.mainloop);
    for (int j = 0, tile; (tile = turn_tile(p, j)) >= 0; ++j) {
      auto load = Mainloop::tile_loader(p.mainloop, s.tensors, tile % p.tiles_m, tile / p.tiles_m);
      for (int t = 0; t < k_tiles; ++t, ++write) load(t, write.index, pipe.producer_acquire(write, Mainloop::kTxBytes));
    }
  }

  // consumer: 0 (WG1, even turns) or 1 (WG2, odd turns); thread: index within the warpgroup.
  CUTE_DEVICE void consume(const Params& p, SharedStorage& s, int consumer, int thread) {
    TmaPipeline<kStages> pipe{s.pipeline};
    auto operands = Mainloop::mma_operands(s.tensors, thread);
    const int k_tiles = Mainloop::k_tiles(p.mainloop);
    const auto my_turn = consumer == 0 ? GemmNamedBarrier::kPingpongTurnWg1 : GemmNamedBarrier::kPingpongTurnWg2;
    const auto other_turn = consumer == 0 ? GemmNamedBarrier::kPingpongTurnWg2 : GemmNamedBarrier::kPingpongTurnWg1;
    PipelineState<kStages> read;
    read.advance(consumer * k_tiles);
    for (int j = consumer, tile; (tile = turn_tile(p, j)) >= 0; j += 2) {
      if (j > 0) named_barrier_sync(my_turn, 256);
      auto acc = Mainloop::make_accumulators();  // (MMA, MMA_M, MMA_N) fp32
      cute::clear(acc);
      PipelineState<kStages> release = read;
      for (int t = 0; t < k_tiles; ++t, ++read) {
        pipe.consumer_wait(read);
        Mainloop::mma_stage(cute::get<0>(operands), cute::get<1>(operands), acc, read.index);
        cute::warpgroup_wait<1>();
        if (t > 0) {
          pipe.consumer_release(release);
          ++release;
        }
      }
      if (turn_tile(p, j + 1) >= 0) named_barrier_arrive(other_turn, 256);  // last WGMMAs issued
      cute::warpgroup_wait<0>();
      pipe.consumer_release(release);
      read.advance(k_tiles);  // the other consumer's turn
      store_direct<typename Mainloop::TiledMma, kCfg.kBlockM, kCfg.kBlockN>(p.epilogue, acc, thread,
                                                                           tile % p.tiles_m, tile / p.tiles_m);
    }
  }
};

}  // namespace hopattn::gemm
