//! The front end's cost per binding: reading, expanding and decoding a program (and compiling
//! it to bytecode) must grow linearly with its size, whatever its shape (docs/limits.md). Each
//! shape runs at 20,000, 40,000 and 80,000 bindings: the time per binding should stay flat.
//!
//! ```sh
//! cargo bench -p ndvm-benches --bench frontend
//! ```
//!
//! Before the scope index (2026-11-26, this VM, whole `ndvm run`): 80,000 top-level defines
//! 3.51 s, a `let` of 80,000 bindings 1.18 s, a `let*` of 80,000 through `--bytecode` 10.5 s,
//! each ×3.5 per doubling; after: 0.14, 0.07 and 0.08 s, ×2.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ndvm_engine::extension::Registry;
use ndvm_engine::prelude::*;
use std::hint::black_box;

/// A program of `n` bindings.
type Shape = fn(usize) -> String;

/// The shapes that were quadratic: each binds `n` names and reads the first.
fn shapes() -> Vec<(&'static str, Shape)> {
    vec![
        ("defines", |n| {
            (0..n)
                .map(|i| format!("(define x{i} (+ {i} 1))\n"))
                .collect::<String>()
                + "x0"
        }),
        ("let", |n| {
            let b: Vec<String> = (0..n).map(|i| format!("(x{i} {i})")).collect();
            format!("(let ({}) x0)", b.join(" "))
        }),
        ("lambda", |n| {
            let p: Vec<String> = (0..n).map(|i| format!("x{i}")).collect();
            format!("((lambda ({}) x0) {})", p.join(" "), vec!["1"; n].join(" "))
        }),
        ("internal-defines", |n| {
            let d: String = (0..n).map(|i| format!("(define x{i} {i}) ")).collect();
            format!("((lambda () {d} x0))")
        }),
        ("loop", |n| {
            let b: Vec<String> = (0..n).map(|i| format!("(x{i} {i})")).collect();
            format!("(loop ({}) x0)", b.join(" "))
        }),
    ]
}

fn let_star(n: usize) -> String {
    let b: Vec<String> = (0..n).map(|i| format!("(x (+ x {i}))")).collect();
    format!("(let* ((x 0) {}) x)", b.join(" "))
}

fn frontend(c: &mut Criterion) {
    let mut group = c.benchmark_group("frontend");
    group.sample_size(10);
    for n in [20_000, 40_000, 80_000] {
        group.throughput(Throughput::Elements(n as u64));
        for (name, make) in shapes() {
            let src = make(n);
            group.bench_with_input(
                BenchmarkId::new(format!("decode/{name}"), n),
                &src,
                |b, s| b.iter(|| black_box(Program::new(s, &[]).expect("decodes"))),
            );
        }
        let src = let_star(n);
        let registry = Registry::default();
        group.bench_with_input(BenchmarkId::new("bytecode/let*", n), &src, |b, s| {
            b.iter(|| {
                black_box(ndvm_bytecode::compile::compile(s, &[], &registry).expect("compiles"))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, frontend);
criterion_main!(benches);
