"""`ndvm.jax.function`: a `jax.custom_vjp` over a host callback, checked with JAX's own
gradient checker against the program written natively in JAX."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.test_util import check_grads  # noqa: E402

import ndvm  # noqa: E402
import ndvm.jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

SRC = "(+ (* a (exp (- (* b t)))) (* c (sin (* w t))))"


def native(a, b, c, w, t):
    return a * jnp.exp(-(b * t)) + c * jnp.sin(w * t)


def lanes(seed, n=8):
    rng = np.random.default_rng(seed)
    return [jnp.asarray(rng.uniform(lo, hi, n)) for lo, hi in [(0.5, 2), (0.1, 1), (-1, 1), (1, 4)]]


def test_value_and_gradient_equal_native_jax():
    f = ndvm.jax.function(ndvm.Program(SRC, ["a", "b", "c", "w", "t"]), params=["a", "b", "c", "w"],
                          constants={"t": 1.3})
    xs = lanes(0)
    np.testing.assert_allclose(f(*xs), native(*xs, 1.3), rtol=1e-12)
    loss = lambda *xs: jnp.sum(f(*xs) ** 2)  # noqa: E731
    want = jax.grad(lambda *xs: jnp.sum(native(*xs, 1.3) ** 2), argnums=(0, 1, 2, 3))(*xs)
    got = jax.grad(loss, argnums=(0, 1, 2, 3))(*xs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_check_grads_reverse_mode():
    f = ndvm.jax.function(ndvm.Program(SRC, ["a", "b", "c", "w", "t"]), params=["a", "b", "c", "w"],
                          constants={"t": 0.7})
    check_grads(f, tuple(lanes(1)), order=1, modes=["rev"], atol=1e-6, rtol=1e-6)


def test_under_jit_and_a_branch_that_splits_lanes():
    prog = ndvm.Program("(if (> x 0.5) (* a (exp x)) (- (* b (* x x)) a))", ["a", "b", "x"])
    f = jax.jit(ndvm.jax.function(prog))
    a, b = jnp.full(4, 1.5), jnp.full(4, 0.7)
    x = jnp.asarray([0.2, 0.4, 0.6, 0.8])

    def nat(a, b, x):
        return jnp.where(x > 0.5, a * jnp.exp(x), b * x * x - a)

    np.testing.assert_allclose(f(a, b, x), nat(a, b, x), rtol=1e-12)
    g = jax.grad(lambda *v: f(*v).sum(), argnums=(0, 1, 2))(a, b, x)
    w = jax.grad(lambda *v: nat(*v).sum(), argnums=(0, 1, 2))(a, b, x)
    for u, v in zip(g, w):
        np.testing.assert_allclose(u, v, rtol=1e-12)


def test_a_shared_scalar_parameter():
    f = ndvm.jax.function(ndvm.Program(SRC, ["a", "b", "c", "w", "t"]), params=["a", "b", "c", "w"],
                          constants={"t": 0.7})
    a, b, c, w = lanes(3)
    shared = jnp.asarray(0.4)
    got = jax.grad(lambda s: f(a, s, c, w).sum())(shared)
    want = jax.grad(lambda s: native(a, s, c, w, 0.7).sum())(shared)
    np.testing.assert_allclose(got, want, rtol=1e-10)
    check_grads(lambda s: f(a, s, c, w), (shared,), order=1, modes=["rev"], atol=1e-6, rtol=1e-6)
