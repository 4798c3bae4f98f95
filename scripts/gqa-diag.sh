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
# ncu, clocks left alone, caches flushed before each kernel (the default): the forward kernels of
# hopattn and FA3 on one GQA cell and its MHA twin (fa3_forward.py's first launches of each), for
# clock, L2 hit rate, DRAM bytes, L2 read sectors and the tensor pipe's share.
ncu_metrics=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,lts__t_sectors_op_read.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed
fa3_path=$(cd "${FA3_RUN:?}" && pwd)
for cell in 128:1:8192:40:8:1 128:1:8192:40:40:1 128:1:3072:32:8:4 128:1:3072:32:32:4; do
  (cd "$root/bench" && export PYTHONPATH=$build/python:$fa3_path && bounded 70 ncu --clock-control none --kernel-name-base function \
    -k regex:'ws_forward_kernel|device_kernel' -c 4 --metrics "$ncu_metrics" --csv \
    python3 fa3_forward.py --cells "$cell" --rounds 1 --no-cudnn >"$out/ncu-${cell//:/_}.csv" 2>&1)
  echo "ncu $cell: exit $?"
  python3 - "$out/ncu-${cell//:/_}.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows: sys.exit()
h = rows[0]; k, m, v, i = h.index("Kernel Name"), h.index("Metric Name"), h.index("Metric Value"), h.index("ID")
by = {}
for r in rows[1:]:
    by.setdefault((r[i], r[k][:40]), {})[r[m]] = r[v]
for (idx, name), d in by.items():
    print(idx, name, " ".join(f"{key.split('.')[0].split('__')[-1]}={val}" for key, val in sorted(d.items())))
PY
done
