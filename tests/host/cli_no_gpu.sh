#!/usr/bin/env bash
# `hopattn bench` and `hopattn check` on a machine where no GPU is visible must print what they
# need and exit non-zero (2) without crashing. CUDA_VISIBLE_DEVICES=-1 hides every GPU, so this
# runs the same way with or without one.
set -u
bin=$1
for cmd in bench check "bench --op decode"; do
  out=$(CUDA_VISIBLE_DEVICES=-1 "$bin" $cmd 2>&1); rc=$?
  if [ $rc -ne 2 ]; then echo "FAIL: hopattn $cmd exited $rc, expected 2; output: $out"; exit 1; fi
  if ! grep -q "needs an NVIDIA Hopper GPU (sm_90" <<<"$out"; then echo "FAIL: hopattn $cmd said: $out"; exit 1; fi
  echo "ok: hopattn $cmd without a GPU: exit 2: $out"
done
out=$("$bin" nonsense 2>&1); rc=$?
[ $rc -eq 2 ] || { echo "FAIL: unknown command exited $rc"; exit 1; }
out=$("$bin" bench --seqlen 1000 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "must divide --tokens" <<<"$out" || { echo "FAIL: bad bench flag: rc $rc: $out"; exit 1; }
out=$("$bin" bench --op decode --heads 64:6 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "multiple of heads_kv" <<<"$out" || { echo "FAIL: bad decode flag: rc $rc: $out"; exit 1; }
out=$("$bin" bench --op decode --help 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q -- "--op decode" <<<"$out" || { echo "FAIL: bench --op decode --help: rc $rc: $out"; exit 1; }
echo "ok: usage errors exit 2"
out=$("$bin" --version 2>&1); rc=$?
[ $rc -eq 0 ] && grep -qE "^hopattn [0-9]+\.[0-9]+\.[0-9]+ \(ABI [0-9]+\)$" <<<"$out" || { echo "FAIL: --version: rc $rc: $out"; exit 1; }
out=$("$bin" bench --kernels no_such_kernel --schedules 1 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "unknown option --schedules" <<<"$out" || { echo "FAIL: --schedules must be gone: rc $rc: $out"; exit 1; }
out=$("$bin" bench --override narrow_pv=x 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "is not a number" <<<"$out" || { echo "FAIL: bad --override: rc $rc: $out"; exit 1; }
out=$("$bin" bench --op decode --override narrow_pv=0 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q -- "--override applies to --op attn" <<<"$out" || { echo "FAIL: --override with decode: rc $rc: $out"; exit 1; }
echo "ok: --version, --kernels/--override parsing"
