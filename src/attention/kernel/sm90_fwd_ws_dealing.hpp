// The cursors over a warp-specialized forward CTA's tiles (sm90_fwd_ws.hpp's produce and consume):
// the static orders of FwdTileScheduler (sm90_fwd_ws_schedule.hpp), or a variable-length batch's
// dynamic dealing through the unit ring (sm90_fwd_ws_storage.hpp). Device code only.
#pragma once

#include <cute/config.hpp>

#include "attention/kernel/sm90_fwd_ws_schedule.hpp"
#include "attention/kernel/sm90_fwd_ws_storage.hpp"

namespace hopattn::attention::ws {

// The positions of the tile order a CTA takes, one after another; the producer and the consumers
// each walk them with a cursor of their own. Static dealing: sched.tile(0), sched.tile(1), ...
// Dynamic dealing (variable-length batches whose Params carry the claim counter,
// Params::varlen_claim): the list in units of two positions (a folded unit; the list holds an even
// number). A dealer thread (deal_units: lane 0 of the producer warpgroup's second warp) hands the
// CTA's first unit, its own index, and then, each time the producer has issued the loads of a unit,
// claims the next one with an atomicAdd on the workspace's counter (+ gridDim.x), through the
// VarlenUnitRing. The list runs longest first, so a CTA taking the next unit when it gets free is
// list scheduling in that order; the static dealing of the same list (CTA i takes units i, i + G,
// ...) left CTAs with up to a unit of the longest sequence more than others (docs/attention-varlen.md).
// A unit index past the last ends every walk. No taker holds its unit in a register (the producer
// runs at 24, the hdim-64 consumers at 160: the claim in the producer's loop made every options
// kernel spill 104-224 bytes, a unit register in the consumers' loop 68 at hdim 64; ptxas
// 2026-12-06): it is read back from its ring slot, which a taker holds until it takes the next.
struct TileCursor {
  int k = 0;  // static: the position index; dynamic: 2 · (units before this one) + position in the unit
};

template <bool kOptions, class Params, class Sched>
CUTE_DEVICE bool dynamic_dealing(Params const& p, Sched const& sched) {
  if constexpr (kOptions) return sched.is_varlen() && p.varlen_claim != nullptr;
  return false;
}

// A taker (the producer thread, every consumer thread) takes its handed-th unit and releases the
// slot of the one before: a slot stays held while its unit runs, so the unit is read back from it.
CUTE_DEVICE int take_unit(VarlenUnitRing& ring, int handed) {
  const int slot = handed % VarlenUnitRing::kSlots;
  FullBarrier::wait(&ring.full[slot], uint32_t((handed / VarlenUnitRing::kSlots) & 1));
  asm volatile("" ::: "memory");  // the read stays after the wait (CUTLASS's asm has no memory clobber)
  if (handed > 0) EmptyBarrier::arrive(&ring.empty[(handed - 1) % VarlenUnitRing::kSlots]);
  return *reinterpret_cast<volatile int*>(&ring.unit[slot]);
}
CUTE_DEVICE int current_unit(VarlenUnitRing& ring, int handed) {
  return *reinterpret_cast<volatile int*>(&ring.unit[handed % VarlenUnitRing::kSlots]);
}

// The dealer thread's loop (dynamic dealing only).
CUTE_DEVICE void deal_units(VarlenUnitRing& ring, int* claim, int positions) {
  for (int handed = 0;; ++handed) {
    int u = int(blockIdx.x);
    if (handed > 0) {
      EmptyBarrier::wait(&ring.request, uint32_t((handed - 1) & 1));  // the producer is done with the last
      u = int(gridDim.x) + atomicAdd(claim, 1);
    }
    const int slot = handed % VarlenUnitRing::kSlots;
    EmptyBarrier::wait(&ring.empty[slot], uint32_t((handed / VarlenUnitRing::kSlots) & 1) ^ 1u);
    *reinterpret_cast<volatile int*>(&ring.unit[slot]) = u;
    asm volatile("" ::: "memory");          // the write stays before the arrival
    FullBarrier::arrive(&ring.full[slot]);  // release: the index is visible to the takers
    // The takers' walks end at this unit if its second position is past the list (the list holds
    // an even number of positions, so that is the final hand-over, u >= units; were it odd, the
    // last unit's second position would end them too, and the dealer must not wait for a request).
    if (2 * u + 1 >= positions) return;
  }
}

// The cursor's next position (first: its first), or a value >= sched.end() when there is none.
template <bool kProducer, bool kOptions, class Params, class Storage, class Sched>
CUTE_DEVICE int cursor_next(TileCursor& cur, Params const& p, Storage& ss, Sched const& sched, bool first) {
  if constexpr (kOptions) {
    if (dynamic_dealing<kOptions>(p, sched)) {
      if (!first) ++cur.k;
      const int handed = cur.k >> 1;
      int unit;
      if (cur.k & 1) {
        unit = current_unit(ss.unit_ring, handed);
      } else {
        if constexpr (kProducer)
          if (!first) EmptyBarrier::arrive(&ss.unit_ring.request);  // the last unit's loads are issued
        unit = take_unit(ss.unit_ring, handed);
      }
      const int t = 2 * unit + (cur.k & 1);
      return t < sched.end() ? t : sched.end();
    }
  }
  if (!first) ++cur.k;
  return sched.tile(cur.k);
}

}  // namespace hopattn::attention::ws
