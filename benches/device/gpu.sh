#!/usr/bin/env bash
# The GPU measurement (docs/gpu.md), in one run of 5–9 minutes on a GPU machine (under the
# device's 600-second limit for one command at every timeout): the Kalman
# sweep's rows on the GPU (each interpreter entry) and on every CPU core, the JAX peer on the
# same GPU, and the shipped scene with `--device gpu` (each entry) and `--device cpu`; then the
# table, in $OUT/gpu-table.md.
# Each step has its own timeout and writes as it goes, so a run cut short keeps what it measured.
#   ROWS=2x1024,… SECONDS_PER_ROW=8 benches/device/gpu.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source benches/device/setup.sh

ROWS="${ROWS:-2x1024,2x65536,8x16384,8x65536,16x4096,32x1024,32x4096}"
(nvidia-smi -L; nproc) > "$OUT/machine.txt" 2>&1

# 1. ndvm: each row on the GPU with each interpreter entry (node-major first, then a workgroup
#    per lane, then one invocation per lane), then on the CPU replay over every core. From
#    D = 16 the per-lane entry is left out (KERNELS_WIDE): on the H200 it was 4–37× slower
#    than cooperating there, and its D = 32 rows alone took over a minute.
rows() { # the rows of $ROWS with D below (lt) or from (ge) 16
  tr ',' '\n' <<< "$ROWS" | awk -F x -v op="$1" '(op == "lt") == ($1 < 16)' | paste -sd, -
}
for part in lt ge; do
  list=$(rows $part)
  [ -n "$list" ] || continue
  kernels=$([ $part = lt ] && echo "${KERNELS:-batched,coop,lane}" || echo "${KERNELS_WIDE:-batched,coop}")
  NDVM_GPU_ROWS="$list" NDVM_GPU_ROW_SECONDS="${SECONDS_PER_ROW:-4}" NDVM_GPU_KERNELS="$kernels" \
    timeout -k 5 120 .devcarry/bench-gpu 2>> "$OUT/ndvm-rows.err" | tee -a "$OUT/ndvm-rows.jsonl"
done

# 2. The JAX peer on the same GPU (its first call per row compiles).
timeout -k 5 90 python3 benches/peers/jax_kalman_nd.py --rows "$ROWS" 5 2> "$OUT/jax-rows.err" \
  | tee "$OUT/jax-rows.jsonl"

# 3. The shipped scene, whole process, on each device (`gpu-batched`: the GPU with the
#    node-major entry, NDVM_GPU_KERNEL=batched).
for run in gpu gpu-batched cpu auto; do
  device=${run%-batched}
  kernel=$([ "$run" = gpu-batched ] && echo batched || echo auto)
  start=$EPOCHREALTIME
  NDVM_GPU_KERNEL=$kernel timeout -k 5 "${SCENE_SECONDS:-45}" .devcarry/ndvm fit \
    scenes/kalman_nd.scene.ron --device "$device" --json --out "$(mktemp -d)/results.json" \
    > "$OUT/fit-$run.json" 2> "$OUT/fit-$run.log"
  status=$?
  wall=$(awk "BEGIN { print $EPOCHREALTIME - $start }")
  echo "{\"scene\": \"kalman_nd\", \"device\": \"$run\", \"status\": $status, \"wall_s\": $wall}" \
    | tee -a "$OUT/scene.jsonl"
done

python3 benches/device/table.py "$OUT" | tee "$OUT/gpu-table.md"
