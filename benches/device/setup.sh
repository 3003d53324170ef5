# Sourced by the device scripts: the Vulkan loader carried in .gl/, a runtime folder for wgpu,
# the scenes for the carried bench binaries, and the output folder ($OUT on the device).
for f in .gl/*.deb; do dpkg -x "$f" / 2> /dev/null || true; done
ldconfig 2> /dev/null || true
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
export NDVM_SCENES="$PWD/scenes"
OUT="${OUT:-target/device-out}"
mkdir -p "$OUT"
# What the host is: its cores and the kernel's clock source (a clock read through the kernel
# instead of the TSC costs every timed step and every deadline check).
{ nproc; lscpu 2> /dev/null | grep -E "Model name|NUMA node\(s\)|L3"
  echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2> /dev/null)"
} > "$OUT/host.txt" 2>&1
if [ ! -x .devcarry/ndvm ]; then
  echo "error: .devcarry/ is missing: run benches/device/prepare.sh here and carry .devcarry and .gl" >&2
  exit 1
fi

# The NVIDIA driver's Vulkan ICD is libGLX_nvidia.so.0, which on some headless hosts (driver
# 580 on an H200, 2026-11-28) cannot create an instance without a display ("Could not get
# 'vkCreateInstance' via 'vk_icdGetInstanceProcAddr'"); the same driver's EGL library carries
# the ICD too. So: probe the installed ICD with a tiny program, then the EGL one, and keep the
# first that finds an adapter; $OUT/icd.txt says which (or that none did).
gpu_probe() {
  timeout 30 .devcarry/ndvm run docs/examples/kalman2d.scm --bindings docs/examples/kalman2d.json \
    --device gpu --json > /dev/null 2>> "$OUT/icd.txt"
}
adapter=none
if gpu_probe; then
  adapter=found
elif [ -z "${VK_ICD_FILENAMES:-}" ]; then
  icd=$(mktemp -d)
  for lib in libEGL_nvidia.so.0 libGLX_nvidia.so.0; do
    path=$(ldconfig -p | grep -o "/[^ ]*/$lib\$" | head -1)
    [ -n "$path" ] || continue
    printf '{"file_format_version": "1.0.0", "ICD": {"library_path": "%s", "api_version": "1.3.0"}}\n' \
      "$path" > "$icd/$lib.json"
    if VK_ICD_FILENAMES="$icd/$lib.json" gpu_probe; then
      export VK_ICD_FILENAMES="$icd/$lib.json"
      adapter=found
      break
    fi
  done
fi
echo "VK_ICD_FILENAMES=${VK_ICD_FILENAMES:-(the installed ones)}; adapter: $adapter" | tee -a "$OUT/icd.txt"
