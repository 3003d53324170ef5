#!/usr/bin/env bash
# A search as shards on many cores (the scaling issue's Ray target, 4 workers ≥ 3.5× one): the
# Ray bench's tasks on a pool of local processes, since the lent machine has no Ray and Ray's
# wheel is over what a call may carry (docs/performance.md). Needs the Python wheel that
# `WHEEL=1 benches/device/prepare.sh` builds into .devcarry/wheels; writes $OUT/shards.txt.
#   WORKERS=1,4,16 CALIBRATIONS=40000 benches/device/shards.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source benches/device/setup.sh

if ! ls .devcarry/wheels/ndvm-*.whl > /dev/null 2>&1; then
  echo "error: no wheel in .devcarry/wheels: run WHEEL=1 benches/device/prepare.sh here" >&2
  exit 1
fi
python3 -m pip install -q --root-user-action=ignore --no-index --no-deps --no-compile --target /tmp/ndvm-site \
  .devcarry/wheels/ndvm-*.whl || exit 1
export PYTHONPATH=/tmp/ndvm-site PYTHONUNBUFFERED=1
for scene in search_scalar search_feynman; do
  NDVM_SHARDS_ON=processes timeout -k 5 240 python3 python/bench/ray_search.py \
    "${CALIBRATIONS:-40000}" "${WORKERS:-1,4,16}" "scenes/$scene.scene.ron" 2>&1 \
    | tee -a "$OUT/shards.txt"
done
