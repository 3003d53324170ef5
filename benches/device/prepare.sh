#!/usr/bin/env bash
# Run here, before a device run: builds the binaries a GPU machine needs (it has no Rust
# toolchain) into .devcarry/ and fetches the Vulkan loader (it has the NVIDIA driver's Vulkan ICD
# but no libvulkan.so.1) into .gl/. Both folders are ignored by git; pass them to the device
# tool's `carry`: [".devcarry", ".gl"]. See benches/device/README.md.
set -euo pipefail
cd "$(dirname "$0")/../.."

cargo build --release --locked -p ndvm-cli
mkdir -p .devcarry
cp target/release/ndvm .devcarry/ndvm
for bench in gpu scaling; do
  exe=$(cargo bench --locked -p ndvm-benches --bench "$bench" --no-run --message-format=json 2> /dev/null \
    | python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["bench"]:
        print(m["executable"])' | tail -1)
  cp "$exe" ".devcarry/bench-$bench"
done
# BASE=<rev>: the scaling bench of another revision too (.devcarry/bench-scaling-base), built in a
# worktree, for benches/device/ab.sh to compare with this tree's build on the device.
if [ -n "${BASE:-}" ]; then
  base=$(mktemp -d)/base
  target="${BASE_TARGET:-$PWD/target/base}"
  git worktree add -q --detach "$base" "$BASE"
  trap 'git worktree remove --force "$base"' EXIT
  cp benches/benches/scaling.rs "$base/benches/benches/scaling.rs" # the same measurement
  exe=$(cd "$base" && CARGO_TARGET_DIR="$target" cargo bench --locked -p ndvm-benches \
    --bench scaling --no-run --message-format=json \
    | python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["bench"]:
        print(m["executable"])' | tail -1)
  cp "$exe" .devcarry/bench-scaling-base
fi
strip .devcarry/ndvm .devcarry/bench-*
# WHEEL=1: the Python package's wheel too (.devcarry/wheels, for benches/device/shards.sh), built
# with the CI's venv when there is one (abi3: the machine's Python 3.12 takes it).
if [ -n "${WHEEL:-}" ]; then
  [ -x target/pyenv/bin/maturin ] || { python3 -m venv target/pyenv && target/pyenv/bin/python -m pip install -q maturin; }
  rm -rf .devcarry/wheels
  target/pyenv/bin/maturin build --release --locked -q -m python/Cargo.toml -o .devcarry/wheels
fi

if ! ls .gl/libvulkan1_*.deb > /dev/null 2>&1; then
  lists=$(mktemp -d)
  mkdir -p .gl "$lists/partial"
  apt=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$lists")
  apt-get "${apt[@]}" update -qq
  (cd .gl && apt-get "${apt[@]}" download libvulkan1)
fi
du -sh .devcarry .gl
