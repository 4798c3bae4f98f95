#!/usr/bin/env bash
# One device call for what the thirteenth session wrote and could not run (device time ran out):
#  1. the chunk path's prepare kernel checking page ids a warp per sequence
#     (Overrides::chunk_pages_by_warp): ChunkPathPaged* runs every launch both ways; then paged
#     chunks against the contiguous cache, default and +warp_pages=1 rows;
#  2. docs/perf-diagnosis-fa3.md §3's H3 (the producer issuing K(n + 1) before V(n); ablation
#     rows *_kahead): every kernel against fp64, then an A/B on the FA3 grid's hdim-128 cells and
#     GQA prefill shapes beside the rows they vary and cuDNN;
#  3. §3's H1 (dynamic dealing) without a build: equal lengths as a varlen batch, dynamic vs static.
#   BUILD=build-dev scripts/pending-run.sh OUT_DIR [DEADLINE_S=560]
# BUILD: an ablation build (-DHOPATTN_BUILD_ABLATIONS=ON -DHOPATTN_DTYPES=bf16), packed with
# scripts/pack-build.sh, keeping lib/ and bin/{gpu_kvcache,gpu_attention_fwd,hopattn} (~30 MB),
# carried. Each step is bounded by the time left; everything lands in OUT_DIR/pending.tar.gz
# (the device tool returns a handful of files) and the rows are printed.
set -uo pipefail
out=${1:?usage: scripts/pending-run.sh OUT_DIR [DEADLINE_S]}
deadline=${2:-560}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${BUILD:-$root/build-dev}" && pwd)
mkdir -p "$out"
source "$root/scripts/device-env.sh" "$build" "$deadline"
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
# 1a. The paged chunk path's tests, both page-id checks.
# (*ChunkPath*: the contiguous chunk path too, whose list instance's producer the session's
# load_k_into / load_v_into refactor recompiled: its SASS moved, the consumers' did not.)
bounded 150 "$build/bin/gpu_kvcache" --gtest_filter='*ChunkPath*' >"$out/chunk-paged-tests.log" 2>&1
echo "chunk-paged tests: exit $? ($((SECONDS - t0)) s)"
grep -E "^\[  (PASSED|FAILED)|FAILED  \]" "$out/chunk-paged-tests.log"
grep -B2 -A6 "Failure" "$out/chunk-paged-tests.log" | head -30
# 1b. Paged chunks: default (thread per sequence) and warp per sequence, contiguous beside.
bounded 90 "$build/bin/hopattn" bench --op decode --qlen 128 --heads 32:8 --cache 1:32768,4:8192 --kv-dtype bf16 \
  --page-sizes 0,128,256 --kernels default,default+warp_pages=1 --rounds 3 --csv "$out/chunk-paged.csv" \
  >"$out/chunk-paged.log" 2>&1
echo "paged chunks: exit $? ($((SECONDS - t0)) s)"; grep -E '^decode ' "$out/chunk-paged.log"
# 2a. Every forward kernel of the build against fp64 (the *_kahead rows included).
bounded 180 "$build/bin/gpu_attention_fwd" --gtest_filter='*EveryKernelMatchesFloat64Reference*:*EveryKernelWithWindowSoftcapAndSinks*' \
  >"$out/fwd-tests.log" 2>&1
echo "forward tests: exit $? ($((SECONDS - t0)) s)"
grep -E "^\[  (PASSED|FAILED)|FAILED  \]" "$out/fwd-tests.log"; grep -E '^FAIL' "$out/fwd-tests.log" | head -10
# 2b. H3's A/B: hdim 128, the FA3 grid (causal and not), and GQA prefill.
k=default,ws_pingpong_persistent_128x128x2,ws_pingpong_persistent_128x128x2_kahead,ws_pingpong_128x192x2,ws_pingpong_128x192x2_kahead
bounded 200 "$build/bin/hopattn" bench --hdim 128 --causal 0,1 --kernels "$k" --rounds 3 --no-ceilings $cudnn_flag \
  --csv "$out/kahead-grid.csv" >"$out/kahead-grid.log" 2>&1
echo "kahead grid: exit $? ($((SECONDS - t0)) s)"; sed -n '/^op /,$p' "$out/kahead-grid.log" | grep -E '^(op|attn)'
bounded 120 "$build/bin/hopattn" bench --shapes 2:4096:4096:32:8,1:8192:8192:40:8,4:3072:3072:32:8 --hdim 128 --causal 1 \
  --kernels "$k" --rounds 3 --no-ceilings $cudnn_flag --csv "$out/kahead-gqa.csv" >"$out/kahead-gqa.log" 2>&1
echo "kahead gqa: exit $? ($((SECONDS - t0)) s)"; sed -n '/^op /,$p' "$out/kahead-gqa.log" | grep -E '^(op|attn)'
# 3. §3's H1 without a build: equal lengths as a varlen batch, the options row's dynamic dealing
#    against its static dealing (the varlen-uniform rows carry the varlen path's own cost in both).
bounded 90 "$build/bin/hopattn" bench --varlen 4096,4096,4096,4096 --hdim 128 --causal 1 \
  --kernels default,default+varlen_dynamic=0 --rounds 3 --no-ceilings --csv "$out/h1-dealing.csv" >"$out/h1-dealing.log" 2>&1
echo "H1 dealing: exit $? ($((SECONDS - t0)) s)"; grep -E '^attn_varlen' "$out/h1-dealing.log"
(cd "$out" && tar czf pending.tar.gz --remove-files ./*.log ./*.csv ./*.txt 2>/dev/null)
ls -la "$out"
