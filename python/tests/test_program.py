"""`ndvm.Program` through the binding: oracle values, lanes and gradients equal to
`ndvm run --json`, replay on repeated calls, matrices in and out."""

import numpy as np
import pytest

import ndvm
from conftest import ROOT, ndvm_run_json, oracle_programs


def scalar_cases():
    for p in oracle_programs():
        if p.get("matrix") is None and p.get("oracle_result") is not None and "error" not in p:
            yield p


@pytest.mark.parametrize("case", list(scalar_cases()), ids=lambda c: c["name"])
def test_oracle_programs_through_the_binding(case):
    names = list(case["scalars"])
    prog = ndvm.Program(case["src"], names)
    out = prog.evaluate({k: float(v) for k, v in case["scalars"].items()}, precision="f64")
    want = case["oracle_result"]
    assert out["lanes"] == 1
    assert abs(float(out["result"][0]) - want) <= 1e-4 * (1 + abs(want))
    for name, g in case.get("grads", {}).items():
        if g is None:
            continue
        assert abs(float(out["grads"][name][0]) - g) <= 1e-3 * (1 + abs(g)), name


def test_kalman_oracle_with_a_matrix():
    case = next(p for p in oracle_programs() if p["name"] == "kalman2d_T80")
    m = case["matrix"]
    obs = np.array(m["data"], dtype=np.float64).reshape(m["rows"], m["cols"])
    prog = ndvm.Program(case["src"], ["q", "r", "obs"])
    out = prog.evaluate({"q": 0.05, "r": 0.1}, precision="f64", constants={"obs": obs})
    assert abs(float(out["result"][0]) - case["oracle_result"]) < 1e-3
    assert abs(float(out["grads"]["q"][0]) - case["grads"]["q"]) < 1e-2


def test_lanes_and_gradients_equal_ndvm_run():
    src = "(/ (* Vmax S) (+ Km S))"
    prog = ndvm.Program(src, ["Vmax", "Km", "S"])
    s = np.array([1.5, 0.5, 3.0])
    for precision in ("f32", "f64"):
        out = prog.evaluate({"Vmax": 2.0, "Km": 0.5, "S": s}, precision=precision)
        cli = ndvm_run_json(["--expr", src, "--bind", "Vmax=2", "--bind", "Km=0.5",
                             "--lane", "S=1.5,0.5,3.0", "--grad", "--precision", precision])
        assert out["lanes"] == cli["lanes"] == 3
        dtype = np.float32 if precision == "f32" else np.float64
        assert out["result"].dtype == dtype
        assert out["result"].tolist() == [dtype(x).item() for x in cli["result"]]
        for name in ("Vmax", "Km", "S"):
            assert out["grads"][name].tolist() == [dtype(x).item() for x in cli["grads"][name]]


def test_example_program_equals_ndvm_run():
    path = ROOT / "docs" / "examples" / "logistic_map.scm"
    prog = ndvm.Program(path.read_text(), ["r", "x0"])
    out = prog.evaluate({"r": np.array([3.2, 3.5]), "x0": 0.4})
    cli = ndvm_run_json([str(path), "--lane", "r=3.2,3.5", "--bind", "x0=0.4", "--grad"])
    assert out["result"].tolist() == [np.float32(x).item() for x in cli["result"]]
    assert out["grads"]["r"].tolist() == [np.float32(x).item() for x in cli["grads"]["r"]]


def test_repeated_calls_replay_and_equal_fresh_evaluations():
    src = "(loop ((i 0) (x x0)) (if (< i 20) (recur (+ i 1) (* r (* x (- 1 x)))) x))"
    prog = ndvm.Program(src, ["r", "x0"])
    fresh = ndvm.Program(src, ["r", "x0"])
    for k in range(5):
        inputs = {"r": np.array([2.9, 3.1]) + 0.01 * k, "x0": 0.4}
        again = prog.evaluate(inputs, precision="f64")
        once = fresh.evaluate(inputs, precision="f64")
        fresh = ndvm.Program(src, ["r", "x0"])
        assert again["result"].tolist() == once["result"].tolist()
        assert again["grads"]["r"].tolist() == once["grads"]["r"].tolist()


def test_vectors_and_matrices_come_out_as_arrays():
    prog = ndvm.Program("(scale a (mat [1 2] [3 4]))", ["a"])
    out = prog.evaluate({"a": np.array([1.0, 2.0, 3.0])}, precision="f64")
    assert out["result"].shape == (3, 2, 2)
    assert out["result"][2].tolist() == [[3.0, 6.0], [9.0, 12.0]]
    v = ndvm.Program("[a (* 2 a)]", ["a"]).evaluate({"a": np.array([1.0, 5.0])})
    assert v["result"].shape == (2, 2)
    lm = np.arange(2 * 4, dtype=np.float64).reshape(2, 2, 2)
    t = ndvm.Program("(* a (trace m))", ["a", "m"]).evaluate({"a": 1.0}, constants={"m": lm}, precision="f64")
    assert t["result"].tolist() == [3.0, 11.0]


def test_limits_are_keyword_arguments():
    prog = ndvm.Program("(loop ((i 0)) (recur (+ i 1)))", [])
    with pytest.raises(ndvm.LimitError) as e:
        prog.evaluate({}, max_steps=1000)
    assert e.value.kind == "limit"
    assert "eval steps" in e.value.message


def test_the_gil_is_released_while_the_engine_works():
    import threading
    import time

    prog = ndvm.Program("(loop ((i 0) (s 0)) (if (< i 3000000) (recur (+ i 1) (+ s x)) s))", ["x"])

    def spin(seconds):
        n, end = 0, time.perf_counter() + seconds
        while time.perf_counter() < end:
            n += 1
        return n

    alone = spin(0.05) / 0.05  # Python-loop iterations per second with nobody else running
    done = threading.Event()
    took = {}

    def work():
        t = time.perf_counter()
        prog.evaluate({"x": 1.0}, grad=False)
        took["s"] = time.perf_counter() - t
        done.set()

    th = threading.Thread(target=work)
    start = time.perf_counter()
    th.start()
    n = 0
    while not done.is_set():
        n += 1
    th.join()
    elapsed = time.perf_counter() - start
    assert took["s"] > 0.02, "the evaluation was too short to tell"
    # With the GIL held for the whole evaluation this loop would barely run.
    assert n / elapsed > 0.2 * alone * 0.3, (n, elapsed, alone)


def test_any_memory_layout_reads_row_major():
    m = np.arange(6, dtype=np.float64).reshape(2, 3)
    prog = ndvm.Program("(ref (ref m 0) 1)", ["m"])
    for layout in (m, np.asfortranarray(m), m.T.copy().T, m.astype(np.float32)):
        out = prog.evaluate({}, constants={"m": layout}, precision="f64")
        assert out["result"].tolist() == [1.0]
