#!/usr/bin/env bash
# The scaling measurement (docs/performance.md, "Scaling") on a many-core machine: the scaling
# bench at 1, 2, 4, 8 and 16 threads beside the machine's own ceiling, one round per workload
# (the sharded searches with SHARDS shards, default 32), in about 3 minutes on 16 cores; its
# output in $OUT/scaling.txt.
#   THREADS=1,2,4,8,16 ROUNDS=1 benches/device/scaling.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source benches/device/setup.sh

nproc > "$OUT/machine.txt"
for work in scalar recurrence feynman cosearch kalman_nd scalar-shards feynman-shards; do
  # The sharded searches (`ndvm search --shards`) with two shards per core.
  NDVM_SHARDS="${SHARDS:-32}" NDVM_SCALING_THREADS="${THREADS:-1,2,4,8,16}" timeout -k 5 150 \
    .devcarry/bench-scaling --bench "$work" "${ROUNDS:-1}" 2>&1 | tee -a "$OUT/scaling.txt"
done
