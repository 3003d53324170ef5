"""The binding's overhead per call (the Python issue's target: ≤ 2 µs at B = 1), and the torch
wrapper against the binding itself (target: within 2×).

    python python/bench/overhead.py            # after `pip install ./python` (or maturin develop)

For the scalar affine model and the 80-step Kalman filter at B = 1, in f32 with gradients:
`Program.evaluate` timed from Python (numpy in, numpy out, the evaluator replaying its tape)
against the same engine work timed natively inside the extension in the same process
(`Program.native_seconds`); the difference is what the binding costs. Medians of 7 runs.
"""

import json
import os
import pathlib
import statistics
import sys
import timeit

import numpy as np

import ndvm

ROOT = pathlib.Path(__file__).resolve().parents[2]


def kalman():
    testdata = pathlib.Path(os.environ.get("NDVM_TEST_DATA", ROOT / "testdata"))
    text = (testdata / "conformance" / "oracle_refs.json").read_text()
    text = text.replace("-Infinity", "null").replace("Infinity", "null").replace("NaN", "null")
    case = next(p for p in json.loads(text)["programs"] if p["name"] == "kalman2d_T80")
    m = case["matrix"]
    obs = np.array(m["data"], dtype=np.float64).reshape(m["rows"], m["cols"])
    return ndvm.Program(case["src"], ["q", "r", "obs"]), {"q": 0.05, "r": 0.1}, {"obs": obs}


def affine():
    prog = ndvm.Program("(+ (* alpha x) beta)", ["alpha", "beta", "x"])
    return prog, {"alpha": 2.0, "beta": 1.0}, {"x": 1.5}


def per_call(fn, n):
    return statistics.median(timeit.repeat(fn, number=n, repeat=7)) / n


def main(n=20000):
    rows = []
    for name, (prog, inputs, consts) in [("affine", affine()), ("kalman80", kalman())]:
        k = n if name == "affine" else max(n // 10, 50)
        python = per_call(lambda: prog.evaluate(inputs, constants=consts), k)
        native = statistics.median(prog.native_seconds(inputs, k, constants=consts) for _ in range(7))
        rows.append((name, python, native))
        print(f"{name:9} python {python * 1e6:8.3f} µs   native {native * 1e6:8.3f} µs   "
              f"binding overhead {(python - native) * 1e6:6.3f} µs")
    try:
        import torch

        import ndvm.torch

        prog, inputs, consts = affine()
        f = ndvm.torch.function(prog, params=["alpha", "beta"], constants=consts)
        a = torch.tensor([2.0], requires_grad=True)
        b = torch.tensor([1.0], requires_grad=True)
        arrays = {"alpha": np.array([2.0], np.float32), "beta": np.array([1.0], np.float32)}

        def with_torch():
            f(a, b).sum().backward()

        def native_torch():
            (a * 1.5 + b).sum().backward()

        def forward_only():
            with torch.no_grad():
                f(a, b)

        wrapped = per_call(with_torch, n // 10)
        forward = per_call(forward_only, n // 10)
        direct = per_call(lambda: prog.evaluate(arrays, constants=consts), n // 10)
        plain = per_call(native_torch, n // 10)
        print(f"torch     forward+backward {wrapped * 1e6:8.3f} µs   forward {forward * 1e6:8.3f} µs   "
              f"binding {direct * 1e6:8.3f} µs   ratio {wrapped / direct:5.2f}× (forward {forward / direct:4.2f}×)")
        print(f"torch     the same model in plain torch, forward+backward: {plain * 1e6:8.3f} µs")
        # At a population's width the fixed costs fade.
        lanes = 4096
        a4 = torch.linspace(1.0, 3.0, lanes, requires_grad=True)
        b4 = torch.linspace(0.0, 1.0, lanes, requires_grad=True)
        arrays4 = {"alpha": a4.detach().numpy(), "beta": b4.detach().numpy()}
        wide = per_call(lambda: f(a4, b4).sum().backward(), n // 100)
        direct4 = per_call(lambda: prog.evaluate(arrays4, constants=consts), n // 100)
        print(f"torch     B = {lanes}: forward+backward {wide * 1e6:8.3f} µs   binding {direct4 * 1e6:8.3f} µs   "
              f"ratio {wide / direct4:5.2f}×")
    except ImportError:
        print("torch     not installed: skipped")
    return rows


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20000)
