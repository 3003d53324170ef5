"""ndvm.SymbolicRegressor: a scikit-learn estimator over the search's Pareto front."""

import pickle
import sys

import numpy as np
import pytest

import ndvm

sklearn = pytest.importorskip("sklearn")
sympy = pytest.importorskip("sympy")


def michaelis_menten(n=40, noise=0.0, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.05, 5.0, size=(n, 1))
    y = 2.3 * X[:, 0] / (0.7 + X[:, 0])
    return X, y + noise * rng.normal(size=n) * y.std()


@pytest.fixture(scope="module")
def fitted():
    X, y = michaelis_menten()
    return ndvm.SymbolicRegressor(calibrations=20000, seed=1, threads=2).fit(X, y), X, y


def test_it_recovers_the_law_and_predicts_through_the_engine(fitted):
    m, X, y = fitted
    # The chosen equation is Michaelis–Menten, in one of its forms (Vmax·x0/(Km + x0), or
    # x0/(p·x0 + q), …): small, and the law on a grid.
    x0 = sympy.Symbol("x0")
    expr = m.sympy()
    assert expr.free_symbols == {x0} and m.best_["complexity"] <= 9, expr
    grid = np.linspace(0.05, 5.0, 50)
    law = 2.3 * grid / (0.7 + grid)
    got = sympy.lambdify([x0], expr, "numpy")(grid)
    np.testing.assert_allclose(got, law, rtol=2e-3)
    # predict runs the program: it equals the sympy form evaluated by numpy.
    f = sympy.lambdify([x0], expr, "numpy")
    np.testing.assert_allclose(m.predict(X), f(X[:, 0]), rtol=1e-12)
    assert m.score(X, y) > 0.9999
    # The front is simplest first, losses falling, one entry chosen.
    eqs = m.equations_
    assert [e["complexity"] for e in eqs] == sorted(e["complexity"] for e in eqs)
    assert sum(e["chosen"] for e in eqs) == 1 and m.best_["chosen"]
    assert all(a["adjusted_loss"] > b["adjusted_loss"] for a, b in zip(eqs, eqs[1:]))
    # Any entry predicts too; LaTeX is there.
    assert m.predict(X, index=0).shape == (len(X),)
    assert "\\frac" in m.latex()


def test_a_calibration_budget_gives_the_same_front_every_time(fitted):
    m, X, y = fitted
    again = ndvm.SymbolicRegressor(calibrations=20000, seed=1, threads=1).fit(X, y)
    assert again.equations_ == m.equations_


def test_it_pickles_and_clones(fitted):
    m, X, _ = fitted
    back = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(back.predict(X), m.predict(X))
    c = sklearn.base.clone(m)
    assert c.get_params() == m.get_params() and not hasattr(c, "equations_")


def test_bad_input_is_refused_cleanly():
    m = ndvm.SymbolicRegressor(calibrations=100)
    with pytest.raises(ValueError):
        m.fit([[1.0], [np.nan]], [1.0, 2.0])
    with pytest.raises(ValueError):
        m.fit([[1.0], [2.0]], [1.0])
    with pytest.raises(sklearn.exceptions.NotFittedError):
        m.predict([[1.0]])
    X, y = michaelis_menten(10)
    fitted = ndvm.SymbolicRegressor(calibrations=200).fit(X, y)
    with pytest.raises(ValueError):
        fitted.predict(np.ones((3, 2)))  # fitted on one column


def test_scikit_learn_estimator_checks():
    from sklearn.utils.estimator_checks import check_estimator

    # Small budgets: the checks fit dozens of times on random data.
    est = ndvm.SymbolicRegressor(calibrations=300, steps=20, draws=2, threads=1)
    check_estimator(est)


def test_a_missing_optional_dependency_names_the_extra(monkeypatch):
    # scikit-learn absent: the estimator says what to install, not "No module named 'sklearn'".
    for name in [m for m in sys.modules if m == "sklearn" or m.startswith("sklearn.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.delitem(sys.modules, "ndvm.sklearn", raising=False)
    with pytest.raises(ImportError, match=r'pip install "\./python\[sklearn\]"'):
        ndvm.SymbolicRegressor
