"""Bad input raises the right `ndvm.NdvmError` subclass, located, and never crashes the
interpreter."""

import numpy as np
import pytest

import ndvm


def test_decode_errors_are_located():
    with pytest.raises(ndvm.SyntaxError) as e:
        ndvm.Program("(+ 1\n   (* 2", ["x"])
    assert isinstance(e.value, ndvm.NdvmError)
    assert e.value.kind == "syntax"
    assert e.value.line is not None and e.value.column is not None
    with pytest.raises(ndvm.UnboundError) as e:
        ndvm.Program("(+ 1\n  y)", ["x"])
    assert (e.value.line, e.value.column) == (2, 3)


def test_a_program_that_errors_raises_with_its_lanes():
    prog = ndvm.Program("(if (< x 0) (car x) x)", ["x"])
    with pytest.raises(ndvm.TypeError) as e:
        prog.evaluate({"x": np.array([1.0, -1.0])})
    assert e.value.lanes == [1]
    assert e.value.line == 1
    with pytest.raises(ndvm.ArityError):
        ndvm.Program("(exp 1 2)", []).evaluate({})


@pytest.mark.parametrize(
    "inputs, why",
    [
        ({"x": np.array([1, 2], dtype=np.int64)}, "dtype"),
        ({"x": np.array([1.0, 2.0]), "y": np.array([1.0, 2.0, 3.0])}, "lane"),
        ({"x": float("nan"), "y": 1.0}, "NaN"),
        ({"x": np.array([1.0, np.inf]), "y": 1.0}, "NaN or infinite"),
        ({"x": "three", "y": 1.0}, "expected a number"),
        ({"x": 1.0}, "not bound"),
        ({"x": np.zeros((1, 1, 1, 1)), "y": 1.0}, "constants"),
        ({"x": np.zeros((2, 2)), "y": 1.0}, "constants"),
    ],
)
def test_bad_inputs_raise_input_errors(inputs, why):
    prog = ndvm.Program("(+ x y)", ["x", "y"])
    with pytest.raises(ndvm.NdvmError) as e:
        prog.evaluate(inputs)
    assert why in str(e.value), str(e.value)
    # The evaluator still works afterwards.
    assert prog.evaluate({"x": 1.0, "y": 2.0})["result"].tolist() == [3.0]


def test_unknown_names_and_bad_settings():
    with pytest.raises(ValueError):
        ndvm.Program("x", ["x"]).evaluate({"x": 1.0}, precision="f16")
    with pytest.raises(ndvm.InputError):
        ndvm.fit({"candidates": "not a list"})


def test_shard_arguments_are_checked():
    text = "Scene(candidates: [], parameters: Parameters(names: []))"
    for shard, n in [(0, None), (None, 2), (2, 2)]:
        with pytest.raises(ndvm.InputError):
            ndvm.fit_json(text, ".", False, None, shard, n)


def test_one_program_from_two_threads_does_not_deadlock():
    import threading

    prog = ndvm.Program("(loop ((i 0) (s 0)) (if (< i 200000) (recur (+ i 1) (+ s x)) s))", ["x"])
    results = []

    def work():
        results.append(float(prog.evaluate({"x": 1.0})["result"][0]))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert results == [200000.0] * 4
