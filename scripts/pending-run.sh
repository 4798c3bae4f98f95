#!/usr/bin/env bash
# One device call for what a session wrote and has not yet run on a GPU (fourteenth session):
#  1. the padded causal call's dynamic dealing (docs/perf-diagnosis-fa3.md §3, H1: the 16-bit
#     persistent causal kernels claim the folded order's units from a counter in the call's
#     optional 16-byte workspace): the forward kernel tests that run it (and the static dealing
#     without a workspace), then default vs default+padded_dynamic=0 on the FA3 grid's causal
#     cells (hdim 64/128/256) and GQA prefill beside cuDNN, and the library of the build before
#     (BASE) against this one on hdim 128 causal (scripts/ab-libs.sh: the producer loop of those
#     kernels is no longer unrolled);
#  2. the paged chunk path's page ids checked a warp per sequence (the only way now), and whether
#     the chunk rules for q_len 32-95 should now take paged caches too: ChunkPath* tests, then
#     paged chunks at q_len 32, 64, 128: the library's choice, the chunk path forced ("fwd",
#     packing as its row-fill rule says) and the decode kernels, contiguous beside.
#   BUILD=build-dyn BASE=build-base scripts/pending-run.sh OUT_DIR [DEADLINE_S=560]
# BUILD: a default build configured with -DHOPATTN_PADDED_DYNAMIC_DEALING=ON (without it the
# dynamic dealing is not compiled: its test skips and both A/B arms deal statically), packed with
# scripts/pack-build.sh, keeping lib/, python/ and
# bin/{gpu_attention_fwd,gpu_kvcache,gpu_attention_varlen,hopattn} (~21 MB); BASE: a directory
# whose lib/ holds the default build (its static dealing; ~16 MB). Both carried. Made by:
#   cmake -S . -B build-dyn-full -G Ninja -DHOPATTN_PADDED_DYNAMIC_DEALING=ON
#   ninja -C build-dyn-full hopattn_cli gpu_attention_fwd gpu_kvcache gpu_attention_varlen
#   scripts/pack-build.sh build-dyn-full build-dyn   (then keep lib/, python/ and those bin/) Each step is bounded by the time left;
# everything lands in OUT_DIR/pending.tar.gz (the device tool returns a handful of files) and the
# rows are printed.
set -uo pipefail
out=${1:?usage: scripts/pending-run.sh OUT_DIR [DEADLINE_S]}
deadline=${2:-560}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${BUILD:-$root/build-dyn}" && pwd)
base=$(cd "${BASE:-$root/build-base}" && pwd)
mkdir -p "$out"
source "$root/scripts/device-env.sh" "$build" "$deadline"
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
summary() { grep -E "^\[  (PASSED|FAILED)|FAILED  \]" "$1"; grep -B2 -A8 "Failure" "$1" | head -30; }
# 1a. The forward tests that run the persistent causal kernels, dealt both ways.
bounded 120 "$build/bin/gpu_attention_fwd" \
  --gtest_filter='*PersistentCausal*:*RepeatedRunsAreBitIdentical*:*EveryKernelMatchesFloat64Reference*:*/AttentionFwd.MatchesFloat64Reference*:*SanitizerPersistent*' \
  >"$out/fwd-tests.log" 2>&1
echo "forward tests: exit $? ($((SECONDS - t0)) s)"; summary "$out/fwd-tests.log"
# 1b. Dynamic vs static dealing, causal, beside cuDNN.
bounded 100 "$build/bin/hopattn" bench --hdim 64,128,256 --causal 1 --kernels default,default+padded_dynamic=0 \
  --rounds 2 --no-ceilings $cudnn_flag --csv "$out/dealing-grid.csv" >"$out/dealing-grid.log" 2>&1
echo "dealing grid: exit $? ($((SECONDS - t0)) s)"; sed -n '/^op /,$p' "$out/dealing-grid.log" | grep -E '^(op|attn)'
# 1a'. The Python forward (a causal 16-bit call now passes a 16-byte workspace from torch's allocator).
(cd "$root/python/tests" && export PYTHONPATH="$build/python" PYTHONDONTWRITEBYTECODE=1 &&
  bounded 60 python3 -m unittest -v test_gpu.TestForward test_gpu.TestForwardOptions >"$out/python-fwd.log" 2>&1)
echo "python forward: exit $? ($((SECONDS - t0)) s)"; tail -4 "$out/python-fwd.log"
# 1b'. GQA prefill, dynamic vs static.
bounded 60 "$build/bin/hopattn" bench --shapes 2:4096:4096:32:8,1:8192:8192:40:8,4:3072:3072:32:8,1:16384:16384:32:8 \
  --hdim 128 --causal 1 --kernels default,default+padded_dynamic=0 --rounds 3 --no-ceilings $cudnn_flag \
  --csv "$out/dealing-gqa.csv" >"$out/dealing-gqa.log" 2>&1
echo "dealing gqa: exit $? ($((SECONDS - t0)) s)"; sed -n '/^op /,$p' "$out/dealing-gqa.log" | grep -E '^(op|attn)'
# 2a. The chunk path's tests (paged and not) and the plan tests.
bounded 100 "$build/bin/gpu_kvcache" --gtest_filter='*ChunkPath*:*Plan*' >"$out/chunk-tests.log" 2>&1
echo "chunk tests: exit $? ($((SECONDS - t0)) s)"; summary "$out/chunk-tests.log"
# 2b. Paged chunks at q_len 32 / 64 / 128: the library's choice, the chunk path, the decode kernels.
bounded 80 "$build/bin/hopattn" bench --op decode --qlen 32,64,128 --heads 32:8 --cache 1:8192,4:8192,1:32768 \
  --kv-dtype bf16 --page-sizes 0,128 --kernels default,fwd,decode --rounds 2 --csv "$out/chunk-rules-paged.csv" \
  >"$out/chunk-rules-paged.log" 2>&1
echo "paged chunk rules: exit $? ($((SECONDS - t0)) s)"; grep -E '^decode ' "$out/chunk-rules-paged.log"
# 1c. The build before against this one (its static dealing, unrolled producer) on hdim 128 causal.
if [ "$(left)" -gt 60 ]; then
  (cd "$base/lib" && ln -sf libhopattn.so.0.4.0 libhopattn.so.2 && ln -sf libhopattn.so.2 libhopattn.so)
  bounded 100 "$root/scripts/ab-libs.sh" "$out/ab" "$build/bin/hopattn" "$base/lib" "$build/lib" 2 \
    "--hdim 128 --causal 1 --rounds 1 --no-ceilings --kernels default" >"$out/ab-libs.log" 2>&1
  echo "ab-libs: exit $? ($((SECONDS - t0)) s)"; cat "$out/ab-libs.log" | tail -30
fi
(cd "$out" && tar czf pending.tar.gz --remove-files ./*.log ./*.csv ./*.txt ./ab 2>/dev/null)
ls -la "$out"
