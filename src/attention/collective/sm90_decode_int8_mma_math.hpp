// Per-tile math of the mma.sync int8 decode kernels with the rows as the mma's M
// (kv8_mma_8w_1cta, kv8_mma_4w_3cta; kernel/sm90_decode_int8_mma.hpp): S = Q·Kᵀ with K dequantized
// in registers (tile_scores), the mask and online softmax (online_softmax), O's rescale
// (rescale_o, rescale_o_lazy), the tile's V exponent (tile_v_exponent) and O += P'·V with V's
// scales folded into P (tile_pv_fold). The swap rows' counterparts: sm90_decode_int8_mma_swap.hpp.
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

// S = Q·Kᵀ of one tile (16 rows × 64 keys) from the raw K tile at k_tile and its 128 K scales at
// ks_addr, kSteps k16 steps (a half, or with kSteps = 1 an eighth of the channels) at a time:
// their K scales in registers (the other passes' would not fit beside O, S and Q; the three-CTA
// kernel's 168 registers need eighths once the FFMA's constants sit beside the scales). K's
// value · scale in one FFMA (dequant_fma), rounded once to Element. k_off: the thread's row
// offsets for chunks c and c + 4.
template <class Element, int kNTiles, int kSteps = 4>
CUTE_DEVICE void tile_scores(float (&s_acc)[kNTiles][4], uint32_t k_tile, uint32_t ks_addr, uint32_t qf_base,
                             const int (&k_off)[2], int c, int lane) {
  static_assert(kSteps == 4 || kSteps == 2 || kSteps == 1, "a half, a quarter or an eighth of the channels per pass");
  CUTE_UNROLL
  for (int j = 0; j < kNTiles; ++j) s_acc[j][0] = s_acc[j][1] = s_acc[j][2] = s_acc[j][3] = 0.0f;
  // Not unrolled (nor is the P·V loop): fully unrolled, the tile's body was ~2,450 instructions
  // (39 KB of code) and ncu's top stall was no_instruction (r85: 1.60 cycles per issue), eight
  // warps at different places of a loop larger than the instruction cache.
#pragma unroll 1
  for (int pass = 0; pass < 8 / kSteps; ++pass) {
    const int half = pass * kSteps / 4, q0 = pass * kSteps % 4;  // k16 steps 4·half + q0 + (0 .. kSteps - 1)
    const int k_off_p = (half ? k_off[1] : k_off[0]) + 4 * q0;
    float ks[4 * kSteps];  // channels 64·half + 16c + 4·q0 .. + 4·kSteps - 1
    float kn[4 * kSteps];  // -(2^15 + 128) · ks
    uint4 qa[kSteps];  // Q's A fragments of the pass's k16 steps
    CUTE_UNROLL
    for (int q = 0; q < kSteps; ++q) {
      const float4 f = lds128f(ks_addr + 4 * (64 * half + 16 * c + 4 * (q0 + q)));
      ks[4 * q] = f.x, ks[4 * q + 1] = f.y, ks[4 * q + 2] = f.z, ks[4 * q + 3] = f.w;
      qa[q] = lds128(qf_base + 16 * ((4 * half + q0 + q) * 32 + lane));
    }
    CUTE_UNROLL
    for (int i = 0; i < 4 * kSteps; ++i) kn[i] = -kMagic15Offset * ks[i];
    // Channel i of the pass's: value · scale in fp32.
    auto deq = [&](uint32_t w, int b, int i) { return dequant_fma(biased_byte_magic15(w, b), ks[i], kn[i]); };
    CUTE_UNROLL
    for (int j = 0; j < kNTiles; ++j) {
      uint32_t w4[kSteps];  // bytes 4·q0 .. 4·(q0 + kSteps) - 1 of the row's chunk, biased
      lds_words<kSteps>(w4, k_tile + 1024 * j + k_off_p);
      CUTE_UNROLL
      for (int q = 0; q < kSteps; ++q) {  // k16 step 4·half + q0 + q: bytes 4q .. 4q + 3 of w4
        const uint32_t w = w4[q] ^ 0x80808080u;
        const uint32_t b0 = pack_pair<Element>(deq(w, 0, 4 * q), deq(w, 1, 4 * q + 1));
        const uint32_t b1 = pack_pair<Element>(deq(w, 2, 4 * q + 2), deq(w, 3, 4 * q + 3));
        mma16816<Element>(s_acc[j], qa[q].x, qa[q].y, qa[q].z, qa[q].w, b0, b1);
      }
    }
  }
}

// The running (max, sum) of rows g and g + 8 over one more tile, whose first key is n·kBlockN:
// the mask (keys at or past a row's limit), then the online softmax with row h's scores times
// scale[h] (log2 units); s_acc becomes P, alpha the factor for the rows' O. hi: whether rows
// g + 8 exist in the CTA (warp-uniform; not with <= 8 packed rows, e.g. 64:8 or 32:8 at q_len 1):
// without them their P is 0 and alpha 1, and the half of the softmax that served them is skipped.
template <int kBlockN, int kNTiles>
CUTE_DEVICE void online_softmax(float (&s_acc)[kNTiles][4], float (&m_run)[2], float (&l_run)[2], float (&alpha)[2],
                                int n, int mask_from, int limit0, int limit1, const float (&scale)[2], int c,
                                bool hi) {
  if ((n + 1) * kBlockN > mask_from) {
    CUTE_UNROLL
    for (int j = 0; j < kNTiles; ++j)
      CUTE_UNROLL
      for (int e = 0; e < 2; ++e) {
        const int key = n * kBlockN + int8_mma_key(j, 2 * c + e);
        if (key >= limit0) s_acc[j][e] = -INFINITY;
        if (key >= limit1) s_acc[j][2 + e] = -INFINITY;
      }
  }
  if (!hi) {
    alpha[1] = 1.0f;
    CUTE_UNROLL
    for (int j = 0; j < kNTiles; ++j) s_acc[j][2] = s_acc[j][3] = 0.0f;
  }
  CUTE_UNROLL
  for (int h = 0; h < 2; ++h) {
    if (h == 1 && !hi) break;
    float mx = -INFINITY;
    CUTE_UNROLL
    for (int j = 0; j < kNTiles; ++j) mx = fmaxf(mx, fmaxf(s_acc[j][2 * h], s_acc[j][2 * h + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(m_run[h], mx * scale[h]);
    const float m_use = m_new == -INFINITY ? 0.0f : m_new;
    alpha[h] = exp2_ftz(m_run[h] - m_use);
    m_run[h] = m_new;
    float sum = 0.0f;
    CUTE_UNROLL
    for (int j = 0; j < kNTiles; ++j)
      CUTE_UNROLL
      for (int e = 0; e < 2; ++e) {
        const float pv = exp2_ftz(s_acc[j][2 * h + e] * scale[h] - m_use);
        s_acc[j][2 * h + e] = pv;
        sum += pv;
      }
    l_run[h] = l_run[h] * alpha[h] + sum;
  }
}

CUTE_DEVICE void rescale_o(float (&o)[16][4], float a0, float a1) {  // rows g (a0) and g + 8 (a1)
  CUTE_UNROLL
  for (int tt = 0; tt < 16; ++tt) o[tt][0] *= a0, o[tt][1] *= a0, o[tt][2] *= a1, o[tt][3] *= a1;
}
// The same, skipped when no lane's factor differs from 1 (a row's maximum rarely changes once its
// first tiles are seen; 64 FMULs a tile), and rows g + 8 only when they exist.
CUTE_DEVICE void rescale_o_lazy(float (&o)[16][4], float a0, float a1, bool hi) {
  if (!__any_sync(0xffffffffu, a0 != 1.0f || a1 != 1.0f)) return;
  if (hi) {
    rescale_o(o, a0, a1);
  } else {
    CUTE_UNROLL
    for (int tt = 0; tt < 16; ++tt) o[tt][0] *= a0, o[tt][1] *= a0;
  }
}

// The tile's V exponent from its 64 V scales (the thread's 16 and the quad's shuffles), never more
// than 80 below the previous (so O, rescaled by 2^(e_prev - e), stays far from overflow).
CUTE_DEVICE int tile_v_exponent(uint32_t vs_addr, int c, int e_prev) {
  float m = 0.0f;
  CUTE_UNROLL
  for (int q = 0; q < 4; ++q) {
    const float4 f = lds128f(vs_addr + 4 * (16 * c + 4 * q));
    m = fmaxf(m, fmaxf(fmaxf(f.x, f.y), fmaxf(f.z, f.w)));
  }
  m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
  m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
  const int e = half_exponent(127.0f * m);
  return e < e_prev - 80 ? e_prev - 80 : e;
}

// O' += P'·V8 in fp16 with O' = O · 2^-e_v, from the raw V tile at v_tile and its 64 V scale
// slots at vs_addr (int8_mma_vscale_slot): V's int8 values exact in fp16 (no scale, ~1.5
// instructions a value instead of ~2.75) and each key's scale folded into P:
// P' = fp16(p · s_v · 2^-e_v), 8 FMULs per k16 step. K keeps the host's rounding (tile_scores), so
// its outlier-channel accuracy stays; V's products are not rounded to Element (docs/decode.md).
// k16 step s' covers S tiles 2s', 2s'+1; V's B fragment for n8 tile tt (channel 16g + tt) from
// keys π(2s', 2c), π(2s', 2c+1) (b0) and π(2s'+1, 2c), π(2s'+1, 2c+1) (b1). v_off: the thread's row
// offsets of keys π(2c) and π(2c + 1), chunk g. kVWords: 32-bit words of each key's 16-byte chunk
// held at a time (4, or 2 for the three-CTA kernel's 168 registers: two 8-byte loads a key
// instead of one 16-byte load).
template <int kNTiles, int kVWords = 4>
CUTE_DEVICE void tile_pv_fold(float (&o)[16][4], float const (&s_acc)[kNTiles][4], uint32_t v_tile, uint32_t vs_addr,
                              const int (&v_off)[2], int c, int e_v) {
  constexpr int kPvSteps = kNTiles / 2;
  const float fv = exp2_int(-e_v);
  uint32_t pa[kPvSteps][4];
  CUTE_UNROLL
  for (int sp = 0; sp < kPvSteps; ++sp) {  // the step's keys π(2sp, 2c), π(2sp, 2c+1), π(2sp+1, 2c), π(2sp+1, 2c+1)
    const float4 vsc = lds128f(vs_addr + 4 * (16 * c + 4 * sp));
    const float s0 = vsc.x * fv, s1 = vsc.y * fv, s2 = vsc.z * fv, s3 = vsc.w * fv;
    pa[sp][0] = pack_pair<cutlass::half_t>(s_acc[2 * sp][0] * s0, s_acc[2 * sp][1] * s1);
    pa[sp][1] = pack_pair<cutlass::half_t>(s_acc[2 * sp][2] * s0, s_acc[2 * sp][3] * s1);
    pa[sp][2] = pack_pair<cutlass::half_t>(s_acc[2 * sp + 1][0] * s2, s_acc[2 * sp + 1][1] * s3);
    pa[sp][3] = pack_pair<cutlass::half_t>(s_acc[2 * sp + 1][2] * s2, s_acc[2 * sp + 1][3] * s3);
  }
#pragma unroll 1
  for (int sp = 0; sp < kPvSteps; ++sp) {
    uint32_t a[4];
    pop_front(pa, a);
    CUTE_UNROLL
    for (int w0 = 0; w0 < 4; w0 += kVWords) {
      uint32_t vw[4][kVWords];  // [key 0..3][word w0 + i], raw
      CUTE_UNROLL
      for (int k = 0; k < 4; ++k) lds_words<kVWords>(vw[k], v_tile + 1024 * (2 * sp + k / 2) + v_off[k % 2] + 4 * w0);
      CUTE_UNROLL
      for (int tt = 4 * w0; tt < 4 * (w0 + kVWords); ++tt) {
        const int wi = tt / 4 - w0, by = tt % 4;
        const uint32_t sel = uint32_t(by) | (uint32_t(4 + by) << 8);  // byte `by` of keys 0 and 1 (2 and 3)
        const uint32_t b0 = hadd2(bias_into_magic(__byte_perm(vw[0][wi], vw[1][wi], sel)), kMinus1152x2);
        const uint32_t b1 = hadd2(bias_into_magic(__byte_perm(vw[2][wi], vw[3][wi], sel)), kMinus1152x2);
        mma16816<cutlass::half_t>(o[tt], a[0], a[1], a[2], a[3], b0, b1);
      }
    }
  }
}

}  // namespace int8_mma_detail
}  // namespace hopattn::attention
