#!/usr/bin/env bash
# Installs what the build needs into .deps/ (git-ignored). Idempotent: a second run that finds
# everything in place returns at once. Nothing third-party is committed to the repository.
#
#   .deps/cutlass/include        CUTLASS/CuTe 4.2.0 headers  (PyPI wheel nvidia-cutlass==4.2.0.0)
#   .deps/cutlass/util/include   CUTLASS tools/util headers
#   .deps/cudnn-frontend/include cudnn-frontend C++ headers  (PyPI wheel nvidia-cudnn-frontend)
#
# Debian packages the build needs are installed with apt-get when missing (needs root).
# --headers-only: only the headers (what `pip install .` needs; its build tools come from PyPI).
set -euo pipefail
headers_only=0
[ "${1:-}" = "--headers-only" ] && headers_only=1

CUTLASS_VERSION=4.2.0.0
CUDNN_FRONTEND_VERSION=1.23.0   # builds against cuDNN 9.19 here and ran against 9.14 on the H200

root=$(cd "$(dirname "$0")/.." && pwd)
deps="$root/.deps"
mkdir -p "$deps"

log() { printf '[bootstrap] %s\n' "$*"; }

# ---- Debian packages -------------------------------------------------------------------------
need_pkgs=()
if [ $headers_only -eq 0 ]; then
command -v cmake >/dev/null 2>&1 || need_pkgs+=(cmake)
command -v ninja >/dev/null 2>&1 || need_pkgs+=(ninja-build)
command -v g++ >/dev/null 2>&1 || need_pkgs+=(g++)
[ -f /usr/include/gtest/gtest.h ] || need_pkgs+=(libgtest-dev)
command -v unzip >/dev/null 2>&1 || need_pkgs+=(unzip)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    log "missing Debian packages: ${need_pkgs[*]} (run as root or install them)"; exit 1
  fi
  log "installing Debian packages: ${need_pkgs[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi
fi  # headers_only
command -v unzip >/dev/null 2>&1 || { log "unzip is required (Debian package unzip)"; exit 1; }

if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  log "the CUDA toolkit (nvcc) is required: expected on PATH or in /usr/local/cuda/bin"; exit 1
fi

# ---- wheels ------------------------------------------------------------------------------------
# fetch_wheel NAME VERSION DEST STAMP [pip platform args...]
fetch_wheel() {
  local name=$1 version=$2 dir=$3; shift 3
  local tmp; tmp=$(mktemp -d)
  python3 -m pip download -q --no-deps "$@" -d "$tmp" "$name==$version" >&2
  ls "$tmp"/*.whl
}

stamp="$deps/cutlass/.version"
if [ "$(cat "$stamp" 2>/dev/null)" != "$CUTLASS_VERSION" ]; then
  log "fetching nvidia-cutlass==$CUTLASS_VERSION"
  whl=$(fetch_wheel nvidia-cutlass "$CUTLASS_VERSION" "$deps")
  rm -rf "$deps/cutlass" && mkdir -p "$deps/cutlass/unpack"
  unzip -q "$whl" 'cutlass_library/source/include/*' 'cutlass_library/source/tools/util/include/*' \
    -d "$deps/cutlass/unpack"
  mv "$deps/cutlass/unpack/cutlass_library/source/include" "$deps/cutlass/include"
  mkdir -p "$deps/cutlass/util"
  mv "$deps/cutlass/unpack/cutlass_library/source/tools/util/include" "$deps/cutlass/util/include"
  rm -rf "$deps/cutlass/unpack" "$(dirname "$whl")"
  echo "$CUTLASS_VERSION" > "$stamp"
fi

stamp="$deps/cudnn-frontend/.version"
if [ "$(cat "$stamp" 2>/dev/null)" != "$CUDNN_FRONTEND_VERSION" ]; then
  log "fetching nvidia-cudnn-frontend==$CUDNN_FRONTEND_VERSION"
  # The wheel is platform-tagged but its C++ headers are not: ask for one fixed tag so the
  # download does not depend on the local Python version.
  whl=$(fetch_wheel nvidia-cudnn-frontend "$CUDNN_FRONTEND_VERSION" "$deps" \
        --only-binary=:all: --python-version 3.11 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64)
  rm -rf "$deps/cudnn-frontend" && mkdir -p "$deps/cudnn-frontend"
  unzip -q "$whl" 'include/*' -d "$deps/cudnn-frontend"
  rm -rf "$(dirname "$whl")"
  echo "$CUDNN_FRONTEND_VERSION" > "$stamp"
fi

log "ok: $deps"
