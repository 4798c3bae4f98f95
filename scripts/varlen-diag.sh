#!/usr/bin/env bash
# The hdim-256 varlen fault's reproduction (docs/attention-varlen.md), now a check of its fix, in
# one device call: each variant of AttentionVarlen.MixedLengths's batch in its own process
# (bin/diag_varlen: a fault ends a process's CUDA context) — new buffers on every repeat, the same
# ones, the earlier ones kept mapped, and q, k, v or o copied behind unmapped memory (--guard, the
# variant that made the fault deterministic). Results in OUT_DIR/diag.txt.
#   scripts/varlen-diag.sh OUT_DIR [BUILD=build]
# (A GPU core dump read by cuda-gdb was tried on 2026-12-06: cuda-gdb 14 failed to open the
# dump with "m_num_devices > 0"; the guards found the fault instead.)
set -uo pipefail
out=${1:?usage: scripts/varlen-diag.sh OUT_DIR [BUILD]}
build=${2:-build}
mkdir -p "$out"
export LD_LIBRARY_PATH=$(cd "$build" && pwd)/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
d="$build/bin/diag_varlen"
{
  for args in "--repeat 4" "--repeat 4 --reuse" "--repeat 3 --keep" "--repeat 4 --causal 0" \
              "--guard q" "--guard k" "--guard v" "--guard o" "--guard q --causal 0" "--guard q --hdim 128" \
              "--repeat 4 --dtype fp16" "--repeat 4 --heads 2:2"; do
    echo "=== diag_varlen $args"
    timeout 60 $d $args 2>&1 | grep -v '^  (' | tail -6
    echo "rc=${PIPESTATUS[0]}"
  done
} >"$out/diag.txt" 2>&1
grep -c "PASS" "$out/diag.txt" | sed 's/^/passing repeats: /'
