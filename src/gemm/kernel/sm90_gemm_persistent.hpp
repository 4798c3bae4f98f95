// Variant 5, "persistent": the cooperative kernel (4a) on a persistent grid. One CTA per SM
// loops over 128x256 output tiles in grouped raster order; the producer runs ahead across tile
// boundaries; the epilogue goes through shared memory and TMA stores that overlap the next
// tile's mainloop.
//
//   roles:     warpgroup 0 = producer: one elected thread of warp 0 issues every TMA load of
//                            every tile of the CTA; the other 127 threads only give registers back
//              warpgroups 1, 2 = consumers: each issues m64n256k16 WGMMAs on 64 rows of the tile,
//                            then stores those rows (its own chunks, its own TMA stores)
//   registers: setmaxnreg: producer 40, consumers 232 (128·40 + 256·232 ≤ 65536)
//   grid:      min(tiles, SM count queried at run time); CTA b takes linear tiles b, b + grid,
//              ... mapped by GroupedTileScheduler (groups of 8 tile-rows, or tile-columns when
//              N > M: neighbouring CTAs share A and B panels in L2)
//   pipeline:  TmaPipeline<3>; producer 1 thread, consumers the 256 threads of both warpgroups
//              full[s]: 1 arrival + kTxBytes (48 KiB); empty[s]: 256 arrivals
//              Slot and parity run on across tiles: the producer starts tile i+1's k-tiles as
//              soon as tile i's first slots are released, so the next tile's first 3 k-tiles are
//              in shared memory before the consumers finish their epilogue.
//   epilogue:  Sm90GemmEpilogueTma: per consumer warpgroup a ring of 4 chunk buffers of 64 rows x
//              128 bytes (32 KiB per warpgroup, separate from the A/B ring: 64x32 fp32 chunks, or
//              64x64 for row-major 16-bit D); one store per chunk by the warpgroup's thread 0,
//              cp.async.bulk.wait_group.read before a buffer is rewritten (two stores stay in
//              flight); shared-memory addresses computed once per tile
//   barriers:  kEpilogueWg1 / kEpilogueWg2 (128 threads each, bar.sync): a warpgroup's chunk is in
//              shared memory and its previous chunk's store has read the other buffer
//   smem:      3 x 48 KiB stages + 64 KiB epilogue + barriers = 209 KiB (the launch checks the
//              device's opt-in limit)
//
// Timeline (tiles t0, t1, ... of one CTA; K = k-tiles per tile):
//   producer:  [acquire, arm, TMA A+B] x K for t0 | x K for t1 | ... exit
//   consumers: [wait full, mma, wait<1>, release k-1] x K, wait<0>, release | epilogue t0:
//              J x [C, convert, st.shared, fence, (wait store j-B+1), bar, TMA store j] |
//              mainloop t1 (t0's last stores still in flight); J = 4 chunks (16-bit row-major D)
//              or 8 (fp32, column-major) | epilogue t1 | ... | wait stores
//
// Why cooperative rather than ping-pong: the 128x256 tile reads B once per 64x256 WGMMA (the
// least shared-memory traffic per FLOP; cooperative was the fastest non-persistent variant on the
// H200, 573 vs 543 TFLOP/s), and the TMA store already takes most of the epilogue off the tensor
// cores' critical path; ping-pong's alternation would hide the rest at the cost of 128x128 tiles.
#pragma once

#include <cute/tensor.hpp>
#include <cutlass/arch/reg_reconfig.h>

#include "common/register_budget.hpp"
#include "gemm/collective/sm90_gemm_epilogue_tma.hpp"
#include "gemm/collective/sm90_gemm_mainloop_tma_wgmma.hpp"
#include "gemm/collective/sm90_gemm_pipeline.hpp"
#include "gemm/kernel/sm90_gemm_tile_scheduler.hpp"

namespace hopattn::gemm {

template <class Mainloop>
struct Sm90GemmPersistent {
  static constexpr TileConfig kCfg = Mainloop::kCfg;
  static constexpr int kStages = kCfg.kStages;
  static constexpr int kThreads = threads_of(kCfg);
  static constexpr int kConsumerThreads = 128 * kCfg.kMmaWarpgroups;
  static_assert(kCfg.kPersistent && kCfg.kTmaStoreD, "a persistent configuration with a TMA-store epilogue");
  static_assert(kCfg.kProducerWarpgroup && kCfg.kConsumerWarpgroups == kCfg.kMmaWarpgroups && kCfg.kMmaWarpgroups == 2,
                "one producer warpgroup, two consumers sharing one tile (one epilogue barrier each)");
  static_assert(kCfg.kProducerRegisters * 128 + kCfg.kConsumerRegisters * kConsumerThreads <=
                    launch_pool_registers(kThreads),
                "setmaxnreg budgets exceed the CTA's launch pool (a setmaxnreg.inc would wait forever)");

  using Epilogue = Sm90GemmEpilogueTma<typename Mainloop::TiledMma, kCfg.kBlockM, kCfg.kBlockN, kCfg.kMmaWarpgroups,
                                       kCfg.kEpilogueN, kCfg.kEpilogueBuffers>;

  struct Params {
    typename Mainloop::Params mainloop;
    typename Epilogue::Params epilogue;
    GroupedTileScheduler scheduler;
    int ctas = 1;
  };

  struct SharedStorage {
    typename Mainloop::TensorStorage tensors;
    typename Epilogue::TensorStorage epilogue;
    PipelineStorage<kStages> pipeline;
  };

  static Params to_params(const GemmProblem& p) {
    Params params{Mainloop::to_params(p), Epilogue::to_params(p),
                  GroupedTileScheduler::make(p.m, p.n, kCfg.kBlockM, kCfg.kBlockN, kCfg.kRasterGroup), 1};
    const int tiles = params.scheduler.tiles();
    params.ctas = p.sm_count > 0 && p.sm_count < tiles ? p.sm_count : tiles;
    return params;
  }
  static dim3 grid(const Params& p) { return dim3(unsigned(p.ctas), 1, 1); }

  CUTE_DEVICE void operator()(const Params& p, char* smem) {
    auto& s = *reinterpret_cast<SharedStorage*>(smem);
    const int warpgroup = cutlass::canonical_warp_group_idx();
    if (threadIdx.x == 0) {
      Mainloop::prefetch_descriptors(p.mainloop);
      Epilogue::prefetch_descriptor(p.epilogue);
      TmaPipeline<kStages>::init(s.pipeline, kConsumerThreads);
    }
    __syncthreads();
    if (warpgroup == 0) {
      cutlass::arch::warpgroup_reg_dealloc<kCfg.kProducerRegisters>();
      if (cutlass::canonical_warp_idx_sync() == 0 && cute::elect_one_sync()) produce(p, s);
    } else {
      cutlass::arch::warpgroup_reg_alloc<kCfg.kConsumerRegisters>();
      consume(p, s, int(threadIdx.x) - 128);
    }
  }

  CUTE_DEVICE void produce(const Params& p, SharedStorage& s) {
    TmaPipeline<kStages> pipe{s.pipeline};
    PipelineState<kStages> write;  // runs on across tiles
    const int k_tiles = Mainloop::k_tiles(p.mainloop);
    for (int linear = int(blockIdx.x); linear < p.scheduler.tiles(); linear += int(gridDim.x)) {
      int m_blk, n_blk;
      p.scheduler.tile(linear, &m_blk, &n_blk);
      auto load = Mainloop::tile_loader(p.mainloop, s.tensors, m_blk, n_blk);
      for (int t = 0; t < k_tiles; ++t, ++write) load(t, write.index, pipe.producer_acquire(write, Mainloop::kTxBytes));
    }
  }

  // thread: index among the consumer threads, 0 .. 255.
  CUTE_DEVICE void consume(const Params& p, SharedStorage& s, int thread) {
    TmaPipeline<kStages> pipe{s.pipeline};
    auto operands = Mainloop::mma_operands(s.tensors, thread);
    auto acc = Mainloop::make_accumulators();  // (MMA, MMA_M, MMA_N) fp32
    PipelineState<kStages> read, release;      // run on across tiles, as the producer's
    int chunk = 0;                             // epilogue chunks stored: picks the buffer
    const int k_tiles = Mainloop::k_tiles(p.mainloop);
    for (int linear = int(blockIdx.x); linear < p.scheduler.tiles(); linear += int(gridDim.x)) {
      int m_blk, n_blk;
      p.scheduler.tile(linear, &m_blk, &n_blk);
      cute::clear(acc);
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
      pipe.consumer_release(release);  // the tile's last slot: the producer may fill it with the next tile's
      ++release;
      Epilogue::store(p.epilogue, s.epilogue, acc, thread, m_blk, n_blk, chunk);
    }
    Epilogue::store_tail(thread);
  }
};

}  // namespace hopattn::gemm
