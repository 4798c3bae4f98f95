// Per-tile math of the mma.sync int8 decode kernels' swap rows (kv8_mma_swap_*; keys as the mma's
// M; kernel/sm90_decode_int8_mma.hpp): Sᵀ = K·Qᵀ (tile_scores_swap), the mask and online softmax
// (online_softmax_swap), Oᵀ's rescale (rescale_o_swap) and Oᵀ += Vᵀ·P'ᵀ (tile_pv_swap). The rows
// as M: sm90_decode_int8_mma_math.hpp.
#pragma once

// clang-format off
#include <cute/tensor.hpp>  // first: the atoms below assume it
// clang-format on
#include <cutlass/numeric_types.h>

#include <cstdint>

#include "attention/collective/sm90_decode_int8_convert.hpp"  // pack_pair
#include "attention/collective/sm90_decode_int8_mma_dequant.hpp"
#include "attention/collective/sm90_decode_int8_mma_ptx.hpp"
#include "attention/collective/sm90_decode_int8_mma_traits.hpp"
#include "attention/collective/sm90_fwd_softmax.hpp"  // exp2_ftz

namespace hopattn::attention {
namespace int8_mma_detail {

// ---- Keys as the mma's M: the swap rows (kv8_mma_swap_*), at most 8 packed rows a CTA ----
// Sᵀ = K·Qᵀ (m16n8k16: M = 16 keys, N = 8 rows, K = 16 channels) and Oᵀ = Vᵀ·Pᵀ (M = 16 channels,
// N = 8 rows, K = 16 keys). With <= 8 packed rows (64:8 or 32:8 at q_len 1) the rows-as-M kernel's
// M = 16 rows leave half of every mma, of S's registers and of O's on absent rows; here the rows
// are N = 8: half the HMMAs, Sᵀ in 16 registers, Oᵀ in 32. The values are the rows-as-M kernel's:
// K's A fragment of m-tile mt is its B fragments of n8 tiles 2mt (rows g) and 2mt + 1 (rows
// g + 8), V's A fragment of m-tile mt its B fragments of n8 tiles 2mt and 2mt + 1, so the loads
// and conversions are the same instructions. Pᵀ's B fragment is Sᵀ's C fragment transposed, one
// movmatrix per 8 × 8 block. Maps: int8_swap_s_key, int8_swap_o_channel, int8_swap_row.

// Sᵀ = K·Qᵀ of one tile (64 keys × 8 rows: m-tiles mt = 0..3), kSteps k16 steps a pass, K as
// tile_scores dequantizes it (value · scale in one FFMA, rounded once to Element), or with
// kPackedK in bf16 pairs (k_pair_bf16; channels 0, 2 | 1, 3 of each word, as publish_q_swap).
template <class Element, int kSteps = 4, bool kPackedK = false>
CUTE_DEVICE void tile_scores_swap(float (&s_acc)[4][4], uint32_t k_tile, uint32_t ks_addr, uint32_t qf_base,
                                  const int (&k_off)[2], int c, int lane) {
  static_assert(kSteps == 4 || kSteps == 2 || kSteps == 1, "a half, a quarter or an eighth of the channels per pass");
  CUTE_UNROLL
  for (int mt = 0; mt < 4; ++mt) s_acc[mt][0] = s_acc[mt][1] = s_acc[mt][2] = s_acc[mt][3] = 0.0f;
#pragma unroll 1
  for (int pass = 0; pass < 8 / kSteps; ++pass) {
    const int half = pass * kSteps / 4, q0 = pass * kSteps % 4;  // k16 steps 4·half + q0 + (0 .. kSteps - 1)
    const int k_off_p = (half ? k_off[1] : k_off[0]) + 4 * q0;
    float ks[kPackedK ? 1 : 4 * kSteps] = {}, kn[kPackedK ? 1 : 4 * kSteps] = {};  // K scales, -(2^15 + 128) times them
    uint32_t ks2[kSteps][2];  // kPackedK: bf16 scale pairs of channels (0, 2) and (1, 3) of each word
    uint32_t qb[kSteps][2];  // Q's B fragments of the pass's k16 steps
    CUTE_UNROLL
    for (int q = 0; q < kSteps; ++q) {
      const float4 f = lds128f(ks_addr + 4 * (64 * half + 16 * c + 4 * (q0 + q)));
      if constexpr (kPackedK) {
        ks2[q][0] = pack_pair<cutlass::bfloat16_t>(f.x, f.z), ks2[q][1] = pack_pair<cutlass::bfloat16_t>(f.y, f.w);
      } else {
        ks[4 * q] = f.x, ks[4 * q + 1] = f.y, ks[4 * q + 2] = f.z, ks[4 * q + 3] = f.w;
      }
      asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];"
                   : "=r"(qb[q][0]), "=r"(qb[q][1])
                   : "r"(qf_base + 8 * ((4 * half + q0 + q) * 32 + lane)));
    }
    if constexpr (!kPackedK) {
      CUTE_UNROLL
      for (int i = 0; i < 4 * kSteps; ++i) kn[i] = -kMagic15Offset * ks[i];
    }
    auto deq = [&](uint32_t w, int b, int i) { return dequant_fma(biased_byte_magic15(w, b), ks[i], kn[i]); };
    CUTE_UNROLL
    for (int mt = 0; mt < 4; ++mt) {
      uint32_t wa[kSteps], wb[kSteps];  // key rows int8_mma_key(2mt, g) (A's rows g) and (2mt + 1, g) (rows g + 8)
      lds_words<kSteps>(wa, k_tile + 1024 * (2 * mt) + k_off_p);
      lds_words<kSteps>(wb, k_tile + 1024 * (2 * mt + 1) + k_off_p);
      CUTE_UNROLL
      for (int q = 0; q < kSteps; ++q) {
        uint32_t a0, a1, a2, a3;  // (key A, k 2c..), (key B, 2c..), (A, 2c + 8..), (B, 2c + 8..)
        if constexpr (kPackedK) {
          a0 = k_pair_bf16(wa[q], ks2[q][0]), a2 = k_pair_bf16(wa[q] >> 8, ks2[q][1]);
          a1 = k_pair_bf16(wb[q], ks2[q][0]), a3 = k_pair_bf16(wb[q] >> 8, ks2[q][1]);
        } else {
          const uint32_t xa = wa[q] ^ 0x80808080u, xb = wb[q] ^ 0x80808080u;
          a0 = pack_pair<Element>(deq(xa, 0, 4 * q), deq(xa, 1, 4 * q + 1));
          a1 = pack_pair<Element>(deq(xb, 0, 4 * q), deq(xb, 1, 4 * q + 1));
          a2 = pack_pair<Element>(deq(xa, 2, 4 * q + 2), deq(xa, 3, 4 * q + 3));
          a3 = pack_pair<Element>(deq(xb, 2, 4 * q + 2), deq(xb, 3, 4 * q + 3));
        }
        mma16816<Element>(s_acc[mt], a0, a1, a2, a3, qb[q][0], qb[q][1]);
      }
    }
  }
}

// online_softmax for Sᵀ: rows 2c and 2c + 1 (registers e % 2), their maxima over the thread's 8
// keys each and the 8 lanes g; l_run holds the thread's partial sums (merge_and_store_swap adds
// the lanes'). limit[r]: the first key row 2c + r must not see. Maps::s_key: the key of register
// e of m-tile mt in lane g (Int8SwapMaps; the 16-bit swap row's Kv16SwapMaps).
template <class Maps = Int8SwapMaps>
CUTE_DEVICE void online_softmax_swap(float (&s_acc)[4][4], float (&m_run)[2], float (&l_run)[2], float (&alpha)[2],
                                     int n, int mask_from, const int (&limit)[2], float scale, int g) {
  if ((n + 1) * 64 > mask_from) {
    CUTE_UNROLL
    for (int mt = 0; mt < 4; ++mt)
      CUTE_UNROLL
      for (int e = 0; e < 4; ++e)
        if (n * 64 + Maps::s_key(mt, e, g) >= limit[e % 2]) s_acc[mt][e] = -INFINITY;
  }
  CUTE_UNROLL
  for (int r = 0; r < 2; ++r) {
    float mx = -INFINITY;
    CUTE_UNROLL
    for (int mt = 0; mt < 4; ++mt) mx = fmaxf(mx, fmaxf(s_acc[mt][r], s_acc[mt][2 + r]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 4));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 8));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 16));
    const float m_new = fmaxf(m_run[r], mx * scale);
    const float m_use = m_new == -INFINITY ? 0.0f : m_new;
    alpha[r] = exp2_ftz(m_run[r] - m_use);
    m_run[r] = m_new;
    float sum = 0.0f;
    CUTE_UNROLL
    for (int mt = 0; mt < 4; ++mt)
      CUTE_UNROLL
      for (int e = r; e < 4; e += 2) {
        const float pv = exp2_ftz(s_acc[mt][e] * scale - m_use);
        s_acc[mt][e] = pv;
        sum += pv;
      }
    l_run[r] = l_run[r] * alpha[r] + sum;
  }
}

// Oᵀ's columns (rows 2c, 2c + 1) times a0, a1; skipped when no lane's factor differs from 1.
CUTE_DEVICE void rescale_o_swap(float (&o)[8][4], float a0, float a1) {
  if (!__any_sync(0xffffffffu, a0 != 1.0f || a1 != 1.0f)) return;
  CUTE_UNROLL
  for (int mt = 0; mt < 8; ++mt) o[mt][0] *= a0, o[mt][1] *= a1, o[mt][2] *= a0, o[mt][3] *= a1;
}

// Oᵀ' += Vᵀ·P'ᵀ in fp16 with Oᵀ' = Oᵀ · 2^-e_v (tile_pv_fold's values): V's int8 exact in fp16,
// P' = fp16(p · s_v · 2^-e_v), its B fragment of k16 step sp from Sᵀ's m-tile sp by movmatrix
// (k = 2c + i is key int8_mma_key(2sp, 2c + i), k = 2c + 8 + i key int8_mma_key(2sp + 1, 2c + i),
// the keys V's loads give: v_off as tile_pv_fold's). vs_addr: the tile's scales by int8_swap_vscale_slot.
template <int kVWords = 4>
CUTE_DEVICE void tile_pv_swap(float (&o)[8][4], float const (&s_acc)[4][4], uint32_t v_tile, uint32_t vs_addr,
                              const int (&v_off)[2], int g, int e_v) {
  const float fv = exp2_int(-e_v);
  const float4 sa = lds128f(vs_addr + 32 * g), sb = lds128f(vs_addr + 32 * g + 16);
  const float sv[8] = {sa.x * fv, sa.y * fv, sa.z * fv, sa.w * fv, sb.x * fv, sb.y * fv, sb.z * fv, sb.w * fv};
  uint32_t pb[4][2];
  CUTE_UNROLL
  for (int sp = 0; sp < 4; ++sp) {  // registers 0, 1: key int8_mma_key(2sp, g); 2, 3: (2sp + 1, g)
    pb[sp][0] = movmatrix_trans(pack_pair<cutlass::half_t>(s_acc[sp][0] * sv[2 * sp], s_acc[sp][1] * sv[2 * sp]));
    pb[sp][1] =
        movmatrix_trans(pack_pair<cutlass::half_t>(s_acc[sp][2] * sv[2 * sp + 1], s_acc[sp][3] * sv[2 * sp + 1]));
  }
#pragma unroll 1
  for (int sp = 0; sp < 4; ++sp) {
    uint32_t b[2];
    pop_front(pb, b);
    CUTE_UNROLL
    for (int w0 = 0; w0 < 4; w0 += kVWords) {
      uint32_t vw[4][kVWords];  // [key 0..3][word w0 + i], raw
      CUTE_UNROLL
      for (int k = 0; k < 4; ++k) lds_words<kVWords>(vw[k], v_tile + 1024 * (2 * sp + k / 2) + v_off[k % 2] + 4 * w0);
      CUTE_UNROLL
      for (int mt = 2 * w0; mt < 2 * (w0 + kVWords); ++mt) {  // channels 16g + 2mt (rows g), + 1 (rows g + 8)
        uint32_t lo[2], hi[2];  // keys 0, 1 (k = 2c + i) and 2, 3 (k = 2c + 8 + i)
        CUTE_UNROLL
        for (int h = 0; h < 2; ++h) {
          const int tt = 2 * mt + h, wi = tt / 4 - w0, by = tt % 4;
          const uint32_t sel = uint32_t(by) | (uint32_t(4 + by) << 8);
          lo[h] = hadd2(bias_into_magic(__byte_perm(vw[0][wi], vw[1][wi], sel)), kMinus1152x2);
          hi[h] = hadd2(bias_into_magic(__byte_perm(vw[2][wi], vw[3][wi], sel)), kMinus1152x2);
        }
        mma16816<cutlass::half_t>(o[mt], lo[0], lo[1], hi[0], hi[1], b[0], b[1]);
      }
    }
  }
}

}  // namespace int8_mma_detail
}  // namespace hopattn::attention
