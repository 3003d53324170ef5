"""The Feynman recovery harness (benches/srbench/feynman.py): its judge, its data and one run."""

import importlib.util
import json
import pathlib

import numpy as np
import pytest

sympy = pytest.importorskip("sympy")
pytest.importorskip("sklearn")

HARNESS = pathlib.Path(__file__).resolve().parents[2] / "benches" / "srbench" / "feynman.py"
spec = importlib.util.spec_from_file_location("feynman", HARNESS)
feynman = importlib.util.module_from_spec(spec)
spec.loader.exec_module(feynman)


def test_the_list_is_the_hundred_ai_feynman_equations():
    eqs = feynman.equations()
    assert len(eqs) == 100
    assert eqs[0]["name"] == "I.6.2a" and eqs[0]["variables"] == [("theta", 1.0, 3.0)]
    # Every formula parses over its own variables and evaluates on its ranges.
    for eq in eqs:
        cols, y = feynman.sample(eq, 20, seed=0)
        assert feynman.truth(eq).free_symbols <= set(feynman.symbols(cols).values()), eq["name"]
        assert y.shape == (20,)


def test_the_judge_is_srbench_s():
    x, y = sympy.symbols("x y")
    true = x * y / 2
    assert feynman.is_solution(sympy.Float(0.5001) * x * y, true)  # rounded to 3 decimals
    assert feynman.is_solution(3.7 * x * y, true)  # a constant multiple
    assert feynman.is_solution(x * y / 2 + 1.25, true)  # a constant offset
    assert not feynman.is_solution(x * y / 2 + 0.01 * x, true)
    assert not feynman.is_solution(x**2 / 2, true)
    # The variables are positive, as their ranges are: sqrt(exp(θ²)) is exp(θ²/2).
    (eq,) = [e for e in feynman.equations() if e["name"] == "I.6.2a"]
    model = feynman.parse("0.39883649*(1/sqrt(exp(theta*theta)))", ["theta"])
    assert feynman.is_solution(model, feynman.truth(eq))
    # An identity sympy does not simplify is decided on numbers over the ranges (I.10.7:
    # m0·sqrt(1/((c/v)² − 1) + 1) is m0/sqrt(1 − v²/c²) for c > v), and a close imitation is not.
    (eq,) = [e for e in feynman.equations() if e["name"] == "I.10.7"]
    names = ["m_0", "v", "c"]
    found = feynman.parse("sqrt(0.99999994/((c/v)**2 - 0.99999991) + 1.00000003)*m_0", names)
    assert feynman.is_solution(found, feynman.truth(eq), eq)
    close = feynman.parse("sqrt(1.002/((c/v)**2 - 1.0) + 1.0)*m_0", names)
    assert not feynman.is_solution(close, feynman.truth(eq), eq)
    # Noise is γ·RMS(y) on the training targets only; the test points are clean.
    eq = feynman.equations()[7]  # I.12.1: mu*Nn
    train, y_noisy, test, y_test = feynman.data(eq, 0.1, 400)
    clean = train["mu"] * train["Nn"]
    rms = np.sqrt(np.mean(clean**2))
    assert 0.07 < np.std(y_noisy - clean) / rms < 0.13
    np.testing.assert_allclose(y_test, test["mu"] * test["Nn"])


def test_the_judge_bounds_sympy_s_time():
    import time

    start = time.monotonic()
    with pytest.raises(feynman.OutOfTime):
        with feynman.time_limit(1):
            while time.monotonic() - start < 30:
                pass
    assert time.monotonic() - start < 5


def test_a_run_writes_a_resumable_line_per_equation(tmp_path, monkeypatch):
    out = tmp_path / "r.jsonl"
    args = ["feynman.py", "--equations", "I.12.1", "--noise", "0", "--budget", "2",
            "--methods", "ndvm", "--results", str(out)]
    monkeypatch.setattr("sys.argv", args)
    assert feynman.main() == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["equation"] == "I.12.1"
    assert rows[0]["solution"] and rows[0]["on_front"] and rows[0]["r2_test"] > 0.9999
    # A second run skips what is done.
    assert feynman.main() == 0
    assert len(out.read_text().splitlines()) == 1
    assert "| ndvm | 0.0 | 2.0 | 1 | 1 (100%)" in feynman.summary(out)
