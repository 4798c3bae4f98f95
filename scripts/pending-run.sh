#!/usr/bin/env bash
# One device call for what sessions wrote and have not yet run on a GPU, as steps in the order
# given (the most wanted first: a call may be cut short, and a start refused costs device time):
#   DYN=build-dyn H2=build-h2 BASE=build-base scripts/pending-run.sh OUT_DIR [DEADLINE_S=560] [STEPS]
# STEPS (comma-separated; default turns-tests,turns-ab,dealing-tests,dealing-bench):
#  turns-tests    (fifteenth session; docs/perf-diagnosis-fa3.md §3, H2: a tile's first S and last
#                 P·V take no ping-pong turn, N - 1 turns per tile instead of N + 1) every forward
#                 and e4m3 kernel test, the varlen tests and the chunk path's (the same mainloop),
#                 with H2's build
#  turns-ab       scripts/ab-libs.sh BASE (N + 1 turns) vs H2 under H2's bench: hdim 128 causal on
#                 the FA3 grid, GQA prefill, hdim 64/256 causal, hdim 128 non-causal
#  dealing-tests  (fourteenth session; §3, H1: the padded causal call's dynamic dealing, the 16-bit
#                 persistent causal kernels claiming the folded order's units from a counter in the
#                 call's optional 16-byte workspace) the forward tests that run it, with DYN's build
#  dealing-bench  default vs default+padded_dynamic=0 (DYN's bench) on hdim 64/128/256 causal and
#                 GQA prefill, beside cuDNN
#  chunk-rules    the paged chunk tests and paged chunks at q_len 32/64/128 (library's choice, the
#                 chunk path forced, the decode kernels; contiguous beside), with DYN's build
#  dealing-ab     scripts/ab-libs.sh BASE vs DYN on hdim 128 causal (DYN's producer loop is not
#                 unrolled)
# Builds (each carried; ~55 MiB together), made here:
#  BASE  lib/ of a default build of the commit before both changes (libhopattn.so.0.4.0, ~16 MB)
#  DYN   cmake -S . -B build-dyn-full -G Ninja -DHOPATTN_PADDED_DYNAMIC_DEALING=ON, ninja hopattn_cli
#        gpu_attention_fwd gpu_kvcache gpu_attention_varlen, scripts/pack-build.sh build-dyn-full
#        build-dyn, keeping lib/ and those bin/ (~21 MB)
#  H2    a default build with the turn change: lib/ and bin/{gpu_attention_fwd,gpu_attention_fp8,
#        gpu_kvcache,gpu_attention_varlen,hopattn} (~21 MB)
# Everything lands in OUT_DIR/pending.tar.gz (the device tool returns a handful of files) and the
# rows are printed.
set -uo pipefail
out=${1:?usage: scripts/pending-run.sh OUT_DIR [DEADLINE_S] [STEPS]}
deadline=${2:-560}
steps=${3:-turns-tests,turns-ab,dealing-tests,dealing-bench}
root=$(cd "$(dirname "$0")/.." && pwd)
dyn=$(cd "${DYN:-$root/build-dyn}" 2>/dev/null && pwd)
h2=$(cd "${H2:-$root/build-h2}" 2>/dev/null && pwd)
base=$(cd "${BASE:-$root/build-base}" && pwd)
mkdir -p "$out"
# device-env.sh: cuDNN's directory, t0, left, bounded; LD_LIBRARY_PATH is set per step below.
first=${h2:-$dyn}
source "$root/scripts/device-env.sh" "$first" "$deadline"
for b in "$dyn" "$h2" "$base"; do
  [ -n "$b" ] && [ -d "$b/lib" ] && (cd "$b/lib" && ln -sf libhopattn.so.0.4.0 libhopattn.so.2 && ln -sf libhopattn.so.2 libhopattn.so)
done
# The library path of a step that runs BUILD's binaries (BUILD's library first).
libs() { echo "$1/lib${cudnn_dir:+:$cudnn_dir}:/usr/local/cuda/lib64"; }
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
summary() { grep -E "^\[  (PASSED|FAILED)|FAILED  \]" "$1"; grep -B2 -A8 "Failure" "$1" | head -30; }
gqa=2:4096:4096:32:8,1:8192:8192:40:8,4:3072:3072:32:8,1:16384:16384:32:8

turns_tests() {
  bounded 170 env "LD_LIBRARY_PATH=$(libs "$h2")" "$h2/bin/gpu_attention_fwd" >"$out/turns-fwd-tests.log" 2>&1
  echo "turns: forward tests: exit $? ($((SECONDS - t0)) s)"; summary "$out/turns-fwd-tests.log"
  bounded 50 env "LD_LIBRARY_PATH=$(libs "$h2")" "$h2/bin/gpu_attention_fp8" >"$out/turns-fp8-tests.log" 2>&1
  echo "turns: e4m3 tests: exit $? ($((SECONDS - t0)) s)"; summary "$out/turns-fp8-tests.log"
  bounded 60 env "LD_LIBRARY_PATH=$(libs "$h2")" "$h2/bin/gpu_attention_varlen" >"$out/turns-varlen-tests.log" 2>&1
  echo "turns: varlen tests: exit $? ($((SECONDS - t0)) s)"; summary "$out/turns-varlen-tests.log"
  bounded 50 env "LD_LIBRARY_PATH=$(libs "$h2")" "$h2/bin/gpu_kvcache" --gtest_filter='*ChunkPath*:*OptionsOnEveryKernel*' \
    >"$out/turns-chunk-tests.log" 2>&1
  echo "turns: chunk tests: exit $? ($((SECONDS - t0)) s)"; summary "$out/turns-chunk-tests.log"
}

turns_ab() {
  bounded 170 "$root/scripts/ab-libs.sh" "$out/ab-turns" "$h2/bin/hopattn" "$base/lib" "$h2/lib" 2 \
    "--hdim 128 --causal 1 --rounds 1 --no-ceilings --kernels default" \
    "--shapes $gqa --hdim 128 --causal 1 --rounds 1 --no-ceilings --kernels default" \
    "--hdim 64,256 --causal 1 --rounds 1 --no-ceilings --kernels default" \
    "--hdim 128 --causal 0 --rounds 1 --no-ceilings --kernels default" >"$out/ab-turns.log" 2>&1
  echo "turns: ab-libs: exit $? ($((SECONDS - t0)) s)"; cat "$out/ab-turns.log"
}

dealing_tests() {
  bounded 90 env "LD_LIBRARY_PATH=$(libs "$dyn")" "$dyn/bin/gpu_attention_fwd" \
    --gtest_filter='*PersistentCausal*:*RepeatedRunsAreBitIdentical*:*EveryKernelMatchesFloat64Reference*:*/AttentionFwd.MatchesFloat64Reference*:*SanitizerPersistent*' \
    >"$out/dealing-fwd-tests.log" 2>&1
  echo "dealing: forward tests: exit $? ($((SECONDS - t0)) s)"; summary "$out/dealing-fwd-tests.log"
}

dealing_bench() {
  bounded 100 env "LD_LIBRARY_PATH=$(libs "$dyn")" "$dyn/bin/hopattn" bench --hdim 64,128,256 --causal 1 \
    --kernels default,default+padded_dynamic=0 --rounds 2 --no-ceilings $cudnn_flag \
    --csv "$out/dealing-grid.csv" >"$out/dealing-grid.log" 2>&1
  echo "dealing: grid: exit $? ($((SECONDS - t0)) s)"; sed -n '/^op /,$p' "$out/dealing-grid.log" | grep -E '^(op|attn)'
  bounded 60 env "LD_LIBRARY_PATH=$(libs "$dyn")" "$dyn/bin/hopattn" bench --shapes $gqa --hdim 128 --causal 1 \
    --kernels default,default+padded_dynamic=0 --rounds 3 --no-ceilings $cudnn_flag \
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

dealing_ab() {
  bounded 100 "$root/scripts/ab-libs.sh" "$out/ab-dealing" "$dyn/bin/hopattn" "$base/lib" "$dyn/lib" 2 \
    "--hdim 128 --causal 1 --rounds 1 --no-ceilings --kernels default" >"$out/ab-dealing.log" 2>&1
  echo "dealing: ab-libs: exit $? ($((SECONDS - t0)) s)"; tail -30 "$out/ab-dealing.log"
}

for s in ${steps//,/ }; do
  if [ "$(left)" -lt 40 ]; then echo "$s: skipped (deadline)"; continue; fi
  case $s in
    turns-tests) turns_tests ;;
    turns-ab) turns_ab ;;
    dealing-tests) dealing_tests ;;
    dealing-bench) dealing_bench ;;
    chunk-rules) chunk_rules ;;
    dealing-ab) dealing_ab ;;
    *) echo "unknown step $s" ;;
  esac
done
(cd "$out" && tar czf pending.tar.gz --remove-files ./*.log ./*.csv ./*.txt ./ab-* 2>/dev/null)
ls -la "$out"
