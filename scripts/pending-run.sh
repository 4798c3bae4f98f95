#!/usr/bin/env bash
# One device call for what sessions wrote and have not yet run on a GPU, as steps in the order
# given (the most wanted first: a call may be cut short, and a start refused costs device time):
#   NEW=DIR U=DIR DYN=DIR BASE=DIR scripts/pending-run.sh OUT_DIR [DEADLINE_S=560] [STEPS]
# STEPS (comma-separated; default new-tests,ab,dealing-tests,dealing-bench):
#  new-tests      NEW's every forward and e4m3 kernel test, the varlen tests and the chunk path's
#  verify         NEW's e4m3 suite, the chunk-path and options KV-cache tests, the forward kernels'
#                 reference and options tests, `hopattn check` (longer caps than new-tests)
#  ab             scripts/ab-libs.sh, three arms in rotation: A = BASE, B = U, C = NEW, on hdim 128
#                 causal (FA3 grid), GQA prefill, hdim 64/256 causal, hdim 128 non-causal, a window
#                 and a varlen batch (the options rows)
#  dealing-tests  (fourteenth session; docs/perf-diagnosis-fa3.md §3, H1: the padded causal call's
#                 dynamic dealing, the 16-bit persistent causal kernels claiming the folded order's
#                 units from a counter in the call's optional 16-byte workspace) the forward tests
#                 that run it, with DYN's build
#  dealing-bench  default vs default+padded_dynamic=0 (DYN's bench) on hdim 128 causal and
#                 GQA prefill, beside cuDNN
#  chunk-rules    the paged chunk tests and paged chunks at q_len 32/64/128 (library's choice, the
#                 chunk path forced, the decode kernels; contiguous beside), with DYN's build
# Builds, fifteenth session (each a directory with lib/libhopattn.so.0.4.0, and bin/ where a step
# runs its binaries; carried as one tar.xz, ~8 MB: the libraries compress 13:1):
#  BASE  main at 4cdd7bf (the default build; lib/ only)
#  U     BASE + the warp-uniform warpgroup index and options tile coordinates (branch uniform-wg;
#        lib/, bin/hopattn)
#  NEW   U + a tile's first S and last P·V without a ping-pong turn (N - 1 turns per tile; §3 H2;
#        branch h2u; lib/ and bin/{gpu_attention_fwd,gpu_attention_fp8,gpu_attention_varlen,
#        gpu_kvcache,hopattn})
#  DYN   BASE configured with -DHOPATTN_PADDED_DYNAMIC_DEALING=ON (lib/ with the cuDNN plugin, bin/
#        {gpu_attention_fwd,gpu_kvcache,gpu_attention_varlen,hopattn})
# Everything lands in OUT_DIR/pending.tar.gz (the device tool returns a handful of files) and the
# rows are printed.
set -uo pipefail
out=${1:?usage: scripts/pending-run.sh OUT_DIR [DEADLINE_S] [STEPS]}
deadline=${2:-560}
steps=${3:-new-tests,ab,dealing-tests,dealing-bench}
root=$(cd "$(dirname "$0")/.." && pwd)
dyn=$(cd "${DYN:-$root/build-dyn}" 2>/dev/null && pwd)
new=$(cd "${NEW:-$root/build-new}" 2>/dev/null && pwd)
u=$(cd "${U:-$root/build-u}" 2>/dev/null && pwd)
base=$(cd "${BASE:-$root/build-base}" && pwd)
mkdir -p "$out"
# device-env.sh: cuDNN's directory, t0, left, bounded; LD_LIBRARY_PATH is set per step below.
first=${new:-$dyn}
source "$root/scripts/device-env.sh" "$first" "$deadline"
for b in "$dyn" "$new" "$u" "$base"; do
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

dealing_tests() {
  bounded 60 env "LD_LIBRARY_PATH=$(libs "$dyn")" "$dyn/bin/gpu_attention_fwd" \
    --gtest_filter='*PersistentCausal*:*RepeatedRunsAreBitIdentical*:*EveryKernelMatchesFloat64Reference*:*/AttentionFwd.MatchesFloat64Reference*:*SanitizerPersistent*' \
    >"$out/dealing-fwd-tests.log" 2>&1
  echo "dealing: forward tests: exit $? ($((SECONDS - t0)) s)"; summary "$out/dealing-fwd-tests.log"
}

dealing_bench() {
  bounded 50 env "LD_LIBRARY_PATH=$(libs "$dyn")" "$dyn/bin/hopattn" bench --hdim 128 --causal 1 \
    --kernels default,default+padded_dynamic=0 --rounds 2 --no-ceilings $cudnn_flag \
    --csv "$out/dealing-grid.csv" >"$out/dealing-grid.log" 2>&1
  echo "dealing: grid: exit $? ($((SECONDS - t0)) s)"; sed -n '/^op /,$p' "$out/dealing-grid.log" | grep -E '^(op|attn)'
  bounded 40 env "LD_LIBRARY_PATH=$(libs "$dyn")" "$dyn/bin/hopattn" bench --shapes $gqa --hdim 128 --causal 1 \
    --kernels default,default+padded_dynamic=0 --rounds 2 --no-ceilings $cudnn_flag \
    --csv "$out/dealing-gqa.csv" >"$out/dealing-gqa.log" 2>&1
  echo "dealing: gqa: exit $? ($((SECONDS - t0)) s)"; sed -n '/^op /,$p' "$out/dealing-gqa.log" | grep -E '^(op|attn)'
}

chunk_rules() {
  bounded 80 env "LD_LIBRARY_PATH=$(libs "$dyn")" "$dyn/bin/gpu_kvcache" --gtest_filter='*ChunkPath*:*Plan*' >"$out/chunk-tests.log" 2>&1
  echo "chunk tests: exit $? ($((SECONDS - t0)) s)"; summary "$out/chunk-tests.log"
  bounded 80 env "LD_LIBRARY_PATH=$(libs "$dyn")" "$dyn/bin/hopattn" bench --op decode --qlen 32,64,128 --heads 32:8 \
    --cache 1:8192,4:8192,1:32768 --kv-dtype bf16 --page-sizes 0,128 --kernels default,fwd,decode --rounds 2 \
    --csv "$out/chunk-rules-paged.csv" >"$out/chunk-rules-paged.log" 2>&1
  echo "paged chunk rules: exit $? ($((SECONDS - t0)) s)"; grep -E '^decode ' "$out/chunk-rules-paged.log"
}

for s in ${steps//,/ }; do
  if [ "$(left)" -lt 40 ]; then echo "$s: skipped (deadline)"; continue; fi
  case $s in
    new-tests) new_tests ;;
    verify) verify ;;
    ab) ab $(( $(left) - ${AB_LEAVE:-150} )) ;;
    dealing-tests) dealing_tests ;;
    dealing-bench) dealing_bench ;;
    chunk-rules) chunk_rules ;;
    *) echo "unknown step $s" ;;
  esac
done
(cd "$out" && tar czf pending.tar.gz --remove-files ./*.log ./*.csv ./*.txt ./ab 2>/dev/null)
ls -la "$out"
