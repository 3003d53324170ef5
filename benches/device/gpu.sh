#!/usr/bin/env bash
# The GPU measurement (docs/gpu.md), in one run of about 5 minutes on a GPU machine: the Kalman
# sweep's rows on the GPU and on every CPU core, the JAX peer on the same GPU, and the shipped
# scene with `--device gpu` and `--device cpu`; then the table, in $OUT/gpu-table.md.
# Each step has its own timeout and writes as it goes, so a run cut short keeps what it measured.
#   ROWS=2x1024,… SECONDS_PER_ROW=8 benches/device/gpu.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source benches/device/setup.sh

ROWS="${ROWS:-2x1024,2x65536,8x16384,8x65536,16x4096,32x1024,32x4096}"
(nvidia-smi -L; nproc) > "$OUT/machine.txt" 2>&1

# 1. ndvm: each row on the GPU with both interpreter entries (one invocation per lane, a
#    workgroup per lane), then on the CPU replay over every core.
NDVM_GPU_ROWS="$ROWS" NDVM_GPU_ROW_SECONDS="${SECONDS_PER_ROW:-5}" NDVM_GPU_KERNELS=lane,coop \
  timeout -k 5 210 .devcarry/bench-gpu 2> "$OUT/ndvm-rows.err" | tee "$OUT/ndvm-rows.jsonl"

# 2. The JAX peer on the same GPU (its first call per row compiles).
timeout -k 5 90 python3 benches/peers/jax_kalman_nd.py --rows "$ROWS" 5 2> "$OUT/jax-rows.err" \
  | tee "$OUT/jax-rows.jsonl"

# 3. The shipped scene, whole process, on each device.
for device in gpu cpu auto; do
  start=$EPOCHREALTIME
  timeout -k 5 "${SCENE_SECONDS:-60}" .devcarry/ndvm fit scenes/kalman_nd.scene.ron --device "$device" \
    --out "$(mktemp -d)" > "$OUT/fit-$device.log" 2>&1
  status=$?
  wall=$(awk "BEGIN { print $EPOCHREALTIME - $start }")
  echo "{\"scene\": \"kalman_nd\", \"device\": \"$device\", \"status\": $status, \"wall_s\": $wall}" \
    | tee -a "$OUT/scene.jsonl"
done

python3 benches/device/table.py "$OUT" | tee "$OUT/gpu-table.md"
