#!/usr/bin/env bash
# Issue 39's GQA gap, one device call: is it GQA's (the K/V a group shares) or the shapes'? The four
# GQA prefill cells (hdim 128, causal) and their MHA twins (heads_kv = heads_q, same tokens and
# q-heads) against FlashAttention-3 and cuDNN (scripts/fa3-bench.sh, one Python process), then the
# C++ bench on the same cells with the hdim-128 rows and tile orders beside the default.
#   BUILD=DIR FA3_RUN=DIR scripts/gqa-diag.sh OUT_DIR [ROUNDS=2] [DEADLINE_S=560]
# BUILD: lib/, bin/hopattn and python/ (e.g. build-i8); FA3_RUN: scripts/fa3-runpack.sh's pack.
set -uo pipefail
out=${1:?usage: scripts/gqa-diag.sh OUT_DIR [ROUNDS]}
rounds=${2:-2}
deadline=${3:-560}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${BUILD:?BUILD=DIR}" && pwd)
mkdir -p "$out/fa3"
gqa="128:1:4096:32:8:2,128:1:8192:40:8:1,128:1:3072:32:8:4,128:1:16384:32:8:1"
mha="128:1:4096:32:32:2,128:1:8192:40:40:1,128:1:3072:32:32:4,128:1:16384:32:32:1"
source "$root/scripts/device-env.sh" "$build" "$deadline"
bounded 300 "$root/scripts/fa3-bench.sh" "$out/fa3" --fwd "--cells $gqa,$mha --rounds $rounds"
echo "fa3-bench: exit $?"
bounded 190 "$build/bin/hopattn" bench --shapes 2:4096:4096:32:8,1:8192:8192:40:8,4:3072:3072:32:8,1:16384:16384:32:8 \
  --hdim 128 --causal 1 --rounds "$rounds" --no-ceilings $cudnn_flag \
  --kernels default,ws_pingpong_persistent_128x128x2,ws_pingpong_128x192x2,default+persistent_group=0,default+causal_group=4 \
  --csv "$out/gqa-rows.csv" >"$out/gqa-rows.log" 2>&1
echo "rows: exit $?"; grep -E "^attn_fwd" "$out/gqa-rows.log"
# The hdim-128 non-causal defaults' 8k boundary (the seventeenth session saw the 128 x 192 default
# at 8k take 1.03x the 128-key persistent row's time, one run): both rows at 4k / 8k / 16k.
bounded 100 "$build/bin/hopattn" bench --hdim 128 --causal 0 --seqlen 4096,8192,16384 --rounds 3 --no-ceilings $cudnn_flag \
  --kernels default,ws_pingpong_persistent_128x128x2,ws_pingpong_128x192x2 --csv "$out/nc-boundary.csv" >"$out/nc-boundary.log" 2>&1
echo "8k boundary: exit $?"; grep -E "^attn_fwd" "$out/nc-boundary.log"
