#!/usr/bin/env bash
# One call on an H100/H200 machine (no network needed): the gpu test suite, `hopattn check` and
# `hopattn bench`, with logs and CSV written to OUT_DIR.
#
#   scripts/gpu-run.sh OUT_DIR [--quick] [--sanitize] [--tests REGEX] [--bench "ARGS" | --no-bench]
#                      [--bench2 "ARGS"] [--gemm-bench "ARGS"] [--decode-bench "ARGS"] [--varlen-bench "ARGS"] [--kernel-times "ARGS"]
#                      [--ncu-gemm "M N K VARIANT"] [--no-sass]
#                      [--timeline "SPECS"] [--int8-timeline "SPECS"] [--deadline S]
#
# --tests REGEX: only the gpu tests whose CTest name matches (default: all of label gpu). Names of
#   parameterised tests look like "Compiled/KvCacheGpu.Name/bf16_hd128  # GetParam() = bf16 hd128":
#   do not anchor a regex with $ after the config (summary.txt counts what was selected).
# --shard I/N: only the I-th of N interleaved shares of the gpu tests (ctest -I I,,N: every N-th
#   test from the I-th, 1-based; the whole suite no longer fits one 600 s call: 261 of 382 tests
#   in 509 s on 2026-12-06). Combine with --tests to shard a selection.
# --test-jobs J: run J test processes at once on the one GPU (ctest -j; the tests time nothing, and
#   most are short launches that leave the GPU idle between them; default 1).
# --deadline S: the call has S seconds in all (the device tool's limit, e.g. 570 for a 600 s call).
#   Every step is bounded by what is left, minus 20 s kept for the summary and the log archive; a
#   step that would start with under 30 s left is skipped ("skipped (deadline)" in summary.txt).
#   A step cut by the deadline reads "exit 124" (r135 lost its sanitizer step and the archive to
#   the device tool's own limit; with --deadline the steps before it still come back bundled).
# --no-tests: skip the gpu test suite (a run that only measures).
# --no-bench: skip the attention bench (e.g. a run that only measures decode or the GEMM).
# --no-check: skip `hopattn check`.
# --no-sass: skip the SASS summary (cuobjdump of the whole library and the overlap check: ~1.5 min
#   on 2 cores; r110's 150 s ncu call spent most of its time there and profiled nothing).
# --ncu-gemm "M N K VARIANT": ncu source counters of that GEMM (one launch) and of cuBLAS's kernel
#   for the same shape, summarised by scripts/ncu_source_top.py into ncu-gemm.txt.
# --ncu-attn "HDIM CAUSAL SEQLEN KERNEL [DTYPE];...": the same for one forward attention launch (DTYPE
#   bf16 by default, or e4m3; the bench's FA3-grid shape) and cuDNN's kernel beside it (not for
#   e4m3), for each spec, into ncu-attn.txt.
# --ncu-decode "ARGS": the same for one launch of the decode split kernel in
#   `hopattn bench --op decode ARGS` (give one shape, one --kernels entry and one --kv-dtype),
#   into ncu-decode.txt.
# --kernel-times "ARGS": the duration of every decode-side kernel launch (split kernels, the tail
#   kernel, the combine) under ncu (gpu__time_duration only, clocks and caches left alone, the
#   first 80 launches whose name contains "decode") in `hopattn bench --op decode ARGS`, summarised
#   per kernel and grid by scripts/ncu_kernel_times.py into kernel-times.txt (the raw CSV beside it).
#   Launches are serialised under ncu: a kernel's time, not the step's overlap.
# --timeline / --int8-timeline need a build with -DHOPATTN_BUILD_TIMELINES=ON.
# --timeline "HQ:HKV B:L SPLITS VARIANT;...": bin/decode_timeline (per-CTA phase stamps of the
#   16-bit decode kernel and the combine) for each spec, CSVs timeline-*.csv.
# --int8-timeline "HQ:HKV B:L VARIANT;...": bin/decode_int8_timeline (per-warp, per-tile stamps of
#   the int8 mma.sync kernels, internal ids 16 and 17) for each spec; summaries in int8-timeline.txt.
#
# The device tool brings back only a handful of files per call: the step logs are bundled into
# logs.tar.gz at the end (summary.txt and the CSVs stay separate), and the SASS dump is not kept.
#
# Uses the build in $BUILD (default build/) when it holds bin/hopattn, a build made elsewhere
# included (carry it with .deps); otherwise builds first (needs .deps from scripts/bootstrap.sh).
# Each step's exit status is recorded in OUT_DIR/summary.txt; the script exits non-zero if any
# step failed.
set -uo pipefail
out=${1:?usage: scripts/gpu-run.sh OUT_DIR [--quick] [--bench \"ARGS\"]}
shift
deadline="" bench2_args="" kernel_times="" no_sass="" no_tests="" ncu_attn="" timeline="" int8_timeline="" quick="" bench_args="" gemm_bench_args="" decode_bench_args="" varlen_bench_args="" sanitize_flag="" tests_regex="" test_shard="" test_jobs=1 no_bench="" no_check="" ncu_gemm="" ncu_decode=""
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=--quick ;;
    --sanitize) sanitize_flag=1 ;;
    --bench) bench_args=$2; shift ;;
    --gemm-bench) gemm_bench_args=$2; shift ;;
    --decode-bench) decode_bench_args=$2; shift ;;
    --varlen-bench) varlen_bench_args=$2; shift ;;
    --bench2) bench2_args=$2; shift ;;
    --tests) tests_regex=$2; shift ;;
    --shard) test_shard=$2; shift ;;
    --test-jobs) test_jobs=$2; shift ;;
    --deadline) deadline=$2; shift ;;
    --no-bench) no_bench=1 ;;
    --no-tests) no_tests=1 ;;
    --no-check) no_check=1 ;;
    --no-sass) no_sass=1 ;;
    --ncu-gemm) ncu_gemm=$2; shift ;;
    --ncu-attn) ncu_attn=$2; shift ;;
    --ncu-decode) ncu_decode=$2; shift ;;
    --kernel-times) kernel_times=$2; shift ;;
    --timeline) timeline=$2; shift ;;
    --int8-timeline) int8_timeline=$2; shift ;;
    *) echo "unknown option $1"; exit 2 ;;
  esac
  shift
done
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cd "$root"

if [ ! -x "$build/bin/hopattn" ]; then
  echo "== building (no prebuilt $build/bin/hopattn)"
  cmake -S . -B "$build" -G Ninja >"$out/build.log" 2>&1 && cmake --build "$build" -j "$(nproc)" >>"$out/build.log" 2>&1 \
    || { echo "build failed; see build.log"; tail -30 "$out/build.log"; exit 1; }
fi
# The device tool carries no symbolic links: the library's soname links and the Python package's
# link to it (a packed build, scripts/pack-build.sh) are made again here.
for so in "$build"/lib/libhopattn.so.[0-9]*.[0-9]*.[0-9]*; do
  [ -f "$so" ] || continue
  (cd "$build/lib" && ln -sf "$(basename "$so")" libhopattn.so.2 && ln -sf libhopattn.so.2 libhopattn.so)
  [ -d "$build/python/hopattn" ] && (cd "$build/python/hopattn" && ln -sf "../../lib/$(basename "$so")" libhopattn.so)
done
# A build made on another machine records its source path in CTest's files: make that path
# resolve here too.
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
if [ -n "$src" ] && [ "$src" != "$root" ] && [ ! -e "$src" ]; then
  mkdir -p "$(dirname "$src")" && ln -s "$root" "$src"
fi
bld=$(sed -n 's/^CMAKE_CACHEFILE_DIR:INTERNAL=//p' "$build/CMakeCache.txt")
if [ -n "$bld" ] && [ "$bld" != "$build" ] && [ ! -e "$bld" ]; then
  mkdir -p "$(dirname "$bld")" && ln -s "$build" "$bld"
fi

# A shell function run under a time limit: in its own process group (job control), so that the
# programs it starts go with it when the limit kills the group.
bounded_function() {  # bounded_function SECONDS FUNCTION ARGS...
  local limit=$1 pid watchdog rc
  shift
  set -m
  "$@" &
  pid=$!
  set +m
  (sleep "$limit"; kill -TERM -- -"$pid" 2>/dev/null; sleep 10; kill -KILL -- -"$pid" 2>/dev/null) &
  watchdog=$!
  wait "$pid"
  rc=$?
  kill "$watchdog" 2>/dev/null
  wait "$watchdog" 2>/dev/null
  # A group killed by the watchdog reads as timeout(1)'s 124, like a program's.
  [ $rc -eq 143 ] || [ $rc -eq 137 ] && rc=124
  return $rc
}
step() {  # step NAME LOG COMMAND...
  local name=$1 log=$2; shift 2
  echo "== $name"
  local t0=$SECONDS limit=${STEP_TIMEOUT:-1200}
  if [ -n "$deadline" ]; then
    local left=$((deadline - SECONDS - 20))
    if [ $left -lt 30 ]; then
      echo "$name: skipped (deadline, $((deadline - SECONDS)) s left)" | tee -a "$summary"
      return 0
    fi
    [ $left -lt "$limit" ] && limit=$left
  fi
  if [ "$(type -t "$1")" = file ]; then  # a program: bounded, so a hang cannot eat the session
    timeout --kill-after=10 "$limit" "$@" >"$out/$log" 2>&1
  elif [ -n "$deadline" ]; then
    bounded_function "$limit" "$@" >"$out/$log" 2>&1
  else
    "$@" >"$out/$log" 2>&1
  fi
  local rc=$?
  echo "$name: exit $rc ($((SECONDS - t0)) s), log $log" | tee -a "$summary"
  return 0
}
# At most a handful of files come back from a lent machine: machine facts, SASS summary and step
# statuses all go to summary.txt; each big step has its own log.
summary="$out/summary.txt"
: >"$summary"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  "$build/bin/hopattn" info; } >>"$summary" 2>&1
# Matrix kernels must run on HGMMA with no local memory: count both in the library's SASS.
sass_summary() {
  command -v cuobjdump >/dev/null || { echo "cuobjdump not found"; return 1; }
  cuobjdump -sass "$build/lib/libhopattn.so" >"$out/sass.txt" || return 1
  echo "HGMMA instructions: $(grep -c HGMMA "$out/sass.txt")"
  grep -oE "HGMMA\.[0-9x]+\.[A-Z0-9]+" "$out/sass.txt" | sort | uniq -c
  local lmem
  lmem=$(grep -cE "\b(LDL|STL)" "$out/sass.txt")
  echo "local memory (LDL/STL) instructions: $lmem"
  # The softmax must sit between the loop's two WGMMA waits in every warp-specialized kernel.
  python3 "$root/scripts/sass_overlap_check.py" "$out/sass.txt" || echo "sass overlap: exit 1"
  rm -f "$out/sass.txt"  # too big to come back; the counts above are what matters
  # A spill is a defect even when every test passes (r19: 618 LDL/STL from two hoisted strides).
  [ "$lmem" -eq 0 ] || echo "sass: exit 1 (local memory in the library's kernels)"
}
[ -n "$no_sass" ] || sass_summary >>"$summary" 2>&1
# The gpu-labelled suite (the host tests are CI's; some need the build machine's compiler), the
# Python package's GPU tests included (CTest python_gpu: the python3 on PATH, with torch).
# The summary counts the tests the regex selects per binary: CTest's names of parameterised tests
# end in "  # GetParam() = ...", so a regex anchored with $ after the config matches none of them
# (r132 meant to run kvcache tests that way and ran none).
# The cuDNN baseline: the newest cuDNN a user of this machine gets, which is PyTorch's
# (site-packages/nvidia/cudnn/lib: 9.19 on the H200, where the system's is 9.14) when python3 has
# one; the bench prints the version and puts it in every cudnn row's note. The GPU tests load it
# too (CudnnBaseline.*: the 2026-12-06 suite run tested the system's 9.14 while the bench used 9.19).
cudnn_lib=$(python3 -c 'import glob, os, site
dirs = site.getsitepackages() + [site.getusersitepackages()]
found = [p for d in dirs for p in glob.glob(os.path.join(d, "nvidia", "cudnn", "lib", "libcudnn.so.9"))]
print(found[0] if found else "")' 2>/dev/null)
cudnn_flag=${cudnn_lib:+--cudnn-lib $cudnn_lib}
echo "cuDNN for the baseline: ${cudnn_lib:-the dynamic loader default}" >> "$out/summary.txt"
# --shard I/N as ctest's -I I,,N.
shard_flag=()
if [ -n "$test_shard" ]; then
  case $test_shard in
    */*) shard_flag=(-I "${test_shard%/*},,${test_shard#*/}") ;;
    *) echo "--shard takes I/N, e.g. 1/3"; exit 2 ;;
  esac
fi
if [ -z "$no_tests" ]; then
  for group in KvCacheGpu AttentionFwd Gemm; do
    n=$(ctest --test-dir "$build" -N -L gpu ${tests_regex:+-R "$tests_regex"} "${shard_flag[@]}" | grep -c "$group")
    echo "tests selected: $group $n" >>"$summary"
  done
fi
[ -n "$no_tests" ] || step tests tests.log env LD_LIBRARY_PATH="${cudnn_lib:+$(dirname "$cudnn_lib"):}${LD_LIBRARY_PATH:-}" \
  ctest --test-dir "$build" -L gpu ${tests_regex:+-R "$tests_regex"} "${shard_flag[@]}" -j "$test_jobs" \
  --output-on-failure --timeout "${TEST_TIMEOUT:-600}"
# Races and barrier misuse: every compiled forward kernel on one small shape (bf16, hdim 64, 128 and 256: hdim 256's
# persistent kernel has its own Q pipelines) under compute-sanitizer's racecheck and synccheck.
sanitize() {
  command -v compute-sanitizer >/dev/null || { echo "compute-sanitizer not found"; return 1; }
  local filter='Compiled/AttentionFwd.SanitizerSmallShapeEveryKernel/bf16_hd64:Compiled/AttentionFwd.SanitizerSmallShapeEveryKernel/bf16_hd128:Compiled/AttentionFwd.SanitizerSmallShapeEveryKernel/bf16_hd256:Compiled/AttentionFwd.SanitizerPersistentSeveralTilesPerCta/bf16_hd128:Compiled/AttentionFwd.SanitizerPersistentSeveralTilesPerCta/bf16_hd256'
  for tool in racecheck synccheck; do
    echo "== compute-sanitizer --tool $tool"
    compute-sanitizer --tool $tool --error-exitcode 3 "$build/bin/gpu_attention_fwd" --gtest_filter="$filter" \
      | grep -vE "^(ok|\[ )" || return 1
    if [ -x "$build/bin/gpu_kvcache" ]; then
      compute-sanitizer --tool $tool --error-exitcode 3 "$build/bin/gpu_kvcache" --gtest_filter='*SanitizerSmallShapes/bf16_hd128' \
        | grep -vE "^(ok|\[ )" || return 1
    fi
  done
}
if [ -n "$sanitize_flag" ]; then step sanitize sanitize.log sanitize; fi
if [ -z "$no_check" ]; then step check check.log "$build/bin/hopattn" check $quick; fi
# Three interleaved rounds per cell, medians (one round moves a cell by up to ~5 %: r80-r82);
# --bench "--rounds 1 ..." overrides (the later flag wins).
if [ -z "$no_bench" ]; then step bench bench.log "$build/bin/hopattn" bench --csv "$out/bench.csv" --rounds 3 $cudnn_flag $bench_args; fi
# A second attention bench in the same call (e.g. --bench "--dtype e4m3 --hdim 128" and
# --bench2 "--dtype bf16 --hdim 128": the bench times one dtype per run), into bench2.csv.
if [ -n "$bench2_args" ]; then
  step bench2 bench2.log "$build/bin/hopattn" bench --csv "$out/bench2.csv" --rounds 3 $cudnn_flag $bench2_args
fi
if [ -n "$decode_bench_args" ]; then
  step decode_bench decode_bench.log "$build/bin/hopattn" bench --op decode --csv "$out/decode.csv" $cudnn_flag $decode_bench_args
fi
# Variable-length batches (issue 36's target), e.g. --varlen-bench "--varlen mix16 --hdim 64,128 --causal 0,1".
if [ -n "$varlen_bench_args" ]; then
  step varlen_bench varlen_bench.log "$build/bin/hopattn" bench --csv "$out/varlen.csv" --rounds 3 $varlen_bench_args
fi
if [ -n "$gemm_bench_args" ]; then
  step gemm_bench gemm_bench.log "$build/bin/hopattn" bench --op gemm --csv "$out/gemm.csv" $gemm_bench_args
fi
# ncu_report NAME FILTER SKIP TOP COMMAND...: ncu source counters (SourceCounters, WarpStateStats,
# SpeedOfLight) of one launch of the kernels matching FILTER after SKIP of them, its headline
# figures and scripts/ncu_source_top.py's summary (per opcode; the TOP instructions by stalls).
ncu_report() {
  local name=$1 filter=$2 skip=$3 top=$4
  shift 4
  ncu --clock-control none --kernel-name-base function --section SourceCounters --section WarpStateStats \
    --section SpeedOfLight --import-source no -k regex:"$filter" -s "$skip" -c 1 -o "/tmp/ncu-$name" -f \
    "$@" >"/tmp/ncu-$name.log" 2>&1 || { tail -5 "/tmp/ncu-$name.log"; return 1; }
  ncu -i "/tmp/ncu-$name.ncu-rep" --page details | grep -E "^  [^ ]|Duration|Elapsed Cycles|SM Frequency|SM Busy|Issue Slots"
  ncu -i "/tmp/ncu-$name.ncu-rep" --page source --print-source sass --csv >"/tmp/ncu-$name-src.csv" || return 1
  python3 "$root/scripts/ncu_source_top.py" "/tmp/ncu-$name-src.csv" "$top" | grep -v '^columns:'
}
# One GEMM launch and the cuBLAS kernel timed beside it.
ncu_gemm_profile() {
  command -v ncu >/dev/null || { echo "ncu not found"; return 1; }
  set -- $ncu_gemm
  local m=$1 n=$2 k=$3 variant=${4:-auto} who filter
  for who in hopattn cublas; do
    if [ $who = hopattn ]; then filter=sm90_gemm_kernel; else filter='^(nvjet|sm90_xmma|cutlass)'; fi
    echo "== $who ($m x $n x $k, variant $variant)"
    ncu_report "$who" "$filter" 2 40 "$build/bin/hopattn" gemm --m "$m" --n "$n" --k "$k" --variant "$variant" || return 1
  done
}
if [ -n "$ncu_gemm" ]; then step ncu_gemm ncu-gemm.txt ncu_gemm_profile; fi
# One forward attention launch (the bench's FA3-grid shape, bf16) and cuDNN's kernel beside it.
ncu_attn_profile() {
  command -v ncu >/dev/null || { echo "ncu not found"; return 1; }
  local spec specs hdim causal seqlen kernel dtype who whos filter status=0
  IFS=';' read -ra specs <<<"$ncu_attn"
  for spec in "${specs[@]}"; do
    read -r hdim causal seqlen kernel dtype <<<"$spec"
    dtype=${dtype:-bf16}
    whos="hopattn cudnn"
    [ "$dtype" = e4m3 ] && whos=hopattn  # the bench has no cuDNN FP8 row yet
    for who in $whos; do
      if [ $who = hopattn ]; then filter='(ws|fa2)_forward_kernel'; else filter='^(cudnn|sm90|nvjet|fmha|flash)'; fi
      echo "== $who (hdim $hdim, causal $causal, seqlen $seqlen, kernel $kernel, $dtype)"
      ncu_report "attn-$who-$hdim-$causal-$seqlen-$dtype" "$filter" 3 50 "$build/bin/hopattn" bench --hdim "$hdim" \
        --causal "$causal" --seqlen "$seqlen" --kernels "$kernel" --dtype "$dtype" --no-ceilings --warmup-ms 0 || status=1
    done
  done
  return $status
}
if [ -n "$ncu_attn" ]; then step ncu_attn ncu-attn.txt ncu_attn_profile; fi
ncu_decode_profile() {
  command -v ncu >/dev/null || { echo "ncu not found"; return 1; }
  echo "== hopattn decode ($ncu_decode)"
  # shellcheck disable=SC2086  # ARGS are bench flags, split on purpose
  ncu_report decode 'decode_(int8_|int8_regk_|int8_mma_|int8_mma_warp_rings_)?kernel' 3 50 "$build/bin/hopattn" bench --op decode --no-ceilings $ncu_decode
}
if [ -n "$ncu_decode" ]; then step ncu_decode ncu-decode.txt ncu_decode_profile; fi
decode_kernel_times() {
  command -v ncu >/dev/null || { echo "ncu not found"; return 1; }
  # shellcheck disable=SC2086  # ARGS are bench flags, split on purpose
  ncu --metrics gpu__time_duration.sum --csv --clock-control none --cache-control none \
    --kernel-name regex:decode --launch-count 80 "$build/bin/hopattn" bench --op decode --no-ceilings \
    $kernel_times >"$out/kernel-times.csv" 2>&1 || return 1
  python3 "$root/scripts/ncu_kernel_times.py" "$out/kernel-times.csv"
}
if [ -n "$kernel_times" ]; then step kernel_times kernel-times.txt decode_kernel_times; fi
decode_timelines() {
  local spec heads cache splits variant
  IFS=';' read -ra specs <<<"$timeline"
  for spec in "${specs[@]}"; do
    read -r heads cache splits variant <<<"$spec"
    "$build/bin/decode_timeline" --heads "$heads" --cache "$cache" --splits "$splits" --variant "${variant:-1}" \
      --csv "$out/timeline-${heads/:/_}-${cache/:/x}-s$splits-v${variant:-1}.csv.txt" || return 1
  done
}
if [ -n "$timeline" ]; then step timeline timeline.log decode_timelines; fi
int8_timelines() {
  local spec heads cache variant
  IFS=';' read -ra specs <<<"$int8_timeline"
  for spec in "${specs[@]}"; do
    read -r heads cache variant <<<"$spec"
    echo "== $heads $cache variant ${variant:-16}"
    "$build/bin/decode_int8_timeline" --heads "$heads" --cache "$cache" --variant "${variant:-16}" \
      --csv "$out/int8-timeline-${heads/:/_}-${cache/:/x}-v${variant:-16}.csv.txt" || return 1
  done
}
if [ -n "$int8_timeline" ]; then step int8_timeline int8-timeline.txt int8_timelines; fi
echo "== summary"
cat "$summary"
grep -E "HGMMA instructions|LDL/STL" "$summary"
[ -f "$out/tests.log" ] && tail -5 "$out/tests.log"
[ -f "$out/check.log" ] && grep -E "^check:" "$out/check.log"
[ -f "$out/bench.log" ] && sed -n '/^op /,$p' "$out/bench.log" | head -60
[ -f "$out/decode_bench.log" ] && tail -60 "$out/decode_bench.log"
# One archive for the step logs (the lent machine returns only a few files per call).
(cd "$out" && ls *.log *.txt 2>/dev/null | grep -v '^summary.txt$' | tar -czf logs.tar.gz -T - && \
  ls *.log *.txt 2>/dev/null | grep -v '^summary.txt$' | xargs rm -f) || true
! grep -q "exit [1-9]" "$summary"
