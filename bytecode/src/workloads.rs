//! The reference's four bytecode workloads (and a per-lane-exit loop), each as a dialect
//! program and as hand-written `.nbc` (the files in `docs/examples`), with seeded inputs over
//! any number of lanes: what the tests and the benchmark run on both clients.
//!
//! - W1 `w1_closed_form`: a·e^(−b·t) + c·sin(w·t), a scalar closed-form expression;
//! - W2 `w2_counted_loop`: 30 steps of the logistic map (a `LOOP` / `loop`–`recur`);
//! - W3 `w3_branch`: a branch whose test splits the lanes (`IF` / `if`);
//! - W4 `w4_matvec`: vsum(M·[a b c]), a small summed matrix-vector product;
//! - `newton_sqrt`: Newton's √s, each lane leaving the loop when it has converged (`EXITIF`).

use ndvm_engine::{Bindings, Real};

/// One workload: its name and its two sources.
#[derive(Clone, Copy, Debug)]
pub struct Workload {
    pub name: &'static str,
    /// The dialect program.
    pub scm: &'static str,
    /// The same program, hand-written as bytecode.
    pub nbc: &'static str,
}

macro_rules! workload {
    ($name:literal) => {
        Workload {
            name: $name,
            scm: include_str!(concat!("../../docs/examples/", $name, ".scm")),
            nbc: include_str!(concat!("../../docs/examples/", $name, ".nbc")),
        }
    };
}

pub const WORKLOADS: [Workload; 5] = [
    workload!("w1_closed_form"),
    workload!("w2_counted_loop"),
    workload!("w3_branch"),
    workload!("w4_matvec"),
    workload!("newton_sqrt"),
];

/// A deterministic value in `[lo, hi)` for lane `l` of stream `k` under `seed` (a
/// low-discrepancy sequence, so lanes spread evenly and reruns give the same bits).
fn spread(seed: u64, k: u64, l: usize, lo: f64, hi: f64) -> f64 {
    let phi = 0.618_033_988_749_894_9;
    let u = ((l as f64 + 1.0) * phi + (seed * 31 + k * 7) as f64 * 0.414_213_562_373_095).fract();
    lo + (hi - lo) * u
}

impl Workload {
    /// Seeded inputs over `lanes` lanes; the parameters are per-lane inputs.
    pub fn bindings<R: Real>(&self, lanes: usize, seed: u64) -> Bindings<R> {
        let draw = |k: u64, lo: f64, hi: f64| -> Vec<R> {
            (0..lanes)
                .map(|l| R::from_f64(spread(seed, k, l, lo, hi)))
                .collect()
        };
        let mut b = Bindings::new();
        match self.name {
            "w1_closed_form" => {
                b.lanes("a", draw(0, 0.5, 2.0))
                    .lanes("b", draw(1, 0.1, 1.0))
                    .lanes("c", draw(2, -1.0, 1.0))
                    .lanes("w", draw(3, 1.0, 4.0))
                    .lane_data("t", draw(4, 0.0, 3.0));
            }
            "w2_counted_loop" => {
                b.lanes("r", draw(0, 2.5, 3.9))
                    .lanes("x0", draw(1, 0.1, 0.9));
            }
            "w3_branch" => {
                b.lanes("a", draw(0, 0.5, 2.0))
                    .lanes("b", draw(1, 0.1, 1.0))
                    .lanes("x", draw(2, 0.0, 1.0));
            }
            "w4_matvec" => {
                let m: Vec<R> = (0..9)
                    .map(|i| R::from_f64(spread(seed, 9, i, -1.0, 1.0) + i as f64))
                    .collect();
                b.matrix("M", 3, 3, m)
                    .lanes("a", draw(0, -1.0, 1.0))
                    .lanes("b", draw(1, -1.0, 1.0))
                    .lanes("c", draw(2, -1.0, 1.0));
            }
            _ => {
                b.lanes("s", draw(0, 1.0, 1e4));
            }
        }
        b
    }
}
