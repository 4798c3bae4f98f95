#!/usr/bin/env bash
# One device call for the FP8 candidate rows (docs/perf-diagnosis-fa3.md §11 item 0): their GPU
# tests by name, their A/B against the defaults with cuDNN's FP8 SDPA in the same run, and
# FlashAttention-3's FP8 beside hopattn's (bench/fa3_forward.py). Logs and CSVs under OUT_DIR.
#   BUILD=build-dev FA3_RUN=fa3-run [AB="HDIM:KERNELS ..."] [FA3_CELLS=HDIM:CAUSAL:SEQLEN,...] \
#     scripts/fp8-candidates.sh OUT_DIR [DEADLINE_S=540]
# BUILD: an ablation build (-DHOPATTN_BUILD_ABLATIONS=ON; -DHOPATTN_DTYPES=bf16 keeps it at ~22 MB),
# packed with scripts/pack-build.sh; FA3_RUN: scripts/fa3-runpack.sh's folder (3.5 MB, xz); both
# carried. Each step is bounded by the time left.
set -uo pipefail
out=${1:?usage: scripts/fp8-candidates.sh OUT_DIR [DEADLINE_S]}
deadline=${2:-540}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${BUILD:-$root/build-dev}" && pwd)  # absolute: the FA3 step runs from bench/
fa3=$(cd "${FA3_RUN:-$root/fa3-run}" 2>/dev/null && pwd || echo "${FA3_RUN:-$root/fa3-run}")
mkdir -p "$out"
source "$root/scripts/device-env.sh" "$build" "$deadline"
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
# 1. Every e4m3 row of the build by name (the candidates included), then the public call's tiles.
bounded 150 "$build/bin/gpu_attention_fp8" --gtest_filter='*EveryFp8KernelMatchesFloat64*:*ManyTilesPerCta*:*LongKeys*' \
  >"$out/tests.log" 2>&1
echo "tests: exit $? ($((SECONDS - t0)) s)"; grep -E "^\[  (PASSED|FAILED)|FAILED  \]" "$out/tests.log"
# 2. The candidates against the defaults, cuDNN's FP8 SDPA beside them.
ab() {  # ab HDIM KERNELS
  bounded 150 "$build/bin/hopattn" bench --dtype e4m3 --hdim "$1" --seqlen 1024,4096,16384 --causal 0,1 --kernels "$2" \
    --rounds 2 --no-ceilings $cudnn_flag --csv "$out/cand-hd$1.csv" >"$out/cand-hd$1.log" 2>&1
  echo "A/B hdim $1: exit $? ($((SECONDS - t0)) s)"; sed -n '/^op /,$p' "$out/cand-hd$1.log" | grep -v '^$'
}
# AB: "HDIM:KERNELS ..." (the rows to time beside each other; e.g. AB="256:default,NAME" for an
# ablation row NAME of the build; default: the defaults alone at hdim 128 and 256).
for spec in ${AB:-128:default 256:default}; do ab "${spec%%:*}" "${spec#*:}"; done
# 3. FA3's FP8 and bf16 beside hopattn's and cuDNN's (the FA3 grid).
so=$fa3/flash_attn_3/_C.abi3.so
if [ ! -f "$so" ] && [ -f "$so.xz" ]; then
  xz -dk "$so.xz" 2>/dev/null ||
    python3 -c "import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], 'wb'))" "$so.xz" "$so"
fi
fa3_cells=--grid
[ -n "${FA3_CELLS:-}" ] && fa3_cells="--cells $FA3_CELLS"
if [ -f "$so" ] && [ -d "$build/python/hopattn" ]; then
  (cd "$root/bench" && export PYTHONUNBUFFERED=1 PYTHONPATH=$build/python:$fa3 &&
    bounded 400 python3 fa3_forward.py $fa3_cells --fp8 --rounds 2 \
      --csv "$out/fa3-fwd.csv" >"$out/fa3-fwd.log" 2>&1)
  echo "fa3: exit $? ($((SECONDS - t0)) s)"; tail -45 "$out/fa3-fwd.log"
else
  echo "fa3: skipped (no $so or no $build/python)"
fi
