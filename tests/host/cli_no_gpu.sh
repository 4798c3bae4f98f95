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
# Strict numbers: the whole token, in range, the flag named (issue 38's findings).
expect2() {  # expect2 NEEDLE ARGS...: exit 2 and NEEDLE on stderr
  local needle=$1; shift
  local err; err=$(CUDA_VISIBLE_DEVICES=-1 "$bin" "$@" 2>&1 >/dev/null); local rc=$?
  [ $rc -eq 2 ] && grep -qF -- "$needle" <<<"$err" || { echo "FAIL: hopattn $*: rc $rc, stderr: $err (expected: $needle)"; exit 1; }
}
expect2 "--hdim: an empty list" bench --hdim ''
expect2 "--hdim: '-64' is not an integer in [1, 1024]" bench --hdim -64
expect2 "--warmup-ms: 'abc' is not a number" bench --warmup-ms abc
expect2 "--cache: '99999999999' is not an integer in [1, 2147483647]" bench --op decode --cache 1:99999999999
expect2 "--rounds: '3x' is not an integer" bench --rounds 3x
if "$bin" --help 2>/dev/null | grep -q "gemm"; then
  expect2 "--m: '1e30' is not an integer" gemm --m 1e30 --n 64 --k 64
  expect2 "--k: '12abc' is not an integer" gemm --m 64 --n 64 --k 12abc
  expect2 "no usable CUDA device" gemm --m 64 --n 64 --k 64
fi
echo "ok: strict number parsing"
# --help on every subcommand: usage on stdout, exit 0.
for cmd in bench check info plot layout gemm; do
  if [ "$cmd" = gemm ] && ! "$bin" --help 2>/dev/null | grep -q gemm; then continue; fi
  out=$("$bin" $cmd --help 2>/dev/null); rc=$?
  [ $rc -eq 0 ] && grep -q "usage" <<<"$out" || { echo "FAIL: hopattn $cmd --help: rc $rc: $out"; exit 1; }
done
# Errors on stderr: `info` without a GPU says so there, not on stdout.
out=$(CUDA_VISIBLE_DEVICES=-1 "$bin" info 2>/dev/null); rc=$?
[ $rc -eq 2 ] && ! grep -q "no CUDA device" <<<"$out" || { echo "FAIL: info without a GPU: rc $rc, stdout: $out"; exit 1; }
echo "ok: --help everywhere, errors on stderr"
