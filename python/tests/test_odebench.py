"""ODEBench's data and its trajectories (benches/odebench/trajectories.py)."""

import csv
import importlib.util
import pathlib
from collections import Counter

import numpy as np
import pytest

pytest.importorskip("sympy")
pytest.importorskip("scipy")

HARNESS = pathlib.Path(__file__).resolve().parents[2] / "benches" / "odebench" / "trajectories.py"
spec = importlib.util.spec_from_file_location("trajectories", HARNESS)
ode = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ode)


def by_id(i):
    return next(s for s in ode.systems() if s["id"] == i)


def test_the_data_is_odebenchs_63_systems():
    systems = ode.systems()
    assert [s["id"] for s in systems] == list(range(1, 64))
    # The paper's count: 23 of dimension 1, 28 of 2, 10 of 3 and 2 of 4.
    assert Counter(s["dim"] for s in systems) == {1: 23, 2: 28, 3: 10, 4: 2}
    for s in systems:
        assert len(ode.components(s)) == s["dim"]
        assert [len(x) for x in s["init"]] == [s["dim"], s["dim"]], s["id"]
        # Every right-hand side is a function of the states once its constants are in.
        f = ode.rhs(s)
        assert np.all(np.isfinite(f(0.0, np.asarray(s["init"][0], dtype=float)))), s["id"]


def test_solutions_match_the_closed_forms():
    t = ode.times()
    assert len(t) == 150 and t[0] == 0 and t[-1] == 10
    # System 2, dx/dt = c x: x0 e^(c t).
    s = by_id(2)
    (c,) = s["consts"][0]
    x0 = s["init"][0][0]
    np.testing.assert_allclose(ode.solve(s, 0)[:, 0], x0 * np.exp(c * t), rtol=1e-4)
    # System 1, the charging capacitor dx/dt = (c0 - x/c1)/c2: c0 c1 + (x0 - c0 c1) e^(-t/(c1 c2)).
    s = by_id(1)
    c0, c1, c2 = s["consts"][0]
    x0 = s["init"][1][0]
    want = c0 * c1 + (x0 - c0 * c1) * np.exp(-t / (c1 * c2))
    np.testing.assert_allclose(ode.solve(s, 1)[:, 0], want, rtol=1e-4)


def test_noise_is_odebenchs_multiplicative_and_seeded():
    s = by_id(31)
    clean = ode.observed(s, 0, 0.0, seed=0)
    a = ode.observed(s, 0, 0.05, seed=7)
    assert np.array_equal(a, ode.observed(s, 0, 0.05, seed=7))
    assert not np.array_equal(a, ode.observed(s, 0, 0.05, seed=8))
    rel = (a / clean - 1).ravel()
    assert 0.04 < rel.std() < 0.06 and abs(rel.mean()) < 0.01


def test_a_system_is_written_as_two_trajectories(tmp_path):
    assert ode.main(["--out", str(tmp_path), "--systems", "31,55"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["system-31.csv", "system-55.csv"]
    rows = list(csv.reader((tmp_path / "system-55.csv").open()))
    assert rows[0] == ["init", "t", "x_0", "x_1", "x_2"]
    assert len(rows) == 1 + 2 * 150
    assert [r[0] for r in rows[1:]] == ["0"] * 150 + ["1"] * 150
    first = [float(v) for v in rows[1][2:]]
    assert first == by_id(55)["init"][0]
