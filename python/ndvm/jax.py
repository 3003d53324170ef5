"""JAX over ndvm: a ``jax.custom_vjp`` whose backward pass is ndvm's exact gradient, the engine
called through a host callback (``jax.pure_callback``), so it composes with ``jax.jit``.

>>> import jax, jax.numpy as jnp, ndvm, ndvm.jax
>>> jax.config.update("jax_enable_x64", True)
>>> f = ndvm.jax.function(ndvm.Program("(* a (exp (- (* b t))))", ["a", "b", "t"]),
...                       params=["a", "b"], constants={"t": 2.0})
>>> g = jax.grad(lambda a, b: f(a, b).sum())(jnp.array([1.0, 2.0]), jnp.array([0.5, 0.5]))
>>> round(float(g[0]), 6)
0.367879

Each parameter is an array with one value per lane (shape ``(B,)``); float64 arrays evaluate in
f64, float32 in f32.
"""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

try:
    import jax as _jax
    import jax.numpy as _jnp
except ImportError as e:  # an optional extra
    raise ImportError(
        "ndvm.jax needs jax: pip install jax (or the extra: pip install \"./python[jax]\")"
    ) from e
import numpy as np

from . import Program


def function(
    program: Program,
    params: Optional[Sequence[str]] = None,
    constants: Optional[Mapping[str, object]] = None,
):
    """A function ``f(*arrays) -> array`` differentiable by JAX with ndvm's gradient (see
    :func:`ndvm.torch.function` for ``params`` and ``constants``)."""
    constants = dict(constants or {})
    names = list(params) if params is not None else [n for n in program.inputs if n not in constants]

    def host(*xs):
        xs = [np.asarray(x) for x in xs]
        precision = "f64" if all(x.dtype == np.float64 for x in xs) else "f32"
        out = program.evaluate(dict(zip(names, xs)), grad=True, precision=precision, constants=constants)
        dtype = xs[0].dtype
        value = np.asarray(out["result"], dtype=dtype)
        grads = tuple(np.asarray(out["grads"][n], dtype=dtype) for n in names)
        return (value,) + grads

    def shapes(xs):
        spec = _jax.ShapeDtypeStruct(xs[0].shape, xs[0].dtype)
        return (spec,) * (1 + len(xs))

    def both(xs):
        return _jax.pure_callback(host, shapes(xs), *xs, vmap_method="sequential")

    @_jax.custom_vjp
    def f(*xs):
        return both(xs)[0]

    def fwd(*xs):
        out = both(xs)
        return out[0], out[1:]

    def bwd(grads, g):
        return tuple(g * d for d in grads)

    f.defvjp(fwd, bwd)
    f.params = names  # type: ignore[attr-defined]
    return f


__all__ = ["function"]
_ = _jnp
