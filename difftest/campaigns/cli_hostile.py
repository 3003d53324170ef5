"""A hostile-input campaign against the `ndvm` binary (the hostile-input issues' promise: every
case ends with exit status 0, 1, 2 or 130 and a message — never a panic (101), an abort (134),
a hang (124 here) or an out-of-memory kill (137) — under an address-space cap and a time limit).

    python3 difftest/campaigns/cli_hostile.py [SCALE] [NDVM]

SCALE multiplies every family's size (1 is about a thousand cases; the issue's 10× rerun is
10). NDVM defaults to target/release/ndvm; NDVM_FAMILIES=signals,extremes runs only those families
(bytecode, shapes, files, proposers, signals, concurrent, extremes, python). Families, each seeded (the same scale gives the same
cases):

- bytecode mutations: the bundled programs compiled to `.nbcb` and `.nbc.json`, then bytes
  flipped, cut, repeated and spliced (binary) or characters mutated (JSON), each run and
  listed (`run`, `asm`);
- program shapes: the linear-cost and chain-depth shapes at three sizes each, under `run` and
  `run --bytecode`;
- inputs and outputs that are not files: FIFOs, folders, symbolic links, devices;
- search proposers that crash, hang, fork, print garbage, oversized or parameter-heavy lines;
- signals: plain, threaded and sharded searches sent SIGKILL, SIGTERM once or twice, or SIGINT
  at random times; the output folder must then hold whole lines, every calibration's program
  before it, results (if any) that agree with the log, and no spill files in `TMPDIR`;
- concurrent writers: two searches into one folder at once (one refused, exit 2; the folder
  whole);
- extreme values: one to three data points from 1e-300 to 1e308 (f32 and f64) through a search
  and every plot, within the time limit, the results written;
- Python scenes as dicts: scene settings set to 0, negative, huge or the wrong type through
  `ndvm.fit` and `ndvm.search` (run with the Python that has `ndvm` installed; skipped
  otherwise): a Python exception, never an abort or a hang.

Prints a table per family: cases, failures, the slowest case and the largest peak memory, and
exits 1 if any case failed.
"""

import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCALE = int(sys.argv[1]) if len(sys.argv) > 1 else 1
NDVM = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else os.path.join(ROOT, "target", "release", "ndvm")
LIMIT_S = 30
AS_BYTES = 8 << 30
OK = {0, 1, 2, 130}
WORK = tempfile.mkdtemp(prefix="ndvm-campaign-")


def cap():
    resource.setrlimit(resource.RLIMIT_AS, (AS_BYTES, AS_BYTES))


def run(args, stdin=None):
    """Runs ndvm; returns (exit status, seconds, its peak memory in KB, stderr tail)."""
    err_path = os.path.join(WORK, ".stderr")
    with open(err_path, "wb") as err_file:
        t = time.time()
        p = subprocess.Popen([NDVM] + args, stdout=subprocess.DEVNULL, stderr=err_file,
                             preexec_fn=cap, cwd=WORK, stdin=stdin or subprocess.DEVNULL)
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.time() - t > LIMIT_S:
                p.kill()
                pid, status, usage = os.wait4(p.pid, 0)
                status = 124 << 8
                break
            time.sleep(0.002)
        p.returncode = 0  # reaped here
    secs = time.time() - t
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        code = 128 - code
    err = open(err_path, "rb").read()[-300:].decode("utf-8", "replace")
    return code, secs, usage.ru_maxrss, err


class Family:
    def __init__(self, name):
        self.name, self.cases, self.failures, self.slowest, self.peak = name, 0, [], (0.0, ""), 0

    def case(self, label, args, stdin=None):
        code, secs, peak, err = run(args, stdin)
        self.cases += 1
        if code not in OK or "panicked" in err:
            self.failures.append(f"{label}: exit {code}: {err.strip()[-200:]}")
        if secs > self.slowest[0]:
            self.slowest = (secs, label)
        self.peak = max(self.peak, peak)

    def row(self):
        if getattr(self, "failures_note", None):
            return f"{self.name:<22} {self.failures_note}"
        return (f"{self.name:<22} {self.cases:>7} {len(self.failures):>8} "
                f"{self.slowest[0]:>8.2f} s  {self.peak / 1024:>7.0f} MB  {self.slowest[1]}")


def path(name, text=None, data=None):
    p = os.path.join(WORK, name)
    if text is not None:
        open(p, "w").write(text)
    if data is not None:
        open(p, "wb").write(data)
    return p


def bytecode_mutations(rng, n):
    f = Family("bytecode mutations")
    seeds = []
    programs = [os.path.join(ROOT, "scenes", "decay_offset.nbc"),
                path("seed_if.nbc", "LOAD x\nPUSH 0\nLT\nIF\nPUSH 1\nELSE\nLOAD x\nEXP\nEND\nRET\n"),
                path("seed_loop.nbc", "PUSH 0\nSET s\nLOOP 5\nGET s\nLOAD x\nADD\nSET s\nEND\nGET s\nRET\n")]
    for i, prog in enumerate(programs):
        for to, ext in (("nbcb", ".nbcb"), ("json", ".nbc.json")):
            out = path(f"seed{i}{ext}")
            subprocess.run([NDVM, "asm", prog, "--inputs", "x,k,A,t,b", "--to", to, "-o", out],
                           capture_output=True)
            if os.path.exists(out):
                seeds.append((ext, open(out, "rb").read()))
    for k in range(n):
        ext, data = rng.choice(seeds)
        b = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            op = rng.random()
            at = rng.randrange(max(1, len(b)))
            if op < 0.4 and b:
                b[at] = rng.randrange(256) if ext == ".nbcb" else rng.choice(b"0123456789-.,:{}[]\"e")
            elif op < 0.6:
                del b[at:]
            elif op < 0.8:
                b[at:at] = b[at:at + rng.randint(1, 64)] * rng.randint(1, 2000)
            else:
                b[at:at] = (rng.randrange(1 << 32)).to_bytes(4, "little")
        p = path(f"m{k % 64}{ext}", data=bytes(b))
        f.case(f"mutation {k}{ext} run", ["run", p, "--bindings", "x=1.5,k=0.3,A=2,t=1,b=0"])
        f.case(f"mutation {k}{ext} asm", ["asm", p])
    return f


def shapes():
    f = Family("program shapes")
    make = {
        "defines": lambda n: "".join(f"(define x{i} (+ {i} 1))\n" for i in range(n)) + "x0",
        "let": lambda n: "(let (" + " ".join(f"(x{i} {i})" for i in range(n)) + ") x0)",
        "lambda": lambda n: "((lambda (" + " ".join(f"x{i}" for i in range(n)) + ") x0) " + " 1" * n + ")",
        "loop": lambda n: "(loop (" + " ".join(f"(x{i} {i})" for i in range(n)) + ") x0)",
        "let*": lambda n: "(let* ((x 0) " + " ".join(f"(x (+ x {i}))" for i in range(n)) + ") x)",
        "and": lambda n: "(and" + " 1" * n + ")",
        "or": lambda n: "(or" + " #f" * n + " 1)",
        "cond": lambda n: "(cond" + " (#f 1)" * n + " (else 2))",
        "nested": lambda n: "(+ 1 " * min(n, 9999) + "1" + ")" * min(n, 9999),
        "unbound": lambda n: f"(let ((y{'q' * n} 1)) y{'r' * n})",
    }
    for name, fn in make.items():
        for n in (20_000 * SCALE, 40_000 * SCALE, 80_000 * SCALE):
            p = path(f"shape_{name}.scm", fn(n))
            f.case(f"{name} {n}", ["run", p])
            f.case(f"{name} {n} --bytecode", ["run", "--bytecode", p])
    return f


def not_files():
    f = Family("inputs/outputs")
    fifo = os.path.join(WORK, "fifo")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    folder = os.path.join(WORK, "folder")
    os.makedirs(folder, exist_ok=True)
    link = os.path.join(WORK, "link")
    if not os.path.lexists(link):
        os.symlink(os.path.join(WORK, "target.txt"), link)
    prog = path("p.scm", "(* a 2)")
    scene = os.path.join(ROOT, "scenes", "decay_csv.scene.ron")
    for k in range(10 * SCALE):
        for bad in (fifo, folder, link, "/dev/null", "/dev/zero", "/dev/full"):
            f.case(f"run {bad}", ["run", bad])
            f.case(f"--bindings {bad}", ["run", prog, "--bindings", bad])
            f.case(f"fit {bad}", ["fit", bad])
            f.case(f"fit --out {bad}", ["fit", scene, "--out", bad])
            f.case(f"asm -o {bad}", ["asm", prog, "-o", bad])
            f.case(f"profile --trace {bad}", ["profile", prog, "--trace", bad])
    return f


def proposers():
    f = Family("search proposers")
    here = os.path.join(ROOT, "systems", "tests", "proposers")
    scripts = {
        "crash": "crash.py", "hang": "hang.py", "garbage": "garbage.py", "wide": "wide.py",
    }
    extra = {
        "huge line": "import sys,json\nfor l in sys.stdin:\n  print(json.dumps({'src':'(+ a '+'1 '*600000+')','params':['a']}));sys.stdout.flush()\n",
        "1001 params": "import sys,json\nfor l in sys.stdin:\n  print(json.dumps({'src':'(* a x)','params':['p%d'%i for i in range(1001)]}));sys.stdout.flush()\n",
        "forks": "import sys,json,subprocess\nsubprocess.Popen(['sleep','60'])\nfor l in sys.stdin:\n  print(json.dumps({'src':'(* a x)','params':['a']}));sys.stdout.flush()\n",
        "exits": "print('{\"src\": \"(* a x)\", \"params\": [\"a\"]}')\n",
        "binary": "import sys\nsys.stdout.buffer.write(bytes(range(256))*100)\n",
    }
    argvs = {k: ["python3", os.path.join(here, v)] for k, v in scripts.items()}
    for k, v in extra.items():
        argvs[k] = ["python3", path(f"prop_{k.replace(' ', '_')}.py", v)]
    for k in range(2 * SCALE):
        for name, argv in argvs.items():
            scene = path("prop.scene.ron", f"""Scene(candidates: [],
  data: Some(Synthetic(program: "(* 2 x)", inputs: {{"x": Linspace(0.0, 1.0, 32)}}, split: Split(train: 0.7, seed: 1))),
  loss: Mse,
  search: Some(Search(proposers: [Command(argv: {json.dumps(argv)}, timeout_seconds: 2.0, batch: 4)],
    calibration: Calibration(steps: 10, optimizer: Adam(lr: 0.1), draws: 2),
    budget: Budget(seconds: Some(3.0)))))""")
            f.case(f"proposer {name}", ["search", scene, "--out", os.path.join(WORK, "out")])
    return f


def search_scene(name, proposers="[Stream(path: %s, cycle: true), Evolve()]", seconds=60.0):
    stream = json.dumps(os.path.join(ROOT, "scenes", "scalar_stream_247.jsonl"))
    return path(name, f"""Scene(candidates: [],
  data: Some(Synthetic(program: "(* (exp (* -0.3 x)) (cos (* 2 x)))",
    inputs: {{"x": Linspace(0.1, 6.0, 64)}}, noise_sd: 0.02, seed: 1, split: Split(train: 0.7, seed: 3))),
  loss: Mse,
  search: Some(Search(proposers: {proposers % stream if '%s' in proposers else proposers},
    calibration: Calibration(steps: 50, optimizer: Adam(lr: 0.05), draws: 4),
    success: HeldOutR2(0.9), budget: Budget(seconds: Some({seconds})))))""")


def folder_problems(out):
    """What is wrong with a search's output folder: [] when its files are whole and agree."""
    problems = []
    try:
        cal = open(os.path.join(out, "calibrations.jsonl"), "rb").read().decode()
        prog = open(os.path.join(out, "programs.jsonl"), "rb").read().decode()
    except FileNotFoundError:
        return [] if not os.path.exists(os.path.join(out, "search.json")) else ["results without a log"]
    for text, what in ((cal, "calibrations"), (prog, "programs")):
        if text and not text.endswith("\n"):
            problems.append(f"{what}.jsonl ends in a cut line")
    programs = set()
    for i, line in enumerate(prog.splitlines()):
        try:
            if json.loads(line)["program"] != i:
                problems.append(f"program line {i} misnumbered")
            programs.add(i)
        except ValueError:
            problems.append(f"program line {i} is not JSON")
            break
    lines = cal.splitlines()
    for i, line in enumerate(lines):
        try:
            v = json.loads(line)
        except ValueError:
            problems.append(f"calibration line {i} is not JSON")
            break
        if v["calibration"] != i:
            problems.append(f"calibration line {i} numbered {v['calibration']}")
            break
        if v["program"] not in programs:
            problems.append(f"calibration {i} names program {v['program']}, not on disk")
            break
    results = os.path.join(out, "search.json")
    if os.path.exists(results):
        try:
            n = json.load(open(results))["summary"]["calibrations"]
            if n != len(lines):
                problems.append(f"search.json says {n} calibrations, the log has {len(lines)}")
        except (ValueError, KeyError):
            problems.append("search.json is not whole")
    return problems


def signals(rng):
    f = Family("signals")
    scene = search_scene("signals.scene.ron")
    runs = {
        "plain": [],
        "one thread": ["--threads", "1"],
        "4 threads": ["--threads", "4"],
        "shards": ["--shards", "3", "--epochs", "6"],
    }
    plans = ["KILL", "TERM", "TERM TERM", "INT", "INT INT", "TERM KILL"]
    for k in range(6 * SCALE):
        for name, extra in runs.items():
            plan = rng.choice(plans)
            out = os.path.join(WORK, "sig-out")
            tmp = os.path.join(WORK, "sig-tmp")
            shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(tmp, ignore_errors=True)
            os.makedirs(tmp)
            at = rng.uniform(0.3, 2.5)
            gap = rng.choice([0.0, 0.01, 0.05, 0.3])
            label = f"{name}: {plan} at {at:.2f} s (gap {gap} s)"
            t = time.time()
            p = subprocess.Popen([NDVM, "search", scene, "--out", out] + extra, cwd=WORK,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 env={**os.environ, "TMPDIR": tmp}, preexec_fn=cap)
            time.sleep(at)
            for i, sig in enumerate(plan.split()):
                if i:
                    time.sleep(gap)
                try:
                    p.send_signal(getattr(signal, "SIG" + sig))
                except ProcessLookupError:
                    pass
            try:
                _, err = p.communicate(timeout=LIMIT_S)
                code = p.returncode
            except subprocess.TimeoutExpired:
                p.kill()
                _, err = p.communicate()
                code = 124
            f.cases += 1
            secs = time.time() - t
            if secs > f.slowest[0]:
                f.slowest = (secs, label)
            killed = "KILL" in plan
            if code in (1, 2) or (code not in OK and not (killed and code == -9)):
                f.failures.append(f"{label}: exit {code}: {err.decode(errors='replace')[-200:]}")
            for problem in folder_problems(out):
                f.failures.append(f"{label}: {problem}")
            left = os.listdir(tmp)
            if left and not killed:
                f.failures.append(f"{label}: left in TMPDIR: {left[:3]}")
    return f


def concurrent(rng):
    f = Family("concurrent writers")
    scene = search_scene("concurrent.scene.ron", seconds=2.0)
    for k in range(5 * SCALE):
        out = os.path.join(WORK, "same-out")
        shutil.rmtree(out, ignore_errors=True)
        extra = [[], ["--shards", "2"], ["--threads", "1"]]
        a, b = rng.choice(extra), rng.choice(extra)
        procs = [subprocess.Popen([NDVM, "search", scene, "--out", out] + x, cwd=WORK,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  preexec_fn=cap) for x in (a, b)]
        results = [(q.wait(timeout=LIMIT_S), q.stderr.read().decode(errors="replace")) for q in procs]
        f.cases += 1
        codes = sorted(c for c, _ in results)
        if not os.path.exists(os.path.join(out, "search.json")):
            f.failures.append(f"{a} and {b}: no run finished: {results[-1][1][-200:]}")
        refused = [e for c, e in results if c == 2]
        if codes != [0, 2] or "in use by another run" not in "".join(refused):
            # Both may succeed when the first ended before the second began.
            if codes != [0, 0]:
                f.failures.append(f"{a} and {b}: exits {codes}: {results[-1][1][-200:]}")
        for problem in folder_problems(out):
            f.failures.append(f"{a} and {b}: {problem}")
    return f


def extremes(rng):
    f = Family("extreme values")
    values = [1e-300, 1e-30, 1.0, 1e30, 1e150, 1.3e154, 1e200, 1e300, 1.7e308, -1e308, 0.0]
    for k in range(12 * SCALE):
        rows = rng.randint(1, 3)
        data = "x,y\n" + "".join(f"{rng.choice(values)!r},{rng.choice(values)!r}\n" for _ in range(rows))
        precision = rng.choice(["F32", "F64"])
        if k == 0:  # the example: a training loss of about 1.7e308 on the front
            data, precision = "x,y\n1.0,1.3e154\n", "F64"
        csv = path("extreme.csv", data)
        scene = path("extreme.scene.ron", f"""Scene(candidates: [], precision: Some({precision}),
  data: Some(Csv(path: {json.dumps(csv)}, columns: {{"x": "x"}}, target: "y")),
  loss: Mse,
  search: Some(Search(proposers: [Evolve()],
    calibration: Calibration(steps: 10, optimizer: Adam(lr: 0.1), draws: 2),
    success: TrainLoss(1e-6), budget: Budget(calibrations: Some(100)))))""")
        out = os.path.join(WORK, "extreme-out")
        shutil.rmtree(out, ignore_errors=True)
        label = f"{precision} {data.strip().splitlines()[1:]}"
        code, secs, peak, err = run(["search", scene, "--out", out])
        f.cases += 1
        if code not in OK or "panicked" in err:
            f.failures.append(f"{label}: exit {code}: {err.strip()[-200:]}")
        if code == 0:
            for name in ("search.json", "frontier.csv", "frontier.svg", "front.svg"):
                if not os.path.exists(os.path.join(out, name)):
                    f.failures.append(f"{label}: {name} missing")
        for problem in folder_problems(out):
            f.failures.append(f"{label}: {problem}")
        if secs > f.slowest[0]:
            f.slowest = (secs, label)
        f.peak = max(f.peak, peak)
    return f


PY_CHILD = """
import json, sys, ndvm
scene = json.loads(sys.argv[1])
try:
    (ndvm.search if scene.get("search") else ndvm.fit)(scene, threads=1)
except ndvm.NdvmError as e:
    print(type(e).__name__, e, file=sys.stderr)
    sys.exit(1)
"""


def python_scenes(rng):
    f = Family("python dict scenes")
    python = os.environ.get("NDVM_PYTHON", sys.executable)
    if subprocess.run([python, "-c", "import ndvm"], capture_output=True).returncode != 0:
        f.failures_note = "skipped: no ndvm module"
        return f
    bad = [0, -1, -5.0, 1e11, 2 ** 40, 1e308, float("nan"), "x", [], {}, None, True]

    def base():
        return {
            "candidates": [],
            "data": {"Synthetic": {"program": "(* 2 x)", "inputs": {"x": {"Linspace": [0.0, 1.0, 16]}}}},
            "loss": "Mse",
            "search": {
                "proposers": [{"Evolve": {}}],
                "calibration": {"steps": 10, "optimizer": {"Adam": {"lr": 0.1}}, "draws": 2},
                "budget": {"calibrations": 20},
                "success": {"TrainLoss": 1e-6},
            },
        }

    def places(s):
        c, e = s["search"]["calibration"], s["search"]["proposers"][0]["Evolve"]
        return [
            (c, "draws"), (c, "steps"), (c["optimizer"]["Adam"], "lr"), (s["search"], "window"),
            (s["search"], "keep"), (e, "elite"), (e, "max_nodes"), (e, "binary"), (e, "unary"),
            (s["search"]["budget"], "calibrations"), (s["search"]["budget"], "seconds"),
            (s["data"]["Synthetic"]["inputs"]["x"]["Linspace"], 2), (s["data"]["Synthetic"], "noise_sd"),
        ]

    for k in range(60 * SCALE):
        s = base()
        where, key = rng.choice(places(s))
        value = rng.choice(bad)
        where[key] = value
        if key == "calibrations" and value is None:
            # No budget left: the documented 60 s default, not a hang; keep the case short.
            s["search"]["budget"]["seconds"] = 5.0
        if rng.random() < 0.3:
            s["search"] = None
            s["candidates"] = [{"Inline": {"name": "l", "src": "(* a x)"}}]
        label = f"{key} = {value!r}" + (" (fit)" if s["search"] is None else "")
        text = json.dumps(s).replace("NaN", "\"nan\"")
        t = time.time()
        try:
            p = subprocess.run([python, "-c", PY_CHILD, text], capture_output=True,
                               timeout=LIMIT_S, preexec_fn=cap)
            code, err = p.returncode, p.stderr.decode(errors="replace")
        except subprocess.TimeoutExpired:
            code, err = 124, ""
        f.cases += 1
        if code not in (0, 1) or "Traceback" in err:
            f.failures.append(f"{label}: exit {code}: {err.strip()[-200:]}")
        secs = time.time() - t
        if secs > f.slowest[0]:
            f.slowest = (secs, label)
    return f


def main():
    rng = random.Random(20261126)
    every = {
        "bytecode": lambda: bytecode_mutations(rng, 500 * SCALE), "shapes": shapes,
        "files": not_files, "proposers": proposers, "signals": lambda: signals(rng),
        "concurrent": lambda: concurrent(rng), "extremes": lambda: extremes(rng),
        "python": lambda: python_scenes(rng),
    }
    only = os.environ.get("NDVM_FAMILIES")
    chosen = only.split(",") if only else list(every)
    families = [every[name]() for name in chosen]
    print(f"{'family':<22} {'cases':>7} {'failures':>8} {'slowest':>10}  {'peak':>10}  slowest case")
    for f in families:
        print(f.row())
    failures = [x for f in families for x in f.failures]
    for x in failures[:40]:
        print("FAIL", x)
    shutil.rmtree(WORK, ignore_errors=True)
    subprocess.run(["pkill", "-f", "sleep 60"], capture_output=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
