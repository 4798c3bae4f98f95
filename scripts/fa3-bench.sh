#!/usr/bin/env bash
# One device call: builds FlashAttention-3 (scripts/fa3-build.sh) and times it beside hopattn and
# cuDNN (PyTorch's SDPA backend): the forward pass (bench/fa3_forward.py) and the KV-cache call
# (bench/fa3_kvcache.py). Needs a carried build (BUILD, default build-dev) and .deps/fa3.tar.gz
# (scripts/fa3-pack.sh). Logs and CSVs under OUT_DIR.
#   scripts/fa3-bench.sh OUT_DIR [--fwd "ARGS"] [--kv "ARGS"]
#     default: --fwd "--grid --fp8 --rounds 2"; no --kv. FA3_PAGED=1 for --kv "... --pages ...".
#     FA3_RUN=DIR: use a carried build (scripts/fa3-runpack.sh) instead of building on the device.
set -uo pipefail
out=${1:?usage: scripts/fa3-bench.sh OUT_DIR [--fwd ARGS] [--kv ARGS]}
shift
fwd_args="--grid --fp8 --rounds 2" kv_args=""
while [ $# -gt 0 ]; do
  case $1 in
    --fwd) fwd_args=$2; shift ;;
    --kv) kv_args=$2; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${BUILD:-$root/build-dev}" && pwd) || exit 1  # absolute: the benches run from bench/
# the device tool carries no symlinks: recreate the library's
(cd "$build/lib" && ln -sf libhopattn.so.0.4.0 libhopattn.so.2 && ln -sf libhopattn.so.2 libhopattn.so)
(cd "$build/python/hopattn" && ln -sf ../../lib/libhopattn.so.0.4.0 libhopattn.so)
export LD_LIBRARY_PATH=$build/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
# FA3_RUN=DIR: a build made elsewhere (scripts/fa3-runpack.sh), carried; else build it here.
if [ -n "${FA3_RUN:-}" ]; then
  fa3_path=$(cd "$FA3_RUN" && pwd)
  # scripts/fa3-runpack.sh stores the extension xz-compressed: decompress it in place (xz, or
  # Python's lzma where the machine has no xz).
  so=$fa3_path/flash_attn_3/_C.abi3.so
  if [ ! -f "$so" ] && [ -f "$so.xz" ]; then
    xz -dk "$so.xz" 2>/dev/null ||
      python3 -c "import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], 'wb'))" "$so.xz" "$so"
  fi
  echo "fa3: prebuilt, $(cat "$fa3_path/VERSIONS" 2>/dev/null | tr '\n' ' ')" | tee "$out/fa3-build.log"
else
  "$root/scripts/fa3-build.sh" "$out" "$root/.deps/fa3.tar.gz" /tmp/fa3 || exit 1
  fa3_path=/tmp/fa3/hopper
fi
cd "$root/bench" || exit 1
export PYTHONUNBUFFERED=1 PYTHONPATH=$build/python:$fa3_path
rc=0
if [ -n "$fwd_args" ]; then
  # shellcheck disable=SC2086  # the arguments are a list
  python3 fa3_forward.py --csv "$out/fa3-fwd.csv" $fwd_args 2>&1 | tee "$out/fa3-fwd.log" || rc=1
fi
if [ -n "$kv_args" ]; then
  # shellcheck disable=SC2086
  python3 fa3_kvcache.py --csv "$out/fa3-kv.csv" $kv_args 2>&1 | tee "$out/fa3-kv.log" || rc=1
fi
exit $rc
