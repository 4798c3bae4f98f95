#!/usr/bin/env bash
# One device call for what sessions wrote and have not yet run on a GPU, as steps in the order
# given (the most wanted first: a call may be cut short, and a start refused costs device time):
#   NEW=DIR U=DIR BASE=DIR scripts/pending-run.sh OUT_DIR [DEADLINE_S=560] [STEPS]
# STEPS (comma-separated; default verify,ab):
#  verify         NEW's e4m3 suite, the chunk-path and options KV-cache tests, the forward kernels'
#                 reference and options tests, `hopattn check --quick`
#  new-tests      NEW's every forward and e4m3 kernel test, the varlen tests and the chunk path's
#                 (shorter caps)
#  ab             scripts/ab-libs.sh, three arms in rotation: A = BASE, B = U, C = NEW, on hdim 128
#                 causal (FA3 grid), GQA prefill, hdim 64/256 causal, a window, a varlen batch (the
#                 options rows), hdim 128 non-causal
#  chunk-rules    the paged chunk tests and paged chunks at q_len 32/64/128 (library's choice, the
#                 chunk path forced, the decode kernels; contiguous beside), with NEW's build
#  targets36      issue 36's speed targets (window vs dense, varlen mix16, paged decode vs the
#                 contiguous cache and cuDNN), NEW's build
#  int8-options   the int8 options row's KV-cache tests (*Int8*:*Options*) and its Python test,
#                 NEW's build (e.g. a pack of lib/, bin/gpu_kvcache, python/)
#  kv16-final     branch kv16-mma-paged 0a0ff24 (NEW=build-ab/kv16p): the paged default and 512-key
#                 splits: hdim-128 KV-cache tests (not int8 / chunk path), Python paged, sweep, pages
#  kv16-mini      kv16-final in ~110 s
#  kv16-options   branch kv16-mma-options (NEW=build-ab/kv16o): the mma row's window / softcap /
#                 sinks tests and the options loops at hdim 128, the row vs the default with a window
#  kv16-hd256     branch kv16-mma-hd256 (NEW=build-ab/kv16h): the mma row at hdim 256 (tests, then
#                 against kv16_split_1cta and cuDNN at 16:8 / 32:16 / 8:1 / 32:4, a 4096-key window)
#  options-cost   what the options rows cost on a dense call (varlen hdim 128 runs them: 0.95x the
#                 padded-equal batch, where block padding and the tail model at ~0.99): 4 x 4096,
#                 16 heads, hdim 64/128, causal and not, the default row beside the same call with a
#                 window wider than the keys (the options row, same work), NEW's build
# Builds (each a directory with lib/libhopattn.so.0.4.0, and bin/ where a step runs its binaries:
# NEW's bin/{gpu_attention_fwd,gpu_attention_fp8,gpu_attention_varlen,gpu_kvcache,hopattn}),
# carried as one tar.xz (the libraries compress 13:1) and unpacked first, e.g.
#   mkdir -p /tmp/b && tar xJf build-carry/builds.tar.xz -C /tmp/b && NEW=/tmp/b/new ...
# The fifteenth session's run (its record: bench/records/uniform-turns-ab-2026-12-07-h100-s15.csv)
# had BASE = 4cdd7bf, U = the warp-uniform change, NEW = U + the retired H2 (branch h2u).
# Everything lands in OUT_DIR/pending.tar.gz (the device tool returns a handful of files) and the
# rows are printed.
set -uo pipefail
out=${1:?usage: scripts/pending-run.sh OUT_DIR [DEADLINE_S] [STEPS]}
deadline=${2:-560}
steps=${3:-verify,ab}
root=$(cd "$(dirname "$0")/.." && pwd)
new=$(cd "${NEW:-$root/build-new}" 2>/dev/null && pwd)
u=$(cd "${U:-$root/build-u}" 2>/dev/null && pwd)
base=$(cd "${BASE:-$root/build-base}" && pwd)
mkdir -p "$out"
# device-env.sh: cuDNN's directory, t0, left, bounded; LD_LIBRARY_PATH is set per step below.
first=$new
source "$root/scripts/device-env.sh" "$first" "$deadline"
for b in "$new" "$u" "$base"; do
  [ -n "$b" ] && [ -d "$b/lib" ] && (cd "$b/lib" && ln -sf libhopattn.so.0.4.0 libhopattn.so.2 && ln -sf libhopattn.so.2 libhopattn.so)
done
# The library path of a step that runs BUILD's binaries (BUILD's library first).
libs() { echo "$1/lib${cudnn_dir:+:$cudnn_dir}:/usr/local/cuda/lib64"; }
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
summary() { grep -E "^\[  (PASSED|FAILED)|FAILED  \]" "$1"; grep -B2 -A8 "Failure" "$1" | head -30; }
gqa=2:4096:4096:32:8,1:8192:8192:40:8,4:3072:3072:32:8,1:16384:16384:32:8

new_tests() {
  bounded 150 env "LD_LIBRARY_PATH=$(libs "$new")" "$new/bin/gpu_attention_fwd" >"$out/new-fwd-tests.log" 2>&1
  echo "new: forward tests: exit $? ($((SECONDS - t0)) s)"; summary "$out/new-fwd-tests.log"
  bounded 40 env "LD_LIBRARY_PATH=$(libs "$new")" "$new/bin/gpu_attention_fp8" >"$out/new-fp8-tests.log" 2>&1
  echo "new: e4m3 tests: exit $? ($((SECONDS - t0)) s)"; summary "$out/new-fp8-tests.log"
  bounded 50 env "LD_LIBRARY_PATH=$(libs "$new")" "$new/bin/gpu_attention_varlen" >"$out/new-varlen-tests.log" 2>&1
  echo "new: varlen tests: exit $? ($((SECONDS - t0)) s)"; summary "$out/new-varlen-tests.log"
  bounded 40 env "LD_LIBRARY_PATH=$(libs "$new")" "$new/bin/gpu_kvcache" --gtest_filter='*ChunkPath*:*OptionsOnEveryKernel*' \
    >"$out/new-chunk-tests.log" 2>&1
  echo "new: chunk tests: exit $? ($((SECONDS - t0)) s)"; summary "$out/new-chunk-tests.log"
}

# The merged build's suites that the h2u run cut short (e4m3, chunk path, options) and `hopattn check`.
verify() {
  bounded 120 env "LD_LIBRARY_PATH=$(libs "$new")" "$new/bin/gpu_attention_fp8" >"$out/verify-fp8-tests.log" 2>&1
  echo "verify: e4m3 tests: exit $? ($((SECONDS - t0)) s)"; summary "$out/verify-fp8-tests.log"
  bounded 120 env "LD_LIBRARY_PATH=$(libs "$new")" "$new/bin/gpu_kvcache" --gtest_filter='*ChunkPath*:*Options*' \
    >"$out/verify-chunk-tests.log" 2>&1
  echo "verify: chunk/options tests: exit $? ($((SECONDS - t0)) s)"; summary "$out/verify-chunk-tests.log"
  bounded 100 env "LD_LIBRARY_PATH=$(libs "$new")" "$new/bin/gpu_attention_fwd" \
    --gtest_filter='*EveryKernel*:*PersistentCausal*:*Options*:*Window*:*Softcap*:*Sinks*' >"$out/verify-fwd-tests.log" 2>&1
  echo "verify: forward tests: exit $? ($((SECONDS - t0)) s)"; summary "$out/verify-fwd-tests.log"
  bounded 60 env "LD_LIBRARY_PATH=$(libs "$new")" "$new/bin/hopattn" check --quick >"$out/verify-check.log" 2>&1
  echo "verify: hopattn check: exit $? ($((SECONDS - t0)) s)"; tail -5 "$out/verify-check.log"
}

ab() {
  bounded "$1" env LIB_C="$new/lib" "$root/scripts/ab-libs.sh" "$out/ab" "$new/bin/hopattn" "$base/lib" "$u/lib" 2 \
    "--hdim 128 --causal 1 --rounds 1 --no-ceilings --kernels default" \
    "--shapes $gqa --hdim 128 --causal 1 --rounds 1 --no-ceilings --kernels default" \
    "--hdim 64,256 --causal 1 --rounds 1 --no-ceilings --kernels default" \
    "--shapes 1:32768:32768:16:16:4095:0 --hdim 64,128 --causal 1 --rounds 1 --no-ceilings --kernels default" \
    "--varlen mix16 --hdim 64,128 --causal 0,1 --rounds 1 --no-ceilings --kernels default" \
    "--hdim 128 --causal 0 --rounds 1 --no-ceilings --kernels default" >"$out/ab.log" 2>&1
  echo "ab: exit $? ($((SECONDS - t0)) s)"; cat "$out/ab.log"
}

chunk_rules() {
  bounded 80 env "LD_LIBRARY_PATH=$(libs "$new")" "$new/bin/gpu_kvcache" --gtest_filter='*ChunkPath*:*Plan*' >"$out/chunk-tests.log" 2>&1
  echo "chunk tests: exit $? ($((SECONDS - t0)) s)"; summary "$out/chunk-tests.log"
  bounded 80 env "LD_LIBRARY_PATH=$(libs "$new")" "$new/bin/hopattn" bench --op decode --qlen 32,64,128 --heads 32:8 \
    --cache 1:8192,4:8192,1:32768 --kv-dtype bf16 --page-sizes 0,128 --kernels default,fwd,decode --rounds 2 \
    --csv "$out/chunk-rules-paged.csv" >"$out/chunk-rules-paged.log" 2>&1
  echo "paged chunk rules: exit $? ($((SECONDS - t0)) s)"; grep -E '^decode ' "$out/chunk-rules-paged.log"
}

# Issue 36's speed targets in one step, NEW's build, same run (each cell's rows rotate): the window
# 4095 on 32k against the dense 32k x 4k (hdim 64/128/256), the varlen mix16 against padded-equal
# (hdim 64/128, both masks), and the paged decode (pages 16/64, bf16 and int8) against the
# contiguous cache with cuDNN's bf16 beside.
targets36() {
  bounded 130 env "LD_LIBRARY_PATH=$(libs "$new")" "$new/bin/hopattn" bench --shapes 1:32768:32768:16:16:4095:0,1:32768:4096:16:16 \
    --hdim 64,128,256 --causal 0 --rounds 3 --no-ceilings $cudnn_flag --csv "$out/t36-window.csv" >"$out/t36-window.log" 2>&1
  echo "targets36 window: exit $? ($((SECONDS - t0)) s)"; grep -E "^attn_fwd" "$out/t36-window.log" | head -20
  bounded 90 env "LD_LIBRARY_PATH=$(libs "$new")" "$new/bin/hopattn" bench --varlen mix16 --hdim 64,128 --causal 0,1 \
    --rounds 2 --no-ceilings --csv "$out/t36-varlen.csv" >"$out/t36-varlen.log" 2>&1
  echo "targets36 varlen: exit $? ($((SECONDS - t0)) s)"; grep -iE "varlen/padded|vs padded" "$out/t36-varlen.log" | head -12
  bounded 150 env "LD_LIBRARY_PATH=$(libs "$new")" "$new/bin/hopattn" bench --op decode --qlen 1 --heads 64:8 \
    --cache 8:8192,32:8192,16:32768 --kv-dtype bf16,int8 --page-sizes 0,16,64 --rounds 2 $cudnn_flag \
    --csv "$out/t36-paged.csv" >"$out/t36-paged.log" 2>&1
  echo "targets36 paged: exit $? ($((SECONDS - t0)) s)"; grep -E "^decode" "$out/t36-paged.log" | head -40
}

# The int8 options row (seventeenth session; kv8_wgmma_options_1cta, id 24): its routing and every
# int8 and options KV-cache test with NEW's build (bin/gpu_kvcache, lib/, python/), then the
# Python int8 options test.
int8_options() {
  bounded 240 env "LD_LIBRARY_PATH=$(libs "$new")" "$new/bin/gpu_kvcache" --gtest_filter='*Int8*:*Options*-*Int8RegisterKernels*:*ChunkPath*' \
    >"$out/int8-options-tests.log" 2>&1
  echo "int8 options: kvcache tests: exit $? ($((SECONDS - t0)) s)"; summary "$out/int8-options-tests.log"
  [ -d "$new/python/hopattn" ] && ln -sf ../../lib/libhopattn.so.0.4.0 "$new/python/hopattn/libhopattn.so"
  (cd "$root/python/tests" && bounded 60 env "LD_LIBRARY_PATH=$(libs "$new")" PYTHONPATH="$new/python" \
    python3 -m unittest test_gpu.TestKvCacheOptions.test_int8_options_against_fp64 >"$out/int8-options-py.log" 2>&1)
  echo "int8 options: python: exit $? ($((SECONDS - t0)) s)"; tail -3 "$out/int8-options-py.log"
}

# NEW's `hopattn bench ARGS...` under CAP seconds into OUT/NAME.csv and .log, then its rows.
new_bench() {
  local name=$1 cap=$2
  shift 2
  bounded "$cap" env "LD_LIBRARY_PATH=$(libs "$new")" "$new/bin/hopattn" bench "$@" --csv "$out/$name.csv" >"$out/$name.log" 2>&1
  echo "$name: exit $? ($((SECONDS - t0)) s)"; grep -E "^(attn_fwd|decode) " "$out/$name.log" | head -40
}
# NEW's test binary BIN (gpu_attention_fwd, gpu_kvcache, ...) with a gtest filter under CAP seconds
# into OUT/NAME.log, then its summary:  new_gtests BIN NAME CAP FILTER
new_gtests() {
  bounded "$3" env "LD_LIBRARY_PATH=$(libs "$new")" "$new/bin/$1" --gtest_filter="$4" >"$out/$2.log" 2>&1
  echo "$2: exit $? ($((SECONDS - t0)) s)"; summary "$out/$2.log"
}

# The options rows' cost on a dense call (eighteenth session's model: varlen mix16's block padding
# and tail explain 0.99 of the padded-equal batch at hdim 128, where it measures 0.95).
options_cost() {
  new_bench options-cost 120 --shapes 4:4096:4096:16:16,4:4096:4096:16:16:8192:8192 --hdim 64,128 --causal 0,1 \
    --rounds 3 --no-ceilings
}

# Branch kv16-mma-paged at 0a0ff24 (NEW=build-ab/kv16p): the paged default and the 512-key splits
# (the plan changed, the kernels did not since kv16-paged): the hdim-128 KV-cache tests but the int8
# and chunk-path ones, the Python paged tests, the split sweep with the new rule, paged defaults.
kv16_final() {
  new_gtests gpu_kvcache kv16f-tests 120 '*hd128*-*Int8*:*ChunkPath*:*Kv16MmaSwapMatchesTheReference/fp16*'
  [ -d "$new/python/hopattn" ] && ln -sf ../../lib/libhopattn.so.0.4.0 "$new/python/hopattn/libhopattn.so"
  (cd "$root/python/tests" && bounded 50 env "LD_LIBRARY_PATH=$(libs "$new")" PYTHONPATH="$new/python" \
    python3 -m unittest test_gpu.TestKvCache test_gpu.TestAppend \
    test_gpu.TestKvCacheOptions.test_plain_then_options_at_the_same_shapes >"$out/kv16f-py.log" 2>&1)
  echo "kv16f-py: exit $? ($((SECONDS - t0)) s)"; tail -4 "$out/kv16f-py.log"
  new_bench kv16f-splits 60 --op decode --qlen 1 --heads 64:8,8:1 --cache 1:1024,1:4096,1:8192 --kv-dtype bf16 \
    --kernels default --splits 0,1,2,4,8,16,64 --rounds 2 $cudnn_flag
  new_bench kv16f-pages 40 --op decode --qlen 1 --heads 64:8 --cache 1:8192,8:8192,1:32768 --kv-dtype bf16 \
    --page-sizes 0,16,64,128 --kernels default --rounds 2 $cudnn_flag
  # Splits past 0.8 of a wave (the plan splits only below it): 24 x 8k at 64:8 is 192 CTAs, 1.45
  # waves of one CTA per SM (0.94x cuDNN in kp); 2 splits would fill 2.9 waves.
  new_bench kv16f-waves 30 --op decode --qlen 1 --heads 64:8 --cache 16:8192,24:8192 --kv-dtype bf16 \
    --kernels default --splits 0,2,3 --rounds 2 $cudnn_flag
}

# kv16-final in under ~110 s (a budget's last call): the paged default's failing tests of the
# kv16-paged run and the default-path tests at hdim 128, Python's paged tests, a short sweep.
kv16_mini() {
  new_gtests gpu_kvcache kv16m-tests 45 '*BadPageIds*/*hd128:*PagedCacheMatchesTheContiguous*/*hd128:*EveryKernelMatchesTheReference/*hd128:*Kv16KernelsOnRaggedSplitBatches/bf16_hd128:*ForcedSplitsAndPacking/*hd128:*RaggedLengths*/*hd128:*CacheLengthsUpTo64k/bf16_hd128:*CudaGraph*/*hd128:*RepeatedRuns*/bf16_hd128'
  [ -d "$new/python/hopattn" ] && ln -sf ../../lib/libhopattn.so.0.4.0 "$new/python/hopattn/libhopattn.so"
  (cd "$root/python/tests" && bounded 40 env "LD_LIBRARY_PATH=$(libs "$new")" PYTHONPATH="$new/python" \
    python3 -m unittest test_gpu.TestKvCache.test_paged_cache_equals_the_contiguous_cache \
    test_gpu.TestAppend.test_paged_append_matches_the_contiguous_append >"$out/kv16m-py.log" 2>&1)
  echo "kv16m-py: exit $? ($((SECONDS - t0)) s)"; tail -3 "$out/kv16m-py.log"
  new_bench kv16m-splits 30 --op decode --qlen 1 --heads 64:8,8:1 --cache 1:1024,1:8192 --kv-dtype bf16 \
    --kernels default --splits 0,4,16,64 --rounds 1 $cudnn_flag
}

# Branch kv16-mma-options (NEW=build-ab/kv16o): the mma.sync row with a window, softcap and sinks
# (forced by name; the defaults keep option calls on the split rows until this runs): its options
# tests and the every-row options loops at hdim 128, then the row forced against the default (the
# split rows) with a 1024-key window.
kv16_options() {
  new_gtests gpu_kvcache kv16o-tests 200 '*Kv16MmaSwap*/*hd128:*Options*/*hd128-*Int8*:*ChunkPath*'
  new_bench kv16o-window 60 --op decode --qlen 1 --heads 64:8,32:8 --cache 1:8192,8:8192,1:32768 --kv-dtype bf16 \
    --kernels kv16_mma_swap_8w_1cta,default --window 1024 --rounds 2 $cudnn_flag
}

# Branch kv16-mma-hd256 (NEW=build-ab/kv16h, b1a3dc7; it holds kv16-mma-options too): the mma.sync
# row at hdim 256 (forced by name only; unmeasured_hdims), Gemma-like calls (groups 2-8, softcap,
# windows): its hdim-256 tests, then the row against kv16_split_1cta (the default there) and cuDNN.
kv16_hd256() {
  new_gtests gpu_kvcache kv16h-tests 240 '*Kv16MmaSwap*/*_hd256:*EveryKernelMatchesTheReference/*_hd256:*PagedCacheMatchesTheContiguous*/*_hd256:*Options*/*_hd256-*Int8*:*ChunkPath*'
  new_bench kv16h-ab 90 --op decode --hdim 256 --qlen 1 --heads 16:8,32:16,8:1,32:4 --cache 1:8192,8:8192,1:32768 \
    --kv-dtype bf16 --kernels kv16_mma_swap_8w_1cta,kv16_split_1cta --rounds 2 $cudnn_flag
  new_bench kv16h-window 50 --op decode --hdim 256 --qlen 1 --heads 16:8,32:16 --cache 1:32768,8:8192 --kv-dtype bf16 \
    --kernels kv16_mma_swap_8w_1cta,kv16_split_1cta --window 4096 --page-sizes 0,16 --rounds 2 $cudnn_flag
}

for s in ${steps//,/ }; do
  if [ "$(left)" -lt 40 ]; then echo "$s: skipped (deadline)"; continue; fi
  case $s in
    new-tests) new_tests ;;
    targets36) targets36 ;;
    int8-options) int8_options ;;
    verify) verify ;;
    ab) ab $(( $(left) - ${AB_LEAVE:-150} )) ;;
    chunk-rules) chunk_rules ;;
    options-cost) options_cost ;;
    kv16-final) kv16_final ;;
    kv16-mini) kv16_mini ;;
    kv16-options) kv16_options ;;
    kv16-hd256) kv16_hd256 ;;
    *) echo "unknown step $s" ;;
  esac
done
(cd "$out" && tar czf pending.tar.gz --remove-files ./*.log ./*.csv ./*.txt ./ab 2>/dev/null)
ls -la "$out"
