"""`ndvm.fit` and `ndvm.search` from Python: the same results as the CLI, shards that merge
back byte for byte."""

import json
import subprocess

import pytest

import ndvm
from conftest import ROOT, ndvm_bin

SCENES = ROOT / "scenes"


def test_fit_equals_the_cli_results():
    scene = SCENES / "decay_csv.scene.ron"
    got = ndvm.fit(scene, threads=2)
    out = ROOT / "target" / "py-fit-results.json"
    subprocess.run([ndvm_bin(), "fit", str(scene), "--out", str(out)], check=True, capture_output=True)
    cli = json.loads(out.read_text())
    cli.pop("timing", None)
    assert got == cli
    assert got["candidates"][got["ranking"][0]]["name"] == "exponential_with_offset"
    assert abs(got["candidates"][0]["params"]["k"] - 0.691) < 0.01


def test_a_scene_as_a_dict():
    scene = {
        "candidates": [{"Inline": {"name": "line", "src": "(+ (* a x) b)"}}],
        "parameters": {"names": ["a", "b"], "init": {"a": 0.0, "b": 0.0}},
        "data": {
            "Synthetic": {
                "program": "(+ (* a x) b)",
                "constants": {"a": 2.0, "b": -1.0},
                "inputs": {"x": {"Linspace": [0.0, 1.0, 20]}},
            }
        },
        "loss": "Mse",
    }
    r = ndvm.fit(scene)
    c = r["candidates"][0]
    assert c["status"] == "converged"
    assert abs(c["params"]["a"] - 2.0) < 1e-6 and abs(c["params"]["b"] + 1.0) < 1e-6


def test_shards_merge_back_byte_for_byte():
    scene = SCENES / "feynman.scene.ron"
    text = scene.read_text()
    base = str(SCENES)
    whole = ndvm.fit_json(text, base, False, 2)
    for n in (2, 3, 7):
        parts = [ndvm.fit_json(text, base, False, 2, k, n) for k in range(n)]
        assert ndvm.merge_results(parts) == whole, n
    # A part repeated (a retried shard reported twice) is kept once.
    parts = [ndvm.fit_json(text, base, False, 2, k, 2) for k in range(2)]
    assert ndvm.merge_results(parts + parts[:1]) == whole


def test_search_runs_a_search_scene():
    r = ndvm.search(SCENES / "search_feynman.scene.ron", calibrations=200)
    assert isinstance(r, dict) and r


def test_a_task_or_output_from_another_build_is_refused():
    from ndvm._ndvm import search_plan, search_shard, search_tasks

    scene = SCENES / "search_feynman.scene.ron"
    text, base = scene.read_text(), str(SCENES)
    plan = search_plan(text, False, 2, 2, 40, None, None)
    task = search_tasks(plan, 0, [])[0]
    output = json.loads(search_shard(text, base, False, task, 1))
    assert output["task"]["wire"] >= 1
    # A build before versions sent no `wire`: its task is not run, its output not used.
    older = json.loads(task)
    del older["wire"]
    with pytest.raises(ndvm.InputError, match="another ndvm build"):
        search_shard(text, base, False, json.dumps(older), 1)
    del output["task"]["wire"]
    with pytest.raises(ndvm.InputError, match="another ndvm build"):
        search_tasks(plan, 1, [json.dumps(output)])


def test_one_shard_is_the_plain_search_and_shards_write_a_whole_log(tmp_path):
    scene = SCENES / "search_feynman.scene.ron"
    plain = ndvm.search(scene, threads=2, calibrations=200)
    assert ndvm.search_sharded(scene, 1, threads=1, calibrations=200) == plain
    out = tmp_path / "sharded"
    r = ndvm.search_sharded(scene, 3, threads=1, calibrations=300, epochs=2, out=out)
    assert r["summary"]["calibrations"] == 300
    log = [json.loads(line) for line in (out / "calibrations.jsonl").read_text().splitlines()]
    assert [x["calibration"] for x in log] == list(range(300))
    programs = (out / "programs.jsonl").read_text().splitlines()
    assert len(programs) == 1 + max(x["program"] for x in log)
    written = json.loads((out / "search.json").read_text())
    assert written["timing"]["wall_s"] > 0
    written.pop("timing")
    assert written == r
    assert (out / "frontier.svg").read_text().startswith("<svg")
    # The shards of a round run at once on the workers: the same result on two.
    assert ndvm.search_sharded(scene, 3, threads=2, calibrations=300, epochs=2) == r


def test_a_trajectory_scene_recovers_its_rates():
    r = ndvm.fit(SCENES / "lotka_volterra_trajectory.scene.ron")
    c = r["candidates"][0]
    assert c["status"] == "converged"
    for name, truth in {"alpha": 1.0, "beta": 0.1, "delta": 0.075, "gamma": 1.5}.items():
        assert abs(c["params"][name] - truth) < 1e-6 * truth, (name, c["params"])
