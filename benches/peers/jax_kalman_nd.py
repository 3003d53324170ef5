#!/usr/bin/env python3
"""The JAX peer of the GPU sweep (`benches/benches/gpu.rs`, docs/gpu.md).

The same D-dimensional Kalman negative log-likelihood (80 steps, Q = q·I, R = r·I, x₀ = 0,
P₀ = I, `logdet S + eᵀS⁻¹e` summed), the same observations and the same per-lane (q, r) as the
Rust sweep, written the way a JAX user would: `lax.scan` over the steps, `inv` and `slogdet`,
`jit(vmap(value_and_grad))` over the lanes, f32. Prints one JSON line per (D, lanes): the median
seconds per call (after a warm-up call that compiles), the first call's seconds (trace, compile,
run), and lane 0's value and gradients, to check agreement with ndvm.

    python3 benches/peers/jax_kalman_nd.py 2,8,16,32 1024,65536 5     # dims, lanes, repeats
    python3 benches/peers/jax_kalman_nd.py --rows 2x1024,16x4096 5     # (D, lanes) rows
    JAX_PLATFORMS=cpu python3 benches/peers/jax_kalman_nd.py 2 64 3   # JAX on the CPU
    python3 benches/peers/jax_kalman_nd.py --check                    # against ndvm, in f64

`--check` evaluates a few lanes with `ndvm.Program` (f64) and JAX (f64, CPU) and fails unless
values and gradients agree to 1e-9 relative (needs the ndvm package; see docs/python.md).
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import numpy as np

STEPS = 80


def observations(d: int, dtype=np.float32) -> np.ndarray:
    """The sweep's observations, computed in f32 exactly as `gpu.rs` does."""
    i = np.arange(STEPS * d)
    x = i.astype(np.float32) * np.float32(0.618034)
    frac = x - np.floor(x)
    scale = np.float32(1.0) + (i // d).astype(np.float32) * np.float32(0.02)
    return ((frac - np.float32(0.5)) * scale).astype(dtype).reshape(STEPS, d)


def lanes(n: int, dtype=np.float32) -> tuple[np.ndarray, np.ndarray]:
    """Lane l's (q, r), as `gpu.rs` spreads them around (0.1, 0.2)."""
    lane = np.arange(n)
    q = np.float32(0.05) + np.float32(0.1) * ((lane * 7) % 97).astype(np.float32) / np.float32(97)
    r = np.float32(0.1) + np.float32(0.2) * ((lane * 13) % 89).astype(np.float32) / np.float32(89)
    return q.astype(dtype), r.astype(dtype)


def program(d: int) -> str:
    """The same filter in ndvm's dialect (the text `gpu.rs` decodes)."""
    zeros = " ".join(["0.0"] * d)
    return f"""(loop ((k 0) (x (vec {zeros})) (P (eye {d})) (L 0.0))
      (if (= k {STEPS}) L
        (let* ((Q (scale q (eye {d}))) (R (scale r (eye {d}))) (Ppred (+ P Q))
               (y (ref obs k)) (e (- y x)) (S (+ Ppred R)) (Sinv (inv S))
               (Kg (matmul Ppred Sinv)) (xnew (+ x (matvec Kg e)))
               (Pnew (matmul (- (eye {d}) Kg) Ppred))
               (nll (+ (logdet S) (dot e (matvec Sinv e)))))
          (recur (+ k 1) xnew Pnew (+ L nll)))))"""


def nll_fn(jnp, lax, d: int, obs):
    eye = jnp.eye(d, dtype=obs.dtype)

    def nll(q, r):
        def step(carry, y):
            x, p, total = carry
            ppred = p + q * eye
            e = y - x
            s = ppred + r * eye
            sinv = jnp.linalg.inv(s)
            k = ppred @ sinv
            x = x + k @ e
            p = (eye - k) @ ppred
            total = total + jnp.linalg.slogdet(s)[1] + e @ (sinv @ e)
            return (x, p, total), None

        start = (jnp.zeros(d, obs.dtype), eye, jnp.zeros((), obs.dtype))
        (_, _, total), _ = lax.scan(step, start, obs)
        return total

    return nll


def sweep(rows, repeats: int) -> None:
    """Times each (D, lanes) row; one compiled function per D (and lane count: JAX retraces)."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    device = jax.devices()[0]
    dims = sorted({d for d, _ in rows})
    for d in dims:
        obs = jnp.asarray(observations(d))
        f = jax.jit(jax.vmap(jax.value_and_grad(nll_fn(jnp, lax, d, obs), argnums=(0, 1))))
        for n in [n for dd, n in rows if dd == d]:
            q, r = (jnp.asarray(a) for a in lanes(n))
            t0 = time.perf_counter()
            jax.block_until_ready(f(q, r))
            first = time.perf_counter() - t0
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                value, (gq, gr) = jax.block_until_ready(f(q, r))
                times.append(time.perf_counter() - t0)
            print(
                json.dumps(
                    {
                        "peer": "jax",
                        "device": f"{device.platform}:{device.device_kind}",
                        "D": d,
                        "lanes": n,
                        "median_s": statistics.median(times),
                        "first_call_s": first,
                        "lane0": {
                            "value": float(value[0]),
                            "dq": float(gq[0]),
                            "dr": float(gr[0]),
                        },
                    }
                ),
                flush=True,
            )


def check() -> None:
    """JAX (f64, CPU) against ndvm's `Program.evaluate` (f64) on a few lanes of D = 2 and 4."""
    import jax

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_platforms", "cpu")
    import jax.numpy as jnp
    from jax import lax

    import ndvm

    for d in (2, 4):
        obs = observations(d, np.float64)
        q, r = lanes(5, np.float64)
        f = jax.vmap(jax.value_and_grad(nll_fn(jnp, lax, d, jnp.asarray(obs)), argnums=(0, 1)))
        value, (gq, gr) = f(jnp.asarray(q), jnp.asarray(r))
        out = ndvm.Program(program(d), ["q", "r", "obs"]).evaluate(
            {"q": q, "r": r}, constants={"obs": obs}, precision="f64"
        )
        for name, ours, theirs in (
            ("value", out["result"], value),
            ("dq", out["grads"]["q"], gq),
            ("dr", out["grads"]["r"], gr),
        ):
            np.testing.assert_allclose(ours, np.asarray(theirs), rtol=1e-9, err_msg=f"D={d} {name}")
        print(f"D = {d}: ndvm and JAX agree on 5 lanes (value {float(value[0]):.6f})")


def main(argv: list[str]) -> int:
    if argv[1:] == ["--check"]:
        check()
        return 0
    if len(argv) > 2 and argv[1] == "--rows":
        rows = [tuple(int(v) for v in r.split("x")) for r in argv[2].split(",")]
        repeats = int(argv[3]) if len(argv) > 3 else 5
    else:
        dims = [int(x) for x in (argv[1] if len(argv) > 1 else "2,8").split(",")]
        widths = [int(x) for x in (argv[2] if len(argv) > 2 else "1024").split(",")]
        rows = [(d, n) for d in dims for n in widths]
        repeats = int(argv[3]) if len(argv) > 3 else 5
    sweep(rows, repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
