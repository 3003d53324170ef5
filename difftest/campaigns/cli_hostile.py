"""A hostile-input campaign against the `ndvm` binary (the hostile-input issues' promise: every
case ends with exit status 0, 1, 2 or 130 and a message — never a panic (101), an abort (134),
a hang (124 here) or an out-of-memory kill (137) — under an address-space cap and a time limit).

    python3 difftest/campaigns/cli_hostile.py [SCALE] [NDVM]

SCALE multiplies every family's size (1 is about a thousand cases; the issue's 10× rerun is
10). NDVM defaults to target/release/ndvm. Families, each seeded (the same scale gives the same
cases):

- bytecode mutations: the bundled programs compiled to `.nbcb` and `.nbc.json`, then bytes
  flipped, cut, repeated and spliced (binary) or characters mutated (JSON), each run and
  listed (`run`, `asm`);
- program shapes: the linear-cost and chain-depth shapes at three sizes each, under `run` and
  `run --bytecode`;
- inputs and outputs that are not files: FIFOs, folders, symbolic links, devices;
- search proposers that crash, hang, fork, print garbage, oversized or parameter-heavy lines.

Prints a table per family: cases, failures, the slowest case and the largest peak memory, and
exits 1 if any case failed.
"""

import json
import os
import random
import resource
import shutil
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


def main():
    rng = random.Random(20261126)
    families = [bytecode_mutations(rng, 500 * SCALE), shapes(), not_files(), proposers()]
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
