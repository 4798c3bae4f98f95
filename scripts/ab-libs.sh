#!/usr/bin/env bash
# Same-run A/B of two builds of libhopattn under one bench binary: each bench command runs with
# arm A's library, then arm B's, then A again ... (ROUNDS pairs, the order alternating each round,
# so that neither arm always runs first after the other's heat), one CSV per arm, round and command.
#   scripts/ab-libs.sh OUT_DIR BENCH_BIN LIB_A LIB_B ROUNDS "ARGS1" ["ARGS2" ...]
# LIB_A / LIB_B: directories holding libhopattn.so.<version> (the links are made here; the device
# tool carries none). Each ARGS is one `hopattn bench` argument string (--csv is added).
# LIB_C (environment, optional): a third arm C; the rounds then rotate A B C, B C A, C A B.
# Prints each CSV's hopattn rows as "arm round cmd impl hdim causal seqlen ms tflops".
# The bench passes experimental::Overrides to the library by reference: both libraries must agree
# with the binary on the layout of the fields a command sets (the fourteenth session removed
# chunk_pages_by_warp and appended fwd_padded_dynamic, the fifteenth removed that again: across
# those builds, forward commands only, not decode commands).
set -uo pipefail
out=${1:?} bin=${2:?} lib_a=${3:?} lib_b=${4:?} rounds=${5:?}
shift 5
mkdir -p "$out"
lib_c=${LIB_C:-}
for d in "$lib_a" "$lib_b" $lib_c; do
  so=$(ls "$d"/libhopattn.so.[0-9]*.[0-9]*.[0-9]* | head -1)
  (cd "$d" && ln -sf "$(basename "$so")" libhopattn.so.2 && ln -sf libhopattn.so.2 libhopattn.so)
done
base_ld=${LD_LIBRARY_PATH:-}
for ((r = 0; r < rounds; ++r)); do
  if [ -n "$lib_c" ]; then
    case $((r % 3)) in 0) arms="A B C" ;; 1) arms="B C A" ;; *) arms="C A B" ;; esac
  elif ((r % 2 == 0)); then arms="A B"; else arms="B A"; fi
  for arm in $arms; do
    lib=$lib_a; [ "$arm" = B ] && lib=$lib_b; [ "$arm" = C ] && lib=$lib_c
    c=0
    for args in "$@"; do
      c=$((c + 1))
      csv="$out/$arm-r$r-c$c.csv"
      # shellcheck disable=SC2086
      LD_LIBRARY_PATH=$lib${base_ld:+:$base_ld} "$bin" bench $args --csv "$csv" >"$out/$arm-r$r-c$c.log" 2>&1 ||
        echo "arm $arm round $r cmd $c: exit $?"
      python3 - "$csv" "$arm" "$r" "$c" <<'PY'
import csv, sys
path, arm, r, c = sys.argv[1:]
try:
    rows = list(csv.DictReader(open(path)))
except OSError:
    sys.exit(0)
for x in rows:
    if x["impl"].startswith("hopattn"):
        print(arm, r, c, x["impl"], x["hdim"], x["causal"], x["seqlen_q"] + ":" + x["seqlen_k"], x["ms"], x["tflops"])
PY
    done
  done
done
