"""JAX over ndvm: a ``jax.custom_vjp`` whose backward pass is ndvm's exact gradient, the engine
called through a host callback (``jax.pure_callback``), so it composes with ``jax.jit``.

>>> import jax, jax.numpy as jnp, ndvm, ndvm.jax
>>> jax.config.update("jax_enable_x64", True)
>>> f = ndvm.jax.function(ndvm.Program("(* a (exp (- (* b t))))", ["a", "b", "t"]),
...                       params=["a", "b"], constants={"t": 2.0})
>>> g = jax.grad(lambda a, b: f(a, b).sum())(jnp.array([1.0, 2.0]), jnp.array([0.5, 0.5]))
>>> round(float(g[0]), 6)
0.367879

Each parameter is an array with one value per lane (shape ``(B,)``) or a scalar shared by every
lane; the program's result must be one number per lane. float64 arrays evaluate in f64, float32
in f32.
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
    if not names:
        raise ValueError("no differentiable parameters: name them in `params`")

    def lanes(xs):
        """B: the length of the per-lane parameters and constants (1 when all are shared)."""
        sizes = [x.shape[0] for x in xs if np.ndim(x) == 1]
        sizes += [len(v) for v in constants.values() if np.ndim(v) == 1]
        return max(sizes, default=1)

    def host(*xs):
        xs = [np.asarray(x) for x in xs]
        precision = "f64" if all(x.dtype == np.float64 for x in xs) else "f32"
        out = program.evaluate(dict(zip(names, xs)), grad=True, precision=precision, constants=constants)
        dtype = np.float64 if precision == "f64" else np.float32
        value = np.asarray(out["result"], dtype=dtype)
        if value.ndim != 1:
            raise ValueError("ndvm.jax.function needs a program whose result is one number per lane")
        grads = tuple(np.asarray(out["grads"][n], dtype=dtype) for n in names)
        return (value,) + grads

    def both(xs):
        dtype = _jnp.float64 if all(x.dtype == _jnp.float64 for x in xs) else _jnp.float32
        spec = _jax.ShapeDtypeStruct((lanes(xs),), dtype)
        return _jax.pure_callback(host, (spec,) * (1 + len(xs)), *xs, vmap_method="sequential")

    @_jax.custom_vjp
    def f(*xs):
        return both(xs)[0]

    def fwd(*xs):
        out = both(xs)
        return out[0], (out[1:], xs)

    def bwd(res, g):
        grads, xs = res
        # Per lane; a parameter shared by every lane (0-d) gets the sum over lanes.
        return tuple(
            (g * d).sum().astype(x.dtype) if np.ndim(x) == 0 else (g * d).astype(x.dtype)
            for d, x in zip(grads, xs)
        )

    f.defvjp(fwd, bwd)
    f.params = names  # type: ignore[attr-defined]
    return f


__all__ = ["function"]
