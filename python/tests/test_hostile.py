"""Hostile input through Python: the CLI's guards hold here too (docs/testing.md, "The
hostile-input campaign"). Dict scenes get the scene checks, Ctrl-C interrupts, a merge refuses a
set of outputs that is not whole, output folders are written whole, any column name works, and
the estimator's messages name the real cause."""

import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import ndvm

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCENES = ROOT / "scenes"


def scene(**search):
    """A small search over synthetic data, as a dict; `search` replaces its settings."""
    spec = {
        "proposers": [{"Evolve": {}}],
        "calibration": {"steps": 10, "optimizer": {"Adam": {"lr": 0.1}}, "draws": 2},
        "budget": {"calibrations": 20},
        "success": {"TrainLoss": 1e-6},
    }
    spec.update(search)
    return {
        "candidates": [],
        "data": {
            "Synthetic": {"program": "(* 2 x)", "inputs": {"x": {"Linspace": [0.0, 1.0, 16]}}}
        },
        "loss": "Mse",
        "search": spec,
    }


@pytest.mark.parametrize(
    "change, message",
    [
        ({"calibration": {"steps": 10, "draws": 0}}, "`calibration.draws` must be from 1"),
        ({"window": 0}, "`search.window` must be from 1"),
        (
            {"calibration": {"steps": 10, "optimizer": {"Adam": {"lr": -5.0}}}},
            "must be a positive number, got -5",
        ),
        ({"proposers": [{"Evolve": {"elite": 0}}]}, "needs `elite` ≥ 1"),
        ({"proposers": [{"Evolve": {"binary": []}}]}, "at least one binary operator"),
    ],
)
def test_a_dict_scene_gets_the_checks_and_messages_of_a_ron_scene(change, message):
    with pytest.raises(ndvm.InputError, match=message):
        ndvm.search(scene(**change))


def test_a_dict_scene_with_a_huge_grid_is_refused_not_allocated():
    big = scene()
    big["data"]["Synthetic"]["inputs"]["x"] = {"Linspace": [0.0, 1.0, 100_000_000_000]}
    with pytest.raises(ndvm.InputError, match="over the limit"):
        ndvm.search(big)
    with pytest.raises(ndvm.InputError, match="over the limit"):
        ndvm.fit({**big, "search": None, "candidates": [{"Inline": {"name": "l", "src": "(* a x)"}}]})


def test_a_merge_refuses_outputs_that_are_not_every_tasks():
    from ndvm._ndvm import search_merge, search_plan, search_shard, search_tasks

    text, base = (SCENES / "search_feynman.scene.ron").read_text(), str(SCENES)
    plan = search_plan(text, False, 3, 1, 60, None, None)
    outputs = [search_shard(text, base, False, t, 1) for t in search_tasks(plan, 0, [])]
    whole = json.loads(search_merge(text, False, "t", plan, outputs))
    assert whole["summary"]["calibrations"] == 60
    with pytest.raises(ndvm.InputError, match="shard 1 of epoch 0 is missing"):
        search_merge(text, False, "t", plan, [outputs[0], outputs[2]])
    with pytest.raises(ndvm.InputError, match="every shard's output is missing"):
        search_merge(text, False, "t", plan, [])
    stray = json.loads(outputs[2])
    stray["task"]["shard"] = 9
    with pytest.raises(ndvm.InputError, match="shard 9 of 3 in epoch 0 is not part"):
        search_merge(text, False, "t", plan, [outputs[0], outputs[1], json.dumps(stray)])


def test_a_sharded_search_refuses_a_linked_output_before_it_runs_and_writes_whole_files(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "precious").write_text("keep")
    os.symlink(tmp_path / "precious", out / "search.json")
    began = time.time()
    with pytest.raises(ndvm.InputError, match="symbolic link"):
        ndvm.search_sharded(SCENES / "search_feynman.scene.ron", 2, threads=1, seconds=30, out=out)
    assert time.time() - began < 10
    assert (tmp_path / "precious").read_text() == "keep"
    os.unlink(out / "search.json")
    r = ndvm.search_sharded(SCENES / "search_feynman.scene.ron", 2, threads=1, calibrations=80, out=out)
    names = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert names == [
        "calibrations.jsonl",
        "front.svg",
        "frontier.csv",
        "frontier.svg",
        "programs.jsonl",
        "search.json",
    ]
    lines = (out / "calibrations.jsonl").read_text().splitlines()
    assert len(lines) == r["summary"]["calibrations"] == 80


CHILD = """
import sys, ndvm, numpy as np
what = sys.argv[1]
print("started", flush=True)
scene = {scene!r}
if what == "search":
    ndvm.search(scene, threads=1)
elif what == "search_sharded":
    ndvm.search_sharded(scene, 2, threads=1)
else:
    X = np.linspace(0.1, 5, 40)[:, None]
    ndvm.SymbolicRegressor(seconds=600, threads=1).fit(X, 2.3 * X[:, 0] / (0.7 + X[:, 0]))
print("returned", flush=True)
"""


@pytest.mark.parametrize("what", ["search", "search_sharded", "estimator"])
def test_ctrl_c_raises_keyboard_interrupt_within_about_a_second(what):
    if what == "estimator":
        pytest.importorskip("sklearn")
    long = scene(budget={"seconds": 600.0})
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD.format(scene=long), what],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "started"
        time.sleep(2.0)
        sent = time.time()
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=60)
        took = time.time() - sent
    finally:
        child.kill()
    assert "KeyboardInterrupt" in err, err
    assert child.returncode != 0
    assert took < 10, f"{took:.1f} s after Ctrl-C"


def test_search_sharded_without_a_folder_keeps_memory_flat():
    # The log streams nowhere: peak memory does not grow with the search's length.
    code = textwrap.dedent(
        f"""
        import resource, ndvm
        ndvm.search_sharded({str(SCENES / "search_scalar.scene.ron")!r}, 2, threads=2, seconds={{}})
        print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        """
    )
    peak = [
        int(subprocess.check_output([sys.executable, "-c", code.format(s)], text=True))
        for s in (1.0, 6.0)
    ]
    # ru_maxrss is in KiB: under 40 MB more for five more seconds (it grew by ~35 MB a second
    # when the log was kept in memory).
    assert peak[1] - peak[0] < 40_000, peak


def test_any_column_name_works_and_is_shown_as_given():
    sklearn = pytest.importorskip("sklearn")  # noqa: F841
    sympy = pytest.importorskip("sympy")
    rng = np.random.default_rng(0)
    X = rng.uniform(0.5, 2.0, size=(30, 2))
    y = 2.0 * X[:, 0] + X[:, 1]
    for names in (["if", "lambda"], ["True", "None"], ["nan", "x0"]):
        m = ndvm.SymbolicRegressor(calibrations=3000, seed=1, threads=1, variable_names=names)
        m.fit(X, y)
        assert m.score(X, y) > 0.999, (names, m.best_)
        expr = m.sympy()
        assert {s.name for s in expr.free_symbols} == set(names), (names, expr)
        assert all(n in m.best_["program"] for n in names), m.best_
        f = sympy.lambdify(sorted(expr.free_symbols, key=lambda s: names.index(s.name)), expr)
        np.testing.assert_allclose(f(X[:, 0], X[:, 1]), m.predict(X), rtol=1e-9)


def test_the_estimators_messages_name_the_cause_and_large_data_is_subsampled():
    pytest.importorskip("sklearn")
    rng = np.random.default_rng(0)
    X = rng.uniform(0.5, 2.0, size=(40_000, 1))
    y = 3.0 * X[:, 0]
    m = ndvm.SymbolicRegressor(calibrations=600, seed=1, threads=1)
    with pytest.warns(UserWarning, match="set max_rows"):
        m.fit(X, y)
    assert m.score(X, y) > 0.999
    with pytest.raises(ValueError, match="overflow double precision"):
        ndvm.SymbolicRegressor(calibrations=100).fit(X[:40], y[:40] * 1e300)


def test_a_csv_whose_every_row_is_non_finite_says_so(tmp_path):
    (tmp_path / "d.csv").write_text("x,y\nnan,1\n1,inf\n")
    s = scene()
    s["data"] = {
        "Csv": {"path": "d.csv", "columns": {"x": "x"}, "target": "y", "drop_non_finite": True}
    }
    with pytest.raises(ndvm.InputError, match="every one of its 2 data rows"):
        ndvm.search(s, base_dir=str(tmp_path))
