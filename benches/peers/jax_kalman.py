#!/usr/bin/env python3
"""Hand-written JAX beside ndvm: the 80-step 2-D Kalman negative log-likelihood of
docs/examples/kalman2d.scm in f32, in two forms: a `lax.scan` and a Python loop that `jit`
unrolls (much slower to compile).

Prints, as JSON: the time to import jax and, for each form, the first call of
jit(value_and_grad) (trace, compile, run: JAX's "time to first gradient" for a new model), the
steady per-call time at B = 1 and, with vmap, per lane at B = 256, and the values, to compare
with the example's oracle (831.22, dL/dq = -3458.7, dL/dr = -7529.3).

usage: python3 benches/peers/jax_kalman.py  (needs `pip install jax`; see benches/peers/README.md)
"""
import json
import os
import statistics
import sys
import time

t0 = time.perf_counter()
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import_s = time.perf_counter() - t0
jax.config.update("jax_platforms", "cpu")

HERE = os.path.dirname(os.path.abspath(__file__))
data = json.load(open(os.path.join(HERE, "..", "..", "docs", "examples", "kalman2d.json")))
m = data["matrices"]["obs"]
obs = jnp.asarray(m["data"], dtype=jnp.float32).reshape(m["rows"], m["cols"])


def filter_step(q, r, eye, x, P, L, y):
    """One step of the filter: predict, update, add the step's term of the likelihood."""
    Ppred = P + q * eye
    e = y - x
    S = Ppred + r * eye
    Sinv = jnp.linalg.inv(S)
    K = Ppred @ Sinv
    x = x + K @ e
    P = (eye - K) @ Ppred
    L = L + jnp.log(jnp.linalg.det(S)) + e @ (Sinv @ e)
    return x, P, L


def start():
    eye = jnp.eye(2, dtype=jnp.float32)
    return eye, (jnp.zeros(2, jnp.float32), eye, jnp.float32(0.0))


def nll(q, r, obs):
    eye, init = start()
    (_, _, L), _ = jax.lax.scan(lambda c, y: (filter_step(q, r, eye, *c, y), None), init, obs)
    return L


def nll_unrolled(q, r, obs):
    """The same filter as a Python loop: `jit` unrolls it into one straight-line program."""
    eye, state = start()
    for k in range(obs.shape[0]):
        state = filter_step(q, r, eye, *state, obs[k])
    return state[2]


def timed(f, n):
    t = time.perf_counter()
    for _ in range(n):
        out = f()
    jax.block_until_ready(out)
    return (time.perf_counter() - t) / n


q, r = jnp.float32(0.05), jnp.float32(0.1)
B = 256
qs = q * (1 + 0.01 * (jnp.arange(B) % 13)).astype(jnp.float32)
rs = r * (1 + 0.01 * (jnp.arange(B) % 13)).astype(jnp.float32)
report = {"jax": jax.__version__, "import_s": import_s}
for name, f in [("scan", nll), ("unrolled", nll_unrolled)]:
    vg = jax.jit(jax.value_and_grad(f, argnums=(0, 1)))
    t = time.perf_counter()
    val, (gq, gr) = vg(q, r, obs)
    jax.block_until_ready(gr)
    first_s = time.perf_counter() - t
    one = statistics.median(timed(lambda: vg(q, r, obs), 500) for _ in range(5))
    vgb = jax.jit(jax.vmap(jax.value_and_grad(f, argnums=(0, 1)), in_axes=(0, 0, None)))
    jax.block_until_ready(vgb(qs, rs, obs))
    wide = statistics.median(timed(lambda: vgb(qs, rs, obs), 100) for _ in range(5))
    report[name] = {
        "first_call_s": first_s,
        "b1_us": one * 1e6,
        "b256_per_lane_us": wide * 1e6 / B,
        "value": float(val),
        "grad": [float(gq), float(gr)],
    }
json.dump(report, sys.stdout, indent=1)
print()
