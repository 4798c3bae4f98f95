// The persistent GEMM's tile order: CTA b of a grid of G computes linear tiles b, b + G, b + 2G,
// ... and a linear tile maps to an output tile (m_blk, n_blk) in grouped raster order:
//
//   the grouped dimension (M, or N when N > M) is cut into groups of kGroup tile-rows (or
//   tile-columns); the linear index walks a group's kGroup blocks fastest, then the other
//   dimension across the whole matrix, then the next group.
//
// Tiles that run at the same time have neighbouring linear indices, so a wave of 132 CTAs with
// groups of 8 tile-rows reads 8 A panels and about 17 B panels (each panel: one tile's rows or
// columns × all of K) instead of one column of tiles' worth of A and few B panels reread by
// every wave: more L2 hits for the same work. Plain data, host and device (the host tests check
// that the order is a permutation of the tiles).
#pragma once

// Host and device; no CuTe header, so that host tests can include it with a plain C++ compiler.
#if defined(__CUDACC__)
#define HOPATTN_GEMM_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define HOPATTN_GEMM_HOST_DEVICE inline
#endif

namespace hopattn::gemm {

struct GroupedTileScheduler {
  int tiles_m = 0, tiles_n = 0;
  int group = 1;         // blocks of the grouped dimension per group
  bool along_m = true;   // groups of tile-rows (M blocks); false: of tile-columns (N blocks)

  static GroupedTileScheduler make(int m, int n, int block_m, int block_n, int group) {
    GroupedTileScheduler s;
    s.tiles_m = (m + block_m - 1) / block_m;
    s.tiles_n = (n + block_n - 1) / block_n;
    s.group = group;
    s.along_m = !(n > m);
    return s;
  }

  HOPATTN_GEMM_HOST_DEVICE int tiles() const { return tiles_m * tiles_n; }

  // Linear tile index (0 .. tiles() - 1) -> output tile.
  HOPATTN_GEMM_HOST_DEVICE void tile(int linear, int* m_blk, int* n_blk) const {
    const int grouped = along_m ? tiles_m : tiles_n;  // blocks of the grouped dimension
    const int other = along_m ? tiles_n : tiles_m;
    const int per_group = group * other;
    const int g = linear / per_group;
    const int first = g * group;
    const int width = grouped - first < group ? grouped - first : group;  // the last group may be narrower
    const int local = linear - g * per_group;
    const int a = first + local % width;  // block along the grouped dimension
    const int b = local / width;          // block along the other one
    *m_blk = along_m ? a : b;
    *n_blk = along_m ? b : a;
  }
};

}  // namespace hopattn::gemm
