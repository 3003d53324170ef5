//! Tapes beyond the conformance set on the device: the differential-testing corpus, programs
//! whose lanes diverge (guards that fail and are flagged), linear algebra at n = 1…8, a batch
//! split into chunks and a tape split into many dispatches, and a device lost mid-run.

#[path = "../../engine/tests/common/mod.rs"]
mod common;
mod support;

use common::*;
use ndvm_engine::prelude::*;
use ndvm_gpu::{Entry, Kernel, Segmenting};
use support::*;

#[test]
fn fuzz_corpus_on_the_gpu() {
    let Some(gpu) = gpu() else { return };
    let corpus = read_jsonl("fuzz/seed1234_n200.jsonl");
    let (mut runs, mut flagged) = (0, 0);
    for p in &corpus {
        let id = p["id"].as_u64().unwrap_or(0);
        let src = p["src"].as_str().expect("src");
        let bind = |shift: f64, lanes: usize| fuzz_bindings(p, shift, lanes);
        let program = Program::new(src, &bind(0.0, 1).names()).expect("decodes");
        for lanes in [1, 8] {
            for shift in [1e-3, 5e-2] {
                let what = format!("fuzz #{id} B={lanes} shift={shift}");
                let (first, next) = (bind(0.0, lanes), bind(shift, lanes));
                if let Some(seen) =
                    gpu_matches_cpu(&gpu, &what, &program, (&first, &next), usize::MAX)
                {
                    runs += 1;
                    flagged += seen.failed;
                }
            }
        }
    }
    assert!(runs >= 400, "only {runs} runs compared");
    eprintln!("{runs} runs, {flagged} lanes flagged");
}

#[test]
fn diverging_lanes_are_merged_and_flagged_as_on_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut flagged = 0;
    for (name, src, inputs) in divergence_programs() {
        let names: Vec<&str> = inputs.iter().map(String::as_str).collect();
        let program = Program::new(&src, &names).expect("decodes");
        let bind = |seed: usize| {
            let mut b = Bindings::<f32>::new();
            for &i in &names {
                let xs = (0..96).map(|l| {
                    let x = divergence_value(i, l, 0);
                    if i == "n" || i == "m" || l % 4 != 0 {
                        x
                    } else {
                        divergence_value(i, l, seed)
                    }
                });
                b.lanes(i, xs.collect());
            }
            b
        };
        // Every fourth lane moves (many across a branch boundary); 64 lanes per chunk.
        if let Some(seen) = gpu_matches_cpu(&gpu, &name, &program, (&bind(0), &bind(1)), 64) {
            flagged += seen.failed;
        }
    }
    assert!(flagged > 0, "some moved lanes take another branch");
}

#[test]
fn linear_algebra_at_n_1_to_24() {
    let Some(gpu) = gpu() else { return };
    // 12 and 24: the cooperative entry solves in workgroup memory.
    for n in (1..=8usize).chain([12, 24]) {
        let lanes = if n > 8 { 8 } else { 32 };
        // A well-conditioned matrix per lane: diagonal dominance plus a lane-dependent part.
        let mats: Vec<Vec<f32>> = (0..lanes)
            .map(|l| {
                (0..n * n)
                    .map(|e| {
                        let (i, j) = (e / n, e % n);
                        let u = (((l * 31 + e * 17) % 23) as f32) / 23.0 - 0.5;
                        if i == j { 2.0 + u } else { 0.3 * u }
                    })
                    .collect()
            })
            .collect();
        let v: Vec<String> = (0..n)
            .map(|i| format!("{}", 0.5 + i as f32 * 0.25))
            .collect();
        let v = format!("(vec {})", v.join(" "));
        for body in [
            "(det (scale s m))",
            "(logdet (scale s m))",
            "(vsum (matvec (inv (scale s m)) v))",
            "(trace (matmul (scale s m) (transpose m)))",
            "(dot (matvec m v) (normalize (scale s v)))",
            "(vsum (matvec (outer v v) (scale s v)))",
            "(norm (matvec (scale s m) v))",
            "(let ((a (scale s m))) (trace (matmul a (transpose (matmul a a)))))",
        ] {
            let mut b = Bindings::<f32>::new();
            b.lanes("s", (0..lanes).map(|l| 0.8 + 0.01 * l as f32).collect());
            b.lane_matrices("m", n, n, mats.clone());
            let body = body.replace(" v", &format!(" {v}"));
            let body = body.as_str();
            let Ok(program) = Program::new(body, &b.names()) else {
                panic!("{body} decodes")
            };
            let what = format!("{body} n={n}");
            let seen = gpu_matches_cpu(&gpu, &what, &program, (&b, &b), usize::MAX)
                .unwrap_or_else(|| panic!("{what}: runs"));
            assert_eq!(seen.failed, 0, "{what}");
        }
    }
}

#[test]
fn a_matmul_too_wide_for_workgroup_memory() {
    let Some(gpu) = gpu() else { return };
    // 64 x 40 times 40 x 64: the operands (5,120 floats) exceed the cooperative entry's
    // workgroup memory, so it reads them from the payload, forward and backward. One lane's
    // 164k multiply-adds are too long for one invocation of the software driver: this runs the
    // cooperative entry only.
    let (m, k) = (64usize, 40usize);
    let lanes = 4;
    let entry = |l: usize, e: usize| ((l * 13 + e * 7) % 29) as f32 / 29.0 - 0.5;
    let mut b = Bindings::<f32>::new();
    b.lanes("s", (0..lanes).map(|l| 0.9 + 0.05 * l as f32).collect());
    b.lane_matrices(
        "a",
        m,
        k,
        (0..lanes)
            .map(|l| (0..m * k).map(|e| entry(l, e)).collect())
            .collect(),
    );
    b.matrix("b", k, m, (0..k * m).map(|e| entry(7, e)).collect());
    let src = "(trace (matmul (scale s a) (scale s b)))";
    let program = Program::new(src, &b.names()).expect("decodes");
    for kernel in [Kernel::Cooperative, Kernel::Batched] {
        let seen =
            gpu_matches_cpu_with(&gpu, src, &program, (&b, &b), usize::MAX, kernel).expect("runs");
        assert_eq!(seen.values, lanes * 2);
    }
}

#[test]
fn singular_matrices_and_a_long_tape() {
    let Some(gpu) = gpu() else { return };
    // det's cofactors at a singular 4x4 come from the minors.
    let mut b = Bindings::<f32>::new();
    let singular = vec![
        1.0, 2.0, 3.0, 4.0, 2.0, 4.0, 6.0, 8.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 2.0, 5.0,
    ];
    b.lanes("s", vec![1.0, 2.0]).matrix("m", 4, 4, singular);
    let program = Program::new("(det (scale s m))", &b.names()).expect("decodes");
    gpu_matches_cpu(&gpu, "singular det", &program, (&b, &b), usize::MAX).expect("runs");
    // 20,000 nodes: far more than one dispatch runs.
    let src = "(loop ((i 0) (y x)) (if (< i 20000) (recur (+ i 1) (* y 1.00001)) y))";
    let mut b = Bindings::<f32>::new();
    b.lanes("x", vec![1.0, 2.0, 3.0]);
    let program = Program::new(src, &b.names()).expect("decodes");
    let seen = gpu_matches_cpu(&gpu, "long tape", &program, (&b, &b), usize::MAX).expect("runs");
    assert_eq!(seen.values, 6);
}

#[test]
fn a_lost_device_is_an_error_and_earlier_results_stand() {
    let Some(gpu) = gpu() else { return };
    let mut b = Bindings::<f32>::new();
    b.lanes("a", vec![1.0, 2.0, 3.0]).scalar("t", 2.0);
    let program = Program::new("(* a (exp (- 0 t)))", &b.names()).expect("decodes");
    let mut vm = Vm::<f32>::default();
    vm.eval(&program, &b, true).expect("walks");
    let rec = vm.recording().expect("recorded");
    let mut tape = gpu.upload(&rec).expect("uploads");
    let before = tape.run(&gpu, &rec, true).expect("runs");
    assert!(agree(before.result[2], 3.0 * (-2.0f32).exp()));
    gpu.destroy();
    let after = tape.run(&gpu, &rec, true);
    assert!(
        matches!(after, Err(ndvm_gpu::GpuError::Lost(_))),
        "got {after:?}"
    );
    assert!(matches!(gpu.upload(&rec), Err(ndvm_gpu::GpuError::Lost(_))));
    assert!(agree(before.result[2], 3.0 * (-2.0f32).exp()));
}

#[test]
fn one_walked_lane_replays_a_population() {
    let Some(mut gpu) = gpu() else { return };
    let mut checked = 0;
    let mut sliced = 0;
    for (name, src, inputs) in divergence_programs() {
        let names: Vec<&str> = inputs.iter().map(String::as_str).collect();
        let program = Program::new(&src, &names).expect("decodes");
        let lanes = 200;
        let column =
            |i: &str| -> Vec<f32> { (0..lanes).map(|l| divergence_value(i, l, 0)).collect() };
        let mut one = Bindings::<f32>::new();
        let mut all = Bindings::<f32>::new();
        for &i in &names {
            one.lanes(i, vec![column(i)[0]]);
            all.lanes(i, column(i));
        }
        let mut vm = Vm::<f32>::default();
        let Ok(v) = vm.eval(&program, &one, true) else {
            continue;
        };
        if vm.numbers(v).is_none() {
            continue;
        }
        // A result that is a constant in the walked lane records nothing to replay.
        let Some(rec) = vm.recording() else { continue };
        let mut tape = gpu.upload_broadcast(&rec, lanes).expect("uploads");
        let cols: Vec<Vec<f32>> = names.iter().map(|&i| column(i)).collect();
        let given: Vec<Option<&[f32]>> = cols.iter().map(|c| Some(c.as_slice())).collect();
        let run = tape.run_lanes(&gpu, &rec, &given, true).expect("runs");
        // With room for a fifth of the lanes, the same lanes run in slices through one set of
        // buffers (the last slice overlapping the one before): the same bits, each failed lane
        // once.
        let whole = gpu.resident_bytes();
        gpu.set_resident_bytes(tape.payload_bytes() / 5);
        let mut slices = gpu.upload_broadcast(&rec, lanes).expect("uploads");
        gpu.set_resident_bytes(whole);
        assert!(slices.sliced() && slices.chunking().1 >= 5, "{name}");
        for _ in 0..2 {
            let again = slices.run_lanes(&gpu, &rec, &given, true).expect("runs");
            assert_eq!(bits(&again.result), bits(&run.result), "{name}");
            for (a, b) in again.grads.iter().zip(&run.grads) {
                assert_eq!(bits(a), bits(b), "{name}");
            }
            assert_eq!(
                (&again.failed, &again.failures),
                (&run.failed, &run.failures)
            );
        }
        sliced += 1;
        let mut fresh = Vm::<f32>::default();
        let Ok(w) = fresh.eval(&program, &all, true) else {
            continue;
        };
        let want = fresh.numbers(w).expect("a number");
        fresh.backward(w);
        assert!(!run.failed.contains(&0), "{name}: the walked lane holds");
        for l in (0..lanes).filter(|l| !run.failed.contains(&(*l as u32))) {
            assert!(agree(run.result[l], want[l]), "{name} lane {l}");
            for (i, g) in run.grads.iter().enumerate() {
                assert!(
                    agree(g[l], fresh.grad(i)[l]),
                    "{name} lane {l} d/d{}",
                    names[i]
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 500, "{checked} lanes checked");
    assert!(sliced > 5, "{sliced} programs sliced");
}

fn bits(xs: &[f32]) -> Vec<u32> {
    xs.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn both_entries_compute_the_same_bits() {
    let Some(gpu) = gpu() else { return };
    // The shipped 8-dimensional Kalman filter (scenes/kalman_nd.scm), over 6 of its 80 steps.
    let (d, steps, lanes) = (8usize, 6usize, 16usize);
    let src = include_str!("../../scenes/kalman_nd.scm");
    assert!(src.contains("(= k 80)"));
    let src = src.replace("(= k 80)", &format!("(= k {steps})"));
    let mut b = Bindings::<f32>::new();
    b.lanes("q", (0..lanes).map(|l| 0.1 + 0.02 * l as f32).collect());
    b.lanes("r", (0..lanes).map(|l| 0.5 - 0.01 * l as f32).collect());
    let obs = (0..steps * d)
        .map(|i| (i as f32 * 0.618_034).fract() - 0.5)
        .collect();
    b.matrix("obs", steps, d, obs);
    let program = Program::new(&src, &b.names()).expect("decodes");
    let mut vm = Vm::<f32>::default();
    vm.eval(&program, &b, true).expect("walks");
    let rec = vm.recording().expect("recorded");
    let run = |kernel: Kernel| {
        let mut tape = gpu
            .upload_with(&rec, lanes, usize::MAX, kernel)
            .expect("uploads");
        assert_eq!(tape.kernel(), kernel);
        tape.run(&gpu, &rec, true).expect("runs")
    };
    let (lane, coop) = (run(Kernel::Lane), run(Kernel::Cooperative));
    let batched = run(Kernel::Batched);
    let bits = |r: &ndvm_gpu::DeviceRun| -> Vec<u32> {
        r.result
            .iter()
            .chain(r.grads.iter().flatten())
            .map(|x| x.to_bits())
            .collect()
    };
    assert!(lane.failed.is_empty() && coop.failed.is_empty() && batched.failed.is_empty());
    assert_eq!(bits(&lane), bits(&coop));
    assert_eq!(bits(&lane), bits(&batched));
    // `auto`: the filter's tape is dense linear algebra apart from `scale`'s one multiply per
    // element, which runs as runs of independent nodes. At D = 8 (64 elements, under
    // `COOPERATE_FROM`) one invocation per lane was measured 2× faster on an H200, so it keeps
    // that entry on any adapter.
    let enc = ndvm_gpu::Encoded::new(&rec, Segmenting::HARDWARE).expect("encodes");
    assert_eq!(enc.widest, (d * d) as u32);
    assert!(
        enc.serial_work * 100 < enc.work,
        "{} of {}",
        enc.serial_work,
        enc.work
    );
    assert_eq!(ndvm_gpu::tape_work(&rec), enc.work);
    // Node-major: the segments cover the tape in order, each wide node alone in a dispatch of
    // its own (the filter's products and sums node-major, its `inv` and `logdet` cooperative),
    // and a per-lane segment ends the tape.
    let segs = &enc.batched;
    assert_eq!(segs[0].from, 0);
    assert!(segs.windows(2).all(|w| w[0].to == w[1].from));
    assert_eq!(
        segs.last().map(|s| (s.to, s.entry)),
        Some((enc.nodes, Entry::Lane))
    );
    let alone = segs.iter().filter(|s| s.entry == Entry::Node);
    assert!(alone.clone().all(|s| s.to == s.from + 1));
    assert!(alone.count() >= 6 * 4, "a few wide nodes a step");
    let solves = segs.iter().filter(|s| s.entry == Entry::Coop).count();
    assert_eq!(solves, 6 * 2, "an inv and a logdet a step");
    assert_eq!(Kernel::Auto.resolve(&enc, false), Kernel::Lane);
    assert_eq!(Kernel::Auto.resolve(&enc, true), Kernel::Lane);
    assert_eq!(gpu.upload(&rec).expect("uploads").kernel(), Kernel::Lane);
    // From a 10 × 10 matrix it cooperates on a hardware GPU, never on a software one.
    let wide = |n: usize| {
        let src = format!("(logdet (+ (scale q (eye {n})) (matmul (eye {n}) (eye {n}))))");
        let program = Program::new(&src, &["q"]).expect("decodes");
        let mut b = Bindings::<f32>::new();
        b.lanes("q", vec![0.5, 0.7]);
        let mut vm = Vm::<f32>::default();
        vm.eval(&program, &b, true).expect("walks");
        let rec = vm.recording().expect("recorded");
        let enc = ndvm_gpu::Encoded::new(&rec, Segmenting::HARDWARE).expect("encodes");
        (
            enc.widest,
            Kernel::Auto.resolve(&enc, false),
            Kernel::Auto.resolve(&enc, true),
        )
    };
    assert_eq!(wide(9), (81, Kernel::Lane, Kernel::Lane));
    assert_eq!(wide(10), (100, Kernel::Cooperative, Kernel::Lane));
}

#[test]
fn a_node_longer_than_the_driver_runs_stays_on_the_cpu() {
    let Some(gpu) = gpu() else { return };
    // A 40 x 40 matmul is 65,640 loop iterations in one invocation of the per-lane entry:
    // software Vulkan leaves its loops after 65,535 and the last outputs would be wrong. There
    // the upload refuses it (the fit keeps such a group on the CPU); the cooperative entry
    // spreads it over 64 invocations and runs it. A hardware GPU runs both.
    let n = 40;
    let mut b = Bindings::<f32>::new();
    b.lanes("s", vec![0.9, 1.0]);
    let m: Vec<f32> = (0..n * n)
        .map(|e| ((e * 17) % 23) as f32 / 23.0 - 0.5)
        .collect();
    b.matrix("m", n, n, m);
    let src = "(trace (matmul (scale s m) m))";
    let program = Program::new(src, &b.names()).expect("decodes");
    let mut vm = Vm::<f32>::default();
    vm.eval(&program, &b, true).expect("walks");
    let rec = vm.recording().expect("recorded");
    let lane = gpu.upload_with(&rec, 2, usize::MAX, Kernel::Lane);
    if gpu.is_software() {
        match lane {
            Err(ndvm_gpu::GpuError::Unsupported(why)) => {
                assert!(why.contains("loop iterations"), "{why}")
            }
            other => panic!("a 40 x 40 matmul on the software driver: {other:?}"),
        }
    } else {
        gpu_matches_cpu_with(&gpu, src, &program, (&b, &b), usize::MAX, Kernel::Lane)
            .expect("runs");
    }
    // Node-major, each invocation runs one element: 40 multiply-adds.
    for kernel in [Kernel::Cooperative, Kernel::Batched] {
        let seen =
            gpu_matches_cpu_with(&gpu, src, &program, (&b, &b), usize::MAX, kernel).expect("runs");
        assert_eq!(seen.values, 4);
    }
}
