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
