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
strip .devcarry/ndvm .devcarry/bench-*

if ! ls .gl/libvulkan1_*.deb > /dev/null 2>&1; then
  lists=$(mktemp -d)
  mkdir -p .gl "$lists/partial"
  apt=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$lists")
  apt-get "${apt[@]}" update -qq
  (cd .gl && apt-get "${apt[@]}" download libvulkan1)
fi
du -sh .devcarry .gl
