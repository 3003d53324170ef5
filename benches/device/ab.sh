#!/usr/bin/env bash
# Two builds' scaling on the same many-core machine, in one run: this tree's scaling bench
# (.devcarry/bench-scaling) and another revision's (.devcarry/bench-scaling-base, built by
# `BASE=<rev> benches/device/prepare.sh`) at 1 and 16 threads, each workload in $WORK, the
# order of the two builds swapped every round; the output in $OUT/ab.txt. About 20 s per
# workload and round on 16 cores.
#   WORK="scalar feynman" ROUNDS=2 THREADS=1,16 benches/device/ab.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source benches/device/setup.sh

if [ ! -x .devcarry/bench-scaling-base ]; then
  echo "error: no .devcarry/bench-scaling-base: run BASE=<rev> benches/device/prepare.sh here" >&2
  exit 1
fi
for round in $(seq "${ROUNDS:-2}"); do
  for work in ${WORK:-scalar feynman recurrence}; do
    order="base new"; [ $((round % 2)) = 0 ] && order="new base"
    for build in $order; do
      bin=.devcarry/bench-scaling; [ $build = base ] && bin=.devcarry/bench-scaling-base
      echo "=== round $round, $work, $build" | tee -a "$OUT/ab.txt"
      NDVM_SCALING_THREADS="${THREADS:-1,16}" timeout -k 5 60 "$bin" --bench "$work" 1 2>&1 \
        | tee -a "$OUT/ab.txt"
    done
  done
done
