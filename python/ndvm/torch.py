"""PyTorch autograd over ndvm: the backward pass is ndvm's exact reverse-mode gradient.

>>> import torch, ndvm, ndvm.torch
>>> f = ndvm.torch.function(ndvm.Program("(* a (exp (- (* b t))))", ["a", "b", "t"]),
...                         params=["a", "b"], constants={"t": 2.0})
>>> a = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
>>> b = torch.tensor([0.5, 0.5], dtype=torch.float64, requires_grad=True)
>>> y = f(a, b)
>>> y.sum().backward()
>>> round(float(a.grad[0]), 6)
0.367879

Each parameter is a tensor with one value per lane (shape ``(B,)``) or one shared by every lane
(a 0-d tensor); the program's result must be one number per lane. float64 tensors evaluate in
f64, anything else in f32. Second derivatives are not available (the backward pass is not
itself differentiable).
"""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

import numpy as np
try:
    import torch as _torch
except ImportError as e:  # an optional extra
    raise ImportError(
        "ndvm.torch needs torch: pip install torch (or the extra: pip install \"./python[torch]\")"
    ) from e

from . import Program


def function(
    program: Program,
    params: Optional[Sequence[str]] = None,
    constants: Optional[Mapping[str, object]] = None,
):
    """A callable ``f(*tensors) -> tensor`` whose gradient is ndvm's.

    ``params`` names the differentiable inputs in argument order (default: every input of the
    program not in ``constants``); ``constants`` binds the others (numbers, per-lane arrays,
    matrices), which get no gradient.
    """
    constants = dict(constants or {})
    names = list(params) if params is not None else [n for n in program.inputs if n not in constants]
    if not names:
        raise ValueError("no differentiable parameters: name them in `params`")

    class _Fn(_torch.autograd.Function):
        @staticmethod
        def forward(ctx, *xs):
            x0 = xs[0]
            dtype, device = x0.dtype, x0.device
            f64 = all(x.dtype == _torch.float64 for x in xs)
            cpu = device.type == "cpu"
            inputs = {n: (x.numpy() if cpu else x.cpu().numpy()) for n, x in zip(names, xs)}
            out = program.evaluate(inputs, True, "f64" if f64 else "f32", constants)
            if np.ndim(out["result"]) != 1:
                raise ValueError(
                    "ndvm.torch.function needs a program whose result is one number per lane"
                )
            grads = out["grads"]
            # Zero-copy views of the arrays the binding made; moved or converted only when the
            # tensors live elsewhere or are neither float32 nor float64.
            same = cpu and dtype in (_torch.float32, _torch.float64)
            view = _torch.from_numpy
            if same:
                ds = [view(grads[n]) for n in names]
                result = view(out["result"])
            else:
                ds = [view(grads[n]).to(device=device, dtype=dtype) for n in names]
                result = view(out["result"]).to(device=device, dtype=dtype)
            ctx.save_for_backward(*ds)
            ctx.shapes = [tuple(x.shape) for x in xs]
            return result

        @staticmethod
        @_torch.autograd.function.once_differentiable
        def backward(ctx, g):
            # The result of lane l depends only on lane l's inputs: the VJP is per lane (a
            # parameter shared by every lane, a 0-d tensor, gets the sum over lanes).
            return tuple(
                (g * d).sum().reshape(x) if len(x) == 0 else g * d
                for d, x in zip(ctx.saved_tensors, ctx.shapes)
            )

    def f(*xs: "_torch.Tensor") -> "_torch.Tensor":
        if len(xs) != len(names):
            raise ValueError(f"expected {len(names)} tensors ({', '.join(names)}), got {len(xs)}")
        return _Fn.apply(*xs)

    f.params = names  # type: ignore[attr-defined]
    return f
