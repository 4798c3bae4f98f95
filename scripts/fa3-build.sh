#!/usr/bin/env bash
# Builds FlashAttention-3 (forward only) on the GPU machine from scripts/fa3-pack.sh's tarball, for
# bench/fa3_forward.py: bf16 and e4m3, head dims 64, 128 and 256, sm_90 only; split-KV, PackGQA
# and varlen kept (the baselines of issues 36 and 39), backward, fp16, paged KV (unless FA3_PAGED=1),
# append, softcap, local windows, clusters and the other head dims left out. Not a dependency of hopattn.
#   scripts/fa3-build.sh OUT_DIR [TARBALL=.deps/fa3.tar.gz] [DEST=/tmp/fa3]
# Prints the PYTHONPATH that imports flash_attn_interface (DEST/hopper); the log is OUT_DIR/fa3-build.log.
set -uo pipefail
out=${1:?usage: scripts/fa3-build.sh OUT_DIR [TARBALL] [DEST]}
tarball=${2:-.deps/fa3.tar.gz}
dest=${3:-/tmp/fa3}
mkdir -p "$out" "$(dirname "$dest")"
rm -rf "$dest" && tar -xzf "$tarball" -C "$(dirname "$dest")" && [ "$(basename "$dest")" = fa3 ] ||
  mv "$(dirname "$dest")/fa3" "$dest"
cd "$dest/hopper"
# setup.py imports wheel.bdist_wheel; setuptools has carried it since 70.1
shim=$(mktemp -d)
if ! python3 -c 'import wheel.bdist_wheel' 2>/dev/null; then
  mkdir -p "$shim/wheel"
  : >"$shim/wheel/__init__.py"
  # setuptools >= 70.1 carries bdist_wheel; older ones: a stand-in class (build_ext never runs it)
  printf '%s\n' 'try:' '    from setuptools.command.bdist_wheel import bdist_wheel  # noqa: F401' \
    'except ImportError:' '    from setuptools import Command as bdist_wheel  # noqa: F401' >"$shim/wheel/bdist_wheel.py"
fi
export PYTHONPATH="$shim${PYTHONPATH:+:$PYTHONPATH}"
export FLASH_ATTENTION_OFFLINE_BUILD=TRUE FLASH_ATTENTION_FORCE_BUILD=TRUE
export FLASH_ATTENTION_DISABLE_BACKWARD=TRUE FLASH_ATTENTION_DISABLE_SM80=TRUE FLASH_ATTENTION_DISABLE_FP16=TRUE
export FLASH_ATTENTION_DISABLE_HDIM96=TRUE FLASH_ATTENTION_DISABLE_HDIM192=TRUE
export FLASH_ATTENTION_DISABLE_HDIMDIFF64=TRUE FLASH_ATTENTION_DISABLE_HDIMDIFF192=TRUE
# FA3_PAGED=1 keeps its paged KV (bench/fa3_kvcache.py --pages; more instances, a longer build)
[ "${FA3_PAGED:-0}" = 1 ] || export FLASH_ATTENTION_DISABLE_PAGEDKV=TRUE
export FLASH_ATTENTION_DISABLE_APPENDKV=TRUE FLASH_ATTENTION_DISABLE_SOFTCAP=TRUE
export FLASH_ATTENTION_DISABLE_LOCAL=TRUE FLASH_ATTENTION_DISABLE_CLUSTER=TRUE
export MAX_JOBS=${MAX_JOBS:-$(nproc)} NVCC_THREADS=${NVCC_THREADS:-2}
start=$SECONDS
python3 setup.py build_ext --inplace >"$out/fa3-build.log" 2>&1
rc=$?
echo "fa3 build: exit $rc ($((SECONDS - start)) s), $(cat "$dest/VERSIONS" | tr '\n' ' ')" | tee -a "$out/fa3-build.log"
[ $rc -eq 0 ] || { tail -40 "$out/fa3-build.log"; exit $rc; }
echo "PYTHONPATH=$dest/hopper"
