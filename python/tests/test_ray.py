"""`ndvm.ray.fit` on a local Ray cluster (2 CPUs): sharded by candidate, merged byte for byte
equal to one process's fit whatever the shard count, and a worker killed mid-run is retried with
no candidate lost or duplicated."""

import json
import os
import signal
import threading
import time

import pytest

ray = pytest.importorskip("ray")

import ndvm  # noqa: E402
import ndvm.ray  # noqa: E402
from conftest import ROOT  # noqa: E402

SCENE = ROOT / "scenes" / "feynman.scene.ron"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    pause = tmp_path_factory.mktemp("ray-pause")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"NDVM_RAY_TEST_PAUSE_DIR": str(pause)}},
    )
    yield pause
    ray.shutdown()


def single_process():
    return ndvm.fit_json(SCENE.read_text(), str(SCENE.parent), False, 1)


def test_a_killed_worker_is_retried_and_nothing_is_lost(cluster):
    pause = cluster
    result = {}

    def run():
        result["text"] = ndvm.ray.fit_json_text(SCENE, num_shards=2, threads=1, max_retries=3)

    t = threading.Thread(target=run)
    t.start()
    marker = pause / "shard0.pid"
    deadline = time.time() + 120
    while not marker.exists() and time.time() < deadline:
        time.sleep(0.05)
    assert marker.exists(), "shard 0 never started"
    pid = int(marker.read_text().split()[0])
    os.kill(pid, signal.SIGKILL)  # mid-run: the first attempt lingers 3 s before fitting
    t.join(timeout=300)
    assert not t.is_alive()
    attempts = marker.read_text().split()
    assert len(attempts) >= 2, "the killed shard was not retried"
    assert attempts[0] != attempts[-1]
    merged = json.loads(result["text"])
    indices = [c["index"] for c in merged["candidates"]]
    assert indices == list(range(15)), "a candidate was lost or duplicated"
    assert result["text"] == single_process()


@pytest.mark.parametrize("shards", [1, 2, 3])
def test_merged_shards_equal_one_process_byte_for_byte(cluster, shards):
    assert ndvm.ray.fit_json_text(SCENE, num_shards=shards, threads=1) == single_process()
    as_dict = ndvm.ray.fit(SCENE, num_shards=shards)
    assert as_dict == json.loads(single_process())


SEARCH = ROOT / "scenes" / "search_feynman.scene.ron"


def test_a_search_on_ray_is_the_local_sharded_search_and_survives_a_killed_worker(cluster):
    pause = cluster
    local = ndvm.search_sharded(SEARCH, 2, threads=1, calibrations=240, epochs=2)
    assert local["summary"]["calibrations"] == 240
    result = {}

    def run():
        result["files"] = ndvm.ray.search_files(SEARCH, 2, threads=1, calibrations=240, epochs=2)

    t = threading.Thread(target=run)
    t.start()
    marker = pause / "search1-0.pid"  # epoch 1, shard 0: after a migration
    deadline = time.time() + 180
    while not marker.exists() and time.time() < deadline:
        time.sleep(0.05)
    assert marker.exists(), "epoch 1 never started"
    os.kill(int(marker.read_text().split()[0]), signal.SIGKILL)
    t.join(timeout=300)
    assert not t.is_alive()
    assert len(set(marker.read_text().split())) >= 2, "the killed task was not retried"
    files = result["files"]
    log = [json.loads(line) for line in files["calibrations.jsonl"].splitlines()]
    assert [x["calibration"] for x in log] == list(range(240)), "a calibration was lost or repeated"
    got = json.loads(files["search.json"])
    got.pop("timing")
    assert got == local
    again = ndvm.ray.search(SEARCH, 2, threads=1, calibrations=240, epochs=2)
    assert again == local
