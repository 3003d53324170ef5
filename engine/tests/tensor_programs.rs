//! Whole vector/matrix programs: the Kalman filter written with scalar algebra against the same
//! filter written with `mat`/`inv`/`det`; the D-dimensional Kalman example against the 2-D one and
//! against finite differences; the heat-equation and gravity examples against independent f64
//! reimplementations; and lane decomposition for all of them.

mod common;
use common::*;
use ndvm_engine::check::finite_differences;
use ndvm_engine::prelude::*;

fn example(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../docs/examples")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A bindings file's parts: scalars, constants, and matrices `(name, rows, cols, data)`.
struct File {
    scalars: Vec<(String, f64)>,
    constants: Vec<(String, f64)>,
    matrices: Vec<(String, usize, usize, Vec<f64>)>,
}

fn read_file(name: &str) -> File {
    let v: serde_json::Value = serde_json::from_str(&example(name)).expect("json");
    let pairs = |key: &str| -> Vec<(String, f64)> {
        v[key].as_object().map_or(Vec::new(), |m| {
            m.iter()
                .map(|(k, x)| (k.clone(), x.as_f64().expect("number")))
                .collect()
        })
    };
    let matrices = v["matrices"].as_object().map_or(Vec::new(), |m| {
        m.iter()
            .map(|(k, x)| {
                let data = x["data"].as_array().expect("data");
                (
                    k.clone(),
                    x["rows"].as_u64().expect("rows") as usize,
                    x["cols"].as_u64().expect("cols") as usize,
                    data.iter().map(|d| d.as_f64().expect("number")).collect(),
                )
            })
            .collect()
    });
    File {
        scalars: pairs("scalars"),
        constants: pairs("constants"),
        matrices,
    }
}

fn example_bindings<R: Real>(name: &str) -> Bindings<R> {
    let f = read_file(name);
    let mut b = Bindings::new();
    for (k, x) in &f.scalars {
        b.scalar(k, R::from_f64(*x));
    }
    for (k, x) in &f.constants {
        b.constant(k, R::from_f64(*x));
    }
    for (k, r, c, d) in &f.matrices {
        b.matrix(k, *r, *c, d.iter().map(|&x| R::from_f64(x)).collect());
    }
    b
}

fn eval<R: Real>(src: &str, b: &Bindings<R>) -> Evaluation<R> {
    run(src, b, true).unwrap_or_else(|e| panic!("{}", e.render(src)))
}

fn grad<R: Real>(e: &Evaluation<R>, name: &str) -> f64 {
    e.grads
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, g)| g[0].to_f64())
        .unwrap_or_else(|| panic!("no gradient for {name}"))
}

/// The 2-D Kalman filter of `kalman2d.scm` with every matrix written out as scalars, in the
/// order the matrix primitives compute them.
const SCALAR_KALMAN: &str = "
(loop ((k 0) (x1 0.0) (x2 0.0) (p11 1.0) (p12 0.0) (p21 0.0) (p22 1.0) (L 0.0))
  (if (= k 80)
      L
      (let* ((y (ref obs k))
             (a11 (+ p11 q)) (a12 p12) (a21 p21) (a22 (+ p22 q))
             (e1 (- (ref y 0) x1)) (e2 (- (ref y 1) x2))
             (s11 (+ a11 r)) (s12 a12) (s21 a21) (s22 (+ a22 r))
             (d (- (* s11 s22) (* s12 s21)))
             (i11 (/ s22 d)) (i12 (/ (- s12) d)) (i21 (/ (- s21) d)) (i22 (/ s11 d))
             (k11 (+ (* a11 i11) (* a12 i21))) (k12 (+ (* a11 i12) (* a12 i22)))
             (k21 (+ (* a21 i11) (* a22 i21))) (k22 (+ (* a21 i12) (* a22 i22)))
             (n11 (+ (* (- 1 k11) a11) (* (- 0 k12) a21)))
             (n12 (+ (* (- 1 k11) a12) (* (- 0 k12) a22)))
             (n21 (+ (* (- 0 k21) a11) (* (- 1 k22) a21)))
             (n22 (+ (* (- 0 k21) a12) (* (- 1 k22) a22)))
             (v1 (+ (* i11 e1) (* i12 e2))) (v2 (+ (* i21 e1) (* i22 e2)))
             (nll (+ (log d) (+ (* e1 v1) (* e2 v2)))))
        (recur (+ k 1)
               (+ x1 (+ (* k11 e1) (* k12 e2))) (+ x2 (+ (* k21 e1) (* k22 e2)))
               n11 n12 n21 n22
               (+ L nll)))))";

#[test]
fn scalar_and_matrix_kalman_filters_agree() {
    let b = example_bindings::<f32>("kalman2d.json");
    let matrix = eval(&example("kalman2d.scm"), &b);
    let scalar = eval(SCALAR_KALMAN, &b);
    let (m, s) = (numbers(&matrix)[0] as f64, numbers(&scalar)[0] as f64);
    assert!(close(m, s, 1e-4, 1e-6), "likelihood {m} vs {s}");
    assert!(close(m, 831.2209, 1e-2, 2e-3), "oracle likelihood, got {m}");
    for name in ["q", "r"] {
        let (gm, gs) = (grad(&matrix, name), grad(&scalar, name));
        assert!(close(gm, gs, 1e-3, 1e-5), "d/d{name}: {gm} vs {gs}");
    }
    assert!(close(grad(&matrix, "q"), -3458.7, 5.0, 2e-2));
    assert!(close(grad(&matrix, "r"), -7529.3, 5.0, 2e-2));
}

#[test]
fn d_dimensional_kalman_at_d2_is_the_2d_filter() {
    // kalman_nd.scm takes T and reads D from the data; on the 2-D observations it is the
    // 80-step filter (with `logdet` where kalman2d.scm has `(log (det S))`).
    let mut b = example_bindings::<f64>("kalman2d.json");
    b.constant("T", 80.0);
    let nd = eval(&example("kalman_nd.scm"), &b);
    let two = eval(&example("kalman2d.scm"), &b);
    let (x, y) = (numbers(&nd)[0], numbers(&two)[0]);
    assert!(close(x, y, 1e-9, 1e-12), "{x} vs {y}");
    for name in ["q", "r"] {
        assert!(close(grad(&nd, name), grad(&two, name), 1e-8, 1e-10));
    }
}

#[test]
fn d_dimensional_kalman_gradients_match_finite_differences() {
    for file in ["kalman_d4.json", "kalman_d8.json"] {
        let src = example("kalman_nd.scm");
        let b = example_bindings::<f64>(file);
        let program = Program::new(&src, &b.names()).expect("decodes");
        let mut vm = Vm::<f64>::default();
        let out = evaluate(&mut vm, &program, &b, true).expect("runs");
        assert!(numbers(&out)[0].is_finite());
        let fd = finite_differences(&mut vm, &program, &b, 1e-6).expect("fd");
        assert_eq!(out.grads.len(), 2, "{file}: q and r (T is a constant)");
        for ((name, g), (_, d)) in out.grads.iter().zip(&fd) {
            assert!(
                close(g[0], d[0], 1e-5, 1e-6),
                "{file} d/d{name}: {} vs {}",
                g[0],
                d[0]
            );
        }
    }
}

/// The heat example, reimplemented directly in f64.
fn heat_misfit(alpha: f64) -> f64 {
    let (dx, dt) = (0.1, 0.1);
    let mut u = vec![0.0, 0.3, 0.6, 0.9, 1.0, 1.0, 0.9, 0.6, 0.3, 0.0];
    let target = [
        0.161186, 0.311861, 0.440598, 0.535448, 0.585968, 0.585968, 0.535448, 0.440598, 0.311861,
        0.161186,
    ];
    for _ in 0..50 {
        let lu: Vec<f64> = (0..10)
            .map(|i| {
                let left = if i > 0 { u[i - 1] } else { 0.0 };
                let right = if i < 9 { u[i + 1] } else { 0.0 };
                (left - 2.0 * u[i] + right) / (dx * dx)
            })
            .collect();
        for i in 0..10 {
            u[i] += dt * alpha * lu[i];
        }
    }
    u.iter().zip(&target).map(|(a, b)| (a - b) * (a - b)).sum()
}

#[test]
fn heat_equation_matches_a_direct_reimplementation() {
    let src = example("heat1d.scm");
    let b = example_bindings::<f64>("heat1d.json");
    let out = eval(&src, &b);
    let want = heat_misfit(0.02);
    assert!(
        close(numbers(&out)[0], want, 1e-12, 1e-9),
        "{out:?} vs {want}"
    );
    let h = 1e-7;
    let fd = (heat_misfit(0.02 + h) - heat_misfit(0.02 - h)) / (2.0 * h);
    assert!(close(grad(&out, "alpha"), fd, 1e-6, 1e-6));
    // At the α that produced the target the misfit vanishes.
    let mut at = Bindings::<f64>::new();
    at.scalar("alpha", 0.01);
    assert!(numbers(&eval(&src, &at))[0] < 1e-10);
}

/// The gravity example, reimplemented directly in f64.
fn gravity_distance(gm: f64, v0: f64) -> f64 {
    let dt = 0.01;
    let accel = |p: [f64; 3]| {
        let r = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
        let s = -gm / (r * r * r);
        [s * p[0], s * p[1], s * p[2]]
    };
    let (mut p, mut v) = ([1.0, 0.0, 0.0], [0.0, v0, 0.1]);
    for _ in 0..100 {
        let a = accel(p);
        let vh: Vec<f64> = (0..3).map(|i| v[i] + 0.5 * dt * a[i]).collect();
        for i in 0..3 {
            p[i] += dt * vh[i];
        }
        let a2 = accel(p);
        for i in 0..3 {
            v[i] = vh[i] + 0.5 * dt * a2[i];
        }
    }
    (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt()
}

#[test]
fn gravity_matches_a_direct_reimplementation() {
    let src = example("gravity3d.scm");
    let b = example_bindings::<f64>("gravity3d.json");
    let out = eval(&src, &b);
    assert!(close(
        numbers(&out)[0],
        gravity_distance(1.0, 0.9),
        1e-12,
        1e-10
    ));
    let h = 1e-6;
    let d_gm = (gravity_distance(1.0 + h, 0.9) - gravity_distance(1.0 - h, 0.9)) / (2.0 * h);
    let d_v0 = (gravity_distance(1.0, 0.9 + h) - gravity_distance(1.0, 0.9 - h)) / (2.0 * h);
    assert!(close(grad(&out, "GM"), d_gm, 1e-6, 1e-6));
    assert!(close(grad(&out, "v0"), d_v0, 1e-6, 1e-6));
}

/// Each example with per-lane parameters (and for the D = 4 Kalman a different observation
/// matrix per lane): every lane byte-identical to itself run alone.
#[test]
fn examples_as_lanes_equal_their_lanes_alone() {
    let cases = [
        ("kalman_nd.scm", "kalman_d4.json"),
        ("kalman_nd.scm", "kalman_d8.json"),
        ("heat1d.scm", "heat1d.json"),
        ("gravity3d.scm", "gravity3d.json"),
    ];
    const B: usize = 12;
    for (scm, json) in cases {
        let src = example(scm);
        let file = read_file(json);
        let mut b = example_bindings::<f32>(json);
        for (name, x) in &file.scalars {
            let xs = (0..B)
                .map(|l| (x * (1.0 + 0.03 * l as f64)) as f32)
                .collect();
            b.lanes(name, xs);
        }
        for (name, rows, cols, data) in &file.matrices {
            let data = (0..B)
                .map(|l| data.iter().map(|&v| (v + 0.01 * l as f64) as f32).collect())
                .collect();
            b.lane_matrices(name, *rows, *cols, data);
        }
        let program = Program::new(&src, &b.names()).expect("decodes");
        let mut vm = Vm::<f32>::default();
        let batch = evaluate(&mut vm, &program, &b, true).expect("batch");
        for lane in 0..B {
            let alone = evaluate(&mut vm, &program, &b.lane(lane), true).expect("alone");
            assert_eq!(
                numbers(&batch)[lane].to_bits(),
                numbers(&alone)[0].to_bits(),
                "{scm} {json} lane {lane}"
            );
            for ((n, g), (_, g1)) in batch.grads.iter().zip(&alone.grads) {
                assert_eq!(
                    g[lane].to_bits(),
                    g1[0].to_bits(),
                    "{scm} lane {lane} d/d{n}"
                );
            }
        }
    }
}
