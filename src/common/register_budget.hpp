// Register budgets of warp-specialized kernels that move registers between warpgroups with
// setmaxnreg.
#pragma once

namespace hopattn {

// The registers a CTA of `threads` threads launched under __launch_bounds__(threads, 1) holds: the
// per-thread cap ptxas derives from the bound (65536 / threads, rounded down to a multiple of 8;
// 168 at 384 threads, as ptxas reports) times the threads. Above 255 a thread cannot go, so small
// CTAs are counted conservatively at 248. setmaxnreg moves registers only within this pool, not
// the SM's 65536: budgets that add up to more leave a setmaxnreg.inc waiting forever (the forward
// kernels hung that way with a 32-register producer beside two 240-register consumer warpgroups,
// 2026-12-02).
constexpr int launch_pool_registers(int threads) {
  return ((65536 / threads < 255 ? 65536 / threads : 255) / 8 * 8) * threads;
}
static_assert(launch_pool_registers(384) == 384 * 168 && launch_pool_registers(512) == 512 * 128);

}  // namespace hopattn
