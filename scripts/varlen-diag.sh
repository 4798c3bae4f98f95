#!/usr/bin/env bash
# The hdim-256 varlen fault's diagnosis (docs/attention-varlen.md), in one device call:
#   scripts/varlen-diag.sh OUT_DIR [BUILD=build]
# Each variant of the case in its own process (bin/diag_varlen), then a GPU core dump of the full case read by cuda-gdb (the
# faulting PC, its SASS and the CTA).
set -uo pipefail
out=${1:?usage: scripts/varlen-diag.sh OUT_DIR [BUILD]}
build=${2:-build}
mkdir -p "$out"
export LD_LIBRARY_PATH=$(cd "$build" && pwd)/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
d="$build/bin/diag_varlen"
mix="1:1,17:17,113:113,1000:1000,0:7,129:129,64:64,65:65,5:0"
{
  for args in "--repeat 4" "--repeat 4 --reuse" "--repeat 4 --causal 0" "--repeat 4 --narrow-pv 0 --skip-unseen 0" \
              "--repeat 4 --lens 127:40,300:200" "--repeat 4 --lens $mix" "--repeat 4 --hdim 128" "--repeat 4 --dtype fp16" \
              "--repeat 4 --heads 2:2" "--repeat 4 --q-start 0 --k-start 0"; do
    echo "=== diag_varlen $args"
    timeout 60 $d $args 2>&1 | grep -v '^  (' | tail -6
    echo "rc=${PIPESTATUS[0]}"
  done
} >"$out/diag.txt" 2>&1
cuda_gdb=$(command -v cuda-gdb || ls /usr/local/cuda/bin/cuda-gdb 2>/dev/null)
{
  echo "cuda-gdb: ${cuda_gdb:-none}"
  rm -f /tmp/hd256.core
  CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 CUDA_COREDUMP_FILE=/tmp/hd256.core \
  CUDA_COREDUMP_GENERATION_FLAGS='skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,skip_local_memory' \
    timeout 120 $d --repeat 4 2>&1 | tail -3
  ls -la /tmp/hd256.core 2>&1
  if [ -n "$cuda_gdb" ] && [ -f /tmp/hd256.core ]; then
    timeout 120 "$cuda_gdb" -batch -ex "target cudacore /tmp/hd256.core" -ex "info cuda kernels" \
      -ex 'x/24i $errorpc-192' -ex 'info cuda warps' -ex 'p $errorpc' -ex 'bt' 2>&1 | head -150
  fi
} >"$out/coredump.txt" 2>&1
echo done
