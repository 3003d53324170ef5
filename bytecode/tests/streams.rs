//! Random instruction streams built to verify — nested per-lane `IF`s, counted loops with
//! `EXITIF`, label loops with a backward `JUMP`, locals — run over lanes that split: none may
//! panic, and every one that runs must give, in each lane, the same bits (value and gradients)
//! as that lane run alone (a batch equals its lanes, docs/language-reference.md §9.1).

mod common;

use common::{bits_nan_equal, lane};
use ndvm_bytecode::prelude::*;
use ndvm_engine::prelude::*;
use proptest::prelude::*;

/// A seeded generator of `.nbc` text (xorshift; the proptest seed drives it).
struct Gen {
    s: u64,
    out: String,
    label: usize,
}

impl Gen {
    fn next(&mut self, n: u64) -> u64 {
        self.s ^= self.s << 13;
        self.s ^= self.s >> 7;
        self.s ^= self.s << 17;
        self.s % n
    }

    fn line(&mut self, s: &str) {
        self.out.push_str(s);
        self.out.push('\n');
    }

    /// Pushes one number.
    fn expr(&mut self, depth: u32) {
        let pick = if depth == 0 {
            self.next(3)
        } else {
            self.next(9)
        };
        match pick {
            0 => {
                let c = ["PUSH 0.5", "PUSH 2", "PUSH -1.25", "PUSH 3"][self.next(4) as usize];
                self.line(c);
            }
            1 => {
                let x = ["LOAD x", "LOAD y"][self.next(2) as usize];
                self.line(x);
            }
            2 => self.line("GET a"),
            3 | 4 => {
                self.expr(depth - 1);
                let op = ["NEG", "SIN", "COS", "CALL tanh", "CALL abs", "CALL square"]
                    [self.next(6) as usize];
                self.line(op);
            }
            5 | 6 => {
                self.expr(depth - 1);
                self.expr(depth - 1);
                let op = ["ADD", "SUB", "MUL", "CALL max 2", "CALL min"][self.next(5) as usize];
                self.line(op);
            }
            7 => {
                self.cond(depth - 1);
                self.line("IF");
                self.expr(depth - 1);
                self.line("ELSE");
                self.expr(depth - 1);
                self.line("END");
            }
            _ => {
                // A value through a local written in one arm only.
                self.cond(depth - 1);
                self.line("IF");
                self.expr(depth - 1);
                self.line("SET a");
                self.line("END");
                self.line("GET a");
            }
        }
    }

    fn cond(&mut self, depth: u32) {
        self.expr(depth);
        self.expr(depth.saturating_sub(1));
        let op = ["LT", "GT", "LE", "GE"][self.next(4) as usize];
        self.line(op);
    }

    /// A statement: leaves the stack as it found it.
    fn stmt(&mut self, depth: u32) {
        match self.next(if depth == 0 { 1 } else { 4 }) {
            0 => {
                self.expr(depth);
                self.line("SET a");
            }
            1 => {
                let n = 1 + self.next(4);
                self.line(&format!("LOOP {n}"));
                self.stmt(depth - 1);
                if self.next(2) == 0 {
                    self.cond(1);
                    self.line("EXITIF");
                }
                self.stmt(depth - 1);
                self.line("END");
            }
            2 => {
                // A label loop: a counter, a per-lane test, a backward jump out of the IF.
                self.label += 1;
                let (top, i) = (format!("top{}", self.label), format!("i{}", self.label));
                self.line("PUSH 0");
                self.line(&format!("SET {i}"));
                self.line(&format!("{top}:"));
                // i + (x > 0 ? 0 : 1) < k: the lanes leave at different iterations.
                let k = 1 + self.next(3);
                self.line(&format!("GET {i}"));
                self.line("LOAD x");
                self.line("PUSH 0");
                self.line("GT");
                self.line("IF");
                self.line("PUSH 0");
                self.line("ELSE");
                self.line("PUSH 1");
                self.line("END");
                self.line("ADD");
                self.line(&format!("PUSH {k}"));
                self.line("LT");
                self.line("IF");
                self.stmt(depth - 1);
                self.line(&format!("GET {i}"));
                self.line("PUSH 1");
                self.line("ADD");
                self.line(&format!("SET {i}"));
                self.line(&format!("JUMP {top}"));
                self.line("END");
            }
            _ => {
                self.cond(depth - 1);
                self.line("IF");
                self.stmt(depth - 1);
                self.line("ELSE");
                self.stmt(depth - 1);
                self.line("END");
            }
        }
    }

    fn program(seed: u64) -> String {
        let mut g = Gen {
            s: seed | 1,
            out: String::new(),
            label: 0,
        };
        g.line("LOAD x");
        g.line("SET a");
        for _ in 0..1 + g.next(3) {
            g.stmt(3);
        }
        g.expr(3);
        g.line("RET");
        g.out
    }
}

fn inputs<R: Real>() -> Bindings<R> {
    let mut b = Bindings::new();
    let xs = [0.3, 1.7, -0.8, 2.4, 0.9, -1.5];
    b.lanes("x", xs.iter().map(|&v| R::from_f64(v)).collect())
        .lanes(
            "y",
            xs.iter().rev().map(|&v| R::from_f64(v * 0.7)).collect(),
        );
    b
}

fn check<R: Real>(code: &Code) -> bool {
    let limits = Limits {
        eval_steps: 200_000,
        ..Limits::default()
    };
    let mut vm = Vm::<R>::new(limits);
    let mut runner = Runner::new();
    let b = inputs::<R>();
    let Ok(batch) = runner.evaluate(&mut vm, code, &b, true) else {
        return false;
    };
    for l in 0..6 {
        let alone = runner
            .evaluate(&mut vm, code, &lane(&b, l), true)
            .expect("a lane alone runs when the batch did");
        assert!(
            bits_nan_equal(&common::lane_bits(&batch, l), &common::bits(&alone)),
            "lane {l} ({}): batch {:?} vs alone {:?}\n{}",
            std::any::type_name::<R>(),
            common::lane_bits(&batch, l),
            common::bits(&alone),
            code.source()
        );
    }
    true
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("NDVM_FUZZ_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(600)
    ))]

    #[test]
    fn generated_streams_verify_run_and_keep_lanes_independent(seed in any::<u64>()) {
        let src = Gen::program(seed);
        let code = assemble(&src, &["x", "y"], &Registry::default())
            .unwrap_or_else(|e| panic!("{e}\n{src}"));
        check::<f64>(&code);
        check::<f32>(&code);
    }
}

#[test]
fn most_generated_streams_run_and_split() {
    let (mut ran, mut split) = (0, 0);
    for seed in 0..300u64 {
        let src = Gen::program(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let code = assemble(&src, &["x", "y"], &Registry::default())
            .unwrap_or_else(|e| panic!("{e}\n{src}"));
        if check::<f64>(&code) {
            ran += 1;
            let mut vm = Vm::<f64>::default();
            Runner::new()
                .run(&mut vm, &code, &inputs(), true)
                .expect("runs");
            split += usize::from(vm.stats().splits > 0);
        }
    }
    assert!(ran > 150, "only {ran} of 300 ran");
    assert!(split > 50, "only {split} of {ran} split their lanes");
}

/// Seeds that once broke lane independence, kept so they run every time.
#[test]
fn pinned_seeds_keep_lanes_independent() {
    for seed in [3_202_691_431_190_562_776u64, 14_048_143_201_225_154_218] {
        let src = Gen::program(seed);
        let code = assemble(&src, &["x", "y"], &Registry::default())
            .unwrap_or_else(|e| panic!("{e}\n{src}"));
        check::<f64>(&code);
        check::<f32>(&code);
    }
}
