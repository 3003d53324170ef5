#!/usr/bin/env python3
"""The GPU measurement's table (docs/gpu.md's layout) from a device run's output folder.

Reads `ndvm-rows.jsonl` (the GPU bench's rows: `side` gpu-lane, gpu-coop, gpu-batched — the
interpreter's three entries: one invocation per lane, a workgroup per lane, node-major — gpu
(the automatic choice) or cpu), `jax-rows.jsonl` (the JAX peer) and `scene.jsonl` (the shipped
scene per device), all written by `benches/device/gpu.sh`, and prints Markdown: per (D, lanes)
the median seconds per call of ndvm on the GPU with each entry, ndvm's CPU replay on every core
and JAX, the fastest entry's ratios (the ones the issue's targets are stated in), and how far
lane 0's value and gradients on the GPU and in JAX are from the CPU's (largest relative
difference).

    python3 benches/device/table.py target/device-out
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def read(path: Path) -> list[dict]:
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                pass  # a line cut short by a timeout
    return rows


def ms(s: float | None) -> str:
    return "—" if s is None else f"{1e3 * s:,.1f} ms"


def ratio(a: float | None, b: float | None) -> str:
    return "—" if a is None or b is None or b == 0 else f"{a / b:.2f}×"


def gap(a: dict | None, b: dict | None) -> str:
    """Largest relative difference of lane 0's value and gradients."""
    if not a or not b:
        return "—"
    worst = 0.0
    for k in ("value", "dq", "dr"):
        x, y = a.get(k), b.get(k)
        if x is None or y is None:
            return "—"
        worst = max(worst, abs(x - y) / max(abs(y), 1e-30))
    return f"{worst:.1e}"


def table(out: Path) -> str:
    ndvm = read(out / "ndvm-rows.jsonl")
    jax = read(out / "jax-rows.jsonl")
    keys = sorted({(r["D"], r["lanes"]) for r in ndvm + jax})
    side = {(r["side"], r["D"], r["lanes"]): r for r in ndvm}
    peer = {(r["D"], r["lanes"]): r for r in jax}
    devices = sorted({r["device"] for r in ndvm} | {r["device"] for r in jax})
    lines = [
        "Devices: " + "; ".join(devices),
        "",
        "| D | lanes | GPU, lane entry | GPU, cooperative | GPU, batched | ndvm CPU "
        "| best GPU vs CPU | JAX | best GPU vs JAX | lane 0: GPU vs CPU | JAX vs CPU |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for d, n in keys:
        lane = side.get(("gpu-lane", d, n)) or side.get(("gpu", d, n))
        coop = side.get(("gpu-coop", d, n))
        batched = side.get(("gpu-batched", d, n))
        c, j = side.get(("cpu", d, n)), peer.get((d, n))
        ls, os_, bs, cs, js = (x["median_s"] if x else None for x in (lane, coop, batched, c, j))
        runs = [x for x in (lane, coop, batched) if x]
        g = min(runs, key=lambda x: x["median_s"]) if runs else None
        gs = g["median_s"] if g else None
        lines.append(
            f"| {d} | {n:,} | {ms(ls)} | {ms(os_)} | {ms(bs)} | {ms(cs)} | {ratio(cs, gs)} | {ms(js)} | "
            f"{ratio(js, gs)} | {gap(g and g['lane0'], c and c['lane0'])} | "
            f"{gap(j and j['lane0'], c and c['lane0'])} |"
        )
    lines.append("")
    lines.append(
        "best GPU: the fastest of the entries. best GPU vs CPU and vs JAX: how many times faster "
        "it is (above 1: faster)."
    )
    scene = {r["device"]: r for r in read(out / "scene.jsonl")}
    if scene:
        lines += [
            "",
            "| `ndvm fit scenes/kalman_nd.scene.ron` | wall | exit | fit loop | device open | upload | kernel | download |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for device in ("gpu", "gpu-batched", "cpu", "auto"):
            if device in scene:
                r = scene[device]
                note = "" if r["status"] == 0 else " (did not finish: not a measurement)"
                how = "`--device gpu`, node-major" if device == "gpu-batched" else f"`--device {device}`"
                parts = scene_parts(out / f"fit-{device}.json")
                lines.append(f"| {how} | {r['wall_s']:.2f} s{note} | {r['status']} | {parts} |")
        finished = {d for d, r in scene.items() if r["status"] == 0}
        for gpu in ("gpu", "gpu-batched"):
            if {gpu, "cpu"} <= finished:
                lines.append(
                    f"\n`{gpu}` against `--device cpu`: "
                    f"{scene['cpu']['wall_s'] / scene[gpu]['wall_s']:.2f}× (above 1: the GPU is faster)"
                )
    return "\n".join(lines)


def scene_parts(path):
    """The fit's own wall time and the device's parts (`timing` of `ndvm fit --json`), as
    table cells; blanks where the run left no JSON."""
    try:
        timing = json.loads(path.read_text())["timing"]
    except (OSError, ValueError, KeyError):
        return " | | | | "
    d = timing.get("device", {})
    cells = [timing.get("wall_s")] + [d.get(k) for k in ("open_s", "upload_s", "kernel_s", "download_s")]
    return " | ".join("" if c is None else f"{c:.3f} s" for c in cells)


if __name__ == "__main__":
    print(table(Path(sys.argv[1] if len(sys.argv) > 1 else "target/device-out")))
