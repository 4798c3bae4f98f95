// Q of the mma.sync int8 decode kernels (kernel/sm90_decode_int8_mma.hpp): the CTA's packed rows
// read into registers (load_q) and published once to shared memory as the mma fragments of the
// rows as M (publish_q: A fragments) or of the swap rows (publish_q_swap: B fragments).
#pragma once

// clang-format off
#include <cute/tensor.hpp>  // first: the atoms below assume it
// clang-format on

#include <cstdint>

#include "attention/collective/sm90_decode_tile.hpp"

namespace hopattn::attention {
namespace int8_mma_detail {

// Q's rows g and g + 8 of the CTA's packed rows, channels [16c, 16c + 16) and [64 + 16c, 64 + 16c + 16)
// (8 bf16 pairs per half), zero past the rows; read first, so that its loads reach the memory
// system ahead of the tiles.
template <class Traits>
CUTE_DEVICE void load_q(typename Traits::Params const& p, DecodeTile const& t, int g, int c, uint4 (&qv)[2][4]) {
  using Element = typename Traits::Element;
  CUTE_UNROLL
  for (int h = 0; h < 2; ++h) {
    const int row = t.row0 + g + 8 * h;
    CUTE_UNROLL
    for (int k = 0; k < 4; ++k) qv[h][k] = make_uint4(0, 0, 0, 0);
    if (row < t.rows) {
      const Element* src = p.q + t.b * p.q_batch_stride + t.pos(row) * p.q_seq_stride + t.head(row) * p.q_head_stride;
      CUTE_UNROLL
      for (int k = 0; k < 4; ++k) qv[h][k] = *reinterpret_cast<const uint4*>(src + 64 * (k / 2) + 16 * c + 8 * (k % 2));
    }
  }
}

// Q's A fragments to shared memory (one warp; every warp's are the same): k16 step s, registers
// (row g, k 2c..2c+1), (g+8, ...), (g, k 2c+8..2c+9), (g+8, ...) = channel pairs
// 64(s/4) + 16c + 4(s%4) + {0, 2}: words 2(s%4) and 2(s%4) + 1 of the half's 8 words. The loop
// reloads a half's worth per tile (in registers all 32 would spill).
CUTE_DEVICE void publish_q(uint4 const (&qv)[2][4], uint32_t qf_base, int lane) {
  CUTE_UNROLL
  for (int s = 0; s < 8; ++s) {
    const int half = s / 4, w = 2 * (s % 4);
    auto word = [&](int h, int k) {
      const uint4& v = qv[h][2 * half + k / 4];
      const int x = k % 4;
      return x == 0 ? v.x : x == 1 ? v.y : x == 2 ? v.z : v.w;
    };
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(qf_base + 16 * (s * 32 + lane)), "r"(word(0, w)),
                 "r"(word(1, w)), "r"(word(0, w + 1)), "r"(word(1, w + 1))
                 : "memory");
  }
}

// Q's B fragments (row g; the same in every warp) to shared memory: k16 step s, the words of
// channel pairs int8_mma_channel(s, 2c) and int8_mma_channel(s, 2c + 8) (publish_q's a0 and a2).
// kPackedK (the swap rows at bf16): the channels of the four bytes of K's word in the order 0, 2 | 1, 3
// (k_pair_bf16's pairs), Q's likewise.
template <bool kPackedK = false>
CUTE_DEVICE void publish_q_swap(uint4 const (&qv)[2][4], uint32_t qf_base, int lane) {
  CUTE_UNROLL
  for (int s = 0; s < 8; ++s) {
    const uint4& v = qv[0][2 * (s / 4) + (s % 4) / 2];
    uint32_t w0 = s % 2 == 0 ? v.x : v.z, w1 = s % 2 == 0 ? v.y : v.w;  // channels (0, 1), (2, 3) of the four
    if constexpr (kPackedK) {
      const uint32_t x = w0;
      w0 = __byte_perm(x, w1, 0x5410), w1 = __byte_perm(x, w1, 0x7632);  // (0, 2), (1, 3)
    }
    asm volatile("st.shared.v2.b32 [%0], {%1, %2};" ::"r"(qf_base + 8 * (s * 32 + lane)), "r"(w0), "r"(w1) : "memory");
  }
}

}  // namespace int8_mma_detail
}  // namespace hopattn::attention
