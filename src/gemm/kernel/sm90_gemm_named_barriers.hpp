// Every named barrier (bar.sync / bar.arrive) the GEMM kernels use, in one enum. ID 0 is
// __syncthreads(); hardware has 16.
#pragma once

#include <cstdint>

#include "cute/config.hpp"

namespace hopattn::gemm {

enum class GemmNamedBarrier : uint32_t {
  kPingpongTurnWg1 = 1,  // ping-pong: consumer warpgroup 1 may issue its next tile's WGMMAs
  kPingpongTurnWg2 = 2,  // ping-pong: consumer warpgroup 2 may issue its next tile's WGMMAs
  kEpilogueWg1 = 3,      // persistent: consumer warpgroup 1 wrote its epilogue chunk to shared
                         // memory, and its previous chunk's TMA store has read the other buffer
  kEpilogueWg2 = 4,      // persistent: the same for consumer warpgroup 2
  kSplitKDone = 5,       // split_k: both consumer warpgroups' WGMMAs have finished reading the
                         // ring (256 threads), which then holds the partial tile
};

// Waits until `threads` threads (including this one's warp) have reached barrier `id`.
CUTE_DEVICE void named_barrier_sync(GemmNamedBarrier id, uint32_t threads) {
  asm volatile("bar.sync %0, %1;" : : "r"(static_cast<uint32_t>(id)), "r"(threads) : "memory");
}
// Counts this warp towards barrier `id` without waiting.
CUTE_DEVICE void named_barrier_arrive(GemmNamedBarrier id, uint32_t threads) {
  asm volatile("bar.arrive %0, %1;" : : "r"(static_cast<uint32_t>(id)), "r"(threads) : "memory");
}

}  // namespace hopattn::gemm
