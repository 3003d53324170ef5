"""A search on Ray against one worker (the Ray issue's target: 4 local workers ≥ 3.5× one, on a
calibration budget, with byte-identical merged results).

    python python/bench/ray_search.py [CALIBRATIONS] [WORKERS,...] [SCENE]

Defaults: 40,000 calibrations of scenes/search_scalar.scene.ron (a stream dealt out among the
workers), workers 1,2,4 capped at the machine's cores; scenes/search_feynman.scene.ron runs
Evolve (4 epochs with migration on several workers, so each worker count searches different
programs, whose costs differ). Every task runs
one engine thread on one reserved CPU. For each worker count: the wall time of
``ndvm.ray.search`` (median of 3, after one warm-up that starts the workers), calibrations per
second, the speedup over one worker, and whether every run's merged report and log hashed the
same. The last column is the ceiling of the same machine, measured in the same run: that many
independent one-thread searches of the same size run at once in processes of their own, as
calibrations per second against one alone (what the cores give without any coordination).

With ``NDVM_SHARDS_ON=processes`` the same shards run in a pool of local processes instead of
Ray (the tasks ``ndvm.ray.search`` sends, handed out by the same driver): a machine without Ray
— the lent GPU machine, whose Python cannot take Ray's 79 MB wheel — measures what sharding
itself gives, and "same" then also checks the merged bytes against ``ndvm.search_sharded``.
"""

import hashlib
import json
import multiprocessing as mp
import os
import pathlib
import statistics
import sys
import tempfile
import time

import ndvm
from ndvm._shards import drive_files

ON_PROCESSES = os.environ.get("NDVM_SHARDS_ON") == "processes"
if not ON_PROCESSES:
    import ray

    import ndvm.ray

ROOT = pathlib.Path(__file__).resolve().parents[2]


def alone(args):
    scene, calibrations = args
    t = time.perf_counter()
    ndvm.search(scene, threads=1, calibrations=calibrations)
    return time.perf_counter() - t


def shard(args):
    """One shard task of one epoch, in a pool's process (what ``ndvm.ray``'s task runs)."""
    text, base, is_json, task = args
    return ndvm.search_shard(text, base, is_json, task, 1)


def search_files(scene, n, calibrations, pool):
    """The merged files of a search in ``n`` shards: on Ray, or on ``pool``'s processes."""
    if pool is None:
        return ndvm.ray.search_files(scene, n, threads=1, calibrations=calibrations, num_cpus=1)
    text, base, is_json = ndvm._scene_text(scene, None)

    def run_epoch(tasks):
        return pool.map(shard, [(text, base, is_json, t) for t in tasks])

    return drive_files(text, is_json, ndvm._title(scene), n, run_epoch, calibrations=calibrations)


def digest(files):
    """The merged report (without its timing) and program log, hashed."""
    report = json.loads(files["search.json"])
    report.pop("timing")
    return hashlib.sha256((json.dumps(report) + files["programs.jsonl"]).encode()).hexdigest()


def ceiling(scene, calibrations, n):
    """Calibrations per second of n independent one-thread searches run at once."""
    share = calibrations // n
    with mp.get_context("spawn").Pool(n) as pool:
        pool.map(alone, [(scene, 200)] * n)  # warm: imports and first-touch
        return share * n / max(pool.map(alone, [(scene, share)] * n))


def main():
    calibrations = int(sys.argv[1]) if len(sys.argv) > 1 else 40_000
    cores = os.cpu_count() or 1
    wanted = [int(w) for w in (sys.argv[2] if len(sys.argv) > 2 else "1,2,4").split(",")]
    workers = [w for w in wanted if w <= cores] or [1]
    scene = str(sys.argv[3]) if len(sys.argv) > 3 else str(ROOT / "scenes" / "search_scalar.scene.ron")
    if not ON_PROCESSES:
        ray.init(num_cpus=max(workers), include_dashboard=False, log_to_driver=False)
    where = "local processes" if ON_PROCESSES else "Ray"
    print(f"{calibrations} calibrations of {pathlib.Path(scene).name}, {cores} cores, shards on {where}")
    print(f"{'workers':>7} {'wall s':>8} {'cal/s':>9} {'speedup':>8} {'same':>5} {'ceiling':>8}")
    base, differ = None, []
    for n in workers:
        runs, digests = [], set()
        pool = mp.get_context("spawn").Pool(n) if ON_PROCESSES else None
        for i in range(4):
            t = time.perf_counter()
            files = search_files(scene, n, calibrations, pool)
            wall = time.perf_counter() - t
            digests.add(digest(files))
            if i > 0:
                runs.append(wall)
        if pool is not None:
            pool.close()
            # The same shards one after another in this process: the same bytes.
            with tempfile.TemporaryDirectory() as out:
                ndvm.search_sharded(scene, n, threads=1, calibrations=calibrations, out=out)
                names = ("search.json", "programs.jsonl")
                digests.add(digest({f: pathlib.Path(out, f).read_text() for f in names}))
        wall = statistics.median(runs)
        rate = calibrations / wall
        base = base or rate
        top = ceiling(scene, calibrations, n)
        if n == workers[0]:
            ceiling_one = top / n
        print(
            f"{n:>7} {wall:>8.3f} {rate:>9.0f} {rate / base:>7.2f}× {'yes' if len(digests) == 1 else 'NO':>5}"
            f" {top / ceiling_one:>7.2f}×"
        )
        if len(digests) != 1:
            differ.append(n)
    if not ON_PROCESSES:
        ray.shutdown()
    if differ:
        sys.exit(f"error: the merged results differed between runs of {differ} workers")


if __name__ == "__main__":
    main()
