#!/usr/bin/env bash
# One device call for paged caches: int8 pools of small pages (16 and 32 tokens, or fewer than
# quant_block), and the chunk path over pools of pages of >= 128 tokens (its prepare kernel
# checks page ids a warp per sequence since the fourteenth session). Their GPU tests by name at every compiled dtype and head
# dim, then the paged int8 decode against the contiguous int8 cache and cuDNN's bf16 SDPA on the same shapes
# (issue 36's targets: page 16 >= 0.90x and pages >= 64 >= 0.97x the contiguous cache; int8 paged
# >= 1.8x cuDNN's bf16), and paged chunks on the forward kernel against the contiguous cache and
# the decode kernels. Logs and CSVs under OUT_DIR.
#   BUILD=build-full scripts/paged-run.sh OUT_DIR [DEADLINE_S=240]
# BUILD: a build's lib/ and bin/{gpu_kvcache,hopattn} (any dtypes; the default build is ~18 MB),
# carried. Each step is bounded by the time left.
set -uo pipefail
out=${1:?usage: scripts/paged-run.sh OUT_DIR [DEADLINE_S]}
deadline=${2:-240}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build-full}
mkdir -p "$out"
source "$root/scripts/device-env.sh" "$build" "$deadline"
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv,noheader | tee "$out/gpu-int8.txt"
# 1. The paged int8 tests (pages 16-256, bad ids at 16 and 64, the append across small pages), the
#    paged chunk path's, and the 16-bit paged test beside them, every compiled dtype and head dim.
bounded 200 "$build/bin/gpu_kvcache" --gtest_filter='*Int8Paged*:*Int8SmallPages*:*PagedCacheMatchesTheContiguous*:*ChunkPathPaged*' \
  >"$out/int8-pages-tests.log" 2>&1
echo "int8 page tests: exit $? ($((SECONDS - t0)) s)"
grep -E "^\[  (PASSED|FAILED)|FAILED  \]|^\[       OK \]" "$out/int8-pages-tests.log" | sed 's/ (.*//' | tail -40
grep -B2 -A6 "Failure" "$out/int8-pages-tests.log" | head -40
# 2. Paged int8 decode (q_len 1, 64:8, hdim 128) against the contiguous cache; cuDNN's bf16 SDPA in
#    the bf16 cells.
bounded 150 "$build/bin/hopattn" bench --op decode --qlen 1 --heads 64:8 --cache 8:8192,32:8192,16:32768 \
  --kv-dtype bf16,int8 --page-sizes 0,16,32,64 --rounds 2 $cudnn_flag --csv "$out/int8-pages-decode.csv" \
  >"$out/int8-pages-decode.log" 2>&1
echo "paged decode: exit $? ($((SECONDS - t0)) s)"; grep -vE '^\s*$' "$out/int8-pages-decode.log" | tail -40
# 3. Paged chunks (q_len 128, 32:8; the chunk path by default since the thirteenth session) against
#    the contiguous cache and the decode kernels ("decode" rows).
bounded 120 "$build/bin/hopattn" bench --op decode --qlen 128 --heads 32:8 --cache 1:32768,4:8192 \
  --kv-dtype bf16 --page-sizes 0,128,256 --kernels default,decode --rounds 2 \
  --csv "$out/chunk-paged.csv" >"$out/chunk-paged.log" 2>&1
echo "paged chunks: exit $? ($((SECONDS - t0)) s)"; grep -vE '^\s*$' "$out/chunk-paged.log" | tail -30
# The device tool returns a handful of files per call (2026-12-07: this script's six were left
# out beside fp8-candidates.sh's eight): one archive.
(cd "$out" && tar czf paged-run.tar.gz --remove-files ./*.log ./*.csv ./*.txt 2>/dev/null)
ls -la "$out"
