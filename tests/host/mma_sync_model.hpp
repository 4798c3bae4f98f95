// A host model of one warp's mma.sync m16n8k16 and movmatrix.trans from the PTX ISA's fragment
// layouts (thread (g, c) = (lane / 4, lane % 4)), on integers, for the host tests of the mma.sync
// decode kernels' fragment maps (test_decode_int8_mma_layout.cu, test_decode_kv16_mma_layout.cu).
#pragma once

#include <array>

namespace hopattn::test::mma_sync_model {

using Pair = std::array<long, 2>;  // a 32-bit register of two 16-bit values: [0] low half, [1] high
using Regs4 = std::array<std::array<Pair, 4>, 32>;
using Regs2 = std::array<std::array<Pair, 2>, 32>;
using Acc = std::array<std::array<long, 4>, 32>;

// mma.sync m16n8k16, D += A·B: A's registers (g, 2c+i), (g+8, 2c+i), (g, 2c+8+i), (g+8, 2c+8+i);
// B's (k 2c+i, n g), (2c+8+i, g); D's (g, 2c+i), (g+8, 2c+i).
inline void mma(const Regs4& a, const Regs2& b, Acc& d) {
  long am[16][16], bm[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, c = lane % 4;
    for (int i = 0; i < 2; ++i) {
      am[g][2 * c + i] = a[lane][0][i], am[g + 8][2 * c + i] = a[lane][1][i];
      am[g][2 * c + 8 + i] = a[lane][2][i], am[g + 8][2 * c + 8 + i] = a[lane][3][i];
      bm[2 * c + i][g] = b[lane][0][i], bm[2 * c + 8 + i][g] = b[lane][1][i];
    }
  }
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, c = lane % 4;
    for (int e = 0; e < 4; ++e)
      for (int k = 0; k < 16; ++k) d[lane][e] += am[g + 8 * (e / 2)][k] * bm[k][2 * c + e % 2];
  }
}

// movmatrix.sync.aligned.m8n8.trans.b16: lane (g, c) holds elements (g, 2c), (g, 2c + 1) before and after.
inline std::array<Pair, 32> movmatrix_trans(const std::array<Pair, 32>& x) {
  long m[8][8];
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 2; ++i) m[lane / 4][2 * (lane % 4) + i] = x[lane][i];
  std::array<Pair, 32> y;
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 2; ++i) y[lane][i] = m[2 * (lane % 4) + i][lane / 4];
  return y;
}

}  // namespace hopattn::test::mma_sync_model
