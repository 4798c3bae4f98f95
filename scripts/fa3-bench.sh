#!/usr/bin/env bash
# One device call: builds FlashAttention-3 (scripts/fa3-build.sh) and times it beside hopattn and
# cuDNN (PyTorch's SDPA backend) with bench/fa3_forward.py. Needs a carried build (BUILD, default
# build-dev) and .deps/fa3.tar.gz (scripts/fa3-pack.sh).
#   scripts/fa3-bench.sh OUT_DIR [BENCH ARGS...]   (default: --grid --fp8 --rounds 2)
set -uo pipefail
out=${1:?usage: scripts/fa3-bench.sh OUT_DIR [BENCH ARGS...]}
shift
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build-dev}
[ $# -gt 0 ] || set -- --grid --fp8 --rounds 2
# the device tool carries no symlinks: recreate the library's
(cd "$build/lib" && ln -sf libhopattn.so.0.4.0 libhopattn.so.2 && ln -sf libhopattn.so.2 libhopattn.so)
(cd "$build/python/hopattn" && ln -sf ../../lib/libhopattn.so.0.4.0 libhopattn.so)
export LD_LIBRARY_PATH=$build/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
"$root/scripts/fa3-build.sh" "$out" "$root/.deps/fa3.tar.gz" /tmp/fa3 || exit 1
cd "$root/bench" && PYTHONUNBUFFERED=1 PYTHONPATH=$build/python:/tmp/fa3/hopper \
  python3 fa3_forward.py --csv "$out/fa3.csv" "$@" 2>&1 | tee "$out/fa3-bench.log"
