//! A whole-trajectory calibration step against one forward integration: the Lotka–Volterra
//! system over the 150 observations of `scenes/lotka_volterra_trajectories.csv` (run `a`, two
//! states, 10 RK4 sub-steps between observations), its loss summed by `ode-sse`, 8 draws as
//! lanes. Target (#61): one calibration step — values and gradients over the whole trajectory,
//! the tape replayed and the backward pass (`step_replay`) — at most 3× one forward integration
//! (`forward`: a walk without gradients; `forward_replay`: the recorded tape recomputed, the
//! cheapest forward there is), never one integration per observation. `step_walk` is a step
//! that walks again (the first of a calibration, or one whose guards changed).

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use ndvm_benches::{forward_grad, replay_grad};
use ndvm_engine::prelude::*;
use ndvm_systems::population::trajectory::{Trajectories, Trajectory};
use std::hint::black_box;

const RHS: &str = "(define (rhs t prey predator)
  [(- (* alpha prey) (* beta prey predator)) (- (* delta prey predator) (* gamma predator))])";
const PARAMS: [(&str, f32); 4] = [
    ("alpha", 1.0),
    ("beta", 0.1),
    ("delta", 0.075),
    ("gamma", 1.5),
];
const LANES: usize = 8;

fn trajectories() -> Trajectories {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scenes/lotka_volterra_trajectories.csv"
    );
    let text = std::fs::read_to_string(path).expect("the shipped trajectories");
    let (mut times, mut states) = (Vec::new(), Vec::new());
    for line in text.lines().skip(1).filter(|l| l.starts_with("a,")) {
        let v: Vec<f64> = line
            .split(',')
            .skip(1)
            .map(|x| x.parse().expect("number"))
            .collect();
        times.push(v[0]);
        states.extend_from_slice(&v[1..]);
    }
    Trajectories {
        states: vec!["prey".into(), "predator".into()],
        runs: vec![Trajectory {
            id: "a".into(),
            times,
            states,
        }],
        substeps: 10,
        window: None,
        hidden: Vec::new(),
        fit_start: false,
    }
}

fn trajectory(c: &mut Criterion) {
    let t = trajectories();
    let inputs = t.inputs();
    let names: Vec<&str> = (PARAMS.iter().map(|(n, _)| *n))
        .chain(inputs.iter().map(|m| m.name.as_str()))
        .collect();
    let program = Program::new(&t.program(RHS), &names).expect("the program");
    let mut b = Bindings::<f32>::new();
    for (i, (name, value)) in PARAMS.iter().enumerate() {
        // Each draw a little off the truth, as a calibration's are.
        let lanes = (0..LANES)
            .map(|l| value * (1.0 + 0.002 * (l as f32 - 3.5) * (i as f32 + 1.0)))
            .collect();
        b.lanes(name, lanes);
    }
    for m in &inputs {
        b.matrix(
            &m.name,
            m.rows,
            m.cols,
            m.data.iter().map(|x| *x as f32).collect(),
        );
    }
    let mut group = c.benchmark_group("trajectory/lotka_volterra_150");
    let mut vm = Vm::<f32>::default();
    let loss = vm.eval(&program, &b, false).expect("evaluates");
    assert!(
        vm.numbers(loss)
            .is_some_and(|l| l.iter().all(|x| x.is_finite()))
    );
    group.bench_function(BenchmarkId::new("forward", LANES), |bench| {
        bench.iter(|| black_box(vm.eval(&program, &b, false).is_ok()))
    });
    let mut vm = Vm::<f32>::default();
    group.bench_function(BenchmarkId::new("step_walk", LANES), |bench| {
        bench.iter(|| black_box(forward_grad(&mut vm, &program, &b)))
    });
    let mut vm = Vm::<f32>::default();
    forward_grad(&mut vm, &program, &b);
    assert!(matches!(vm.replay(&program, &b), Replay::Held(_)));
    group.bench_function(BenchmarkId::new("forward_replay", LANES), |bench| {
        bench.iter(|| black_box(matches!(vm.replay(&program, &b), Replay::Held(_))))
    });
    group.bench_function(BenchmarkId::new("step_replay", LANES), |bench| {
        bench.iter(|| black_box(replay_grad(&mut vm, &program, &b)))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(std::time::Duration::from_millis(500)).measurement_time(std::time::Duration::from_secs(3));
    targets = trajectory
}
criterion_main!(benches);
