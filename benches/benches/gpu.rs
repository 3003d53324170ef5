//! The GPU system's sweep (docs/gpu.md): the D-dimensional Kalman filter's negative
//! log-likelihood, replay + gradient over a population of lanes, on the GPU against the CPU
//! replay on all cores of the same machine.
//!
//! - `gpu/kalman_nd/D/lanes`: one walked lane's tape (broadcast) run over every lane
//!   by the WGSL interpreter (new parameter rows up, results and gradient rows down);
//! - `cpu/kalman_nd/D/lanes`: the same lanes cut into one chunk per core, each chunk's tape
//!   walked once and replayed (forward + backward) per iteration, chunks in parallel (rayon).
//!
//! `NDVM_GPU_KERNELS` lists the interpreter entries to time (`lane`, `coop`, `batched`, `auto`;
//! see `ndvm_gpu::Kernel`): `auto` by default, `lane,coop,batched` in the rows mode.
//!
//! The default sweep is small (D = 2, 8 at 1,024 lanes) so CI's software Vulkan finishes it;
//! `NDVM_GPU_SWEEP=full` runs D = 2, 4, 8, 16, 32 × 1 k, 4 k, 16 k, 64 k lanes (on a real
//! GPU). Without an adapter the GPU rows are skipped (with `REQUIRE_GPU=1`, a panic).
//!
//! **Rows on a time budget** (the device script, `benches/device/gpu.sh`): with
//! `NDVM_GPU_ROWS=2x1024,16x4096,…` the bench skips criterion and times each `DxLANES` row on
//! both sides — a first call, then repeats until 5 or `NDVM_GPU_ROW_SECONDS` (default 10) have
//! passed; a first call over the budget is the measurement — and prints a JSON line per side
//! and row: the median and first call's seconds, the tape's work per lane (`work`, what
//! `auto`'s cost model weighs), and lane 0's value and gradients (to check the sides agree).
//! A row at D = 32 costs seconds per call, so criterion's ten samples would not fit a few
//! minutes of device time.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};
use ndvm_engine::prelude::*;
use rayon::prelude::*;
use std::hint::black_box;
use std::time::Instant;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const STEPS: usize = 80;

/// The D-dimensional filter (the text of `scenes/kalman_nd.scm` with D and T substituted).
fn program(d: usize) -> Program {
    let zeros = vec!["0.0"; d].join(" ");
    let src = format!(
        "(loop ((k 0) (x (vec {zeros})) (P (eye {d})) (L 0.0))
           (if (= k {STEPS}) L
             (let* ((Q (scale q (eye {d}))) (R (scale r (eye {d}))) (Ppred (+ P Q))
                    (y (ref obs k)) (e (- y x)) (S (+ Ppred R)) (Sinv (inv S))
                    (Kg (matmul Ppred Sinv)) (xnew (+ x (matvec Kg e)))
                    (Pnew (matmul (- (eye {d}) Kg) Ppred))
                    (nll (+ (logdet S) (dot e (matvec Sinv e)))))
               (recur (+ k 1) xnew Pnew (+ L nll)))))"
    );
    Program::new(&src, &["q", "r", "obs"]).expect("kalman_nd decodes")
}

fn observations(d: usize) -> Vec<f32> {
    (0..STEPS * d)
        .map(|i| ((i as f32 * 0.618_034).fract() - 0.5) * (1.0 + (i / d) as f32 * 0.02))
        .collect()
}

/// Lanes `from..to` of the population: q and r spread around (0.1, 0.2).
fn bindings(d: usize, from: usize, to: usize) -> Bindings<f32> {
    let mut b = Bindings::new();
    b.lanes(
        "q",
        (from..to)
            .map(|l| 0.05 + 0.1 * ((l * 7) % 97) as f32 / 97.0)
            .collect(),
    )
    .lanes(
        "r",
        (from..to)
            .map(|l| 0.1 + 0.2 * ((l * 13) % 89) as f32 / 89.0)
            .collect(),
    )
    .matrix("obs", STEPS, d, observations(d));
    b
}

fn sweep() -> (Vec<usize>, Vec<usize>) {
    if std::env::var("NDVM_GPU_SWEEP").is_ok_and(|v| v == "full") {
        (
            vec![2, 4, 8, 16, 32],
            vec![1 << 10, 1 << 12, 1 << 14, 1 << 16],
        )
    } else {
        (vec![2, 8], vec![1 << 10])
    }
}

fn gpu(c: &mut Criterion) {
    let gpu = open_gpu();
    let (dims, widths) = sweep();
    let mut group = c.benchmark_group("kalman_nd");
    group.sample_size(10);
    for &d in &dims {
        let program = program(d);
        for &lanes in &widths {
            group.throughput(Throughput::Elements(lanes as u64));
            for kernel in gpu.as_ref().map_or(Vec::new(), |_| kernels("auto")) {
                let gpu = gpu.as_ref().expect("a device");
                on_device(gpu, kernel, &program, (d, lanes), |run| {
                    let first = run();
                    assert!(
                        first.failed.is_empty(),
                        "a straight-line tape has no guards to fail"
                    );
                    let id = BenchmarkId::new(format!("{}/D{d}", side(kernel)), lanes);
                    group.bench_function(id, |b| b.iter(|| black_box(run())));
                });
            }
            // The CPU replay on all cores: one chunk per worker thread.
            let chunks = rayon::current_num_threads().max(1);
            let per = lanes.div_ceil(chunks);
            let mut vms: Vec<(Vm<f32>, Bindings<f32>, f32)> = (0..lanes)
                .step_by(per)
                .map(|from| cpu_chunk(&program, d, from..(from + per).min(lanes)))
                .collect();
            group.bench_function(BenchmarkId::new(format!("cpu/D{d}"), lanes), |b| {
                b.iter(|| {
                    vms.par_iter_mut().for_each(|(vm, bind, _)| {
                        let Replay::Held(v) = vm.replay(&program, bind) else {
                            panic!("the tape holds")
                        };
                        vm.backward(v);
                        black_box(vm.grad(0).first().copied());
                    })
                })
            });
        }
    }
    group.finish();
}

/// The interpreter entries of `NDVM_GPU_KERNELS` (else `default`), e.g. `lane,coop`.
fn kernels(default: &str) -> Vec<ndvm_gpu::Kernel> {
    let list = std::env::var("NDVM_GPU_KERNELS").unwrap_or_else(|_| default.to_string());
    list.split(',')
        .map(|k| ndvm_gpu::Kernel::parse(k.trim()).unwrap_or_else(|| panic!("kernel `{k}`?")))
        .collect()
}

/// A GPU row's side: `gpu` for the automatic choice, else `gpu-lane`, `gpu-coop` or
/// `gpu-batched`.
fn side(kernel: ndvm_gpu::Kernel) -> String {
    match kernel {
        ndvm_gpu::Kernel::Auto => "gpu".into(),
        k => format!("gpu-{}", k.name()),
    }
}

/// `DxLANES` rows, e.g. `2x1024,16x4096`.
fn rows(list: &str) -> Vec<(usize, usize)> {
    list.split(',')
        .filter_map(|r| {
            let (d, l) = r.trim().split_once('x')?;
            Some((d.parse().ok()?, l.parse().ok()?))
        })
        .collect()
}

/// Seconds of a first call of `f`, then the median of up to five more, stopping once `budget`
/// seconds have passed; with the last call's output.
fn timed<T>(budget: f64, mut f: impl FnMut() -> T) -> (f64, f64, usize, T) {
    let start = Instant::now();
    let mut out = f();
    let first = start.elapsed().as_secs_f64();
    if first > budget {
        // one call over the whole budget (the lane entry at D = 32) is the measurement
        return (first, first, 0, out);
    }
    let mut times = Vec::new();
    while times.len() < 5 && (times.is_empty() || start.elapsed().as_secs_f64() < budget) {
        let t = Instant::now();
        out = f();
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    (first, times[times.len() / 2], times.len(), out)
}

fn print_row(
    side: &str,
    device: &str,
    (d, lanes, work): (usize, usize, u64),
    t: (f64, f64, usize),
    lane0: [f32; 3],
) {
    let line = serde_json::json!({
        "side": side, "device": device, "D": d, "lanes": lanes, "work": work,
        "first_s": t.0, "median_s": t.1, "repeats": t.2,
        "lane0": {"value": lane0[0], "dq": lane0[1], "dr": lane0[2]},
    });
    println!("{line}");
}

/// The filter's tape work per lane at `d` ([`ndvm_gpu::tape_work`], multiply-adds): what
/// `auto`'s cost model weighs (`wins` in `systems/src/stages/gpu.rs`), printed with each row so
/// the model can be refitted from the rows.
fn work_per_lane(d: usize) -> u64 {
    let mut vm = Vm::<f32>::default();
    let v = vm
        .eval(&program(d), &bindings(d, 0, 1), true)
        .expect("walks");
    assert!(vm.numbers(v).is_some());
    ndvm_gpu::tape_work(&vm.recording().expect("recorded"))
}

/// The rows of `NDVM_GPU_ROWS` on a time budget (see the module docs).
fn rows_on_a_budget(list: &str) {
    let budget: f64 = std::env::var("NDVM_GPU_ROW_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10.0);
    let gpu = open_gpu();
    if gpu.is_none() {
        eprintln!("no GPU adapter: CPU rows only");
    }
    let threads = rayon::current_num_threads();
    for (d, lanes) in rows(list) {
        let program = program(d);
        let work = work_per_lane(d);
        for kernel in gpu
            .as_ref()
            .map_or(Vec::new(), |_| kernels("lane,coop,batched"))
        {
            let gpu = gpu.as_ref().expect("a device");
            let (first, median, n, run) =
                on_device(gpu, kernel, &program, (d, lanes), |run| timed(budget, run));
            let lane0 = [run.result[0], run.grads[0][0], run.grads[1][0]];
            print_row(
                &side(kernel),
                &gpu.describe(),
                (d, lanes, work),
                (first, median, n),
                lane0,
            );
        }
        // The CPU side: walking each chunk is its first call, the replays its repeats. A chunk
        // holds its lanes' whole tape (~270 MB per 1,024 lanes at D = 8, growing as D²), so it
        // is capped to stay under the engine's payload limit (1 GiB) at every D.
        let per = lanes
            .div_ceil(threads.max(1))
            .min((65_536 / (d * d)).max(16));
        let mut vms: Vec<(Vm<f32>, Bindings<f32>, f32)> = Vec::new();
        let (first, median, n, ()) = timed(budget, || {
            if vms.is_empty() {
                vms = (0..lanes)
                    .step_by(per)
                    .collect::<Vec<_>>()
                    .into_par_iter()
                    .map(|from| cpu_chunk(&program, d, from..(from + per).min(lanes)))
                    .collect();
                return;
            }
            vms.par_iter_mut().for_each(|(vm, bind, out)| {
                let Replay::Held(v) = vm.replay(&program, bind) else {
                    panic!("the tape holds")
                };
                *out = vm.numbers(v).map_or(f32::NAN, |x| x[0]);
                vm.backward(v);
            });
        });
        let (vm, _, value) = &vms[0];
        let lane0 = [*value, vm.grad(0)[0], vm.grad(1)[0]];
        let device = format!("CPU, {threads} threads");
        print_row("cpu", &device, (d, lanes, work), (first, median, n), lane0);
    }
}

/// The GPU, or `None` without an adapter (with `REQUIRE_GPU=1`, a panic).
fn open_gpu() -> Option<ndvm_gpu::Gpu> {
    match ndvm_gpu::Gpu::new() {
        Ok(g) => Some(g),
        Err(e) if std::env::var("REQUIRE_GPU").is_ok_and(|v| v == "1") => panic!("{e}"),
        Err(_) => None,
    }
}

/// The GPU side of a `(d, lanes)` row: lane 0 walked on the CPU, its tape uploaded to `gpu`
/// broadcast over every lane for `kernel`, each lane's q and r given; `measure` gets a closure
/// that runs replay + gradient of every lane once on the device.
fn on_device<T>(
    gpu: &ndvm_gpu::Gpu,
    kernel: ndvm_gpu::Kernel,
    program: &Program,
    (d, lanes): (usize, usize),
    measure: impl FnOnce(&mut dyn FnMut() -> ndvm_gpu::DeviceRun) -> T,
) -> T {
    let mut vm = Vm::<f32>::default();
    let v = vm.eval(program, &bindings(d, 0, 1), true).expect("walks");
    assert!(vm.numbers(v).is_some());
    let rec = vm.recording().expect("recorded");
    let mut tape = gpu
        .upload_with(&rec, lanes, usize::MAX, kernel)
        .expect("uploads");
    let (q, r) = per_lane(d, lanes);
    let given = [Some(q.as_slice()), Some(r.as_slice()), None];
    measure(&mut || tape.run_lanes(gpu, &rec, &given, true).expect("runs"))
}

/// A chunk of the CPU side: lanes `range` walked (and differentiated) once, with lane
/// `range.start`'s value; its replays are the measured repeats.
fn cpu_chunk(
    program: &Program,
    d: usize,
    range: std::ops::Range<usize>,
) -> (Vm<f32>, Bindings<f32>, f32) {
    let b = bindings(d, range.start, range.end);
    let mut vm = Vm::<f32>::default();
    let v = vm.eval(program, &b, true).expect("walks");
    let value = vm.numbers(v).map_or(f32::NAN, |x| x[0]);
    vm.backward(v);
    (vm, b, value)
}

/// Lanes `0..lanes`' q and r.
fn per_lane(d: usize, lanes: usize) -> (Vec<f32>, Vec<f32>) {
    let all = bindings(d, 0, lanes);
    let col = |name: &str| match &all
        .items
        .iter()
        .find(|b| b.name == name)
        .expect("bound")
        .value
    {
        Input::Lanes(xs) => xs.clone(),
        _ => unreachable!("q and r are per lane"),
    };
    (col("q"), col("r"))
}

criterion_group!(benches, gpu);

fn main() {
    if let Ok(list) = std::env::var("NDVM_GPU_ROWS") {
        rows_on_a_budget(&list);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
