// The warp-specialized forward kernel's (sm90_fwd_ws.hpp) named barriers and the consumer
// warpgroups' turns: ping-pong turn taking, the shared O staging tile's turns, and Q's release
// after a tile's last S = Q·Kᵀ.
#pragma once

// clang-format off
#include <cute/tensor.hpp>  // first: the atoms below assume it
// clang-format on
#include <cutlass/arch/barrier.h>

#include <cstdint>

#include "attention/kernel/sm90_fwd_ws_storage.hpp"

namespace hopattn::attention {

// Every named barrier of the forward kernels (0 is __syncthreads).
enum class FwdNamedBarrier : uint32_t {
  kConsumers = 1,       // all consumer threads
  kWarpgroupTurn = 2,   // + w - 1 for consumer warpgroup w in {1, 2, 3}
  kEpilogueWarpgroup = 5,  // + w - 1: warpgroup w's own epilogue (persistent, O staged apart)
};

namespace ws {

constexpr int kTurnThreads = 256;  // a turn barrier: the waiting warpgroup and the one passing

// Ping-pong turn taking among the consumer warpgroups, in the ring 1 -> 2 (-> 3) -> 1 (no-ops
// without ping-pong): warpgroup w waits on its own barrier, kWarpgroupTurn + w - 1, which the
// warpgroup before it in the ring arrives at when it passes.
template <bool kPingPong, int kWarpgroups>
struct Turns {
  static_assert(kWarpgroups == 2 || kWarpgroups == 3);
  int warpgroup;  // 1 .. kWarpgroups
  CUTE_DEVICE bool last() const { return warpgroup == kWarpgroups; }
  CUTE_DEVICE void wait() const {
    if constexpr (kPingPong)
      cutlass::arch::NamedBarrier::sync(kTurnThreads, uint32_t(FwdNamedBarrier::kWarpgroupTurn) + warpgroup - 1);
  }
  CUTE_DEVICE void pass() const {
    if constexpr (kPingPong)  // to warpgroup w % kWarpgroups + 1
      cutlass::arch::NamedBarrier::arrive(kTurnThreads,
                                          uint32_t(FwdNamedBarrier::kWarpgroupTurn) + warpgroup % kWarpgroups);
  }
};

// The turns of the O staging tile that the two consumer warpgroups share
// (WsSharedStorageQHalvesSharedO; every method is a no-op for the other storages). Both
// warpgroups store every tile, in the same order, so epilogue e of the CTA (warpgroup w's j-th:
// e = 2j + w - 1) follows e - 1 of the other warpgroup and waits for o_free's e-th completion, the
// phase of parity (e - 1) & 1 = w & 1. Parity waits are exact here: the waiting leader has made
// its own arrival for e - 2 (release() comes first), so o_free has completed e - 1 or e phases.
// Only the leader (thread 0 of the warpgroup) issues stores, so only it waits and arrives.
template <class Storage>
struct SharedOTurn {
  uint64_t* o_free;
  int warpgroup;  // 1 or 2
  bool leader;
  bool pending = false;  // the leader's last store has not been reported read yet
  bool first = true;     // no epilogue of this warpgroup yet
  // Reports the leader's last store as read (waiting for the read if need be).
  CUTE_DEVICE void release() {
    if constexpr (Storage::kSharedO) {
      if (leader && pending) {
        cute::tma_store_wait<0>();
        EmptyBarrier::arrive(o_free);
        pending = false;
      }
    }
  }
  // The leader, before its warpgroup writes the tile: the other warpgroup's last store has read it.
  CUTE_DEVICE void acquire() {
    if constexpr (Storage::kSharedO) {
      release();
      if (!(warpgroup == 1 && first)) EmptyBarrier::wait(o_free, uint32_t(warpgroup & 1));
      first = false;
    }
  }
  // The leader has issued (or, with no rows to store, skipped) this warpgroup's store of the tile.
  CUTE_DEVICE void stored() {
    if constexpr (Storage::kSharedO) pending = leader;
  }
};

// Frees Q's space for the next tile once this thread's last S = Q·Kᵀ of the tile has completed:
// q_empty (256 arrivals) where O has tiles of its own, q_empty_wg[w] (128) where O has a shared
// tile beside Q's halves; nothing otherwise (Q's space is freed after the O store).
template <class Storage>
CUTE_DEVICE void release_q_after_last_s(Storage& ss, int warpgroup) {
  if constexpr (Storage::kSeparateStagingO) EmptyBarrier::arrive(&ss.q_empty);
  if constexpr (Storage::kSharedO) EmptyBarrier::arrive(&ss.q_empty_wg[warpgroup - 1]);
}

}  // namespace ws
}  // namespace hopattn::attention
