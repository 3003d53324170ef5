# Sourced by the device scripts: the Vulkan loader carried in .gl/, a runtime folder for wgpu,
# the scenes for the carried bench binaries, and the output folder ($OUT on the device).
for f in .gl/*.deb; do dpkg -x "$f" / 2> /dev/null || true; done
ldconfig 2> /dev/null || true
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
export NDVM_SCENES="$PWD/scenes"
OUT="${OUT:-target/device-out}"
mkdir -p "$OUT"
if [ ! -x .devcarry/ndvm ]; then
  echo "error: .devcarry/ is missing: run benches/device/prepare.sh here and carry .devcarry and .gl" >&2
  exit 1
fi
