// The default forward schedule per call (schedule 0): a table over head dim, mask and KV length,
// from same-run ablations on the H200 (docs/perf-log.md). Declared in kernel/sm90_fwd_config.hpp.
#include "attention/kernel/sm90_fwd_config.hpp"

namespace hopattn::attention {

// The default (schedule 0), chosen per call from the head dim, the mask and the KV length; the
// fastest in the same-run ablations on the FlashAttention-3 grid (H200, docs/perf-log.md), where
// batch·seqlen = 16k. The table in short (the function below is the authority):
//   hdim 64:  causal: 11 from 8k keys, else 1;      non-causal: 11 from 2k keys, else 1
//   hdim 128: causal: 7 above 12k keys, else 6;     non-causal: 7 from 8k keys, else 6
//   hdim 256: causal: 6 up to 12k keys, else 5;     non-causal: 6
// The history, oldest first (later bullets override earlier ones; r78 is the newest):
//  * hdim 64: the FA2-style kernel (1), whose two short GEMMs per tile the producer warp and the
//    turn-taking do not pay back; the three-warpgroup kernels non-causal from 2k keys (11) and
//    causal from 8k (10) (last bullet). Causal at every
//    length since 2026-12-01 r68 (before: 7 from 8k keys): with its lazy rescale
//    (r67) the FA2 kernel ran 8k/16k at 1.068/1.079 of cuDNN against schedule 7's 0.960/1.009
//    (bench/results/2026-12-01-r68-*).
//  * hdim 128: short non-causal sequences (<= 4k keys) the persistent ping-pong kernel (6): the
//    next tile's Q and first K/V load during the current tile's last GEMMs and epilogue, which a
//    one-tile CTA pays in full (0.86 vs 0.76 of cuDNN at 512). Causal up to 2k keys, 6 too since
//    its tile order keeps K/V in L2 (2026-12-01 r68, fwd_tile_order.hpp: 1k 1.004 vs schedule 5's
//    0.91 of cuDNN, 512 0.99, 2k 0.98 vs 0.975); 5 at 4k. Longer: the ping-pong kernel, 192-key
//    tiles (7) from 8k keys.
//  * hdim 256: the persistent ping-pong kernel on 80-key tiles (9) non-causal from 1k keys and
//    causal from 4k (2026-11-30 r33, bench/results/2026-11-30-r33-fwd-fa3-widths.csv: 0.954-0.999
//    vs 0.909-0.953 of cuDNN non-causal, 1.030-1.098 vs 0.997-1.055 causal); the ping-pong kernel
//    on 64-key tiles (5) below that, except non-causal below 1k keys: the persistent kernel on
//    64-key tiles (6) since its O is staged per warpgroup in Q's space (2026-12-01 r70, 512: 0.994
//    vs 0.942 of cuDNN in both arms of an A/B, bench/results/2026-12-01-r70-*).
//  * hdim 64 non-causal from 4k keys: three consumer warpgroups (10), 2026-11-30 r36 with both
//    row orders (bench/results/2026-11-30-r36-fwd-hd64-3wg*.csv): 4k 0.884-0.902 vs 0.874-0.880,
//    8k 0.936-0.942 vs 0.897-0.899, 16k 0.940 vs 0.900-0.907 of cuDNN; below 4k and causal it
//    loses (0.64-0.89 at <= 2k). Causal from 8k keys too since 2026-12-01 r74, once the softmax
//    overlapped P·V (r73): 8k 1.111/1.113 vs the FA2 kernel's 1.077/1.071, 16k 1.124/1.103 vs
//    1.088/1.080 of cuDNN, two runs in one call (bench/results/2026-12-01-r74-*); 4k 1.047 vs 1.073.
//    Non-causal from 2k keys: the same kernel on the persistent grid (11), 2026-12-01 r75, two
//    runs in one call (bench/results/2026-12-01-r75-fwd-hd64-schedules-*.csv): 2k 1.025/1.020 vs the
//    FA2 kernel's 0.979/0.977, 4k 0.996/0.991 vs 10's 0.983/0.981, 8k 1.016/1.012 vs 10's
//    1.021/1.017 (a tie), 16k 1.065/1.063 vs 10's 1.042/1.039; 1k 0.953 vs FA2's 0.990/0.982 (six
//    192-row tiles for 5.3 tiles' worth of rows). Causal it loses to 10 from 8k keys (1.04 vs 1.11).
//
// Since 2026-12-01 r78 (twelfth session), with the persistent kernels' folded causal order
// (fwd_tile_order.hpp; A/B against the grouped zig-zag order, two rounds each,
// bench/results/2026-12-01-r78-*), × cuDNN per round:
//  * hdim 64 causal from 8k keys: the three-warpgroup persistent kernel (11), 1.140/1.126 at 8k and
//    1.150/1.148 at 16k (schedule 10 in r74/r77, other runs: 1.096-1.111 and 1.103-1.145).
//  * hdim 128 causal up to 8k keys: the persistent kernel (6), 4k 1.112/1.107 vs 5's 1.071/1.065,
//    8k 1.111/1.107 vs 5's 1.055/1.062 (7 in r77: 0.999); 16k stays on 7 (6: 1.079/1.087, 5:
//    1.123/1.125; 7 in r77: 1.121).
//  * hdim 256: the persistent kernel on 64-key tiles (6) non-causal at every length (r78's
//    Q-before-K/V A/B, four runs: 1k 1.059-1.085 vs 9's 1.036-1.056, 4k 1.094-1.109 vs 1.011-1.043,
//    16k 1.132-1.147 vs 1.090-1.098) and causal from 2k keys (2k 1.120-1.138 vs 5's 1.054-1.099, 4k
//    1.156-1.190 vs 9's 1.108-1.160, 8k 1.144-1.210 vs 9's 1.163-1.202); causal from 16k the
//    ping-pong kernel (5): 1.177-1.209 vs 6's 1.133-1.218, 9's 1.114-1.173.
//  * hdim 256 causal below 2k keys: the persistent kernel (6) too since 2026-12-02 (eighteenth
//    session), once its O has a staging tile of its own and Q's space is freed at the last S
//    (WsSharedStorageQHalvesSharedO): r116, medians of 3 rotated rounds, 512 1.062 vs 5's 1.032,
//    1k 1.056 vs 1.022 (bench/results/2026-12-02-r116-*); r115 (one round, A B A B): 1k
//    1.054/1.064 vs 5's 0.948/0.957, 512 0.933/0.938 vs 0.946/0.955.
int fwd_default_schedule(int hdim, bool causal, long long seqlen_k) {
  if (hdim == 64) {
    if (causal) return seqlen_k >= 8192 ? 11 : 1;
    return seqlen_k >= 2048 ? 11 : 1;
  }
  if (hdim == 128) {
    if (causal) return seqlen_k > 12288 ? 7 : 6;
    return seqlen_k >= 8192 ? 7 : 6;
  }
  if (causal) return seqlen_k > 12288 ? 5 : 6;
  return 6;
}

}  // namespace hopattn::attention
