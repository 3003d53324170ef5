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


def _runner():
    path = HARNESS.parent / "run.py"
    spec = importlib.util.spec_from_file_location("odebench_run", path)
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    return run


def test_the_symbolic_judge_takes_equal_laws_and_refuses_others():
    import sympy

    run = _runner()
    x, y = sympy.symbols("x_0 x_1")
    truth = run.truth_of(by_id(1))[0]  # (0.7 - x_0/1.2)/2.31
    assert run.same_law(0.303030 - 0.360750 * x, truth)
    assert run.same_law(-0.36075 * (x - 0.84), truth)
    assert not run.same_law(0.303 - 0.5 * x, truth)
    assert not run.same_law(0.303 - 0.36 * x + 0.01 * x**2, truth)
    assert run.same_law(2.0 * sympy.sin(x), 2 * sympy.sin(x))
    # 0.0981·sin(x)·(9.7·cos(x) − 1), written with cos(3π/2 − 2x) = −sin(2x): one form.
    pendulum = run.truth_of(by_id(13))[0]
    found = -0.47574 * (sympy.cos(-2 * x + 3 * sympy.pi / 2) + 0.2062 * sympy.sin(x))
    assert run.same_law(found, pendulum)
    assert not run.same_law(-0.47574 * sympy.cos(-2 * x + 3 * sympy.pi / 2), pendulum)
    # A constant that occurs twice counts twice: 5·(−x − y) against −5.0014·x − 4.973·y.
    z = sympy.Symbol("x_2")
    rossler = run.truth_of(by_id(58))[0]
    assert run.same_law(-5.0014 * y - 4.973 * z, rossler)
    assert not run.same_law(-5.3 * y - 4.973 * z, rossler)
    # Numbers inside functions are evaluated: 0.032·x·log(2.29·x) against x/31.25·log(2.29x).
    assert run.same_law(x / 31.24976 * sympy.log(2.29002 * x), run.truth_of(by_id(7))[0])
    # Coefficients below 1e-4 are dropped, as SRBench drops them; larger ones are not.
    brusselator = run.truth_of(by_id(49))[1]  # 3.03·x − 3.1·x²·y
    assert run.same_law(x * ((2.2e-6 * y - 3.10002) * y + 5e-5) * x + 3.02996 * x, brusselator)
    assert not run.same_law(x * ((2.2e-3 * y - 3.10002) * y) * x + 3.02996 * x, brusselator)


def test_the_smoke_run_judges_every_method_on_three_systems(tmp_path):
    """The CI smoke run: three systems (one, two and three states), ndvm under a calibration
    budget (the same answer anywhere), PySINDy and Operon where installed."""
    pytest.importorskip("sklearn")
    run = _runner()
    methods = ["ndvm"]
    for name, module in [("pysindy", "pysindy"), ("operon", "pyoperon")]:
        if importlib.util.find_spec(module) is not None:
            methods.append(name)
    argv = ["--out", str(tmp_path), "--systems", "1,31,55", "--seconds", "3",
            "--calibrations", "2500", "--methods", ",".join(methods)]
    assert run.main(argv) == 0
    import json

    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert sorted((r["id"], r["method"]) for r in rows) == sorted(
        (i, m) for i in (1, 31, 55) for m in methods
    )
    ndvm = {r["id"]: r for r in rows if r["method"] == "ndvm"}
    # The RC circuit and the SIR model: found and predicted from the other start.
    for i in (1, 31):
        assert ndvm[i]["reconstruction_r2"] > 0.999, ndvm[i]
        assert ndvm[i]["generalization_r2"] > 0.99, ndvm[i]
    # A second run resumes: nothing is judged twice, and a line cut short by a killed run is
    # dropped (a real system id, so it would count if it were read).
    with (tmp_path / "results.jsonl").open("a") as f:
        f.write('{"id": 1, "method": "nd')
    assert run.main(argv) == 0
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == len(rows)
    assert "| ndvm | 0.0 | 3 |" in run.summary(tmp_path / "results.jsonl")
    # A second writer on the same folder is refused, and the results stay as they were.
    before = (tmp_path / "results.jsonl").read_text()
    with run.only_writer(tmp_path):
        with pytest.raises(SystemExit, match="another run is writing"):
            run.main(argv)
    assert (tmp_path / "results.jsonl").read_text() == before
