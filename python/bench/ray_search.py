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
"""

import hashlib
import json
import multiprocessing as mp
import os
import pathlib
import statistics
import sys
import time

import ray

import ndvm
import ndvm.ray

ROOT = pathlib.Path(__file__).resolve().parents[2]


def alone(args):
    scene, calibrations = args
    t = time.perf_counter()
    ndvm.search(scene, threads=1, calibrations=calibrations)
    return time.perf_counter() - t


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
    ray.init(num_cpus=max(workers), include_dashboard=False, log_to_driver=False)
    print(f"{calibrations} calibrations of {pathlib.Path(scene).name}, {cores} cores")
    print(f"{'workers':>7} {'wall s':>8} {'cal/s':>9} {'speedup':>8} {'same':>5} {'ceiling':>8}")
    base = None
    for n in workers:
        runs, digests = [], set()
        for i in range(4):
            t = time.perf_counter()
            files = ndvm.ray.search_files(scene, n, threads=1, calibrations=calibrations, num_cpus=1)
            wall = time.perf_counter() - t
            report = json.loads(files["search.json"])
            report.pop("timing")
            digests.add(hashlib.sha256((json.dumps(report) + files["programs.jsonl"]).encode()).hexdigest())
            if i > 0:
                runs.append(wall)
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
    ray.shutdown()


if __name__ == "__main__":
    main()
