"""`ndvm.torch.function`: a `torch.autograd.Function` whose backward is ndvm's exact gradient,
checked with `torch.autograd.gradcheck` in f64 against the program written natively in torch.
torch is an optional extra: without it these tests are skipped."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ndvm  # noqa: E402
import ndvm.torch  # noqa: E402

SRC = "(+ (* a (exp (- (* b t)))) (* c (sin (* w t))))"


def native(a, b, c, w, t):
    return a * torch.exp(-(b * t)) + c * torch.sin(w * t)


def lanes(seed, n=8):
    g = torch.Generator().manual_seed(seed)
    spans = [(0.5, 2), (0.1, 1), (-1, 1), (1, 4)]
    return [(lo + (hi - lo) * torch.rand(n, generator=g, dtype=torch.float64)).requires_grad_()
            for lo, hi in spans]


def test_gradcheck_in_f64():
    f = ndvm.torch.function(ndvm.Program(SRC, ["a", "b", "c", "w", "t"]), params=["a", "b", "c", "w"],
                            constants={"t": 0.9})
    assert torch.autograd.gradcheck(f, tuple(lanes(0)), eps=1e-6, atol=1e-6)


def test_value_and_gradient_equal_native_torch():
    f = ndvm.torch.function(ndvm.Program(SRC, ["a", "b", "c", "w", "t"]), params=["a", "b", "c", "w"],
                            constants={"t": 1.3})
    xs = lanes(1)
    y = f(*xs)
    (y ** 2).sum().backward()
    got = [x.grad.clone() for x in xs]
    ys = [x.detach().clone().requires_grad_() for x in xs]
    z = native(*ys, 1.3)
    (z ** 2).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), z.detach().numpy(), rtol=1e-12)
    for g, x in zip(got, ys):
        np.testing.assert_allclose(g.numpy(), x.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_a_shared_parameter_and_a_non_number_result():
    f = ndvm.torch.function(ndvm.Program(SRC, ["a", "b", "c", "w", "t"]), params=["a", "b", "c", "w"],
                            constants={"t": 0.4})
    xs = lanes(2)
    shared = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b, c: f(a, shared * torch.ones_like(a), c, xs[3]),
                                    tuple(xs[:3]))
    assert torch.autograd.gradcheck(lambda b: f(xs[0], b, xs[2], xs[3]), (shared,))
    g = ndvm.torch.function(ndvm.Program("[a a]", ["a"]))
    with pytest.raises(ValueError):
        g(xs[0])
