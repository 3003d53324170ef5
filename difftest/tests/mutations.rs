//! Bad input: mutated programs (byte flips, truncation, deleted and duplicated parentheses,
//! spliced atoms with huge and non-finite literals, swapped atoms, deep nesting) each give a
//! value or a clean error under small limits — never a panic, a hang or unbounded memory.
//!
//! Memory is bounded for real: the test runs under a capped global allocator, so an
//! allocation beyond the cap aborts the test process instead of passing silently.
//! `NDVM_MUTATIONS=100000 cargo test --release -p ndvm-difftest --test mutations` runs the
//! full count.

use cap::Cap;
use ndvm_difftest::mutate::mutate;
use ndvm_difftest::untrusted;
use ndvm_engine::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::alloc::System;
use std::path::Path;

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

/// Far above what the small limits allow a walk (16 MiB of payload, 10^5 heap cells and tape
/// nodes), far below what a runaway allocation would take.
const MEMORY_CAP: usize = 1 << 30;

/// Valid programs to mutate: the golden corpus, the conformance programs, the reference fuzz
/// corpus and generated programs.
fn seeds() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for e in std::fs::read_dir(root.join("../engine/tests/golden"))
        .expect("golden")
        .flatten()
    {
        out.push(std::fs::read_to_string(e.path()).expect("read"));
    }
    for p in ndvm_testdata::conformance_programs() {
        out.push(p["src"].as_str().unwrap_or("").to_string());
    }
    for p in ndvm_testdata::fuzz_corpus().into_iter().take(60) {
        out.push(p["src"].as_str().unwrap_or("").to_string());
    }
    out.sort();
    out.extend((0..60).map(|s| ndvm_difftest::generate::generate(s).src));
    out
}

#[test]
fn mutated_programs_never_panic_hang_or_grow_memory() {
    let count: usize = std::env::var("NDVM_MUTATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(12_000);
    let seeds = seeds();
    let baseline = ALLOCATOR.allocated();
    ALLOCATOR
        .set_limit(baseline + MEMORY_CAP)
        .expect("set the memory cap");
    let mut rng = ChaCha8Rng::seed_from_u64(20261122);
    let b32 = untrusted::bindings::<f32>();
    let b64 = untrusted::bindings::<f64>();
    let mut vm32 = Vm::<f32>::new(Limits::small());
    let mut vm64 = Vm::<f64>::new(Limits::small());
    let mut refused = 0usize;
    let mut kinds = std::collections::BTreeSet::new();
    for k in 0..count {
        let src = mutate(&seeds[k % seeds.len()], &mut rng);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // A reused VM, as a long-running host would keep one.
            let e = untrusted::run(&mut vm32, &src, &b32);
            if k % 4 == 0 {
                untrusted::run(&mut vm64, &src, &b64);
            }
            e
        }));
        match outcome {
            Ok(Some(kind)) => {
                refused += 1;
                kinds.insert(kind.name());
            }
            Ok(None) => {}
            Err(_) => {
                let shown: String = src.chars().take(600).collect();
                panic!("mutated program #{k} panicked:\n{shown}");
            }
        }
    }
    assert!(
        refused > count / 10,
        "mutations should produce many errors ({refused})"
    );
    for kind in ["syntax", "unbound", "type"] {
        assert!(kinds.contains(kind), "no {kind} error among {kinds:?}");
    }
    // Reused VMs keep their buffers, but nothing grows with the number of programs run.
    assert!(
        ALLOCATOR.allocated() < baseline + (256 << 20),
        "{} bytes still allocated",
        ALLOCATOR.allocated() - baseline
    );
}

#[test]
fn the_fuzz_entry_point_takes_any_bytes() {
    for bytes in [
        &b""[..],
        b"\xff\xfe(",
        b"(((((((",
        b"(loop ((i 0)) (recur (+ i 1)))",
        b"(inv (eye 300))",
        b"(define (f x) (f (+ x 1))) (f 0)",
        b"(vec 1e39 -0 +nan.0)",
    ] {
        untrusted::run_bytes(bytes);
    }
}

#[test]
fn mutated_programs_never_panic_the_bytecode_client() {
    // The same mutations, through the bytecode client's entry point: read as binary, as
    // assembly and as dialect source compiled to bytecode; a third of the count (each input is
    // tried three ways).
    let count: usize = std::env::var("NDVM_MUTATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(12_000)
        / 3;
    let seeds = seeds();
    let mut rng = ChaCha8Rng::seed_from_u64(20261125);
    let mut compiled = 0;
    for k in 0..count {
        let src = mutate(&seeds[k % seeds.len()], &mut rng);
        let ran = std::panic::catch_unwind(|| untrusted::run_bytecode_bytes(src.as_bytes()));
        match ran {
            Ok(n) => compiled += n,
            Err(_) => {
                let shown: String = src.chars().take(600).collect();
                panic!("mutated program #{k} panicked the bytecode client:\n{shown}");
            }
        }
    }
    // Enough mutants stay in the compiler's subset to exercise the VM.
    assert!(compiled > count / 20, "only {compiled} of {count} ran");
    for bytes in [
        &b""[..],
        b"NBC1",
        b"NBC1\xff\xff\xff\xff",
        b"top: JUMP top",
        b"LOOP\nEND",
    ] {
        untrusted::run_bytecode_bytes(bytes);
    }
}
